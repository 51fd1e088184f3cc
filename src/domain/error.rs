//! Errors a use case can end with; the API layer decides how each one looks on the wire.

use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    #[error("Invalid input received: {0}")]
    InvalidInput(String),
    #[error("{0}")]
    NotFound(String),
    #[error("Policy doesn't allow {0} to be performed.")]
    PolicyDenied(&'static str),
    #[error(transparent)]
    Store(#[from] StoreError),
}
