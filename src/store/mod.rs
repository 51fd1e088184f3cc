//! Persistence. The `Store` trait is the only way the service touches the database. Its
//! methods are whole use cases and atomic (transactions never cross the trait boundary),
//! written once in `SqlStore`, generic over the database (`db::Database`). `db/` is the
//! floor under them: connections and pools, SQL text and its arguments, rows, errors,
//! PostgreSQL through sqlx (`db/postgres.rs`) and SQLite through rusqlite (`db/sqlite/`). Every SQL
//! statement is a constant (or a small builder) next to the method that runs it, in the
//! file of its concern:
//!
//! - `attachments.rs`: attachment lookups and the attach events;
//! - `legacy_attachments.rs`: the legacy attach actions that keep attachment rows;
//! - `locks.rs`: how every write to a volume or its attachments starts (the volume row
//!   locked, its live attachments read) and ends (the volume's new state written);
//! - `volumes.rs`, `volume_writes.rs`, `volume_metadata.rs`: volume reads, the volume
//!   changes Cinder's rules govern, user metadata;
//! - `volume_types.rs`, `default_types.rs` (projects' own defaults), `messages.rs`, `operations.rs` (health, metrics, the
//!   consistency snapshot, backend registration);
//! - `quotas.rs`: quota limits and the usage they are checked against;
//! - `qos_specs.rs`: QoS specs and their association with volume types;
//! - `snapshots.rs`: snapshots and their metadata;
//! - `services.rs`: the services' admin views, heartbeat and what each backend holds;
//! - `transfers.rs`: volume transfers between projects;
//! - `outbox.rs`: the notification events writes record, and their relay's reads.
//! - `cinder_source.rs`, `cinder_import.rs`: `import-cinder`'s read of a Cinder database
//!   (the only SQL here aimed at another schema) and its write of what is taken.
//!
//! Every write that depends on what it reads goes lock → decide → apply: the rows are
//! locked, a pure function of `domain` decides, and the store writes what it decided or
//! answers why not (one of `domain::refusal`'s types, in an `Outcome`).

mod attachments;
mod backup_imports;
mod backup_restores;
mod backups;
mod cinder_import;
pub mod cinder_source;
mod compute_calls;
pub mod connector_specs;
mod db;
mod default_types;
mod encryption;
mod exports;
mod group_snapshots;
mod group_types;
mod groups;
mod image_transfers;
mod legacy_attachments;
mod locks;
mod messages;
mod operations;
mod outbox;
mod paging;
mod purge;
mod qos_specs;
mod quotas;
mod services;
mod side_tables;
mod snapshots;
mod transfers;
mod volume_metadata;
mod volume_migrations;
mod volume_reimages;
mod volume_reverts;
mod volume_sources;
mod volume_types;
mod volume_writes;
mod volumes;
mod writes;

use std::sync::Arc;

pub use attachments::AttachmentStore;
pub use backup_imports::{BackupImportStore, ImportRefusal, ImportedBackup};
pub use backup_restores::{BackupRestoreStore, RestoreBlock, RestoreEnd};
pub use backups::{BackupEnd, BackupRefusal, BackupStore};
pub use cinder_import::{CinderImportStore, ImportTally};
pub use compute_calls::ComputeCallStore;
pub use db::connect::{
    redact_password, ConnectError, ConnectOptions, PoolUse, SchemaUse, StartWait, StoreKind,
};
pub use db::error::{BoxError, StoreError};
pub use db::postgres::Postgres;
pub use db::schema::SchemaStatus;
pub use db::sqlite::Sqlite;
pub use db::HeldLock;
pub use default_types::DefaultTypeStore;
pub use encryption::EncryptionStore;
pub use exports::{ExportStore, NewExport};
pub use group_snapshots::{GroupSnapshotRefusal, GroupSnapshotStore};
pub use group_types::GroupTypeStore;
pub use groups::{GroupChange, GroupStore, GroupUpdateRefusal};
pub use image_transfers::ImageTransferStore;
pub use legacy_attachments::{LegacyAttach, LegacyAttachStore, LegacyConnect};
pub use messages::MessageStore;
pub use operations::{Operations, ServiceRegistration, StatusCounts};
pub use outbox::{EventBacklog, EventStore};
pub use purge::{PurgeReport, PurgeStore};
pub use qos_specs::QosSpecsStore;
pub use quotas::QuotaStore;
pub use services::ServiceStore;
pub use snapshots::SnapshotStore;
pub use transfers::{Recipient, TransferSecret, TransferStore};
pub use volume_metadata::VolumeMetadataStore;
pub use volume_migrations::{
    MigratingRetype, MigrationBegun, MigrationEnd, MigrationEndRefusal, MigrationStart, SwapEnded,
    SwapTarget, SwapUndone, VolumeMigrationStore,
};
pub use volume_reimages::{ReimageRefusal, VolumeReimageStore};
pub use volume_reverts::{LatestSnapshot, VolumeRevertStore};
pub use volume_types::VolumeTypeStore;
pub use volume_writes::VolumeWriteStore;
pub use volumes::VolumeStore;

/// Everything the service asks of the database.
pub trait Store:
    AttachmentStore
    + VolumeStore
    + VolumeWriteStore
    + VolumeMetadataStore
    + VolumeTypeStore
    + DefaultTypeStore
    + MessageStore
    + Operations
    + PurgeStore
    + ExportStore
    + LegacyAttachStore
    + QuotaStore
    + QosSpecsStore
    + SnapshotStore
    + ServiceStore
    + TransferStore
    + EventStore
    + EncryptionStore
    + ImageTransferStore
    + GroupTypeStore
    + GroupStore
    + GroupSnapshotStore
    + BackupStore
    + BackupRestoreStore
    + BackupImportStore
    + CinderImportStore
    + ComputeCallStore
    + VolumeRevertStore
    + VolumeMigrationStore
    + VolumeReimageStore
{
}

