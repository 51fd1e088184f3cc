//! Authentication strategies: turn a request's headers into a `RequestContext`.

pub mod keystone;
pub mod keystone_tls;
mod noauth;
mod token_cache;
mod trusted_headers;

use std::sync::Arc;

use axum::http::HeaderMap;

use crate::domain::RequestContext;
use crate::policy::PolicyEngine;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("The request you have made requires authentication.")]
    MissingCredentials,
    #[error("{0}")]
    Invalid(String),
    /// The identity service could not be asked (503; the request does not go through).
    #[error("{0}")]
    Unavailable(String),
}

/// The configured strategy.
#[derive(Debug, Clone)]
pub enum Authenticator {
    Noauth,
    TrustedHeaders(Arc<PolicyEngine>),
    Keystone(Arc<keystone::KeystoneAuth>),
}

impl Authenticator {
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<RequestContext, AuthError> {
        match self {
            Authenticator::Noauth => noauth::authenticate(headers),
            Authenticator::TrustedHeaders(policy) => trusted_headers::authenticate(headers, policy),
            Authenticator::Keystone(keystone) => keystone.authenticate(headers).await,
        }
    }
}

/// A comma-separated header such as `X-Service-Roles`, trimmed, empty items dropped.
pub(crate) fn header_list(headers: &HeaderMap, name: &str) -> Vec<String> {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(|text| {
            text.split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}
