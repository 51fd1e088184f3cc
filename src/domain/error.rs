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
    /// Work that should have succeeded failed (a backend, an interrupted task); the
    /// message is safe to show and becomes a 500.
    #[error("{0}")]
    Failed(String),
    #[error("{0}")]
    NotFound(String),
    #[error("Policy doesn't allow {0} to be performed.")]
    PolicyDenied(&'static str),
    #[error(transparent)]
    Store(#[from] StoreError),
}
