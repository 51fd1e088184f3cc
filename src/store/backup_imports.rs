//! Backup records brought in by `import_record`: a new row, or a deleted one revived
//! under the same id, counted against the project's backup quotas. Checked in the same
//! transaction: no live backup has its id or its objects' location, and a parent it
//! names is a live backup of the same project, which then counts it as a dependent.

use async_trait::async_trait;

use super::db::error::StoreError;
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::SqlStore;
use crate::domain::backup::{Backup, BackupStatus};
use crate::domain::ids::BackupId;
use crate::domain::quota::{self, OverQuota, QuotaOwner};
use crate::domain::Outcome;

/// A backup record brought in by `import_record`.
#[derive(Debug, Clone)]
pub struct ImportedBackup {
    pub backup: Backup,
    /// A deleted record with the same id, to bring back instead of a new row.
    pub revive: bool,
}

/// Why an import is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportRefusal {
    /// A live backup has the id.
    Exists,
    /// The parent named is no live backup of the project.
    NoSuchParent,
    OverQuota(OverQuota),
}

#[async_trait]
pub trait BackupImportStore: Send + Sync {
    /// Records an imported backup `available`, if no live backup has its id and the
    /// quota (`owner`'s defaults) has room.
    async fn import_backup(
        &self,
        imported: &ImportedBackup,
        owner: &QuotaOwner,
    ) -> Result<Outcome<(), ImportRefusal>, StoreError>;
    /// Whether another live backup, not being deleted itself, keeps its objects where
    /// backup `id` keeps its (an imported record may name a live backup's objects, as
    /// Cinder lets it): a delete of `id` then leaves the objects to it.
    async fn location_shared(&self, id: BackupId) -> Result<bool, StoreError>;
}

/// A deleted backup's row with an import's columns, bound as `INSERT`'s (`bind_row`); an
/// imported backup has no incremental backups yet.
const REVIVE: &str = "update backups set volume_id = $2, snapshot_id = $3, user_id = $4, \
     project_id = $5, host = $6, availability_zone = $7, display_name = $8, \
     display_description = $9, container = $10, status = $11, service_metadata = $12, \
     service = $13, size = $14, object_count = $15, parent_id = $16, \
     num_dependent_backups = 0, data_timestamp = $17, created_at = $18, updated_at = $18, \
     encryption_key_id = $19, deleted = false, deleted_at = null, fail_reason = null where id = $1";

/// Another live backup, not being deleted, whose objects are where backup $1's are
/// (container and name prefix).
const SHARING: &str = "select o.id from backups b join backups o \
       on o.container = b.container and o.id <> b.id and o.deleted = false and o.status <> $2 \
      and coalesce(o.service_metadata, 'backup-' || cast(o.id as text)) \
        = coalesce(b.service_metadata, 'backup-' || cast(b.id as text)) \
     where b.id = $1 limit 1";

/// The parent's project, if it is a live backup.
const PARENT: &str = "select project_id from backups where id = $1 and deleted = false";

#[async_trait]
impl<D: Database> BackupImportStore for SqlStore<D> {
    #[tracing::instrument(skip_all, err)]
    async fn import_backup(
        &self,
        imported: &ImportedBackup,
        owner: &QuotaOwner,
    ) -> Result<Outcome<(), ImportRefusal>, StoreError> {
        let b = &imported.backup;
        let mut tx = self.db.begin_write().await?;
        let (limits, mut usage) = Self::locked_quota(&mut tx, owner).await?;
        if Self::backup_in(&mut tx, b.id, true).await?.is_some() {
            return Ok(Outcome::Refused(ImportRefusal::Exists));
        }
        if let Some(parent) = b.parent_id {
            let found: Option<(String,)> = tx.fetch_optional(Sql::new(PARENT).bind(parent)).await?;
            if found.is_none_or(|(project,)| project != b.project_id) {
                return Ok(Outcome::Refused(ImportRefusal::NoSuchParent));
            }
            let dependent = Sql::new(super::backups::ADD_DEPENDENT)
                .bind(parent)
                .bind(1i64);
            tx.execute(dependent).await?;
        }
        (usage.backups, usage.backup_gigabytes) =
            Self::count_project_backups(&mut tx, &owner.project_id).await?;
        if let Err(over) = quota::check_backup_create(&limits, &usage, b.size) {
            return Ok(Outcome::Refused(ImportRefusal::OverQuota(over)));
        }
        if imported.revive {
            let revive = super::backups::bind_row(Sql::new(REVIVE), b);
            tx.execute(revive).await?;
        } else {
            Self::insert_backup_row(&mut tx, b).await?;
        }
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn location_shared(&self, id: BackupId) -> Result<bool, StoreError> {
        let sql = Sql::new(SHARING).bind(id).bind(BackupStatus::Deleting);
        let other: Option<(BackupId,)> = self.db.fetch_optional(sql).await?;
        Ok(other.is_some())
    }
}
