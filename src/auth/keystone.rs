//! `keystone`: validates `X-Auth-Token` against Keystone v3 with the service's own
//! credentials, as keystonemiddleware does. Valid tokens are cached (bounded, for at most
//! `cache_seconds` and never past their expiry); so are invalid ones, for
//! `negative_cache_seconds` in a cache of their own, so a stream of bad tokens costs one
//! Keystone call each at most once. An invalid or expired token is 401; a Keystone that
//! cannot be asked is 503 (never cached), and the request never goes through.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use chrono::{DateTime, Utc};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};

use super::keystone_tls::{connector, KeystoneConnector, KeystoneTls};
use super::token_cache::TokenCache;
use super::trusted_headers::with_admin_flag;
use super::{AuthError, PasswordLogin, SignedIn};
use crate::domain::RequestContext;
use crate::policy::PolicyEngine;

/// How the service reaches Keystone and logs in.
#[derive(Clone)]
pub struct KeystoneConfig {
    /// The identity endpoint, e.g. `http://127.0.0.1:5000/v3`.
    pub url: String,
    pub username: String,
    pub password: String,
    pub project_name: String,
    pub user_domain: String,
    pub project_domain: String,
    pub cache_seconds: u64,
    pub cache_size: usize,
    /// How long a token Keystone called invalid is refused without asking again.
    pub negative_cache_seconds: u64,
    pub timeout: Duration,
    /// How an `https://` Keystone's certificate is checked.
    pub tls: KeystoneTls,
}

impl std::fmt::Debug for KeystoneConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeystoneConfig")
            .field("url", &self.url)
            .field("username", &self.username)
            .field("password", &"***")
            .field("project_name", &self.project_name)
            .field("tls", &self.tls)
            .finish()
    }
}

pub struct KeystoneAuth {
    config: KeystoneConfig,
    client: Client<KeystoneConnector, Full<Bytes>>,
    service_token: tokio::sync::Mutex<Option<(String, DateTime<Utc>)>>,
    valid: TokenCache<RequestContext>,
    /// The 401 message each refused token got.
    invalid: TokenCache<String>,
    policy: Arc<PolicyEngine>,
}

impl std::fmt::Debug for KeystoneAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeystoneAuth")
            .field("config", &self.config)
            .finish()
    }
}

/// What Keystone said about a token.
enum Validation {
    Valid(Value),
    Invalid,
    /// Our own token was refused: log in again.
    ServiceTokenRejected,
}

fn unavailable(detail: impl std::fmt::Display) -> AuthError {
    tracing::warn!(%detail, "keystone unavailable");
    AuthError::Unavailable("The identity service is unavailable; try again later.".to_owned())
}

impl KeystoneAuth {
    /// Refuses a URL that is neither `http://` nor `https://`, and an unusable CA file.
    pub fn new(config: KeystoneConfig, policy: Arc<PolicyEngine>) -> Result<Self, String> {
        let client =
            Client::builder(TokioExecutor::new()).build(connector(&config.url, &config.tls)?);
        let size = if config.cache_seconds == 0 {
            0
        } else {
            config.cache_size
        };
        let negative_size = if config.negative_cache_seconds == 0 {
            0
        } else {
            config.cache_size
        };
        Ok(KeystoneAuth {
            config,
            client,
            service_token: tokio::sync::Mutex::new(None),
            valid: TokenCache::new(size),
            invalid: TokenCache::new(negative_size),
            policy,
        })
    }

    fn endpoint(&self, path: &str) -> String {
        format!("{}/{}", self.config.url.trim_end_matches('/'), path)
    }

    async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<(StatusCode, HeaderMap, Value), AuthError> {
        let response = tokio::time::timeout(self.config.timeout, self.client.request(request))
            .await
            .map_err(|_| unavailable("timed out"))?
            .map_err(unavailable)?;
        let (parts, body) = response.into_parts();
        let bytes = tokio::time::timeout(self.config.timeout, body.collect())
            .await
            .map_err(|_| unavailable("timed out reading"))?
            .map_err(unavailable)?
            .to_bytes();
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok((parts.status, parts.headers, json))
    }

