//! Authentication strategies: turn a request's headers into a `RequestContext`.

pub mod catalog;
pub mod keystone;
pub mod keystone_tls;
mod noauth;
mod token_cache;
mod trusted_headers;

use std::sync::Arc;

use axum::http::HeaderMap;
use chrono::{DateTime, Utc};

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

/// What a sign-in form (the console's) offers.
#[derive(Debug, Clone, Copy)]
pub enum SignIn<'a> {
    /// `noauth`: the token is the identity.
    Token(&'a str),
    /// `keystone`: a project-scoped password login.
    Password(PasswordLogin<'a>),
}

/// A user's project-scoped password login (names, not ids).
#[derive(Clone, Copy)]
pub struct PasswordLogin<'a> {
    pub user: &'a str,
    pub user_domain: &'a str,
    pub password: &'a str,
    pub project: &'a str,
    pub project_domain: &'a str,
}

impl std::fmt::Debug for PasswordLogin<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasswordLogin")
            .field("user", &self.user)
            .field("project", &self.project)
            .finish_non_exhaustive()
    }
}

/// A signed-in user: the token to send as `X-Auth-Token`, and who it names.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub token: String,
    pub context: RequestContext,
    pub expires_at: Option<DateTime<Utc>>,
}

impl Authenticator {
    /// The strategy's name, as `--auth-strategy` spells it.
    pub fn strategy(&self) -> &'static str {
        match self {
            Authenticator::Noauth => "noauth",
            Authenticator::TrustedHeaders(_) => "trusted-headers",
            Authenticator::Keystone(_) => "keystone",
        }
    }

    /// Signs a user in with what the strategy understands; anything else is refused
    /// (`Invalid`), as are wrong credentials.
    pub async fn sign_in(&self, offered: SignIn<'_>) -> Result<SignedIn, AuthError> {
        match (self, offered) {
            (Authenticator::Noauth, SignIn::Token(token)) if !token.trim().is_empty() => {
                Ok(SignedIn {
                    token: token.trim().to_owned(),
                    context: noauth::parse_token(token.trim()),
                    expires_at: None,
                })
            }
            (Authenticator::Keystone(keystone), SignIn::Password(login)) => {
                keystone.sign_in(&login).await
            }
            (Authenticator::Noauth, _) => Err(AuthError::Invalid(
                "This service uses noauth: sign in with a token such as user:project.".to_owned(),
            )),
            (Authenticator::Keystone(_), _) => Err(AuthError::Invalid(
                "This service uses Keystone: sign in with a user name, password and project."
                    .to_owned(),
            )),
            (Authenticator::TrustedHeaders(_), _) => Err(AuthError::Invalid(
                "This service trusts the identity headers of a proxy in front of it; \
                 sign in through that proxy."
                    .to_owned(),
            )),
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
