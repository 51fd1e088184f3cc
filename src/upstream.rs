//! The HTTP client for the OpenStack services the volume service calls on a user's
//! behalf (Glance for images, Barbican for keys): each request carries the caller's
//! token, goes to the first configured server that answers, and is bounded by a timeout.

use std::time::Duration;

use axum::body::Bytes;
use axum::http::{header, Method, Request, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use crate::tls_client::TlsClient;

pub type Body = BoxBody<Bytes, std::io::Error>;

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a connection may sit idle and still be used again. Servers close idle
/// connections on their own clock (Glance under gunicorn after 2 s): one reused just as
/// the server closes it fails a request that cannot be sent again (an image upload's
/// streamed body), so a connection is only reused well inside that.
const POOL_IDLE: Duration = Duration::from_secs(1);

/// One service's servers and the connection pool to them.
pub struct Upstream {
    /// What the service is called in messages ("Glance", "Barbican").
    name: &'static str,
    servers: Vec<String>,
    timeout: Duration,
    client: Client<HttpsConnector<HttpConnector>, Body>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(self.name)
            .field("servers", &self.servers)
            .finish()
    }
}

/// What a call brought back: the status and the whole body.
pub struct Answer {
    pub status: StatusCode,
    pub body: Bytes,
}

/// What went wrong in an answer, before each client names it in its own terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    NotFound,
    /// A server error: the service is not working, with its status and what it said.
    Unavailable(String),
    /// Any other refusal: its status and what it said.
    Refused(u16, String),
}

impl Answer {
    /// `None` for a success; else 404, a server error, or another refusal.
    pub fn failure(&self) -> Option<Failure> {
        let status = self.status;
        if status.is_success() {
            None
        } else if status == StatusCode::NOT_FOUND {
            Some(Failure::NotFound)
        } else if status.is_server_error() {
            Some(Failure::Unavailable(format!("{status}: {}", self.said())))
        } else {
            Some(Failure::Refused(status.as_u16(), self.said()))
        }
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The body as one line of at most 300 characters, for an error message.
    pub fn said(&self) -> String {
        said(&self.body)
    }
}

/// A body as one line of at most 300 characters.
pub fn said(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    text.chars().take(300).collect()
}

impl Upstream {
    /// `servers` are URLs or `host:port` (then http); a trailing `version` path (such as
    /// `/v2`) is dropped, as the calls name their version.
    pub fn new(
        name: &'static str,
        servers: &[String],
        version: &str,
        timeout: Option<Duration>,
        tls: &TlsClient,
    ) -> Result<Upstream, String> {
        if servers.is_empty() {
            return Err(format!("no {name} server is configured"));
        }
        let servers = servers
            .iter()
            .map(|s| base_url(name, s, version))
            .collect::<Result<Vec<_>, _>>()?;
        let connector = HttpsConnectorBuilder::new()
            .with_tls_config(tls.config(name)?)
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Upstream {
            name,
            servers,
            timeout: timeout.unwrap_or(DEFAULT_TIMEOUT),
            client: Client::builder(TokioExecutor::new())
                .pool_idle_timeout(POOL_IDLE)
                .build(connector),
        })
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sends one request to the first server that answers; `json` is sent afresh on each
    /// try, so only requests with a small body are retried. `Err` says why none answered.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        json: Option<&Value>,
        accept: Option<&str>,
    ) -> Result<hyper::Response<Incoming>, String> {
        let mut headers = Vec::new();
        if let Some(token) = token {
            headers.push(("X-Auth-Token", token));
        }
        if let Some(accept) = accept {
            headers.push((header::ACCEPT.as_str(), accept));
        }
        self.call_with_headers(method, path, &headers, json).await
    }

    /// `call` with any headers (a microversion, a service token).
    pub async fn call_with_headers(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        json: Option<&Value>,
    ) -> Result<hyper::Response<Incoming>, String> {
        let mut last = String::new();
        for server in &self.servers {
            let mut request = Request::builder()
                .method(method.clone())
                .uri(format!("{server}{path}"));
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            let body = match json {
                Some(json) => {
                    request = request.header(header::CONTENT_TYPE, "application/json");
                    Full::new(Bytes::from(json.to_string()))
                        .map_err(|e| match e {})
                        .boxed()
                }
                None => empty(),
            };
            let request = request.body(body).map_err(|e| e.to_string())?;
            match tokio::time::timeout(self.timeout, self.client.request(request)).await {
                Ok(Ok(response)) => return Ok(response),
                Ok(Err(e)) => last = format!("{server}: {e}"),
                Err(_) => last = format!("{server}: no answer in {:?}", self.timeout),
            }
        }
        Err(last)
    }

    /// Sends a request with a streamed body to the first server (a stream cannot be sent
    /// twice). `path` starts with `/`.
    pub async fn send_stream(
        &self,
        request: axum::http::request::Builder,
        path: &str,
        token: Option<&str>,
        body: Body,
    ) -> Result<hyper::Response<Incoming>, String> {
        let server = &self.servers[0];
        let mut request = request.uri(format!("{server}{path}"));
        if let Some(token) = token {
            request = request.header("X-Auth-Token", token);
        }
        let request = request.body(body).map_err(|e| e.to_string())?;
        self.client
            .request(request)
            .await
            .map_err(|e| format!("{server}: {e}"))
    }

    /// Reads a whole (small) answer within the timeout.
    pub async fn read(&self, response: hyper::Response<Incoming>) -> Result<Answer, String> {
        let status = response.status();
        let body = tokio::time::timeout(self.timeout, response.into_body().collect())
            .await
            .map_err(|_| "the answer did not come".to_owned())?
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok(Answer { status, body })
    }

    /// `call`, then `read`.
    pub async fn exchange(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        json: Option<&Value>,
        accept: Option<&str>,
    ) -> Result<Answer, String> {
        let response = self.call(method, path, token, json, accept).await?;
        self.read(response).await
    }
}

/// `host:port` becomes `http://host:port`, as Cinder reads its servers; a trailing
/// version (`/v2`) goes.
fn base_url(name: &str, server: &str, version: &str) -> Result<String, String> {
    let server = server.trim().trim_end_matches('/');
    let url = if server.contains("://") {
        server.to_owned()
    } else {
        format!("http://{server}")
    };
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!(
            "the {name} server {server:?} must be host:port or an http(s) URL"
        ));
    }
    Ok(url.trim_end_matches(version).to_owned())
}

pub fn empty() -> Body {
    Full::new(Bytes::new()).map_err(|e| match e {}).boxed()
}

/// Percent-encodes what is not safe in one path segment or query value.
pub fn path_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_without_a_scheme_are_http() {
        assert_eq!(
            base_url("Glance", "127.0.0.1:9292", "/v2").unwrap(),
            "http://127.0.0.1:9292"
        );
        assert_eq!(
            base_url("Glance", "https://glance.example/v2/", "/v2").unwrap(),
            "https://glance.example"
        );
        assert_eq!(
            base_url("Barbican", "http://kms:9311/v1", "/v1").unwrap(),
            "http://kms:9311"
        );
        assert!(base_url("Glance", "ftp://glance", "/v2").is_err());
    }

    #[test]
    fn names_are_encoded_for_the_query() {
        assert_eq!(path_segment("a b/c&d"), "a%20b%2Fc%26d");
    }

    #[test]
    fn what_a_service_said_is_one_short_line() {
        assert_eq!(said(b"a\n  b\tc"), "a b c");
        assert_eq!(said(&[b'x'; 400]).len(), 300);
    }
}