    /// Our own token, logging in when there is none or it is about to expire.
    async fn service_token(&self, refresh: bool) -> Result<String, AuthError> {
        let mut held = self.service_token.lock().await;
        if let Some((token, expires)) = held.as_ref() {
            if !refresh && *expires > Utc::now() + chrono::Duration::seconds(30) {
                return Ok(token.clone());
            }
        }
        let (status, token, body) = self.log_in(&self.service_login()).await?;
        let token = match (status, token) {
            (StatusCode::CREATED, Some(token)) => token,
            (StatusCode::CREATED, None) => {
                return Err(unavailable("service login returned no token"))
            }
            (other, _) => return Err(unavailable(format!("service login answered {other}"))),
        };
        let expires = expiry(&body).unwrap_or_else(|| Utc::now() + chrono::Duration::minutes(5));
        *held = Some((token.clone(), expires));
        Ok(token)
    }

    /// The service's own token, for work done when no caller's token serves (Cinder's
    /// service context): a key deleted after the caller's token no longer works.
    pub async fn own_token(&self) -> Result<String, AuthError> {
        self.service_token(false).await
    }

    /// The service's own login, from its configuration.
    fn service_login(&self) -> PasswordLogin<'_> {
        let c = &self.config;
        PasswordLogin {
            user: &c.username,
            user_domain: &c.user_domain,
            password: &c.password,
            project: &c.project_name,
            project_domain: &c.project_domain,
        }
    }

    /// A project-scoped password login: Keystone's status, the token, the token body.
    async fn log_in(
        &self,
        login: &PasswordLogin<'_>,
    ) -> Result<(StatusCode, Option<String>, Value), AuthError> {
        let body = json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": login.user, "domain": {"name": login.user_domain},
                "password": login.password}}},
            "scope": {"project": {"name": login.project, "domain": {"name": login.project_domain}}}
        }});
        let request = Request::builder()
            .method(Method::POST)
            .uri(self.endpoint("auth/tokens"))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(unavailable)?;
        let (status, headers, json) = self.send(request).await?;
        let token = headers
            .get("x-subject-token")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        Ok((status, token, json))
    }

    /// The URL of a service in the catalog the service's own login gets (Cinder's way to
    /// Glance without `[glance] api_servers`); `None` when the catalog has no such entry.
    pub async fn catalog_endpoint(
        &self,
        entry: &super::catalog::CatalogEntry,
    ) -> Result<Option<String>, AuthError> {
        match self.log_in(&self.service_login()).await? {
            (StatusCode::CREATED, _, body) => Ok(entry.find_in(&body)),
            (other, _, _) => Err(unavailable(format!("service login answered {other}"))),
        }
    }

    /// Signs a user in (the console's password form): their token and who they are.
    pub async fn sign_in(&self, login: &PasswordLogin<'_>) -> Result<SignedIn, AuthError> {
        let (status, token, body) = self.log_in(login).await?;
        match (status, token) {
            (StatusCode::CREATED, Some(token)) => {
                let expires_at = expiry(&body).unwrap_or_else(Utc::now);
                let context = self
                    .context_of(&body)
                    .map_err(|message| AuthError::Invalid(message.to_owned()))?;
                self.remember(&token, &context, expires_at);
                Ok(SignedIn {
                    token,
                    context,
                    expires_at: Some(expires_at),
                })
            }
            (StatusCode::UNAUTHORIZED | StatusCode::NOT_FOUND, _) => Err(AuthError::Invalid(
                "The user name, password, domain or project is not right.".to_owned(),
            )),
            (other, _) => Err(unavailable(format!("sign-in answered {other}"))),
        }
    }

    async fn validate(&self, token: &str, service_token: &str) -> Result<Validation, AuthError> {
        let request = Request::builder()
            .method(Method::GET)
            .uri(self.endpoint("auth/tokens"))
            .header("x-auth-token", service_token)
            .header("x-subject-token", token)
            .body(Full::new(Bytes::new()))
            .map_err(|_| AuthError::Invalid("The token is not a valid header value.".into()))?;
        let (status, _, json) = self.send(request).await?;
        Ok(match status {
            StatusCode::OK => Validation::Valid(json),
            StatusCode::NOT_FOUND => Validation::Invalid,
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Validation::ServiceTokenRejected,
            other => return Err(unavailable(format!("token validation answered {other}"))),
        })
    }

    fn remember(&self, token: &str, context: &RequestContext, expires: DateTime<Utc>) {
        let now = Utc::now();
        let until = expires.min(now + seconds(self.config.cache_seconds));
        self.valid.insert(token, context.clone(), until, now);
    }

    /// A 401 for `token`, remembered so the same token is refused without asking again.
    fn refuse(&self, token: &str, message: &str) -> AuthError {
        let now = Utc::now();
        let until = now + seconds(self.config.negative_cache_seconds);
        self.invalid.insert(token, message.to_owned(), until, now);
        AuthError::Invalid(message.to_owned())
    }

    /// The caller of `X-Auth-Token`, with the roles of a valid `X-Service-Token` as its
    /// service roles (keystonemiddleware's `X-Service-Roles`; a client's own header of
    /// that name is never believed). An invalid service token is refused as an invalid
    /// user token is.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<RequestContext, AuthError> {
        let token = header_token(headers, "x-auth-token").ok_or(AuthError::MissingCredentials)?;
        let mut context = self.context_of_token(token).await?;
        context.service_roles = match header_token(headers, "x-service-token") {
            Some(service) => self.context_of_token(service).await?.roles,
            None => Vec::new(),
        };
        Ok(context)
    }

    /// Who `token` names: from the caches, else asked of Keystone (and remembered).
    async fn context_of_token(&self, token: &str) -> Result<RequestContext, AuthError> {
        let now = Utc::now();
        if let Some(context) = self.valid.get(token, now) {
            return Ok(context);
        }
        if let Some(message) = self.invalid.get(token, now) {
            return Err(AuthError::Invalid(message));
        }
        let mut service = self.service_token(false).await?;
        let mut validation = self.validate(token, &service).await?;
        if matches!(validation, Validation::ServiceTokenRejected) {
            service = self.service_token(true).await?;
            validation = self.validate(token, &service).await?;
        }
        let body = match validation {
            Validation::Valid(body) => body,
            Validation::Invalid => {
                return Err(self.refuse(token, "The request you have made requires authentication."))
            }
            Validation::ServiceTokenRejected => {
                return Err(unavailable("the service's own token is refused"))
            }
        };
        let expires = expiry(&body).unwrap_or_else(Utc::now);
        if expires <= Utc::now() {
            return Err(self.refuse(token, "The token has expired."));
        }
        let context = self
            .context_of(&body)
            .map_err(|message| self.refuse(token, message))?;
        self.remember(token, &context, expires);
        Ok(context)
    }
}

/// A token header's value, trimmed; `None` when absent or empty.
fn header_token<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

impl KeystoneAuth {
    /// Who a token body (Keystone's answer to a login or a validation) names.
    fn context_of(&self, body: &Value) -> Result<RequestContext, &'static str> {
        let token_body = &body["token"];
        let user_id = token_body["user"]["id"]
            .as_str()
            .ok_or("The token has no user.")?;
        let project_id = token_body["project"]["id"]
            .as_str()
            .ok_or("The token is not scoped to a project.")?;
        let roles = token_body["roles"]
            .as_array()
            .map(|roles| {
                roles
                    .iter()
                    .filter_map(|r| r["name"].as_str())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Ok(with_admin_flag(
            RequestContext {
                user_id: user_id.to_owned(),
                project_id: project_id.to_owned(),
                roles,
                service_roles: Vec::new(),
                is_admin: false,
                auth_token: None,
            },
            &self.policy,
        ))
    }
}

fn seconds(n: u64) -> chrono::Duration {
    chrono::Duration::seconds(i64::try_from(n).unwrap_or(i64::MAX / 1000))
}

fn expiry(body: &Value) -> Option<DateTime<Utc>> {
    body["token"]["expires_at"]
        .as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}
