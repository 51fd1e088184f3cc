//! What can go wrong in the store, and how it reaches the use cases.

use crate::domain::DomainError;

/// The driver error behind `Unavailable` and `Other`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A unique constraint refused the write.
    #[error("conflicting row: {0}")]
    Conflict(String),
    /// The database cannot be reached or refuses work for now (try again later).
    #[error("database unavailable: {0}")]
    Unavailable(#[source] BoxError),
    /// The database went away while a commit was under way (as in a failover): the
    /// change may or may not be stored. A write that can tell settles it
    /// (`SqlStore::settle_attachment_write`); to the use cases it is `InDoubt`.
    #[error("commit outcome unknown: {0}")]
    InDoubt(#[source] BoxError),
    /// The database holds something this code never writes.
    #[error("stored data is not valid: {0}")]
    Corrupt(String),
    #[error("database error: {0}")]
    Other(#[source] BoxError),
}

impl StoreError {
    pub(crate) fn corrupt(what: impl std::fmt::Display) -> Self {
        StoreError::Corrupt(what.to_string())
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        use sqlx::error::ErrorKind;
        match &err {
            sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::WorkerCrashed => StoreError::Unavailable(err.into()),
            sqlx::Error::Database(db) if db.kind() == ErrorKind::UniqueViolation => {
                StoreError::Conflict(db.message().to_owned())
            }
            // 25006 (read-only transaction): the server was a primary a moment ago and is
            // a standby now, a failover is under way. Try again later, on new connections.
            sqlx::Error::Database(db) if db.code().as_deref() == Some("25006") => {
                super::read_only::note_read_only();
                StoreError::Unavailable(err.into())
            }
            // Postgres classes 08 (connection exception) and 57 (operator intervention,
            // e.g. the server shutting down) mean "try again later", not a bug.
            sqlx::Error::Database(db)
                if db
                    .code()
                    .is_some_and(|code| code.starts_with("08") || code.starts_with("57")) =>
            {
                StoreError::Unavailable(err.into())
            }
            sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) => {
                StoreError::Corrupt(err.to_string())
            }
            _ => StoreError::Other(err.into()),
        }
    }
}

/// Use cases see an unreachable database as `Unavailable` (503: nothing changed), a
/// commit lost on the way as `InDoubt`, a unique constraint as `Conflict` (409: nothing
/// changed), and anything else as an internal error; a conflict they expect (a duplicate
/// name) they match before this, for its own message.
impl From<StoreError> for DomainError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Unavailable(source) => DomainError::Unavailable(source),
            StoreError::InDoubt(source) => DomainError::InDoubt(source),
            conflict @ StoreError::Conflict(_) => DomainError::Conflict(Box::new(conflict)),
            other => DomainError::Internal(Box::new(other)),
        }
    }
}
