//! Backup records (`backups`, `backup_metadata`): starting a backup (the volume or
//! snapshot held `backing-up`, the quota checked, the parent of an incremental chosen,
//! all in one transaction), its end, listings, updates, status resets and imports.

use std::collections::BTreeMap;
use std::convert::Infallible;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::paging::push_page;
use super::side_tables::{items_of, KeyValue, SideTable};
use super::SqlStore;
use crate::domain::attach;
use crate::domain::backup::{
    self, Backup, BackupFilters, BackupSortKey, BackupStatus, CreateRefusal, NewBackup,
    ParentCandidate,
};
use crate::domain::event::EventKind;
use crate::domain::ids::{BackupId, SnapshotId, VolumeId};
use crate::domain::paging::Page;
use crate::domain::quota::{self, OverQuota, QuotaOwner};
use crate::domain::snapshot::SnapshotStatus;
use crate::domain::volume::{MetadataChange, VolumeStatus};
use crate::domain::Outcome;

/// Why a backup is not started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackupRefusal {
    Source(CreateRefusal),
    OverQuota(OverQuota),
}

/// How a backup's writing ended, as its record tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackupEnd {
    Recorded,
    /// The backup was deleted while it was written: its data is to be removed and its
    /// delete finished.
    Deleting,
}

#[async_trait]
pub trait BackupStore: Send + Sync {
    /// Records a backup `creating` and holds its source (`backing-up`), if the source
    /// may be backed up, the quota (`owner`'s defaults) has room, and an incremental
    /// backup has a parent; `Gone` when the volume or snapshot is not there.
    async fn begin_backup(
        &self,
        new: &NewBackup,
        owner: &QuotaOwner,
    ) -> Result<Outcome<Backup, BackupRefusal>, StoreError>;
    /// Ends a backup's writing: `available` with `object_count` objects, or `error` with
    /// the reason; its source is released either way. `None` when it is gone.
    async fn finish_backup(
        &self,
        id: BackupId,
        result: Result<i64, String>,
        now: DateTime<Utc>,
    ) -> Result<Option<BackupEnd>, StoreError>;
    /// Notes how far a backup (or restore) is: its `updated_at`, and for a backup the
    /// `backup.createprogress` event.
    async fn backup_progress(
        &self,
        id: BackupId,
        percent: Option<u8>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    async fn get_backup(&self, id: BackupId) -> Result<Option<Backup>, StoreError>;
    /// A backup whatever its state, deleted ones included (for imports).
    async fn get_backup_any(&self, id: BackupId) -> Result<Option<Backup>, StoreError>;
    async fn list_backups(
        &self,
        filters: &BackupFilters,
        page: &Page<BackupSortKey>,
    ) -> Result<Vec<Backup>, StoreError>;
    async fn count_backups(&self, filters: &BackupFilters) -> Result<i64, StoreError>;
    /// Sets the name and description given, and replaces the metadata when given.
    async fn update_backup(
        &self,
        id: BackupId,
        name: Option<Option<String>>,
        description: Option<Option<String>>,
        metadata: Option<BTreeMap<String, String>>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError>;
    async fn reset_backup_status(
        &self,
        id: BackupId,
        status: BackupStatus,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError>;
}

const COLUMNS: &str = "b.id, b.volume_id, b.snapshot_id, b.user_id, b.project_id, b.host, \
     b.availability_zone, b.display_name, b.display_description, b.container, b.status, \
     b.fail_reason, b.service_metadata, b.service, b.size, b.object_count, b.parent_id, \
     b.num_dependent_backups, b.data_timestamp, b.restore_volume_id, b.created_at, \
     b.updated_at, b.encryption_key_id";

pub(super) const LOCK: &str = "select status from backups where id = $1 and deleted = false";

const LOCK_SNAPSHOT: &str =
    "select status, created_at from snapshots where id = $1 and volume_id = $2 and deleted = false";

const COUNT_LIVE: &str = "select count(*), cast(coalesce(sum(size), 0) as bigint) from backups \
     where project_id = $1 and deleted = false";

const PARENT_CANDIDATES: &str = "select id, status, data_timestamp, service from backups \
     where volume_id = $1 and project_id = $2 and deleted = false";

const INSERT: &str = "insert into backups (id, volume_id, snapshot_id, user_id, project_id, host, \
     availability_zone, display_name, display_description, container, status, service_metadata, \
     service, size, object_count, parent_id, num_dependent_backups, data_timestamp, created_at, \
     updated_at, encryption_key_id, deleted) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
     $11, $12, $13, $14, $15, $16, 0, $17, $18, $18, $19, false)";

const HOLD_VOLUME: &str = "update volumes set previous_status = status, status = $2, \
     updated_at = $3 where id = $1";

const SET_SNAPSHOT_STATUS: &str = "update snapshots set status = $2, updated_at = $3 where id = $1";

const RELEASE_VOLUME: &str =
    "update volumes set status = $2, previous_status = null, updated_at = $3 where id = $1";

const STORED: &str = "update backups set status = $2, object_count = $3, fail_reason = null, \
     updated_at = $4 where id = $1";

const FAILED: &str =
    "update backups set status = $2, fail_reason = $3, updated_at = $4 where id = $1";

pub(super) const ADD_DEPENDENT: &str = "update backups \
     set num_dependent_backups = num_dependent_backups + $2 where id = $1";

const TOUCH: &str = "update backups set updated_at = $2 where id = $1 and deleted = false";

const SET_STATUS: &str = "update backups set status = $2, updated_at = $3 where id = $1";

impl FromRow for Backup {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(Backup {
            id: c.get()?,
            volume_id: c.get()?,
            snapshot_id: c.get()?,
            user_id: c.get()?,
            project_id: c.get()?,
            host: c.get()?,
            availability_zone: c.get()?,
            name: c.get()?,
            description: c.get()?,
            container: c.get()?,
            status: c.get()?,
            fail_reason: c.get()?,
            service_metadata: c.get()?,
            service: c.get()?,
            size: c.get()?,
            object_count: c.get()?,
            parent_id: c.get()?,
            num_dependent_backups: c.get()?,
            data_timestamp: c.get()?,
            restore_volume_id: c.get()?,
            created_at: c.get()?,
            updated_at: c.get()?,
            metadata: BTreeMap::new(),
            encryption_key_id: c.get()?,
        })
    }
}

impl FromRow for ParentCandidate {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(ParentCandidate {
            id: c.get()?,
            status: c.get()?,
            data_timestamp: c.get()?,
            service: c.get()?,
        })
    }
}

