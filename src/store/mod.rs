//! Persistence. The `Store` trait is the only way the service touches the database; each
//! implementation owns its SQL. Methods are whole use cases and atomic: transactions never
//! cross the trait boundary.

pub mod connector_specs;
mod ids;
mod lite;
mod postgres;
mod rows;
mod sql;
mod sqlite;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::domain::attachment::{
    AttachStatus, Attachment, AttachmentFilters, AttachmentRecord, AttachmentSortKey,
    ConnectOutcome, Connection, Reservation, ReserveOutcome,
};
use crate::domain::consistency::Snapshot;
use crate::domain::legacy_attach::{LegacyAction, LegacyOutcome};
use crate::domain::message::Message;
use crate::domain::paging::Page;
use crate::domain::volume::{
    ExtendStart, MetadataChange, NewVolume, Volume, VolumeFilters, VolumeSortKey, VolumeStatus,
    VolumeSummary, VolumeUpdate, VolumeWrite,
};
use crate::domain::volume_type::{
    ExtraSpecs, NewVolumeType, TypeWrite, VolumeType, VolumeTypeUpdate,
};

pub use ids::DbId;

pub use postgres::PgStore;
pub use sqlite::SqliteStore;

/// Live rows per status: `(status, count)`, ordered by status.
#[derive(Debug, Clone, Default)]
pub struct StatusCounts {
    pub attachments: Vec<(String, i64)>,
    pub volumes: Vec<(String, i64)>,
}

/// One connection pool's use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolUse {
    /// `main`, or `read` / `write` for SQLite's two pools.
    pub pool: &'static str,
    pub open: u32,
    pub idle: u32,
    pub max: u32,
}

/// Which database sits behind a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    Sqlite,
    Postgres,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("row not found")]
    NotFound,
    #[error("conflicting row: {0}")]
    Conflict(String),
    #[error("database unavailable: {0}")]
    Unavailable(#[source] BoxError),
    #[error("stored data is not valid: {0}")]
    Corrupt(String),
    #[error("database error: {0}")]
    Other(#[source] BoxError),
}

/// The driver error behind `Unavailable` and `Other`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        use sqlx::error::ErrorKind;
        match &err {
            sqlx::Error::RowNotFound => StoreError::NotFound,
            sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::WorkerCrashed => StoreError::Unavailable(err.into()),
            sqlx::Error::Database(db) if db.kind() == ErrorKind::UniqueViolation => {
                StoreError::Conflict(db.message().to_owned())
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
            _ => StoreError::Other(err.into()),
        }
    }
}

