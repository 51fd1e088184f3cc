//! A keep-alive HTTP client speaking to any Cinder-compatible endpoint with noauth tokens.

use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

#[derive(Clone)]
pub struct CinderClient {
    client: Client<HttpConnector, Full<Bytes>>,
    base: String,
    token: String,
    service_role: bool,
}

/// One answer: status, parsed body (Null when empty or not JSON), and how long it took.
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub elapsed: Duration,
}

impl CinderClient {
    /// `base` is the project URL, e.g. `http://127.0.0.1:8776/v3/<project>`.
    pub fn new(base: String, token: String, service_role: bool) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(256)
            .build(connector);
        CinderClient {
            client,
            base,
            token,
            service_role,
        }
    }

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        version: &str,
        body: Option<&Value>,
    ) -> Result<Answer, String> {
        let payload = body.map(|b| b.to_string()).unwrap_or_default();
        let mut request = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("x-auth-token", &self.token)
            .header("openstack-api-version", format!("volume {version}"));
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        if self.service_role {
            request = request.header("x-service-roles", "service");
        }
        let request = request
            .body(Full::new(Bytes::from(payload)))
            .map_err(|e| e.to_string())?;
        let started = Instant::now();
        let response = tokio::time::timeout(Duration::from_secs(60), self.client.request(request))
            .await
            .map_err(|_| "timed out".to_owned())?
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let elapsed = started.elapsed();
        Ok(Answer {
            status,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            elapsed,
        })
    }
}
