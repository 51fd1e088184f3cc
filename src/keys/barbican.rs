//! Barbican's v1 API as castellan's Barbican key manager uses it: a key is ordered
//! (`POST /v1/orders`, type `key`) and known by its secret's UUID; a copy is stored as a
//! new symmetric secret with the same bytes; a key is read through its payload and
//! deleted with its secret. Every call carries the caller's token, so the secrets belong
//! to the caller's project and Barbican's own policies apply.

use std::sync::Arc;
use std::time::Duration;

use axum::http::Method;
use base64::Engine;
use serde_json::{json, Value};

use super::KeyError;
use crate::auth::keystone::KeystoneAuth;
use crate::tls_client::TlsClient;
use crate::upstream::{path_segment, Answer, Failure, Upstream};

/// Where Barbican is and how long a call may wait for it.
#[derive(Debug, Clone, Default)]
pub struct BarbicanConfig {
    /// Barbican's endpoint (`[barbican] barbican_endpoint`, or the catalog's
    /// `key-manager` entry); a trailing `/v1` is allowed.
    pub endpoint: String,
    pub timeout: Option<Duration>,
    pub tls: TlsClient,
}

#[derive(Debug)]
pub struct Barbican {
    upstream: Upstream,
    /// The service's own Keystone login, tried when a key cannot be deleted with the
    /// caller's token (Cinder retries with its service context).
    service: Option<Arc<KeystoneAuth>>,
}

/// A secret as read back: what it is and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secret {
    pub algorithm: Option<String>,
    pub bit_length: Option<i64>,
    pub payload: Vec<u8>,
}

/// How long an order may take to become a secret, and how often it is asked after.
const ORDER_WAIT: Duration = Duration::from_secs(30);
const ORDER_POLL: Duration = Duration::from_millis(200);

/// A key size an encryption type leaves unset: AES-256, the size Cinder's types use.
const DEFAULT_BITS: i64 = 256;

impl Barbican {
    pub fn new(
        config: &BarbicanConfig,
        service: Option<Arc<KeystoneAuth>>,
    ) -> Result<Barbican, String> {
        let servers = [config.endpoint.clone()];
        let upstream = Upstream::new("Barbican", &servers, "/v1", config.timeout, &config.tls)?;
        Ok(Barbican { upstream, service })
    }

    async fn exchange(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
        accept: &str,
    ) -> Result<Answer, KeyError> {
        self.upstream
            .exchange(method, path, token, body, Some(accept))
            .await
            .map_err(KeyError::Unavailable)
    }

    /// Orders a new key and waits for Barbican to make it; its secret's UUID.
    pub async fn create_key(
        &self,
        token: Option<&str>,
        algorithm: &str,
        bits: Option<i64>,
    ) -> Result<String, KeyError> {
        let order = json!({"type": "key", "meta": {
            "algorithm": algorithm,
            "bit_length": bits.unwrap_or(DEFAULT_BITS),
            "payload_content_type": "application/octet-stream",
        }});
        let answer = self
            .exchange(Method::POST, "/v1/orders", token, Some(&order), JSON)
            .await?;
        check(&answer, "a new key order")?;
        let order_ref = answer.json()["order_ref"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| KeyError::Unavailable("Barbican named no order".into()))?;
        let order_id = last_segment(&order_ref)?;
        let deadline = tokio::time::Instant::now() + ORDER_WAIT;
        loop {
            let path = format!("/v1/orders/{}", path_segment(&order_id));
            let answer = self.exchange(Method::GET, &path, token, None, JSON).await?;
            check(&answer, &order_id)?;
            let order = answer.json();
            match order["status"].as_str() {
                Some("ACTIVE") => {
                    let secret_ref = order["secret_ref"].as_str().unwrap_or_default();
                    return last_segment(secret_ref);
                }
                Some("ERROR") => {
                    let why = order["error_reason"].as_str().unwrap_or("no reason given");
                    return Err(KeyError::Refused(
                        500,
                        format!("the key order failed: {why}"),
                    ));
                }
                _ if tokio::time::Instant::now() >= deadline => {
                    return Err(KeyError::Unavailable(format!(
                        "the key order {order_id} was not done in {ORDER_WAIT:?}"
                    )))
                }
                _ => tokio::time::sleep(ORDER_POLL).await,
            }
        }
    }

    /// A secret's description and bytes.
    pub async fn get(&self, token: Option<&str>, key_id: &str) -> Result<Secret, KeyError> {
        let path = format!("/v1/secrets/{}", path_segment(key_id));
        let answer = self.exchange(Method::GET, &path, token, None, JSON).await?;
        check(&answer, key_id)?;
        let about = answer.json();
        let payload_path = format!("{path}/payload");
        let payload = self
            .exchange(Method::GET, &payload_path, token, None, OCTETS)
            .await?;
        check(&payload, key_id)?;
        Ok(Secret {
            algorithm: about["algorithm"].as_str().map(str::to_owned),
            bit_length: about["bit_length"].as_i64(),
            payload: payload.body.to_vec(),
        })
    }

