//! Errors a use case can end with; the API layer decides how each one looks on the wire.

use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    /// 400 with Cinder's `Invalid input received: ` prefix.
    #[error("Invalid input received: {0}")]
    InvalidInput(String),
    /// 400 with Cinder's `Invalid volume: ` prefix.
    #[error("Invalid volume: {0}")]
    InvalidVolume(String),
    /// 400 with the message as it is.
    #[error("{0}")]
    InvalidRequest(String),
    /// 409.
    #[error("{0}")]
    Conflict(String),
    /// A backend refused or failed; the message is meant for the user.
    #[error("{0}")]
    Backend(String),
    #[error("{0}")]
    NotFound(String),
    #[error("Policy doesn't allow {0} to be performed.")]
    PolicyDenied(&'static str),
    #[error(transparent)]
    Store(#[from] StoreError),
}
