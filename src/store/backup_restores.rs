//! What happens to a backup after it is written: restores (the backup `restoring`, the
//! volume `restoring-backup`, then the volume's data and details given back), deletes,
//! and the recovery of work a stopped service left half-done.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::backups::ADD_DEPENDENT;
use super::db::error::StoreError;
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::side_tables::SideTable;
use super::SqlStore;
use crate::domain::backup::{
    self, Backup, BackupStatus, DeleteRefusal, RestoreRefusal, VolumeRecord,
};
use crate::domain::event::EventKind;
use crate::domain::ids::{BackupId, VolumeId};
use crate::domain::volume::{MetadataChange, VolumeStatus};
use crate::domain::Outcome;

/// Why a restore does not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreBlock {
    Refused(RestoreRefusal),
    /// The target volume is not there.
    VolumeGone,
}

/// How a restore ended for the backup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestoreEnd {
    Recorded,
    /// The backup was deleted meanwhile: its delete is to be finished.
    Deleting,
}

#[async_trait]
pub trait BackupRestoreStore: Send + Sync {
    /// Holds an `available` backup `restoring` and the `available` volume it is
    /// restored to `restoring-backup`, if the volume is large enough.
    async fn begin_restore(
        &self,
        id: BackupId,
        volume: VolumeId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Backup, RestoreBlock>, StoreError>;
    /// Ends a restore: the volume `available` with the backed-up volume's details
    /// (`Ok`) and, restored from an encrypted backup, `key` (its own copy of the
    /// backup's), or `error_restoring`; the backup `available` again.
    async fn finish_restore(
        &self,
        id: BackupId,
        volume: VolumeId,
        result: Result<&VolumeRecord, String>,
        key: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Option<RestoreEnd>, StoreError>;
    /// Starts a delete (`force`: whatever the status); the status it had.
    async fn begin_backup_delete(
        &self,
        id: BackupId,
        force: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(Backup, BackupStatus), DeleteRefusal>, StoreError>;
    /// The backup's data is gone: the record is deleted, and what it held released.
    async fn finish_backup_delete(
        &self,
        id: BackupId,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// The data could not be removed: `error_deleting`, with the reason.
    async fn fail_backup_delete(
        &self,
        id: BackupId,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Backups of `host` in `creating`, `restoring` or `deleting` that nothing has
    /// touched since `before`.
    async fn stuck_backups(
        &self,
        host: &str,
        before: DateTime<Utc>,
    ) -> Result<Vec<Backup>, StoreError>;
    /// Ends work a stopped service left, if the backup is still `status` and untouched
    /// since `before`: a backup being written ends `error` with `reason` (its source
    /// released), a restore ends with the backup `available` and the volume
    /// `error_restoring`. Whether it was ended.
    async fn end_stuck_backup(
        &self,
        id: BackupId,
        status: BackupStatus,
        before: DateTime<Utc>,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
}

const RESTORING: &str = "update backups set status = $2, restore_volume_id = $3, \
     updated_at = $4 where id = $1";

const SET_VOLUME_STATUS: &str = "update volumes set status = $2, updated_at = $3 where id = $1";

const RESTORED_VOLUME: &str = "update volumes set status = $2, bootable = (bootable or $3), \
     encryption_key_id = coalesce($5, encryption_key_id), updated_at = $4 where id = $1";

const RENAME_VOLUME: &str =
    "update volumes set display_name = $2, display_description = $3 where id = $1";

const VOLUME_NAME: &str = "select display_name from volumes where id = $1";

const SET_STATUS: &str = "update backups set status = $2, updated_at = $3 where id = $1";

const DELETING: &str = "update backups set status = $2, fail_reason = null, updated_at = $3 \
     where id = $1";

const DELETE: &str = "update backups set deleted = true, deleted_at = $2, status = $3, \
     updated_at = $2 where id = $1";

const FAILED: &str =
    "update backups set status = $2, fail_reason = $3, updated_at = $4 where id = $1";

const STUCK: &str = "select id from backups where deleted = false and host = $1 \
     and status in ($2, $3, $4) and coalesce(updated_at, created_at) < $5 \
     order by created_at";

const STILL_STUCK: &str = "select id from backups where id = $1 and deleted = false \
     and status = $2 and coalesce(updated_at, created_at) < $3";

impl<D: Database> SqlStore<D> {
    /// A volume a restore held `restoring-backup` becomes `error_restoring`.
    async fn fail_restored_volume(
        tx: &mut D::Tx,
        volume: VolumeId,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let Some(locked) = Self::lock_volume(tx, volume).await? else {
            return Ok(());
        };
        if locked.status == VolumeStatus::RestoringBackup {
            let sql = Sql::new(SET_VOLUME_STATUS)
                .bind(volume)
                .bind(VolumeStatus::ErrorRestoring)
                .bind(now);
            tx.execute(sql).await?;
        }
        Ok(())
    }

    /// Gives a restored volume the backed-up volume's details, as Cinder's backup
    /// metadata restore does: its metadata and image metadata merged in, its name where
    /// the restore made the volume, and `src_backup_id` when it is another volume.
    async fn restore_details(
        tx: &mut D::Tx,
        found: &Backup,
        volume: VolumeId,
        record: &VolumeRecord,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut metadata = record.metadata.clone();
        if found.volume_id != volume {
            metadata.insert("src_backup_id".to_owned(), found.id.to_string());
        }
        let owner = volume.uuid();
        for (table, items) in [
            (SideTable::VolumeMetadata, metadata),
            (
                SideTable::VolumeImageMetadata,
                record.image_metadata.clone(),
            ),
        ] {
            if items.is_empty() {
                continue;
            }
            let change = MetadataChange::Merge(items);
            if let Err(refusal) = Self::write_items(tx, table, owner, &change, now).await? {
                return Err(StoreError::Other(format!("{refusal:?}").into()));
            }
        }
        let name: Option<(Option<String>,)> = tx
            .fetch_optional(Sql::new(VOLUME_NAME).bind(volume))
            .await?;
        let current = name.and_then(|(n,)| n);
        if backup::restore_renames(current.as_deref(), record) {
            let sql = Sql::new(RENAME_VOLUME)
                .bind(volume)
                .bind(record.name.clone())
                .bind(record.description.clone());
            tx.execute(sql).await?;
        }
        Ok(())
    }
}

#[async_trait]
impl<D: Database> BackupRestoreStore for SqlStore<D> {
    #[tracing::instrument(skip_all, fields(backup_id = %id, volume_id = %volume), err)]
    async fn begin_restore(
        &self,
        id: BackupId,
        volume: VolumeId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Backup, RestoreBlock>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(found) = Self::locked_backup(&mut tx, id).await? else {
            return Ok(Outcome::Gone);
        };
        let Some(target) = Self::lock_volume(&mut tx, volume).await? else {
            return Ok(Outcome::Refused(RestoreBlock::VolumeGone));
        };
        let checked = backup::check_restore(found.status, found.size, target.status, target.size);
        if let Err(refusal) = checked {
            return Ok(Outcome::Refused(RestoreBlock::Refused(refusal)));
        }
        let sql = Sql::new(RESTORING)
            .bind(id)
            .bind(BackupStatus::Restoring)
            .bind(volume)
            .bind(now);
        tx.execute(sql).await?;
        let sql = Sql::new(SET_VOLUME_STATUS)
            .bind(volume)
            .bind(VolumeStatus::RestoringBackup)
            .bind(now);
        tx.execute(sql).await?;
        let kind = EventKind::BackupRestoreStart;
        self.record_backup_event(&mut tx, id, kind, None, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(found))
    }

    #[tracing::instrument(skip_all, fields(backup_id = %id, volume_id = %volume), err)]
    async fn finish_restore(
        &self,
        id: BackupId,
        volume: VolumeId,
        result: Result<&VolumeRecord, String>,
        key: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Option<RestoreEnd>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(found) = Self::locked_backup(&mut tx, id).await? else {
            return Ok(None);
        };
        match result {
            Ok(record) => {
                // A volume force-deleted meanwhile is gone; the backup is still freed.
                let locked = Self::lock_volume(&mut tx, volume).await?;
                if locked.is_some_and(|l| l.status == VolumeStatus::RestoringBackup) {
                    let sql = Sql::new(RESTORED_VOLUME)
                        .bind(volume)
                        .bind(VolumeStatus::Available)
                        .bind(record.bootable || !record.image_metadata.is_empty())
                        .bind(now)
                        .bind(key.map(str::to_owned));
                    tx.execute(sql).await?;
                    Self::restore_details(&mut tx, &found, volume, record, now).await?;
                }
            }
            Err(_) => Self::fail_restored_volume(&mut tx, volume, now).await?,
        }
        if found.status == BackupStatus::Deleting {
            tx.commit().await?;
            return Ok(Some(RestoreEnd::Deleting));
        }
        let sql = Sql::new(SET_STATUS)
            .bind(id)
            .bind(BackupStatus::Available)
            .bind(now);
        tx.execute(sql).await?;
        let kind = EventKind::BackupRestoreEnd;
        self.record_backup_event(&mut tx, id, kind, None, now)
            .await?;
        tx.commit().await?;
        Ok(Some(RestoreEnd::Recorded))
    }

    #[tracing::instrument(skip_all, fields(backup_id = %id, force), err)]
    async fn begin_backup_delete(
        &self,
        id: BackupId,
        force: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(Backup, BackupStatus), DeleteRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(found) = Self::locked_backup(&mut tx, id).await? else {
            return Ok(Outcome::Gone);
        };
        if let Err(refusal) = backup::check_delete(&found, force) {
            return Ok(Outcome::Refused(refusal));
        }
        let sql = Sql::new(DELETING)
            .bind(id)
            .bind(BackupStatus::Deleting)
            .bind(now);
        tx.execute(sql).await?;
        let kind = EventKind::BackupDeleteStart;
        self.record_backup_event(&mut tx, id, kind, None, now)
            .await?;
        tx.commit().await?;
        let before = found.status;
        Ok(Outcome::Done((found, before)))
    }

    #[tracing::instrument(skip_all, fields(backup_id = %id), err)]
    async fn finish_backup_delete(
        &self,
        id: BackupId,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(found) = Self::locked_backup(&mut tx, id).await? else {
            return Ok(());
        };
        // A backup deleted while it was written or restored held its source or target.
        Self::release_backup_source(&mut tx, found.volume_id, found.snapshot_id, now).await?;
        if let Some(target) = found.restore_volume_id {
            Self::fail_restored_volume(&mut tx, target, now).await?;
        }
        let sql = Sql::new(DELETE)
            .bind(id)
            .bind(now)
            .bind(BackupStatus::Deleted);
        tx.execute(sql).await?;
        Self::remove_items(&mut tx, SideTable::BackupMetadata, id.uuid(), None, now).await?;
        if let Some(parent) = found.parent_id {
            tx.execute(Sql::new(ADD_DEPENDENT).bind(parent).bind(-1i64))
                .await?;
        }
        let kind = EventKind::BackupDeleteEnd;
        self.record_backup_event(&mut tx, id, kind, None, now)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    #[tracing::instrument(skip_all, fields(backup_id = %id), err)]
    async fn fail_backup_delete(
        &self,
        id: BackupId,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let sql = Sql::new(FAILED)
            .bind(id)
            .bind(BackupStatus::ErrorDeleting)
            .bind(reason)
            .bind(now);
        self.db.execute(sql).await?;
        Ok(())
    }

    #[tracing::instrument(skip_all, err)]
    async fn stuck_backups(
        &self,
        host: &str,
        before: DateTime<Utc>,
    ) -> Result<Vec<Backup>, StoreError> {
        let sql = Sql::new(STUCK)
            .bind(host)
            .bind(BackupStatus::Creating)
            .bind(BackupStatus::Restoring)
            .bind(BackupStatus::Deleting)
            .bind(before);
        let mut reads = self.db.begin_read().await?;
        let ids: Vec<(BackupId,)> = reads.fetch_all(sql).await?;
        let mut found = Vec::with_capacity(ids.len());
        for (id,) in ids {
            found.extend(Self::backup_in(&mut reads, id, true).await?);
        }
        Ok(found)
    }

    #[tracing::instrument(skip_all, fields(backup_id = %id), err)]
    async fn end_stuck_backup(
        &self,
        id: BackupId,
        status: BackupStatus,
        before: DateTime<Utc>,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let still = Sql::locking(STILL_STUCK, D::FOR_UPDATE)
            .bind(id)
            .bind(status)
            .bind(before);
        let stuck: Option<(BackupId,)> = tx.fetch_optional(still).await?;
        let Some(found) = stuck.and(Self::backup_in(&mut tx, id, true).await?) else {
            return Ok(false);
        };
        match status {
            BackupStatus::Creating => {
                Self::release_backup_source(&mut tx, found.volume_id, found.snapshot_id, now)
                    .await?;
                let sql = Sql::new(FAILED)
                    .bind(id)
                    .bind(BackupStatus::Error)
                    .bind(reason)
                    .bind(now);
                tx.execute(sql).await?;
            }
            BackupStatus::Restoring => {
                if let Some(target) = found.restore_volume_id {
                    Self::fail_restored_volume(&mut tx, target, now).await?;
                }
                let sql = Sql::new(SET_STATUS)
                    .bind(id)
                    .bind(BackupStatus::Available)
                    .bind(now);
                tx.execute(sql).await?;
            }
            _ => return Ok(false),
        }
        tx.commit().await?;
        Ok(true)
    }
}
