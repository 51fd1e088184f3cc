//! What the service asks of Nova, as Cinder's `cinder/compute/nova.py` does: tell it a
//! volume grew or was re-imaged (`os-server-external-events`, `volume-extended` at 2.51,
//! `volume-reimaged` at 2.93), and have it move a server to another volume (the swap a
//! migration of an attached volume needs). Calls go as the `[nova]` user (Cinder's
//! privileged user), found through Keystone's catalog (`compute`, `region_name`,
//! `interface`) unless an endpoint is given, with the service's own token beside it
//! (`X-Service-Token`) when `[service_user] send_service_user_token` is set.

use std::sync::Arc;
use std::time::Duration;

use axum::http::Method;
use serde_json::{json, Value};
use tokio::sync::Mutex;

use crate::auth::catalog::CatalogEntry;
use crate::auth::keystone::KeystoneAuth;
use crate::domain::detach_guard::NovaUse;
use crate::upstream::{Answer, Upstream};

/// Where Nova is and who calls it.
#[derive(Clone)]
pub struct NovaConfig {
    /// The `[nova]` user's login (its Keystone, user, project).
    pub login: Arc<KeystoneAuth>,
    /// An endpoint to use instead of the catalog's (`--nova-endpoint`).
    pub endpoint: Option<String>,
    /// Where Nova is in the catalog: `compute`, the interface and the region.
    pub catalog: CatalogEntry,
    /// The service's own login, whose token goes as `X-Service-Token` (`None`: none).
    pub service_token: Option<Arc<KeystoneAuth>>,
    pub timeout: Duration,
    pub tls: crate::tls_client::TlsClient,
}

impl std::fmt::Debug for NovaConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NovaConfig")
            .field("endpoint", &self.endpoint)
            .field("catalog", &self.catalog)
            .finish_non_exhaustive()
    }
}

/// One event for Nova: its name, the server and the volume (`tag`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEvent {
    pub name: &'static str,
    pub server: String,
    pub volume: String,
}

/// How a call to Nova went, in the terms the caller decides on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallResult {
    /// Nova took it (each event's code is in the answer).
    Done(String),
    /// Nova refused it for good (404: no such server; another 4xx): what it said.
    Refused(String),
    /// Nova could not be reached, or failed (5xx): worth another try later.
    Unavailable(String),
}

/// The Nova client.
pub struct Nova {
    config: NovaConfig,
    /// The endpoint once found (the catalog is read at the first call).
    upstream: Mutex<Option<Arc<Upstream>>>,
}

impl std::fmt::Debug for Nova {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nova")
            .field("config", &self.config)
            .finish()
    }
}

/// Nova's microversion for each event: the one that brought its name.
fn microversion(event: &str) -> &'static str {
    match event {
        "volume-reimaged" => "2.93",
        _ => "2.51",
    }
}

impl Nova {
    pub fn new(config: NovaConfig) -> Nova {
        Nova {
            config,
            upstream: Mutex::new(None),
        }
    }

    /// The longest one try may take: the `[nova]` user's token (and the service's), then
    /// the call, each bounded by `[nova] timeout`.
    pub fn try_limit(&self) -> Duration {
        self.config.timeout.saturating_mul(2)
    }

