//! `cinder-attach purge`: removes soft-deleted rows older than a cut-off for good, as
//! Cinder's `cinder-manage db purge` does. Children go before their parents, and a parent
//! row stays while any row (deleted or not) still refers to it. Each batch is its own
//! short transaction, so a serving process is never held up for long; live rows are
//! never touched.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::SqlStore;

/// Rows removed per statement.
const BATCH: i64 = 1000;

/// Rows removed, per table, in the order they were purged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PurgeReport {
    pub tables: Vec<(&'static str, u64)>,
}

impl PurgeReport {
    pub fn total(&self) -> u64 {
        self.tables.iter().map(|(_, n)| n).sum()
    }
}

#[async_trait]
pub trait PurgeStore: Send + Sync {
    /// Removes rows soft-deleted before `before`, notification events recorded
    /// before it that the broker confirmed (all of them, confirmed or not, with
    /// `unsent_events`), and calls to Nova settled before it (never a pending one).
    async fn purge_deleted(
        &self,
        before: DateTime<Utc>,
        unsent_events: bool,
    ) -> Result<PurgeReport, StoreError>;
    /// Removes the user messages that expired before `now` (deleted or not), as Cinder's
    /// message reaper does; how many.
    async fn purge_expired_messages(&self, now: DateTime<Utc>) -> Result<u64, StoreError>;
    /// Removes (soft-deletes, as `cinder-manage service remove` does) the services not
    /// heard from since `silent_since` that hold no live volume: backends taken out of
    /// the configuration, hosts renamed. They would stay listed `down` forever otherwise.
    /// The services removed, as `(binary, host)`.
    async fn remove_stale_services(
        &self,
        silent_since: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Vec<(String, String)>, StoreError>;
}

/// Services silent since `$2` with no live volume, soft-deleted at `$1`.
const REMOVE_STALE_SERVICES: &str = "update services set deleted = true, deleted_at = $1 \
     where deleted = false and coalesce(updated_at, created_at) < $2 \
       and not exists (select 1 from volumes v \
                        where v.deleted = false and v.service_uuid = services.uuid) \
     returning binary_name, host";

/// Messages past their `expires_at` (`$1`: now).
const EXPIRED_MESSAGES: &str = "delete from messages where id in \
     (select id from messages where expires_at < $1 limit $2)";

/// Old soft-deleted rows of a table (alias-free, `$1` the cut-off).
const OLD: &str = "deleted = true and deleted_at < $1";

/// Old events of 0.2.0's table (`outbox/reads.rs`); one whose payload the events
/// recorded with it share goes after them.
macro_rules! old_events {
    ($also:literal) => {
        concat!(
            "created_at < $1",
            $also,
            " and (payload is null or not exists (select 1 from events f \
               where f.volume_id = events.volume_id and f.created_at = events.created_at \
                 and f.seq < events.seq and f.payload is null))"
        )
    };
}
/// Old events the broker confirmed; with `--unsent-events`, all old events. Today's
/// outbox rows go whole, each holding its events' payload.
const EVENTS_SENT: &str = old_events!(" and sent_at is not null");
const EVENTS_ANY: &str = old_events!("");

/// `(table, which rows go)`, children first. `$1` is the cut-off.
const PURGES: &[(&str, &str)] = &[
    (
        "attachment_specs",
        "(deleted = true and deleted_at < $1) or attachment_id in \
         (select a.id from volume_attachment a where a.deleted = true and a.deleted_at < $1)",
    ),
    (
        "volume_attachment",
        "deleted = true and deleted_at < $1 and not exists \
         (select 1 from attachment_specs s where s.attachment_id = volume_attachment.id)",
    ),
    (
        "snapshot_metadata",
        "(deleted = true and deleted_at < $1) or snapshot_id in \
         (select s.id from snapshots s where s.deleted = true and s.deleted_at < $1)",
    ),
    (
        "snapshots",
        "deleted = true and deleted_at < $1 \
         and not exists (select 1 from snapshot_metadata m where m.snapshot_id = snapshots.id)",
    ),
    (
        "transfers",
        "(deleted = true and deleted_at < $1) or volume_id in \
         (select v.id from volumes v where v.deleted = true and v.deleted_at < $1)",
    ),
    (
        "volume_metadata",
        "(deleted = true and deleted_at < $1) or volume_id in \
         (select v.id from volumes v where v.deleted = true and v.deleted_at < $1)",
    ),
    (
        "volume_admin_metadata",
        "(deleted = true and deleted_at < $1) or volume_id in \
         (select v.id from volumes v where v.deleted = true and v.deleted_at < $1)",
    ),
    (
        "volume_glance_metadata",
        "(deleted = true and deleted_at < $1) or volume_id in \
         (select v.id from volumes v where v.deleted = true and v.deleted_at < $1)",
    ),
    (
        "volumes",
        "deleted = true and deleted_at < $1 \
         and not exists (select 1 from volume_attachment a where a.volume_id = volumes.id) \
         and not exists (select 1 from volume_metadata m where m.volume_id = volumes.id) \
         and not exists (select 1 from volume_admin_metadata m where m.volume_id = volumes.id) \
         and not exists (select 1 from volume_glance_metadata g where g.volume_id = volumes.id) \
         and not exists (select 1 from snapshots s where s.volume_id = volumes.id) \
         and not exists (select 1 from transfers t where t.volume_id = volumes.id)",
    ),
    (
        "backup_metadata",
        "(deleted = true and deleted_at < $1) or backup_id in \
         (select b.id from backups b where b.deleted = true and b.deleted_at < $1)",
    ),
    (
        "backups",
        "deleted = true and deleted_at < $1 \
         and not exists (select 1 from backup_metadata m where m.backup_id = backups.id)",
    ),
    // Groups: their snapshots and type lists before them, and before the types.
    ("group_snapshots", OLD),
    (
        "group_volume_type_mapping",
        "(deleted = true and deleted_at < $1) or group_id in \
         (select g.id from groups g where g.deleted = true and g.deleted_at < $1)",
    ),
    (
        "groups",
        "deleted = true and deleted_at < $1 \
         and not exists (select 1 from group_volume_type_mapping m where m.group_id = groups.id) \
         and not exists (select 1 from group_snapshots s where s.group_id = groups.id)",
    ),
    (
        "volume_type_extra_specs",
        "(deleted = true and deleted_at < $1) or volume_type_id in \
         (select t.id from volume_types t where t.deleted = true and t.deleted_at < $1)",
    ),
    (
        "volume_type_projects",
        "(deleted = true and deleted_at < $1) or volume_type_id in \
         (select t.id from volume_types t where t.deleted = true and t.deleted_at < $1)",
    ),
    (
        "encryption",
        "(deleted = true and deleted_at < $1) or volume_type_id in \
         (select t.id from volume_types t where t.deleted = true and t.deleted_at < $1)",
    ),
    (
        "volume_types",
        "deleted = true and deleted_at < $1 \
         and not exists (select 1 from volumes v where v.volume_type_id = volume_types.id) \
         and not exists (select 1 from encryption e where e.volume_type_id = volume_types.id) \
         and not exists (select 1 from volume_type_extra_specs s \
                          where s.volume_type_id = volume_types.id) \
         and not exists (select 1 from volume_type_projects p \
                          where p.volume_type_id = volume_types.id) \
         and not exists (select 1 from group_volume_type_mapping m \
                          where m.volume_type_id = volume_types.id)",
    ),
    (
        "group_type_specs",
        "(deleted = true and deleted_at < $1) or group_type_id in \
         (select g.id from group_types g where g.deleted = true and g.deleted_at < $1)",
    ),
    (
        "group_types",
        "deleted = true and deleted_at < $1 \
         and not exists (select 1 from group_type_specs s where s.group_type_id = group_types.id) \
         and not exists (select 1 from groups g where g.group_type_id = group_types.id) \
         and not exists (select 1 from group_snapshots s where s.group_type_id = group_types.id)",
    ),
    ("events", EVENTS_SENT),
    ("outbox", "created_at < $1 and sent_at is not null"),
    // Calls to Nova settled (sent, or given up) before the cut-off; a pending one is
    // still owed and stays.
    (
        "compute_calls",
        "status <> 'pending' and coalesce(updated_at, created_at) < $1",
    ),
    // Fences recorded before the cut-off, but never one that failed and waits to be
    // tried again.
    (
        "host_fences",
        "created_at < $1 and (outcome <> 'failed' or settled_at is not null)",
    ),
    ("messages", OLD),
    ("services", OLD),
    ("quotas", OLD),
    ("quota_classes", OLD),
    (
        "qos_specs_items",
        "(deleted = true and deleted_at < $1) or qos_specs_id in \
         (select q.id from qos_specs q where q.deleted = true and q.deleted_at < $1)",
    ),
    (
        "qos_specs",
        "deleted = true and deleted_at < $1 \
         and not exists (select 1 from qos_specs_items i where i.qos_specs_id = qos_specs.id)",
    ),
];

#[async_trait]
impl<D: Database> PurgeStore for SqlStore<D> {
    #[tracing::instrument(skip_all, err)]
    async fn purge_deleted(
        &self,
        before: DateTime<Utc>,
        unsent_events: bool,
    ) -> Result<PurgeReport, StoreError> {
        let mut report = PurgeReport::default();
        for &(table, mut condition) in PURGES {
            match table {
                "events" if unsent_events => condition = EVENTS_ANY,
                "outbox" if unsent_events => condition = "created_at < $1",
                _ => {}
            }
            // The outbox is keyed by its sequence, encryption by Cinder's `encryption_id`,
            // every other table by `id`.
            let key = match table {
                "events" | "outbox" => "seq",
                "encryption" => "encryption_id",
                _ => "id",
            };
            let mut removed = 0;
            loop {
                // `$1`, the cut-off, is bound first: the conditions refer to it.
                let mut sql = Sql::new("delete from ").bind(before);
                sql.push(table)
                    .push(" where ")
                    .push(key)
                    .push(" in (select ")
                    .push(key)
                    .push(" from ")
                    .push(table)
                    .push(" where ")
                    .push(condition)
                    .push(" limit ")
                    .push_bind(BATCH)
                    .push(")");
                let n = self.db.execute(sql).await?;
                removed += n;
                // An event whose shared payload the pass found still in use goes in the
                // next pass, once the events sharing it are gone.
                let last_pass = match table {
                    "events" => n == 0,
                    _ => n < BATCH as u64,
                };
                if last_pass {
                    break;
                }
            }
            report.tables.push((table, removed));
        }
        Ok(report)
    }

    #[tracing::instrument(skip_all, err)]
    async fn remove_stale_services(
        &self,
        silent_since: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let sql = Sql::new(REMOVE_STALE_SERVICES).bind(now).bind(silent_since);
        let mut tx = self.db.begin_write().await?;
        let removed = tx.fetch_all(sql).await?;
        tx.commit().await?;
        Ok(removed)
    }

    #[tracing::instrument(skip_all, err)]
    async fn purge_expired_messages(&self, now: DateTime<Utc>) -> Result<u64, StoreError> {
        let mut removed = 0;
        loop {
            let sql = Sql::new(EXPIRED_MESSAGES).bind(now).bind(BATCH);
            let n = self.db.execute(sql).await?;
            removed += n;
            if n < BATCH as u64 {
                return Ok(removed);
            }
        }
    }
}
