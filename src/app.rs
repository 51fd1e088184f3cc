//! Wiring: shared state, the process-wide middleware stack, start-up and shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::StatusCode;
use axum::middleware::{from_fn, from_fn_with_state, Next};
use axum::response::Response;
use axum::Router;
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;

use crate::api::error::{fault_response, GENERIC_SERVER_ERROR};
use crate::api::request_id::{request_id_layer, RequestId};
use crate::auth::keystone::{KeystoneAuth, KeystoneConfig};
use crate::auth::Authenticator;
use crate::backend::{BackendSpec, Backends, ConfiguredBackend};
use crate::cli::{AuthStrategy, DatabaseArgs, MigrateMode, ServeArgs};
use crate::clock::{Clock, SystemClock};
use crate::metrics::Metrics;
use crate::policy::{file::PolicyFileError, PolicyEngine};
use crate::service::{Service, Settings};
use crate::store::ServiceRegistration;
use crate::store::{self, ConnectOptions, Store};
use uuid::Uuid;

/// Settings handlers need at request time.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    pub public_endpoint: Option<String>,
    pub request_timeout: Duration,
    pub max_body_bytes: usize,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            public_endpoint: None,
            request_timeout: Duration::from_secs(60),
            max_body_bytes: 1024 * 1024,
        }
    }
}

#[derive(Clone)]
pub struct AppState {
    pub service: Service,
    pub config: Arc<ServiceConfig>,
    pub auth: Arc<Authenticator>,
    pub metrics: Arc<Metrics>,
}

impl AppState {
    pub fn new(service: Service, config: ServiceConfig, auth: Authenticator) -> Self {
        AppState {
            service,
            config: Arc::new(config),
            auth: Arc::new(auth),
            metrics: Arc::new(Metrics::default()),
        }
    }
}

/// Builds every configured backend and records it as a service (stable uuid per host).
pub async fn register_backends(
    store: &dyn Store,
    specs: &[BackendSpec],
    host_name: &str,
    clock: &dyn Clock,
) -> Result<Backends, StartError> {
    let mut configured = Vec::new();
    for spec in specs {
        let (driver, availability_zone) = spec.build().map_err(StartError::Config)?;
        if configured
            .iter()
            .any(|b: &ConfiguredBackend| b.name == spec.name)
        {
            return Err(StartError::Config(format!(
                "backend {} is configured twice",
                spec.name
            )));
        }
        let host = format!("{host_name}@{}", spec.name);
        let capabilities = serde_json::to_value(driver.capabilities()).unwrap_or_default();
        let service_uuid = store
            .register_service(&ServiceRegistration {
                new_uuid: Uuid::new_v4(),
                host: host.clone(),
                backend_name: spec.name.clone(),
                driver: spec.driver.name().to_owned(),
                availability_zone: availability_zone.clone(),
                capabilities,
                now: clock.now(),
            })
            .await
            .map_err(StartError::Register)?;
        configured.push(ConfiguredBackend {
            name: spec.name.clone(),
            host,
            service_uuid,
            availability_zone,
            driver,
        });
    }
    Ok(Backends::new(configured))
}

/// The whole service as one router.
pub fn build_app(state: AppState) -> Router {
    with_process_layers(crate::api::routes(state.clone()), state)
}

/// Adds the layers every response passes through, outermost first: request id, trace
/// span, timeout, panic catcher. Each of them answers in Cinder's fault shape.
pub fn with_process_layers(routes: Router<AppState>, state: AppState) -> Router {
    routes
        .layer(CatchPanicLayer::custom(
            |_panic: Box<dyn std::any::Any + Send>| {
                tracing::error!("handler panicked");
                fault_response(StatusCode::INTERNAL_SERVER_ERROR, GENERIC_SERVER_ERROR)
            },
        ))
        .layer(from_fn_with_state(state.clone(), timeout_layer))
        .layer(from_fn_with_state(state.clone(), metrics_layer))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(request_span)
                // Failures are logged once, where the fault is built.
                .on_failure(()),
        )
        .layer(from_fn(request_id_layer))
        .with_state(state)
}

fn request_span(request: &Request<Body>) -> tracing::Span {
    let request_id = request
        .extensions()
        .get::<RequestId>()
        .map(|id| id.0.as_str())
        .unwrap_or("-");
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str)
        .unwrap_or("unmatched");
    tracing::info_span!(
        "request",
        request_id,
        method = %request.method(),
        route,
        endpoint = tracing::field::Empty,
        project_id = tracing::field::Empty,
        user_id = tracing::field::Empty,
    )
}

