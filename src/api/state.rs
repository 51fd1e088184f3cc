//! What every handler can reach: the use cases, request-time settings, authentication
//! and metrics.

use std::sync::Arc;
use std::time::Duration;

use crate::api::console::SignInLimiter;
use crate::auth::Authenticator;
use crate::metrics::Metrics;
use crate::notify::RelayHealth;
use crate::service::Service;

/// Settings handlers need at request time.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    pub public_endpoint: Option<String>,
    pub request_timeout: Duration,
    pub max_body_bytes: usize,
    /// The notification relay's health, when this process relays (`--notify-url`).
    pub relay: Option<Arc<RelayHealth>>,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            public_endpoint: None,
            request_timeout: Duration::from_secs(60),
            max_body_bytes: 1024 * 1024,
            relay: None,
        }
    }
}

/// Cloned for every extractor and middleware layer of every request, so one shared
/// counter: cloning and dropping the parts one by one touched nine, which both cores
/// updated on every request (about 1.4 % of the server's CPU in a profile, issue 27).
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

pub struct Shared {
    pub service: Service,
    pub config: Arc<ServiceConfig>,
    pub auth: Arc<Authenticator>,
    pub metrics: Arc<Metrics>,
    /// Failed console sign-ins per client.
    pub sign_ins: SignInLimiter,
}

impl AppState {
    pub fn new(service: Service, config: ServiceConfig, auth: Authenticator) -> Self {
        AppState(Arc::new(Shared {
            service,
            config: Arc::new(config),
            auth: Arc::new(auth),
            metrics: Arc::new(Metrics::default()),
            sign_ins: SignInLimiter::default(),
        }))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}
