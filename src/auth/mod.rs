//! Authentication strategies: turn a request's headers into a `RequestContext`.

mod noauth;

use axum::http::HeaderMap;

use crate::cli::AuthStrategy;
use crate::domain::RequestContext;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("The request you have made requires authentication.")]
    MissingCredentials,
    #[error("{0}")]
    Invalid(String),
}

/// The configured strategy.
#[derive(Debug, Clone)]
pub enum Authenticator {
    Noauth,
}

impl Authenticator {
    pub fn new(strategy: AuthStrategy) -> Self {
        match strategy {
            AuthStrategy::Noauth => Authenticator::Noauth,
        }
    }

    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<RequestContext, AuthError> {
        match self {
            Authenticator::Noauth => noauth::authenticate(headers),
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