fn select(live_only: bool) -> Sql {
    let mut sql = Sql::new("select ");
    sql.push(COLUMNS).push(" from backups b where ");
    sql.push(if live_only {
        "b.deleted = false"
    } else {
        "true"
    });
    sql
}

fn push_filters(sql: &mut Sql, filters: &BackupFilters) {
    if let Some(project) = &filters.project_id {
        sql.push(" and b.project_id = ").push_bind(project.clone());
    }
    if let Some(name) = &filters.name {
        sql.push(" and b.display_name = ").push_bind(name.clone());
    }
    if let Some(status) = filters.status {
        sql.push(" and b.status = ").push_bind(status);
    }
    if let Some(volume) = filters.volume_id {
        sql.push(" and b.volume_id = ").push_bind(volume);
    }
    if let Some(parent) = filters.parent_id {
        sql.push(" and b.parent_id = ").push_bind(parent);
    }
}

/// `sql` with a backup's columns bound in the order `INSERT` (and an import's revive)
/// names them: `$1` the id to `$18` the creation time, `$19` its key.
pub(super) fn bind_row(sql: Sql, b: &Backup) -> Sql {
    sql.bind(b.id)
        .bind(b.volume_id)
        .bind(b.snapshot_id)
        .bind(b.user_id.clone())
        .bind(&b.project_id)
        .bind(b.host.clone())
        .bind(b.availability_zone.clone())
        .bind(b.name.clone())
        .bind(b.description.clone())
        .bind(b.container.clone())
        .bind(b.status)
        .bind(b.service_metadata.clone())
        .bind(b.service.clone())
        .bind(b.size)
        .bind(b.object_count)
        .bind(b.parent_id)
        .bind(b.data_timestamp)
        .bind(b.created_at)
        .bind(b.encryption_key_id.clone())
}

impl<D: Database> SqlStore<D> {
    /// Locks live backup `id` and reads it, in `tx`.
    pub(super) async fn locked_backup(
        tx: &mut D::Tx,
        id: BackupId,
    ) -> Result<Option<Backup>, StoreError> {
        let lock = Sql::locking(LOCK, D::FOR_UPDATE).bind(id);
        let found: Option<(BackupStatus,)> = tx.fetch_optional(lock).await?;
        match found {
            Some(_) => Self::backup_in(tx, id, true).await,
            None => Ok(None),
        }
    }