#[async_trait]
pub trait Store: Send + Sync + 'static {
    fn kind(&self) -> StoreKind;

    /// One round trip to the database.
    async fn ping(&self) -> Result<(), StoreError>;

    /// Live attachments and volumes counted by status (for metrics).
    async fn status_counts(&self) -> Result<StatusCounts, StoreError>;

    /// How busy each connection pool is.
    fn pool_use(&self) -> Vec<PoolUse>;

    /// Volumes, live attachments and stray connector rows, read in one snapshot for
    /// the consistency checker.
    async fn consistency_snapshot(&self) -> Result<Snapshot, StoreError>;

    // --- attachments ---

    /// One page of live attachments matching `filters`.
    async fn list_attachments(
        &self,
        filters: &AttachmentFilters,
        page: &Page<AttachmentSortKey>,
    ) -> Result<Vec<Attachment>, StoreError>;
    /// A live attachment with its volume's project and its connector.
    async fn get_attachment(&self, id: Uuid) -> Result<Option<AttachmentRecord>, StoreError>;
    /// With the volume row locked: reserve it (compare-and-swap) or take the same-instance
    /// override, and add the attachment; or refuse.
    async fn reserve_attachment(
        &self,
        reservation: &Reservation,
    ) -> Result<ReserveOutcome, StoreError>;
    /// With the volume row locked: record a connection (attachment and volume `attaching`).
    async fn connect_attachment(
        &self,
        connection: &Connection,
    ) -> Result<ConnectOutcome, StoreError>;
    /// With the volume row locked: attachment `attached`, volume `in-use`. `false` if gone.
    async fn complete_attachment(&self, id: Uuid, now: DateTime<Utc>) -> Result<bool, StoreError>;
    /// With the volume row locked: soft-delete the attachment and recompute the volume
    /// from what remains. Returns the remaining attachments not `detached`, or `None` if
    /// the attachment was already gone.
    async fn delete_attachment(
        &self,
        id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Option<Vec<Attachment>>, StoreError>;

    // --- backends ---

    /// Records a configured backend (idempotent by host) and returns its stable uuid.
    async fn register_service(&self, service: &ServiceRegistration) -> Result<Uuid, StoreError>;

    // --- volume types ---

    /// Inserts a type with its specs; a live type of the same name is `Conflict`.
    async fn create_volume_type(&self, new: &NewVolumeType) -> Result<(), StoreError>;
    async fn get_volume_type(&self, id: Uuid) -> Result<Option<VolumeType>, StoreError>;
    async fn get_volume_type_by_name(&self, name: &str) -> Result<Option<VolumeType>, StoreError>;
    /// Every live type, oldest first.
    async fn list_volume_types(&self) -> Result<Vec<VolumeType>, StoreError>;
    /// `Done` or `TypeNotFound`; a name taken by another live type is `Conflict`.
    async fn update_volume_type(
        &self,
        id: Uuid,
        update: &VolumeTypeUpdate,
        now: DateTime<Utc>,
    ) -> Result<TypeWrite, StoreError>;
    /// Soft-deletes a type no live volume uses: `Done`, `TypeNotFound` or `InUse`.
    async fn delete_volume_type(
        &self,
        id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<TypeWrite, StoreError>;
    /// Adds or replaces specs of a type no live volume uses. `check` sees the stored
    /// specs inside the same transaction and may refuse (`Refused`).
    async fn set_extra_specs(
        &self,
        id: Uuid,
        specs: &ExtraSpecs,
        check: &SpecsCheck,
        now: DateTime<Utc>,
    ) -> Result<TypeWrite, StoreError>;
    /// Removes one spec of a type no live volume uses (`KeyNotFound` if absent).
    async fn delete_extra_spec(
        &self,
        id: Uuid,
        key: &str,
        now: DateTime<Utc>,
    ) -> Result<TypeWrite, StoreError>;

    // --- volumes ---

    /// Inserts a volume in `creating`, with its metadata.
    async fn insert_volume(&self, new: &NewVolume) -> Result<(), StoreError>;
    /// Moves a volume from `from` to `to` if it is still in `from` (compare-and-swap).
    async fn transition_volume(
        &self,
        id: Uuid,
        from: VolumeStatus,
        to: VolumeStatus,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
    /// Starts an extend: `available` -> `extending` if `new_size` is larger than the
    /// current size. `None` when the volume is gone.
    async fn begin_extend(
        &self,
        id: Uuid,
        new_size: i64,
        now: DateTime<Utc>,
    ) -> Result<Option<ExtendStart>, StoreError>;
    /// Records the new size and returns an `extending` volume to `available`.
    async fn finish_extend(
        &self,
        id: Uuid,
        new_size: i64,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
    async fn get_volume(&self, id: Uuid) -> Result<Option<Volume>, StoreError>;
    /// A volume with its admin metadata but without user metadata and attachments: what
    /// the attach paths need, in two queries instead of four.
    async fn get_volume_brief(&self, id: Uuid) -> Result<Option<Volume>, StoreError>;
    /// Live volumes (brief) in one of `statuses` whose last change is older than `before`.
    async fn volumes_stuck_in(
        &self,
        statuses: &[VolumeStatus],
        before: DateTime<Utc>,
    ) -> Result<Vec<Volume>, StoreError>;
    /// One extra spec of a type.
    async fn volume_type_spec(
        &self,
        type_id: Uuid,
        key: &str,
    ) -> Result<Option<String>, StoreError>;
    async fn list_volumes(
        &self,
        filters: &VolumeFilters,
        page: &Page<VolumeSortKey>,
    ) -> Result<Vec<Volume>, StoreError>;
    async fn count_volumes(&self, filters: &VolumeFilters) -> Result<i64, StoreError>;
    /// Count, total size and distinct metadata of the live volumes matching `filters`.
    async fn summarize_volumes(&self, filters: &VolumeFilters)
        -> Result<VolumeSummary, StoreError>;
    /// Compare-and-swap to `deleting` under Cinder's delete conditions; `false` when they
    /// do not hold (or the volume is gone).
    async fn begin_volume_delete(
        &self,
        id: Uuid,
        force: bool,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
    /// Replaces name, description and (if given) all user metadata, unless the volume's
    /// status is in `refused`.
    async fn update_volume(
        &self,
        id: Uuid,
        update: &VolumeUpdate,
        refused: &[VolumeStatus],
        now: DateTime<Utc>,
    ) -> Result<VolumeWrite<()>, StoreError>;
    /// A legacy attach action (`os-reserve` and friends) under the volume's lock: the
    /// outcome `legacy_attach::decide` chose, or `None` when the volume is gone.
    async fn legacy_attach_action(
        &self,
        id: Uuid,
        action: LegacyAction,
        now: DateTime<Utc>,
    ) -> Result<Option<LegacyOutcome>, StoreError>;
    /// A live volume's user metadata, or `None` when the volume is gone.
    async fn volume_metadata(
        &self,
        id: Uuid,
    ) -> Result<Option<BTreeMap<String, String>>, StoreError>;
    /// Changes user metadata unless the volume's status is in `refused`; returns the
    /// metadata as it is afterwards.
    async fn change_volume_metadata(
        &self,
        id: Uuid,
        change: &MetadataChange,
        refused: &[VolumeStatus],
        now: DateTime<Utc>,
    ) -> Result<VolumeWrite<BTreeMap<String, String>>, StoreError>;
    /// Soft-deletes a `deleting` volume with its attachments, specs and metadata.
    async fn finish_volume_delete(&self, id: Uuid, now: DateTime<Utc>) -> Result<(), StoreError>;
    async fn set_bootable(
        &self,
        id: Uuid,
        bootable: bool,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
    /// Sets admin metadata `readonly` while the volume is `available`; `false` otherwise.
    async fn set_readonly(
        &self,
        id: Uuid,
        readonly: bool,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
    async fn reset_status(
        &self,
        id: Uuid,
        reset: &StatusReset,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
    /// Changes the type (and the multiattach flag) under Cinder's retype conditions, in
    /// one compare-and-swap that also refuses a multiattach change unless `available`.
    async fn retype_volume(&self, retype: &Retype, now: DateTime<Utc>) -> Result<bool, StoreError>;

    // --- user messages ---

    async fn insert_message(&self, message: &Message) -> Result<(), StoreError>;
    /// Messages of `project_id` (`None`: all), newest first.
    async fn list_messages(&self, project_id: Option<&str>) -> Result<Vec<Message>, StoreError>;
    async fn get_message(&self, id: Uuid) -> Result<Option<Message>, StoreError>;
    async fn delete_message(&self, id: Uuid, now: DateTime<Utc>) -> Result<bool, StoreError>;

    /// Waits for pooled connections to be returned and closes them.
    async fn close(&self);
}

/// A rule checked against the stored specs inside `set_extra_specs`' transaction.
pub type SpecsCheck = dyn Fn(&ExtraSpecs) -> Result<(), String> + Send + Sync;

/// A configured backend as the `services` table records it.
#[derive(Debug, Clone)]
pub struct ServiceRegistration {
    pub new_uuid: Uuid,
    pub host: String,
    pub backend_name: String,
    pub driver: String,
    pub availability_zone: String,
    pub capabilities: serde_json::Value,
    pub now: DateTime<Utc>,
}

/// `os-reset_status`: each field given is written as is.
#[derive(Debug, Clone, Default)]
pub struct StatusReset {
    pub status: Option<VolumeStatus>,
    pub attach_status: Option<AttachStatus>,
    pub migration_status: Option<String>,
}

/// A retype as the store applies it.
#[derive(Debug, Clone)]
pub struct Retype {
    pub volume_id: Uuid,
    pub new_type_id: Uuid,
    /// The multiattach flag the caller read; the swap fails if it changed meanwhile.
    pub expected_multiattach: bool,
    pub new_multiattach: bool,
}

/// How to reach the database.
#[derive(Clone)]
pub struct ConnectOptions {
    pub url: String,
    pub max_connections: u32,
    pub acquire_timeout: Duration,
    pub migrate: bool,
    /// Do the store's own upkeep in this process (SQLite: WAL checkpoints). Serving
    /// processes do; short-lived commands (`migrate`, `check`) do not, so they never take
    /// a running server's write lock.
    pub upkeep: bool,
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("url", &redact_password(&self.url))
            .field("max_connections", &self.max_connections)
            .field("acquire_timeout", &self.acquire_timeout)
            .field("migrate", &self.migrate)
            .field("upkeep", &self.upkeep)
            .finish()
    }
}

/// Hides the password of a `scheme://user:password@host` URL for logs.
pub fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((credentials, host)) = rest.split_once('@') else {
        return url.to_owned();
    };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("unsupported database URL {0:?}: use sqlite://path or postgres://user@host/db")]
    UnsupportedScheme(String),
    #[error("cannot create the directory for the SQLite database {path}: {source}")]
    Directory {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot connect to {url}: {source}")]
    Connect {
        url: String,
        #[source]
        source: sqlx::Error,
    },
    #[error("cannot open {url}: {source}")]
    Open {
        url: String,
        #[source]
        source: StoreError,
    },
    #[error("cannot apply migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// Opens the store named by the URL scheme, applying migrations when asked.
pub async fn connect(options: &ConnectOptions) -> Result<Arc<dyn Store>, ConnectError> {
    let url = options.url.as_str();
    if url.starts_with("sqlite:") {
        Ok(Arc::new(SqliteStore::connect(options).await?))
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        Ok(Arc::new(PgStore::connect(options).await?))
    } else {
        Err(ConnectError::UnsupportedScheme(redact_password(url)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_logs() {
        assert_eq!(
            redact_password("postgres://app:s3cret@db:5432/cinder"),
            "postgres://app:***@db:5432/cinder"
        );
        assert_eq!(
            redact_password("postgres://postgres@127.0.0.1/x"),
            "postgres://postgres@127.0.0.1/x"
        );
        assert_eq!(redact_password("sqlite://data/x.db"), "sqlite://data/x.db");
    }

    /// Both dialects must share one migration history: same numbers, same names.
    #[test]
    fn migration_folders_are_parallel() {
        let names = |dir: &str| {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .expect("migration folder exists")
                .map(|entry| {
                    entry
                        .expect("readable")
                        .file_name()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            names.sort();
            names
        };
        let root = env!("CARGO_MANIFEST_DIR");
        let sqlite = names(&format!("{root}/migrations/sqlite"));
        let postgres = names(&format!("{root}/migrations/postgres"));
        assert!(!sqlite.is_empty());
        assert_eq!(sqlite, postgres);
    }

    /// Every status the domain knows is allowed by the schema's CHECK constraints.
    #[test]
    fn check_constraints_match_the_domain_enums() {
        use crate::domain::attachment::AttachStatus;
        use crate::domain::volume::VolumeStatus;
        let root = env!("CARGO_MANIFEST_DIR");
        for dialect in ["sqlite", "postgres"] {
            let sql = std::fs::read_to_string(format!(
                "{root}/migrations/{dialect}/0001_initial_schema.sql"
            ))
            .expect("readable");
            for status in VolumeStatus::ALL {
                assert!(sql.contains(&format!("'{status}'")), "{dialect}: {status}");
            }
            for status in AttachStatus::ALL {
                assert!(sql.contains(&format!("'{status}'")), "{dialect}: {status}");
            }
        }
    }
}
