//! `cinder-attach serve`: start-up (store, backends, policy, authentication), the
//! listener, and a graceful shutdown.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

use super::connections::{accept_until, ConnectionLimits};
use super::{connect_options, StartError};
use crate::api::{build_app, metrics_router, AppState, ServiceConfig};
use crate::auth::catalog::CatalogEntry;
use crate::auth::keystone::{KeystoneAuth, KeystoneConfig};
use crate::auth::keystone_tls::KeystoneTls;
use crate::auth::Authenticator;
use crate::cli::KeyBackend;
use crate::cli::{AuthStrategy, EventsMode, MigrateMode, ServeArgs};
use crate::clock::{Clock, SystemClock};
use crate::compute::{Nova, NovaConfig};
use crate::keys::KeyManager;
use crate::notify::{self, BusConfig};
use crate::policy::PolicyEngine;
use crate::service::volume_gates::{self, VolumeGates};
use crate::service::{
    exports, keep_reporting, register_backends, BackupSettings, Service, Settings,
};
use crate::store::{self, StoreKind};

/// `cinder-attach serve`: runs until SIGINT or SIGTERM.
pub async fn run(args: ServeArgs) -> Result<(), StartError> {
    let db = &args.database;
    if args.auth_strategy == AuthStrategy::Noauth
        && !args.listen.ip().is_loopback()
        && !args.allow_insecure_noauth
    {
        return Err(StartError::InsecureNoauth(args.listen));
    }
    let policy =
        Arc::new(PolicyEngine::load(args.policy.policy_file.clone()).map_err(StartError::Policy)?);
    let mut options = connect_options(db, args.migrate == MigrateMode::Auto, true);
    options.record_events = args.notify.events == EventsMode::On;
    let store = store::connect(&options).await?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let host_name = args.backends.host_name();
    crate::origin::set_publisher(&host_name);
    let mut relay = None;
    if let Some(url) = &args.notify.notify_url {
        let bus = bus_config(&args.notify, url).map_err(StartError::Config)?;
        let holder = format!(
            "{host_name}:{}:{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        );
        notify::check_bus(&bus).await.map_err(StartError::Config)?;
        let health = Arc::new(notify::RelayHealth::default());
        notify::start(store.clone(), clock.clone(), bus, holder, health.clone());
        relay = Some(health);
        tracing::info!(exchange = %args.notify.notify_exchange, topic = %args.notify.notify_topic, "notifications relayed to the message bus");
    }
    let backends = register_backends(
        &store,
        &args.backends.backends,
        &args.backends.host_name(),
        &clock,
    )
    .await?;
    for backend in backends.iter() {
        tracing::info!(host = %backend.host, service_uuid = %backend.service_uuid, "backend ready");
    }
    // Exports are put back before the first request, then kept so.
    let backends = Arc::new(backends);
    exports::reconcile_once(&backends).await;
    exports::keep_reconciled(backends.clone());
    let backups_ready = Arc::new(AtomicBool::new(false));
    keep_reporting(
        store.clone(),
        backends.clone(),
        clock.clone(),
        backups_ready.clone(),
    );
    let auth = authenticator(&args, &policy, args.request_timeout())?;
    let glance = find_glance(&args, &auth).await?;
    let nova = nova(&args, &auth, &policy)?;
    let service = Service {
        store: store.clone(),
        policy: policy.clone(),
        backends,
        clock,
        settings: Arc::new(Settings {
            default_volume_type: args.default_volume_type.clone(),
            max_attachments_per_volume: Settings::attachment_cap(args.max_attachments_per_volume),
            quota_defaults: args.quota_defaults(),
            key_manager: key_manager(&args, &auth).await?,
            glance: glance.map(Arc::new),
            image_conversion_dir: args.images.conversion_dir(),
            image_conversion_timeout: std::time::Duration::from_secs(
                args.images.image_conversion_timeout,
            ),
            enable_force_upload: args.images.enable_force_upload,
            image_rules: args.images.image_rules(),
            nova,
            nova_retry_for: chrono::Duration::seconds(args.nova.nova_retry_for as i64),
            // Twice what a request may take: no request of this process still runs then.
            interrupted_after: chrono::Duration::from_std(args.request_timeout() * 2)
                .unwrap_or(chrono::Duration::minutes(2)),
            backups: Some(BackupSettings {
                repository: args.backups.repository(),
                host: args.backends.host_name(),
                stale_after: std::time::Duration::from_secs(args.backups.backup_stale_after),
                ready: backups_ready,
            }),
        }),
        gates: Arc::new(VolumeGates::new(match store.kind() {
            StoreKind::Sqlite => volume_gates::SINGLE_WRITER_TURNS,
            StoreKind::Postgres => volume_gates::ROW_LOCK_TURNS,
        })),
    };
    let config = ServiceConfig {
        public_endpoint: args.public_endpoint.clone(),
        request_timeout: args.request_timeout(),
        max_body_bytes: args.max_body_bytes,
        relay,
    };
    // Work that a previous run of this host left half-done is finished in the background.
    let grace = service.settings.interrupted_after;
    let recovering = service.clone();
    tokio::spawn(async move {
        match recovering.recover_interrupted_work(grace).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(volumes = n, "interrupted volume work finished"),
            Err(err) => tracing::error!(error = %err, "could not finish interrupted volume work"),
        }
    });
    let init_interval = Duration::from_secs(args.backups.backup_driver_init_check_interval);
    service.keep_setting_backups_up(init_interval).await;
    service.keep_recovering_backups();
    service.keep_calling_nova();
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
    let stop = shutdown_signal();
    tracing::info!(address = %local, store = ?store.kind(), "cinder-attach listening");
    let limits = ConnectionLimits {
        header_read_timeout: args.header_read_timeout(),
        max_connections: args.max_connections,
    };
    serve(listener, state, limits, stop, args.shutdown_grace()).await?;
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

/// Where and how the relay publishes: every host over TLS when `--notify-ssl` says so,
/// the TLS files read now so that an unusable one stops start-up.
fn bus_config(notify: &crate::cli::NotifyArgs, url: &str) -> Result<BusConfig, String> {
    let url = if notify.notify_ssl {
        notify::with_tls(url)
    } else {
        url.to_owned()
    };
    let files = crate::tls_client::TlsClient {
        cafile: notify.notify_ssl_ca_file.clone(),
        certfile: notify.notify_ssl_cert_file.clone(),
        keyfile: notify.notify_ssl_key_file.clone(),
        insecure: false,
    };
    let tls = if url.split_whitespace().any(|u| u.starts_with("amqps://")) {
        Some(notify::tls::BusTls::new(&files)?)
    } else {
        None
    };
    Ok(BusConfig {
        url,
        exchange: notify.notify_exchange.clone(),
        topic: notify.notify_topic.clone(),
        durable: notify.notify_durable,
        tls,
    })
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
    limits: ConnectionLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> Result<(), StartError> {
    let open = accept_until(listener, build_app(state), limits, shutdown).await;
    // Idle connections close at once; requests in flight get the grace period.
    tokio::select! {
        () = open.shutdown() => {}
        () = tokio::time::sleep(grace) => {
            tracing::warn!(seconds = grace.as_secs_f64(), "requests still running after the shutdown grace period are cut off");
        }
    }
    Ok(())
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

/// The key manager the options name; Barbican's endpoint, when not given, from Keystone's
/// catalog (castellan's `key-manager` entry). Asked for and not found stops the start:
/// every encrypted volume would fail.
async fn key_manager(args: &ServeArgs, auth: &Authenticator) -> Result<KeyManager, StartError> {
    let keys = &args.keys;
    match keys.backend().map_err(StartError::Config)? {
        None => Ok(KeyManager::None),
        Some(KeyBackend::Fixed) => {
            let hex = keys.key_manager_fixed_key.as_deref().unwrap_or_default();
            KeyManager::fixed(hex).map_err(StartError::Config)
        }
        Some(KeyBackend::Barbican) => {
            let endpoint = match (&keys.barbican_endpoint, auth) {
                (Some(endpoint), _) => endpoint.clone(),
                (None, Authenticator::Keystone(keystone)) => {
                    let entry = keys.catalog_entry().map_err(StartError::Config)?;
                    let found = keystone.catalog_endpoint(&entry).await.map_err(|e| {
                        StartError::Config(format!(
                            "Barbican's endpoint could not be read from Keystone's catalog: {e}"
                        ))
                    })?;
                    found.ok_or_else(|| {
                        StartError::Config(
                            "no key-manager endpoint in Keystone's catalog: set [barbican] barbican_endpoint"
                                .to_owned(),
                        )
                    })?
                }
                (None, _) => {
                    return Err(StartError::Config(
                        "the barbican key manager needs [barbican] barbican_endpoint, or Keystone's catalog (--auth-strategy keystone)"
                            .to_owned(),
                    ))
                }
            };
            tracing::info!(%endpoint, "keys of encrypted volumes are kept in Barbican");
            let service = match auth {
                Authenticator::Keystone(keystone) => Some(keystone.clone()),
                _ => None,
            };
            let barbican = keys
                .barbican(&endpoint, service)
                .map_err(StartError::Config)?;
            Ok(KeyManager::Barbican(Arc::new(barbican)))
        }
    }
}

/// Glance from `--glance-api-servers`, else from Keystone's catalog (through the
/// service's own login, as Cinder finds it there); `None` when neither names one, and
/// image requests are then refused.
async fn find_glance(
    args: &ServeArgs,
    auth: &Authenticator,
) -> Result<Option<crate::image::Glance>, StartError> {
    let mut servers = args.images.glance_api_servers.clone();
    if servers.is_empty() {
        if let Authenticator::Keystone(keystone) = auth {
            let entry = args.images.catalog_entry().map_err(StartError::Config)?;
            match keystone.catalog_endpoint(&entry).await {
                Ok(Some(url)) => {
                    tracing::info!(%url, "Glance found in Keystone's catalog");
                    servers.push(url);
                }
                Ok(None) => tracing::info!(
                    catalog_info = %args.images.glance_catalog_info,
                    "no Glance in Keystone's catalog: image requests will be refused"
                ),
                Err(err) => tracing::warn!(
                    error = %err,
                    "Keystone's catalog could not be read: image requests will be refused until a restart"
                ),
            }
        }
    }
    args.images.glance(&servers).map_err(StartError::Config)
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
                negative_cache_seconds: k.keystone_negative_cache_seconds,
                timeout: timeout.min(Duration::from_secs(10)),
                tls: KeystoneTls {
                    cafile: k.keystone_cafile.clone(),
                    insecure: k.keystone_insecure,
                    certfile: k.keystone_certfile.clone(),
                    keyfile: k.keystone_keyfile.clone(),
                },
            };
            if config.tls.insecure {
                tracing::warn!("--keystone-insecure: Keystone's certificate is not checked; anyone between here and Keystone can answer for it");
            }
            let keystone = KeystoneAuth::new(config, policy.clone()).map_err(StartError::Config)?;
            Authenticator::Keystone(Arc::new(keystone))
        }
    })
}