    /// Backup `id` as `tx` sees it, with its metadata.
    pub(super) async fn backup_in(
        tx: &mut impl Executor,
        id: BackupId,
        live_only: bool,
    ) -> Result<Option<Backup>, StoreError> {
        let mut sql = select(live_only);
        sql.push(" and b.id = ").push_bind(id);
        let Some(mut found) = tx.fetch_optional::<Backup>(sql).await? else {
            return Ok(None);
        };
        let rows: Vec<KeyValue> = tx
            .fetch_all(items_of(SideTable::BackupMetadata, [id]))
            .await?;
        found.metadata = rows
            .into_iter()
            .map(|r| (r.key, r.value.unwrap_or_default()))
            .collect();
        Ok(Some(found))
    }

    /// What the project's live backups use (counted only where backups are checked or
    /// shown).
    pub(super) async fn count_project_backups(
        tx: &mut impl Executor,
        project_id: &str,
    ) -> Result<(i64, i64), StoreError> {
        let found: Option<(i64, i64)> = tx
            .fetch_optional(Sql::new(COUNT_LIVE).bind(project_id))
            .await?;
        Ok(found.unwrap_or((0, 0)))
    }

    /// Gives back what a backup held: a `backing-up` volume takes the status its
    /// attachments make it, a `backing-up` snapshot becomes `available`.
    pub(super) async fn release_backup_source(
        tx: &mut D::Tx,
        volume: VolumeId,
        snapshot: Option<SnapshotId>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        if let Some(snapshot) = snapshot {
            let lock = Sql::locking(LOCK_SNAPSHOT, D::FOR_UPDATE)
                .bind(snapshot)
                .bind(volume);
            let found: Option<(SnapshotStatus, DateTime<Utc>)> = tx.fetch_optional(lock).await?;
            if found.is_some_and(|(status, _)| status == SnapshotStatus::BackingUp) {
                let sql = Sql::new(SET_SNAPSHOT_STATUS)
                    .bind(snapshot)
                    .bind(SnapshotStatus::Available)
                    .bind(now);
                tx.execute(sql).await?;
            }
            return Ok(());
        }
        let Some(locked) = Self::lock_volume_with_attachments(tx, volume).await? else {
            return Ok(());
        };
        if locked.volume.status != VolumeStatus::BackingUp {
            return Ok(());
        }
        let live = locked.live.iter().map(|a| a.attach_status);
        let migrating = locked.volume.migrating();
        let after = attach::status_of(VolumeStatus::Available, migrating, attach::Hold::None, live);
        let sql = Sql::new(RELEASE_VOLUME)
            .bind(volume)
            .bind(after.status)
            .bind(now);
        tx.execute(sql).await?;
        Ok(())
    }

    /// Records `kind` with the backup's usage payload as it is in `tx`.
    pub(super) async fn record_backup_event(
        &self,
        tx: &mut D::Tx,
        id: BackupId,
        kind: EventKind,
        extra: Option<(&str, serde_json::Value)>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let Some(found) = Self::backup_in(tx, id, false).await? else {
            return Ok(());
        };
        let mut payload = backup::usage_payload(&found, found.status);
        if let Some((key, value)) = extra {
            payload[key] = value;
        }
        self.record_payload_event(tx, kind, payload, now).await
    }

    pub(super) async fn insert_backup_row(tx: &mut D::Tx, b: &Backup) -> Result<(), StoreError> {
        tx.execute(bind_row(Sql::new(INSERT), b)).await?;
        let items: Vec<(String, Option<String>)> = b
            .metadata
            .iter()
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect();
        let table = SideTable::BackupMetadata;
        Self::insert_items(tx, table, b.id.uuid(), items, b.created_at).await
    }
}