    /// Stores `secret` as a new symmetric key; its UUID.
    pub async fn store(&self, token: Option<&str>, secret: &Secret) -> Result<String, KeyError> {
        let encoded = base64::engine::general_purpose::STANDARD.encode(&secret.payload);
        let body = json!({
            "payload": encoded,
            "payload_content_type": "application/octet-stream",
            "payload_content_encoding": "base64",
            "algorithm": secret.algorithm,
            "bit_length": secret.bit_length,
            "secret_type": "symmetric",
        });
        let answer = self
            .exchange(Method::POST, "/v1/secrets", token, Some(&body), JSON)
            .await?;
        check(&answer, "a new secret")?;
        let secret_ref = answer.json()["secret_ref"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_default();
        last_segment(&secret_ref)
    }

    /// A new secret with the bytes of `key_id`.
    pub async fn clone_key(&self, token: Option<&str>, key_id: &str) -> Result<String, KeyError> {
        let secret = self.get(token, key_id).await?;
        self.store(token, &secret).await
    }

    /// The service's own token (its Keystone login), when it has one.
    pub async fn own_token(&self) -> Result<String, KeyError> {
        let service = self.service.as_ref().ok_or_else(|| {
            KeyError::Unavailable("the service has no Keystone login of its own".into())
        })?;
        service
            .own_token()
            .await
            .map_err(|e| KeyError::Unavailable(format!("the service's own login: {e}")))
    }

    /// Deletes a key with the caller's token, else (no token, or refused) with the
    /// service's own.
    pub async fn delete(&self, token: Option<&str>, key_id: &str) -> Result<(), KeyError> {
        let path = format!("/v1/secrets/{}", path_segment(key_id));
        let first = match token {
            Some(token) => {
                let answer = self
                    .exchange(Method::DELETE, &path, Some(token), None, JSON)
                    .await?;
                check(&answer, key_id)
            }
            None => Err(KeyError::Refused(401, "no token".into())),
        };
        if !matches!(first, Err(KeyError::Refused(..))) || self.service.is_none() {
            return first;
        }
        let own = self.own_token().await?;
        let answer = self
            .exchange(Method::DELETE, &path, Some(&own), None, JSON)
            .await?;
        check(&answer, key_id)
    }
}

const JSON: &str = "application/json";
const OCTETS: &str = "application/octet-stream";

/// Barbican's status as our error: 404 is "not found", other failures keep its text.
fn check(answer: &Answer, what: &str) -> Result<(), KeyError> {
    match answer.failure() {
        None => Ok(()),
        Some(Failure::NotFound) => Err(KeyError::NotFound(what.to_owned())),
        Some(Failure::Unavailable(why)) => Err(KeyError::Unavailable(why)),
        Some(Failure::Refused(status, said)) => Err(KeyError::Refused(status, said)),
    }
}

/// The UUID at the end of an order's or a secret's reference, as castellan keeps it.
fn last_segment(reference: &str) -> Result<String, KeyError> {
    let id = reference
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("");
    if uuid::Uuid::parse_str(id).is_err() {
        return Err(KeyError::Unavailable(format!(
            "Barbican answered with a reference that names no UUID: {reference:?}"
        )));
    }
    Ok(id.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Bytes;
    use axum::http::StatusCode;

    #[test]
    fn references_end_in_the_uuid() {
        let id = "8f1e2a2e-1d5b-4b8a-9a3c-3f7f2f5d9c10";
        assert_eq!(
            last_segment(&format!("http://kms:9311/v1/secrets/{id}")).unwrap(),
            id
        );
        assert_eq!(
            last_segment(&format!("http://kms/v1/orders/{id}/")).unwrap(),
            id
        );
        assert!(last_segment("http://kms/v1/secrets/").is_err());
        assert!(last_segment("").is_err());
    }

    #[test]
    fn statuses_map_to_errors() {
        let answer = |status, body: &'static [u8]| Answer {
            status,
            body: Bytes::from_static(body),
        };
        assert_eq!(
            check(&answer(StatusCode::NOT_FOUND, b""), "k"),
            Err(KeyError::NotFound("k".into()))
        );
        assert!(matches!(
            check(&answer(StatusCode::FORBIDDEN, b"{\"title\": \"Forbidden\"}"), "k"),
            Err(KeyError::Refused(403, said)) if said.contains("Forbidden")
        ));
        assert!(matches!(
            check(&answer(StatusCode::SERVICE_UNAVAILABLE, b""), "k"),
            Err(KeyError::Unavailable(_))
        ));
        assert_eq!(check(&answer(StatusCode::NO_CONTENT, b""), "k"), Ok(()));
    }
}