/// Nova, when the service can call it: as the `[nova]` user (--nova-auth-url and its
/// login), else as the service's own Keystone user; `None` without either.
fn nova(
    args: &ServeArgs,
    auth: &Authenticator,
    policy: &Arc<PolicyEngine>,
) -> Result<Option<Arc<Nova>>, StartError> {
    let n = &args.nova;
    let own = match auth {
        Authenticator::Keystone(keystone) => Some(keystone.clone()),
        _ => None,
    };
    let login = match &n.nova_auth_url {
        Some(url) => {
            let password = n.nova_password.clone().ok_or_else(|| {
                StartError::Config("--nova-auth-url needs --nova-password".to_owned())
            })?;
            let config = KeystoneConfig {
                url: url.clone(),
                username: n.nova_username.clone(),
                password,
                project_name: n.nova_project.clone(),
                user_domain: n.nova_user_domain.clone(),
                project_domain: n.nova_project_domain.clone(),
                cache_seconds: 0,
                cache_size: 0,
                negative_cache_seconds: 0,
                timeout: Duration::from_secs(n.nova_timeout.max(1)),
                tls: KeystoneTls {
                    cafile: n.nova_cafile.clone(),
                    insecure: n.nova_insecure,
                    certfile: None,
                    keyfile: None,
                },
            };
            Arc::new(KeystoneAuth::new(config, policy.clone()).map_err(StartError::Config)?)
        }
        None => match &own {
            Some(keystone) => keystone.clone(),
            None => {
                tracing::info!("no Nova configured (--nova-auth-url, or --auth-strategy keystone): Nova is not told of extends and re-images");
                return Ok(None);
            }
        },
    };
    let service_token = match (n.nova_send_service_token, &own) {
        (false, _) => None,
        (true, Some(keystone)) => Some(keystone.clone()),
        (true, None) => {
            return Err(StartError::Config(
                "--nova-send-service-token needs the service's own Keystone login (--auth-strategy keystone)"
                    .to_owned(),
            ))
        }
    };
    let config = NovaConfig {
        login,
        endpoint: n.nova_endpoint.clone(),
        catalog: CatalogEntry {
            service_type: "compute".to_owned(),
            service_name: String::new(),
            interface: n.nova_interface.clone(),
            region: n.nova_region_name.clone().filter(|r| !r.is_empty()),
        },
        service_token,
        timeout: Duration::from_secs(n.nova_timeout.max(1)),
        tls: crate::tls_client::TlsClient {
            cafile: n.nova_cafile.clone(),
            insecure: n.nova_insecure,
            ..Default::default()
        },
    };
    Ok(Some(Arc::new(Nova::new(config))))
}

/// Listens for SIGINT and SIGTERM from the moment it is called, not from the future's
/// first poll: `serve` polls it only once its loop runs, and a stop sent as soon as the
/// listening line is logged must still be a graceful one.
#[cfg(unix)]
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let listen = |kind: SignalKind, name: &'static str| {
        signal(kind)
            .map_err(|err| tracing::warn!(%err, "cannot listen for {name}"))
            .ok()
    };
    let interrupt = listen(SignalKind::interrupt(), "SIGINT");
    let terminate = listen(SignalKind::terminate(), "SIGTERM");
    async move {
        let received = |signal: Option<tokio::signal::unix::Signal>| async move {
            match signal {
                Some(mut signal) => {
                    signal.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            () = received(interrupt) => {}
            () = received(terminate) => {}
        }
        tracing::info!("shutting down");
    }
}

#[cfg(not(unix))]
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down");
    }
}