#[async_trait]
impl<D: Database> BackupStore for SqlStore<D> {
    #[tracing::instrument(skip_all, fields(backup_id = %new.id), err)]
    async fn begin_backup(
        &self,
        new: &NewBackup,
        owner: &QuotaOwner,
    ) -> Result<Outcome<Backup, BackupRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(volume) = Self::lock_volume(&mut tx, new.volume_id).await? else {
            return Ok(Outcome::Gone);
        };
        let snapshot = match new.snapshot_id {
            Some(snapshot) => {
                let lock = Sql::locking(LOCK_SNAPSHOT, D::FOR_UPDATE)
                    .bind(snapshot)
                    .bind(new.volume_id);
                let found: Option<(SnapshotStatus, DateTime<Utc>)> =
                    tx.fetch_optional(lock).await?;
                match found {
                    Some(found) => Some(found),
                    None => return Ok(Outcome::Gone),
                }
            }
            None => None,
        };
        let snapshot_status = snapshot.map(|(status, _)| status);
        if let Err(refusal) = backup::check_source(volume.status, snapshot_status, new.force) {
            return Ok(Outcome::Refused(BackupRefusal::Source(refusal)));
        }
        let (limits, mut usage) = Self::locked_quota(&mut tx, owner).await?;
        (usage.backups, usage.backup_gigabytes) =
            Self::count_project_backups(&mut tx, &owner.project_id).await?;
        if let Err(over) = quota::check_backup_create(&limits, &usage, volume.size) {
            return Ok(Outcome::Refused(BackupRefusal::OverQuota(over)));
        }
        let snapshot_taken = snapshot.map(|(_, taken)| taken);
        let parent_id = if new.incremental {
            let candidates = Sql::new(PARENT_CANDIDATES)
                .bind(new.volume_id)
                .bind(&new.project_id);
            let candidates: Vec<ParentCandidate> = tx.fetch_all(candidates).await?;
            match backup::choose_parent(&candidates, snapshot_taken, new.service) {
                Some(parent) => Some(parent),
                None => {
                    return Ok(Outcome::Refused(BackupRefusal::Source(
                        CreateRefusal::NoParent,
                    )))
                }
            }
        } else {
            None
        };
        let record = Backup {
            id: new.id,
            volume_id: new.volume_id,
            snapshot_id: new.snapshot_id,
            user_id: Some(new.user_id.clone()),
            project_id: new.project_id.clone(),
            host: Some(new.host.clone()),
            availability_zone: new.availability_zone.clone(),
            name: new.name.clone(),
            description: new.description.clone(),
            container: Some(new.container.clone()),
            status: BackupStatus::Creating,
            fail_reason: None,
            service_metadata: Some(format!("backup-{}", new.id)),
            service: Some(new.service.to_owned()),
            size: volume.size,
            object_count: 0,
            parent_id,
            num_dependent_backups: 0,
            data_timestamp: Some(snapshot_taken.unwrap_or(new.created_at)),
            restore_volume_id: None,
            created_at: new.created_at,
            updated_at: Some(new.created_at),
            metadata: new.metadata.clone(),
            encryption_key_id: new.encryption_key_id.clone(),
        };
        Self::insert_backup_row(&mut tx, &record).await?;
        let hold = match new.snapshot_id {
            Some(snapshot) => Sql::new(SET_SNAPSHOT_STATUS)
                .bind(snapshot)
                .bind(SnapshotStatus::BackingUp)
                .bind(new.created_at),
            None => Sql::new(HOLD_VOLUME)
                .bind(new.volume_id)
                .bind(VolumeStatus::BackingUp)
                .bind(new.created_at),
        };
        tx.execute(hold).await?;
        let kind = EventKind::BackupCreateStart;
        self.record_backup_event(&mut tx, new.id, kind, None, new.created_at)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(record))
    }

    #[tracing::instrument(skip_all, fields(backup_id = %id), err)]
    async fn finish_backup(
        &self,
        id: BackupId,
        result: Result<i64, String>,
        now: DateTime<Utc>,
    ) -> Result<Option<BackupEnd>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(found) = Self::locked_backup(&mut tx, id).await? else {
            return Ok(None);
        };
        let status = found.status;
        Self::release_backup_source(&mut tx, found.volume_id, found.snapshot_id, now).await?;
        if status == BackupStatus::Deleting {
            tx.commit().await?;
            return Ok(Some(BackupEnd::Deleting));
        }
        match result {
            Ok(object_count) => {
                let sql = Sql::new(STORED)
                    .bind(id)
                    .bind(BackupStatus::Available)
                    .bind(object_count)
                    .bind(now);
                tx.execute(sql).await?;
                if let Some(parent) = found.parent_id {
                    tx.execute(Sql::new(ADD_DEPENDENT).bind(parent).bind(1i64))
                        .await?;
                }
                let kind = EventKind::BackupCreateEnd;
                self.record_backup_event(&mut tx, id, kind, None, now)
                    .await?;
            }
            Err(reason) => {
                let sql = Sql::new(FAILED)
                    .bind(id)
                    .bind(BackupStatus::Error)
                    .bind(reason)
                    .bind(now);
                tx.execute(sql).await?;
            }
        }
        tx.commit().await?;
        Ok(Some(BackupEnd::Recorded))
    }

    #[tracing::instrument(skip_all, err)]
    async fn backup_progress(
        &self,
        id: BackupId,
        percent: Option<u8>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().await?;
        tx.execute(Sql::new(TOUCH).bind(id).bind(now)).await?;
        if let Some(percent) = percent {
            let extra = Some(("backup_percent", serde_json::json!(percent)));
            let kind = EventKind::BackupCreateProgress;
            self.record_backup_event(&mut tx, id, kind, extra, now)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    #[tracing::instrument(skip_all, err)]
    async fn get_backup(&self, id: BackupId) -> Result<Option<Backup>, StoreError> {
        let mut reads = self.db.begin_read().await?;
        Self::backup_in(&mut reads, id, true).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn get_backup_any(&self, id: BackupId) -> Result<Option<Backup>, StoreError> {
        let mut reads = self.db.begin_read().await?;
        Self::backup_in(&mut reads, id, false).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn list_backups(
        &self,
        filters: &BackupFilters,
        page: &Page<BackupSortKey>,
    ) -> Result<Vec<Backup>, StoreError> {
        let mut sql = select(true);
        push_filters(&mut sql, filters);
        push_page(&mut sql, page, "b", "backups");
        let mut reads = self.db.begin_read().await?;
        let mut found: Vec<Backup> = reads.fetch_all(sql).await?;
        if found.is_empty() {
            return Ok(found);
        }
        let items = items_of(SideTable::BackupMetadata, found.iter().map(|b| b.id));
        let rows: Vec<KeyValue> = reads.fetch_all(items).await?;
        for row in rows {
            if let Some(owner) = found.iter_mut().find(|b| b.id.uuid() == row.owner) {
                owner
                    .metadata
                    .insert(row.key, row.value.unwrap_or_default());
            }
        }
        Ok(found)
    }

    #[tracing::instrument(skip_all, err)]
    async fn count_backups(&self, filters: &BackupFilters) -> Result<i64, StoreError> {
        let mut sql = Sql::new("select count(*) from backups b where b.deleted = false");
        push_filters(&mut sql, filters);
        let count: Option<(i64,)> = self.db.fetch_optional(sql).await?;
        Ok(count.map_or(0, |(n,)| n))
    }

    #[tracing::instrument(skip_all, err)]
    async fn update_backup(
        &self,
        id: BackupId,
        name: Option<Option<String>>,
        description: Option<Option<String>>,
        metadata: Option<BTreeMap<String, String>>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let lock = Sql::locking(LOCK, D::FOR_UPDATE).bind(id);
        let found: Option<(BackupStatus,)> = tx.fetch_optional(lock).await?;
        if found.is_none() {
            return Ok(Outcome::Gone);
        }
        let mut sql = Sql::new("update backups set updated_at = ");
        sql.push_bind(now);
        if let Some(name) = name {
            sql.push(", display_name = ").push_bind(name);
        }
        if let Some(description) = description {
            sql.push(", display_description = ").push_bind(description);
        }
        sql.push(" where id = ").push_bind(id);
        tx.execute(sql).await?;
        if let Some(metadata) = metadata {
            let change = MetadataChange::Replace(metadata);
            let table = SideTable::BackupMetadata;
            if let Err(refusal) = Self::write_items(&mut tx, table, id.uuid(), &change, now).await?
            {
                return Err(StoreError::Other(format!("{refusal:?}").into()));
            }
        }
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn reset_backup_status(
        &self,
        id: BackupId,
        status: BackupStatus,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let lock = Sql::locking(LOCK, D::FOR_UPDATE).bind(id);
        let found: Option<(BackupStatus,)> = tx.fetch_optional(lock).await?;
        if found.is_none() {
            return Ok(Outcome::Gone);
        }
        tx.execute(Sql::new(SET_STATUS).bind(id).bind(status).bind(now))
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }
}