    async fn upstream(&self) -> Result<Arc<Upstream>, String> {
        let mut held = self.upstream.lock().await;
        if let Some(upstream) = held.as_ref() {
            return Ok(upstream.clone());
        }
        let url = match &self.config.endpoint {
            Some(url) => url.clone(),
            None => self
                .config
                .login
                .catalog_endpoint(&self.config.catalog)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| {
                    format!(
                        "Keystone's catalog has no {} endpoint ({} interface{})",
                        self.config.catalog.service_type,
                        self.config.catalog.interface,
                        self.config
                            .catalog
                            .region
                            .as_ref()
                            .map(|r| format!(", region {r}"))
                            .unwrap_or_default()
                    )
                })?,
        };
        let upstream = Upstream::new(
            "Nova",
            &[url],
            "/v2.1",
            Some(self.config.timeout),
            &self.config.tls,
        )?;
        let upstream = Arc::new(upstream);
        *held = Some(upstream.clone());
        Ok(upstream)
    }

    /// One call as the `[nova]` user: Nova's answer, or why it did not come.
    async fn send(
        &self,
        method: Method,
        path: &str,
        microversion: &str,
        body: Option<&Value>,
    ) -> Result<Answer, String> {
        let upstream = self.upstream().await?;
        let token = self
            .config
            .login
            .own_token()
            .await
            .map_err(|e| e.to_string())?;
        let service_token = match &self.config.service_token {
            Some(login) => Some(login.own_token().await.map_err(|e| e.to_string())?),
            None => None,
        };
        let version = format!("compute {microversion}");
        let mut headers = vec![
            ("X-Auth-Token", token.as_str()),
            ("OpenStack-API-Version", version.as_str()),
        ];
        if let Some(service_token) = &service_token {
            headers.push(("X-Service-Token", service_token.as_str()));
        }
        let response = upstream
            .call_with_headers(method, path, &headers, body)
            .await?;
        upstream.read(response).await
    }

    /// `POST /os-server-external-events` for `events` (all of one name).
    pub async fn send_events(&self, events: &[ServerEvent]) -> CallResult {
        let Some(first) = events.first() else {
            return CallResult::Done("no event".to_owned());
        };
        let body = json!({"events": events.iter().map(|e| json!({
            "name": e.name, "server_uuid": e.server, "tag": e.volume,
        })).collect::<Vec<_>>()});
        let answer = self
            .send(
                Method::POST,
                "/v2.1/os-server-external-events",
                microversion(first.name),
                Some(&body),
            )
            .await;
        judge(answer)
    }

    /// `PUT /servers/{server}/os-volume_attachments/{old}`: Nova moves the server from
    /// volume `old` to volume `new` (and then calls `os-migrate_volume_completion`).
    pub async fn swap_volume(&self, server: &str, old: &str, new: &str) -> CallResult {
        let path = format!(
            "/v2.1/servers/{}/os-volume_attachments/{}",
            crate::upstream::path_segment(server),
            crate::upstream::path_segment(old)
        );
        let body = json!({"volumeAttachment": {"volumeId": new}});
        judge(self.send(Method::PUT, &path, "2.1", Some(&body)).await)
    }

    /// `GET /servers/{server}/os-volume_attachments/{volume}` at 2.89 (whose answer names
    /// the attachment): whether Nova has the volume attached to the server. `Err`: Nova
    /// could not tell (unreachable, or an answer other than 200 or 404).
    pub async fn server_volume(&self, server: &str, volume: &str) -> Result<NovaUse, String> {
        let path = format!(
            "/v2.1/servers/{}/os-volume_attachments/{}",
            crate::upstream::path_segment(server),
            crate::upstream::path_segment(volume)
        );
        let answer = self.send(Method::GET, &path, "2.89", None).await?;
        match answer.status.as_u16() {
            200 => {
                let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
                let id = body["volumeAttachment"]["attachment_id"].as_str();
                Ok(NovaUse::Attached(id.map(str::to_owned)))
            }
            404 => Ok(NovaUse::NotFound),
            _ => Err(format!("{} {}", answer.status.as_u16(), answer.said())),
        }
    }
}

/// Nova's answer as the caller acts on it: a 2xx (207 included) is done, a 5xx or no
/// answer is worth another try, anything else is final.
fn judge(answer: Result<Answer, String>) -> CallResult {
    match answer {
        Err(why) => CallResult::Unavailable(why),
        Ok(answer) => {
            let said = format!("{} {}", answer.status.as_u16(), answer.said());
            if answer.status.is_success() {
                CallResult::Done(said)
            } else if answer.status.is_server_error() {
                CallResult::Unavailable(said)
            } else {
                CallResult::Refused(said)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Bytes;
    use axum::http::StatusCode;

    fn answer(status: u16, body: &str) -> Result<Answer, String> {
        Ok(Answer {
            status: StatusCode::from_u16(status).unwrap(),
            body: Bytes::from(body.to_owned()),
        })
    }

    #[test]
    fn answers_are_done_refused_or_worth_another_try() {
        assert!(matches!(judge(answer(200, "{}")), CallResult::Done(_)));
        assert!(matches!(judge(answer(207, "{}")), CallResult::Done(_)));
        assert!(matches!(judge(answer(404, "no")), CallResult::Refused(s) if s.starts_with("404")));
        assert!(matches!(judge(answer(403, "no")), CallResult::Refused(_)));
        assert!(matches!(
            judge(answer(503, "down")),
            CallResult::Unavailable(_)
        ));
        assert!(matches!(
            judge(Err("refused".into())),
            CallResult::Unavailable(_)
        ));
        assert_eq!(microversion("volume-extended"), "2.51");
        assert_eq!(microversion("volume-reimaged"), "2.93");
    }
}
