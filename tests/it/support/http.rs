//! Driving the app in-process with `oneshot`: no sockets, no sleeps.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use axum::Router;
use std::path::PathBuf;

use cinder_attach::api::{build_app, AppState, ServiceConfig};
use cinder_attach::auth::Authenticator;
use cinder_attach::backend::{BackendSpec, Backends};
use cinder_attach::clock::{Clock, SystemClock};
use cinder_attach::policy::{Policy, PolicyEngine};
use cinder_attach::service::{register_backends, Service, Settings};
use cinder_attach::store::Store;
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

use super::db::TestDb;

async fn register(store: &Arc<dyn Store>, specs: &[&str]) -> Arc<Backends> {
    let specs: Vec<BackendSpec> = specs
        .iter()
        .map(|s| s.parse().expect("backend spec"))
        .collect();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    cinder_attach::origin::set_publisher("test-host");
    let backends = register_backends(store, &specs, "test-host", &clock)
        .await
        .expect("backends register");
    Arc::new(backends)
}

/// How the test app authenticates callers.
#[derive(Clone)]
pub enum AuthMode {
    Noauth,
    TrustedHeaders,
    Custom(Authenticator),
}

fn build_state(
    store: &Arc<dyn Store>,
    config: &ServiceConfig,
    policy: &Policy,
    backends: &Arc<Backends>,
    auth: &AuthMode,
    settings: &Settings,
) -> AppState {
    let engine = Arc::new(PolicyEngine::new(policy.clone()));
    let authenticator = match auth {
        AuthMode::Noauth => Authenticator::Noauth,
        AuthMode::TrustedHeaders => Authenticator::TrustedHeaders(engine.clone()),
        AuthMode::Custom(custom) => custom.clone(),
    };
    let service = Service {
        store: store.clone(),
        policy: engine,
        backends: backends.clone(),
        clock: Arc::new(SystemClock),
        settings: Arc::new(settings.clone()),
        gates: Default::default(),
    };
    AppState::new(service, config.clone(), authenticator)
}

/// The default caller: noauth admin of project `p1`.
pub const ADMIN_TOKEN: &str = "admin:p1";

pub struct TestApp {
    pub router: Router,
    pub state: AppState,
    pub store: Arc<dyn Store>,
    pub db: TestDb,
    /// Where the default `file` backend keeps volume files.
    pub volumes_dir: PathBuf,
    config: ServiceConfig,
    policy: Policy,
    backends: Arc<Backends>,
    backend_specs: Vec<String>,
    auth: AuthMode,
    settings: Settings,
}

impl TestApp {
    pub async fn new(db: TestDb) -> TestApp {
        let store = db.store().await;
        let volumes_dir =
            std::env::temp_dir().join(format!("cinder-attach-volumes-{}", uuid::Uuid::new_v4()));
        let spec = format!("file=file,dir={}", volumes_dir.display());
        let backends = register(&store, &[spec.as_str()]).await;
        let config = ServiceConfig::default();
        let policy = Policy::with_defaults();
        let auth = AuthMode::Noauth;
        let settings = Settings::default();
        let state = build_state(&store, &config, &policy, &backends, &auth, &settings);
        TestApp {
            router: build_app(state.clone()),
            state,
            store,
            db,
            volumes_dir,
            config,
            policy,
            backends,
            backend_specs: vec![spec],
            auth,
            settings,
        }
    }

    fn rebuild(mut self) -> TestApp {
        self.state = build_state(
            &self.store,
            &self.config,
            &self.policy,
            &self.backends,
            &self.auth,
            &self.settings,
        );
        self.router = build_app(self.state.clone());
        self
    }

    /// The same database behind a router built with other settings.
    pub fn reconfigure(mut self, config: ServiceConfig) -> TestApp {
        self.config = config;
        self.rebuild()
    }

    /// The same database behind a service with other deployment settings.
    pub fn with_settings(mut self, settings: Settings) -> TestApp {
        self.settings = settings;
        self.rebuild()
    }

    /// The same app with another way of authenticating callers.
    pub fn with_auth(mut self, auth: AuthMode) -> TestApp {
        self.auth = auth;
        self.rebuild()
    }