impl<T> Store for T where
    T: AttachmentStore
        + VolumeStore
        + VolumeWriteStore
        + VolumeMetadataStore
        + VolumeTypeStore
        + DefaultTypeStore
        + MessageStore
        + Operations
        + PurgeStore
        + ExportStore
        + LegacyAttachStore
        + QuotaStore
        + QosSpecsStore
        + SnapshotStore
        + ServiceStore
        + TransferStore
        + EventStore
        + EncryptionStore
        + ImageTransferStore
        + GroupTypeStore
        + GroupStore
        + GroupSnapshotStore
        + BackupStore
        + BackupRestoreStore
        + BackupImportStore
        + CinderImportStore
        + ComputeCallStore
        + VolumeRevertStore
        + VolumeMigrationStore
        + VolumeReimageStore
{
}

/// The store's methods, over one database.
pub struct SqlStore<D> {
    db: D,
    /// Whether writes record their notification events (`outbox.rs`).
    events: bool,
    /// This process's relay waits on `LISTEN` (PostgreSQL): the writes that record events
    /// notify it (`outbox.rs`).
    relay_listening: std::sync::atomic::AtomicBool,
}

pub type PgStore = SqlStore<Postgres>;
pub type SqliteStore = SqlStore<Sqlite>;

/// Opens the store named by the URL scheme, applying migrations when asked.
pub async fn connect(options: &ConnectOptions) -> Result<Arc<dyn Store>, ConnectError> {
    let url = options.url.as_str();
    if url.starts_with("sqlite:") {
        let db = Sqlite::connect(options).await?;
        Ok(Arc::new(SqlStore {
            db,
            events: options.record_events,
            relay_listening: Default::default(),
        }))
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        let db = Postgres::connect(options).await?;
        Ok(Arc::new(SqlStore {
            db,
            events: options.record_events,
            relay_listening: Default::default(),
        }))
    } else {
        Err(ConnectError::UnsupportedScheme(redact_password(url)))
    }
}

/// Which migrations the database named by `options` has, against this binary's; nothing
/// is applied or refused.
pub async fn schema_status(options: &ConnectOptions) -> Result<SchemaStatus, ConnectError> {
    let options = ConnectOptions {
        schema: SchemaUse::Inspect,
        upkeep: false,
        ..options.clone()
    };
    let url = options.url.as_str();
    if url.starts_with("sqlite:") {
        match Sqlite::connect(&options).await {
            Ok(db) => Ok(db.schema().clone()),
            Err(ConnectError::Missing(_)) => Ok(Sqlite::schema_of_missing()),
            Err(err) => Err(err),
        }
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        Ok(Postgres::connect(&options).await?.schema().clone())
    } else {
        Err(ConnectError::UnsupportedScheme(redact_password(url)))
    }
}

#[cfg(test)]
mod test_databases;

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

    /// Statuses are bound from the domain's constants; no SQL text of the store spells
    /// one out, so a rule can only ever be changed in one place.
    #[test]
    fn no_status_is_written_into_sql() {
        use crate::domain::attachment::{AttachMode, AttachStatus};
        use crate::domain::volume::{VolumeStatus, SOFT_DELETED_STATUS};
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/src/store");
        let mut sources = Vec::new();
        for dir in [
            root.to_owned(),
            format!("{root}/db"),
            format!("{root}/db/sqlite"),
        ] {
            for entry in std::fs::read_dir(&dir).expect("store sources") {
                let path = entry.expect("readable").path();
                if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).expect("readable");
                    sources.push((path, text));
                }
            }
        }
        let statuses = VolumeStatus::ALL
            .iter()
            .map(|s| s.as_str())
            .chain(AttachStatus::ALL.iter().map(|s| s.as_str()))
            .chain(AttachMode::ALL.iter().map(|s| s.as_str()))
            .chain([SOFT_DELETED_STATUS]);
        for status in statuses {
            for (path, text) in &sources {
                let quoted = format!("'{status}'");
                assert!(
                    !text.contains(&quoted),
                    "{} spells out {quoted}",
                    path.display()
                );
            }
        }
    }

    /// Every status the domain knows is allowed by the schema's CHECK constraints.
    #[test]
    fn check_constraints_match_the_domain_enums() {
        use crate::domain::attachment::AttachStatus;
        use crate::domain::volume::VolumeStatus;
        let root = env!("CARGO_MANIFEST_DIR");
        for dialect in ["sqlite", "postgres"] {
            let mut files: Vec<_> = std::fs::read_dir(format!("{root}/migrations/{dialect}"))
                .expect("migrations")
                .map(|entry| entry.expect("readable").path())
                .collect();
            files.sort();
            let texts: Vec<String> = files
                .iter()
                .map(|f| std::fs::read_to_string(f).expect("readable"))
                .collect();
            // The newest migration that (re)defines a list is the one in force.
            let newest = |signature: &str| {
                texts
                    .iter()
                    .rev()
                    .find(|t| t.contains(signature))
                    .expect("a migration defines it")
                    .clone()
            };
            let first_two = format!(
                "'{}', '{}'",
                VolumeStatus::Creating,
                VolumeStatus::Available
            );
            let volume_check = newest(&first_two);
            for status in VolumeStatus::ALL {
                assert!(
                    volume_check.contains(&format!("'{status}'")),
                    "{dialect}: {status}"
                );
            }
            let attach_check = newest("attach_status in (");
            for status in AttachStatus::ALL {
                assert!(
                    attach_check.contains(&format!("'{status}'")),
                    "{dialect}: {status}"
                );
            }
        }
    }
}