/// Counts and times every answered request by its route template.
async fn metrics_layer(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = std::time::Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let response = next.run(request).await;
    state.metrics.record_request(
        method.as_str(),
        &route,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// The metrics listener's only route: `GET /metrics`.
pub fn metrics_router(state: AppState) -> Router {
    Router::new()
        .route(
            "/metrics",
            axum::routing::get(|State(state): State<AppState>| async move {
                let body = state.metrics.render(state.service.store.as_ref()).await;
                (
                    [(
                        axum::http::header::CONTENT_TYPE,
                        "text/plain; version=0.0.4; charset=utf-8",
                    )],
                    body,
                )
            }),
        )
        .with_state(state)
}

async fn timeout_layer(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let limit = state.config.request_timeout;
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            tracing::warn!(seconds = limit.as_secs_f64(), "request timed out");
            fault_response(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!(
                    "The request did not complete within {} seconds.",
                    limit.as_secs_f64()
                ),
            )
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] store::ConnectError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "refusing to serve noauth on the non-loopback address {0}: anyone could act as admin. \
         Use --listen 127.0.0.1:PORT, another --auth-strategy, or --allow-insecure-noauth"
    )]
    InsecureNoauth(SocketAddr),
    #[error("server error: {0}")]
    Serve(#[source] std::io::Error),
    #[error("configuration: {0}")]
    Config(String),
    #[error("policy file: {0}")]
    Policy(#[source] PolicyFileError),
    #[error("cannot record the backends: {0}")]
    Register(#[source] store::StoreError),
}

fn connect_options(db: &DatabaseArgs, migrate: bool, upkeep: bool) -> ConnectOptions {
    ConnectOptions {
        url: db.database_url.clone(),
        max_connections: db.db_max_connections,
        acquire_timeout: db.acquire_timeout(),
        migrate,
        upkeep,
    }
}

/// `cinder-attach migrate`.
pub async fn migrate_only(db: &DatabaseArgs) -> Result<(), StartError> {
    let store = store::connect(&connect_options(db, true, false)).await?;
    store.close().await;
    tracing::info!("migrations applied");
    Ok(())
}

/// `cinder-attach serve`: runs until SIGINT or SIGTERM.
pub async fn run(db: &DatabaseArgs, args: ServeArgs) -> Result<(), StartError> {
    if args.auth_strategy == AuthStrategy::Noauth
        && !args.listen.ip().is_loopback()
        && !args.allow_insecure_noauth
    {
        return Err(StartError::InsecureNoauth(args.listen));
    }
    let policy =
        Arc::new(PolicyEngine::load(args.policy_file.clone()).map_err(StartError::Policy)?);
    let store = store::connect(&connect_options(
        db,
        args.migrate == MigrateMode::Auto,
        true,
    ))
    .await?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let backends = register_backends(
        store.as_ref(),
        &args.backends,
        &args.host_name(),
        clock.as_ref(),
    )
    .await?;
    for backend in backends.iter() {
        tracing::info!(host = %backend.host, service_uuid = %backend.service_uuid, "backend ready");
    }
    let service = Service {
        store: store.clone(),
        policy: policy.clone(),
        backends: Arc::new(backends),
        clock,
        settings: Arc::new(Settings {
            default_volume_type: args.default_volume_type.clone(),
        }),
    };
    let config = ServiceConfig {
        public_endpoint: args.public_endpoint.clone(),
        request_timeout: args.request_timeout(),
        max_body_bytes: args.max_body_bytes,
    };
    let auth = authenticator(&args, &policy, config.request_timeout)?;
    // Work that a previous run of this host left half-done is finished in the background.
    let grace = chrono::Duration::from_std(config.request_timeout * 2)
        .unwrap_or(chrono::Duration::minutes(2));
    let recovering = service.clone();
    tokio::spawn(async move {
        match recovering.recover_interrupted_work(grace).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(volumes = n, "interrupted volume work finished"),
            Err(err) => tracing::error!(error = %err, "could not finish interrupted volume work"),
        }
    });
    let state = AppState::new(service, config, auth);
    let listener = bind(args.listen, args.reuse_port).map_err(|source| StartError::Bind {
        addr: args.listen,
        source,
    })?;
    tokio::spawn(reload_policy_on_hangup(policy));
    if let Some(addr) = args.metrics_listen {
        let metrics = TcpListener::bind(addr)
            .await
            .map_err(|source| StartError::Bind { addr, source })?;
        let local = metrics.local_addr().map_err(StartError::Serve)?;
        tracing::info!(address = %local, "metrics listening");
        let router = metrics_router(state.clone());
        tokio::spawn(async move {
            if let Err(err) = axum::serve(metrics, router).await {
                tracing::error!(%err, "metrics listener stopped");
            }
        });
    }
    let local = listener.local_addr().map_err(StartError::Serve)?;
    tracing::info!(address = %local, store = ?store.kind(), "cinder-attach listening");
    serve(listener, state, shutdown_signal(), args.shutdown_grace()).await?;
    // Requests cut off by the grace period may still hold connections; closing the pool
    // waits for them, so it is bounded too. Their transactions roll back either way.
    if tokio::time::timeout(Duration::from_secs(2), store.close())
        .await
        .is_err()
    {
        tracing::warn!("database connections still busy at exit; their transactions roll back");
    }
    tracing::info!("stopped");
    Ok(())
}

/// The listening socket. With `reuse_port` several processes can listen on one address
/// and the kernel spreads connections over them (Linux `SO_REUSEPORT`).
fn bind(addr: SocketAddr, reuse_port: bool) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    #[cfg(unix)]
    socket.set_reuseport(reuse_port)?;
    #[cfg(not(unix))]
    let _ = reuse_port;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// Serves on an already bound listener until `shutdown` resolves; then stops accepting
/// and lets in-flight requests finish, for at most `grace`.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> Result<(), StartError> {
    let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
    let server = axum::serve(listener, build_app(state)).with_graceful_shutdown(async move {
        shutdown.await;
        let _ = stopping_tx.send(());
    });
    let deadline = async move {
        if stopping_rx.await.is_ok() {
            tokio::time::sleep(grace).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        served = server => served.map_err(StartError::Serve),
        () = deadline => {
            tracing::warn!(seconds = grace.as_secs_f64(), "requests still running after the shutdown grace period are cut off");
            Ok(())
        }
    }
}

/// SIGHUP re-reads the policy file; requests keep being served with the old rules until
/// the new ones are in place, and a broken file leaves the old rules in force.
async fn reload_policy_on_hangup(policy: Arc<PolicyEngine>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let Ok(mut hangups) = signal(SignalKind::hangup()) else {
            tracing::warn!("cannot listen for SIGHUP; policy reload is off");
            return;
        };
        while hangups.recv().await.is_some() {
            match policy.reload() {
                Ok(()) => tracing::info!("policy reloaded"),
                Err(err) => {
                    tracing::error!(error = %err, "policy not reloaded; the previous rules stay")
                }
            }
        }
    }
    #[cfg(not(unix))]
    drop(policy);
}