    /// The same app with one policy rule replaced.
    pub fn with_rule(mut self, rule: &str, check: &str) -> TestApp {
        self.policy.set_rule(rule, check).expect("rule parses");
        self.rebuild()
    }

    /// The same app with other backends (`NAME=DRIVER,...` each).
    pub async fn with_backends(mut self, specs: &[&str]) -> TestApp {
        self.backends = register(&self.store, specs).await;
        self.backend_specs = specs.iter().map(|s| (*s).to_owned()).collect();
        self.rebuild()
    }

    /// The `--backend` specs the app runs with.
    pub fn backend_specs(&self) -> &[String] {
        &self.backend_specs
    }

    /// The app's configured backends.
    pub fn backends(&self) -> Arc<Backends> {
        self.backends.clone()
    }

    /// The file the default backend keeps for a volume.
    pub fn volume_file(&self, volume_id: &str) -> PathBuf {
        self.volumes_dir.join(format!("volume-{volume_id}"))
    }

    /// A request with the admin token and no microversion header.
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        RequestBuilder {
            router: self.router.clone(),
            builder: Request::builder()
                .method(method)
                .uri(path)
                .header("x-auth-token", ADMIN_TOKEN),
            body: Body::empty(),
        }
    }

    pub fn get(&self, path: &str) -> RequestBuilder {
        self.request(Method::GET, path)
    }
}

pub struct RequestBuilder {
    router: Router,
    builder: axum::http::request::Builder,
    body: Body,
}

impl RequestBuilder {
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.builder = self.builder.header(name, value);
        self
    }

    /// `OpenStack-API-Version: volume <version>`.
    pub fn version(self, version: &str) -> Self {
        self.header("OpenStack-API-Version", &format!("volume {version}"))
    }

    pub fn token(mut self, token: &str) -> Self {
        if let Some(headers) = self.builder.headers_mut() {
            headers.insert(
                "x-auth-token",
                token.parse().expect("token is a header value"),
            );
        }
        self
    }

    pub fn without_token(mut self) -> Self {
        if let Some(headers) = self.builder.headers_mut() {
            headers.remove("x-auth-token");
        }
        self
    }

    pub fn json(self, body: &Value) -> Self {
        self.raw_body("application/json", body.to_string())
    }

    pub fn raw_body(mut self, content_type: &str, body: impl Into<String>) -> Self {
        self.builder = self.builder.header("content-type", content_type);
        self.body = Body::from(body.into());
        self
    }

    /// A body that need not be UTF-8.
    pub fn raw_bytes(mut self, content_type: &str, body: Vec<u8>) -> Self {
        self.builder = self.builder.header("content-type", content_type);
        self.body = Body::from(body);
        self
    }

    pub async fn send(self) -> TestResponse {
        let request = self.builder.body(self.body).expect("valid request");
        let response = self.router.oneshot(request).await.expect("infallible");
        TestResponse::read(response).await
    }
}

#[derive(Debug)]
pub struct TestResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub text: String,
    /// The parsed body, or `Value::Null` when it is empty or not JSON.
    pub json: Value,
}

impl TestResponse {
    pub async fn read(response: axum::response::Response) -> TestResponse {
        let (parts, body) = response.into_parts();
        let bytes = body.collect().await.expect("body").to_bytes();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        TestResponse {
            status: parts.status,
            headers: parts.headers,
            text,
            json,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts a Cinder fault: the status, its fault key with a matching `code`, and a
    /// message containing `phrase`.
    #[track_caller]
    pub fn assert_fault(&self, status: u16, fault: &str, phrase: &str) {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.text);
        let object = self
            .json
            .as_object()
            .unwrap_or_else(|| panic!("not a JSON object: {}", self.text));
        assert_eq!(object.len(), 1, "one fault key: {}", self.text);
        let inner = &self.json[fault];
        assert_eq!(inner["code"], status, "fault {fault} in {}", self.text);
        let message = inner["message"].as_str().expect("message is a string");
        assert!(
            message.contains(phrase),
            "{message:?} should contain {phrase:?}"
        );
        assert_eq!(self.header("content-type"), Some("application/json"));
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.volumes_dir);
    }
}