fn authenticator(
    args: &ServeArgs,
    policy: &Arc<PolicyEngine>,
    timeout: Duration,
) -> Result<Authenticator, StartError> {
    Ok(match args.auth_strategy {
        AuthStrategy::Noauth => Authenticator::Noauth,
        AuthStrategy::TrustedHeaders => Authenticator::TrustedHeaders(policy.clone()),
        AuthStrategy::Keystone => {
            let k = &args.keystone;
            let missing =
                |flag: &str| StartError::Config(format!("--auth-strategy keystone needs {flag}"));
            let config = KeystoneConfig {
                url: k
                    .keystone_url
                    .clone()
                    .ok_or_else(|| missing("--keystone-url"))?,
                username: k.keystone_username.clone(),
                password: k
                    .keystone_password
                    .clone()
                    .ok_or_else(|| missing("--keystone-password"))?,
                project_name: k.keystone_project.clone(),
                user_domain: k.keystone_user_domain.clone(),
                project_domain: k.keystone_project_domain.clone(),
                cache_seconds: k.keystone_cache_seconds,
                cache_size: k.keystone_cache_size,
                timeout: timeout.min(Duration::from_secs(10)),
            };
            Authenticator::Keystone(Arc::new(KeystoneAuth::new(config, policy.clone())))
        }
    })
}

/// `cinder-attach bench`: prints the report (and writes it as JSON when asked); fails
/// when any request errored.
pub async fn bench(args: crate::bench::BenchArgs) -> Result<(), StartError> {
    let json_path = args.json.clone();
    let report = crate::bench::run(args).await.map_err(StartError::Config)?;
    print!("{}", crate::bench::render(&report));
    if let Some(path) = json_path {
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        std::fs::write(&path, text)
            .map_err(|e| StartError::Config(format!("cannot write {}: {e}", path.display())))?;
    }
    if report.errors > 0 {
        return Err(StartError::Config(format!(
            "{} requests failed",
            report.errors
        )));
    }
    Ok(())
}

/// `cinder-attach check`: `Ok(true)` when nothing is broken.
pub async fn check(
    db: &DatabaseArgs,
    serve: &ServeArgs,
    args: &crate::cli::CheckArgs,
) -> Result<bool, StartError> {
    let backends = crate::check::backends_from_specs(&serve.backends, &serve.host_name())
        .map_err(StartError::Config)?;
    let store = store::connect(&connect_options(db, false, false)).await?;
    let report = crate::check::run(store.as_ref(), &backends).await;
    store.close().await;
    let report = report.map_err(StartError::Config)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print!("{}", report.render());
    }
    Ok(report.findings.is_empty())
}

/// `cinder-attach policy`: the effective rules.
pub fn print_policy(args: &ServeArgs) -> Result<(), StartError> {
    let policy = PolicyEngine::load(args.policy_file.clone()).map_err(StartError::Policy)?;
    print!("{}", policy.current().render());
    Ok(())
}

async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(err) => {
                tracing::warn!(%err, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
    tracing::info!("shutting down");
}
