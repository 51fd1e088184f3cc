//! Snapshots and their metadata. Taking one locks its volume (the status rule and the
//! project's quota decide under that lock), so a snapshot and a delete of its volume never
//! both win.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::paging::push_page;
use super::side_tables::{items_of, KeyValue, SideTable};
use super::SqlStore;
use crate::domain::event::EventKind;
use crate::domain::ids::SnapshotId;
use crate::domain::paging::Page;
use crate::domain::quota::{self, QuotaOwner};
use crate::domain::refusal::{
    MetadataRefusal, SnapshotCreateRefusal, SnapshotDeleteRefusal, SnapshotStatusRefusal,
};
use crate::domain::snapshot::{
    NewSnapshot, Snapshot, SnapshotFilters, SnapshotSortKey, SnapshotStatus,
};
use crate::domain::snapshot_rules;
use crate::domain::volume::{MetadataChange, SOFT_DELETED_STATUS};
use crate::domain::volume_rules::check_metadata_count;
use crate::domain::Outcome;
use std::convert::Infallible;

#[async_trait]
pub trait SnapshotStore: Send + Sync {
    /// Inserts a snapshot in `creating` when its volume's status allows one and the
    /// project's quota has room (`owner`: the volume's project and type).
    async fn insert_snapshot(
        &self,
        new: &NewSnapshot,
        owner: &QuotaOwner,
    ) -> Result<Outcome<(), SnapshotCreateRefusal>, StoreError>;
    /// A live snapshot with its metadata.
    async fn get_snapshot(&self, id: SnapshotId) -> Result<Option<Snapshot>, StoreError>;
    /// Which of `ids` are live snapshots (a manageable listing's `snapshot-<id>`).
    async fn live_snapshot_ids(&self, ids: &[SnapshotId]) -> Result<Vec<SnapshotId>, StoreError>;
    /// One page of live snapshots, with their metadata.
    async fn list_snapshots(
        &self,
        filters: &SnapshotFilters,
        page: &Page<SnapshotSortKey>,
    ) -> Result<Vec<Snapshot>, StoreError>;
    /// How many live snapshots match `filters` (a listing's `with_count`).
    async fn count_snapshots(&self, filters: &SnapshotFilters) -> Result<i64, StoreError>;
    /// Moves a snapshot from `from` to `to` (refused in any other status).
    async fn transition_snapshot(
        &self,
        id: SnapshotId,
        from: SnapshotStatus,
        to: SnapshotStatus,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), SnapshotStatusRefusal>, StoreError>;
    /// Sets an admin's status (`os-reset_status`), whatever the current one.
    async fn reset_snapshot_status(
        &self,
        id: SnapshotId,
        status: SnapshotStatus,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError>;
    /// `os-update_snapshot_status`: a status (and progress) the rule allows.
    async fn update_snapshot_status(
        &self,
        id: SnapshotId,
        status: SnapshotStatus,
        progress: Option<String>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), SnapshotStatusRefusal>, StoreError>;
    /// Renames and re-describes (`None` leaves a field as it is).
    async fn update_snapshot(
        &self,
        id: SnapshotId,
        name: Option<&str>,
        description: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError>;
    /// Starts a delete: the snapshot becomes `deleting` (`available`/`error` only, unless
    /// `force`).
    async fn begin_snapshot_delete(
        &self,
        id: SnapshotId,
        force: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), SnapshotDeleteRefusal>, StoreError>;
    /// Soft-deletes a snapshot with its metadata.
    async fn finish_snapshot_delete(
        &self,
        id: SnapshotId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError>;
    /// Changes user metadata; the metadata afterwards.
    async fn change_snapshot_metadata(
        &self,
        id: SnapshotId,
        change: &MetadataChange,
        now: DateTime<Utc>,
    ) -> Result<Outcome<BTreeMap<String, String>, MetadataRefusal>, StoreError>;
}

const SNAPSHOT_COLUMNS: &str = "s.id, s.volume_id, s.user_id, s.project_id, s.status, \
     s.progress, s.volume_size, s.display_name, s.display_description, s.created_at, \
     s.updated_at, s.group_snapshot_id";

impl FromRow for Snapshot {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(Snapshot {
            id: c.get()?,
            volume_id: c.get()?,
            user_id: c.get()?,
            project_id: c.get()?,
            status: c.get()?,
            progress: c.get()?,
            volume_size: c.get()?,
            name: c.get()?,
            description: c.get()?,
            created_at: c.get()?,
            updated_at: c.get()?,
            group_snapshot_id: c.get()?,
            metadata: BTreeMap::new(),
        })
    }
}

static BY_ID: LazyLock<String> = LazyLock::new(|| {
    format!("select {SNAPSHOT_COLUMNS} from snapshots s where s.id = $1 and s.deleted = false")
});

const METADATA_OF: &str = "select snapshot_id, key, value from snapshot_metadata \
                           where snapshot_id = $1 and deleted = false";

const LOCK: &str = "select status from snapshots where id = $1 and deleted = false";

const INSERT: &str = "\
    insert into snapshots (id, volume_id, user_id, project_id, status, progress, volume_size, \
                           display_name, display_description, created_at, deleted) \
    values ($1, $2, $3, $4, $5, '0%', $6, $7, $8, $9, false)";

/// `$3` is the progress to record (`100%` once available); null keeps the current one.
const SET_STATUS: &str = "\
    update snapshots set status = $2, progress = coalesce($3, progress), updated_at = $4 \
     where id = $1 and deleted = false";

const RENAME: &str = "\
    update snapshots set display_name = coalesce($2, display_name), \
           display_description = coalesce($3, display_description), updated_at = $4 \
     where id = $1 and deleted = false";

const DELETE: &str = "update snapshots set deleted = true, deleted_at = $2, status = $3 \
                      where id = $1 and deleted = false";

impl<D: Database> SqlStore<D> {
    /// The transaction with snapshot `id` locked, and its status; `None` when gone.
    async fn lock_snapshot(
        &self,
        id: SnapshotId,
    ) -> Result<Option<(D::Tx, SnapshotStatus)>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let lock = Sql::locking(LOCK, D::FOR_UPDATE).bind(id);
        let found: Option<(SnapshotStatus,)> = tx.fetch_optional(lock).await?;
        Ok(found.map(|(status,)| (tx, status)))
    }

    /// Fills in the metadata of `snapshots` from `(owner, key, value)` rows.
    fn with_metadata(snapshots: &mut [Snapshot], rows: Vec<KeyValue>) {
        for row in rows {
            if let Some(found) = snapshots.iter_mut().find(|s| s.id.uuid() == row.owner) {
                found
                    .metadata
                    .insert(row.key, row.value.unwrap_or_default());
            }
        }
    }

    /// Sets the snapshot's status (and progress, if given; `100%` once available) when
    /// `rule`, seeing the current status, allows it.
    async fn set_status_if<R>(
        &self,
        id: SnapshotId,
        rule: impl FnOnce(SnapshotStatus) -> Result<(), R> + Send,
        status: SnapshotStatus,
        progress: Option<String>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), R>, StoreError> {
        let mut tx = match self.snapshot_write_if(id, rule).await? {
            Ok(tx) => tx,
            Err(answer) => return Ok(answer),
        };
        let progress =
            progress.or_else(|| (status == SnapshotStatus::Available).then(|| "100%".to_owned()));
        let sql = Sql::new(SET_STATUS)
            .bind(id)
            .bind(status)
            .bind(progress)
            .bind(now);
        tx.execute(sql).await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    /// Starts a change a status rule governs: `rule` sees the current status.
    async fn snapshot_write_if<R>(
        &self,
        id: SnapshotId,
        rule: impl FnOnce(SnapshotStatus) -> Result<(), R> + Send,
    ) -> Result<Result<D::Tx, Outcome<(), R>>, StoreError> {
        let Some((tx, status)) = self.lock_snapshot(id).await? else {
            return Ok(Err(Outcome::Gone));
        };
        Ok(rule(status).map(|()| tx).map_err(Outcome::Refused))
    }
}

#[async_trait]
impl<D: Database> SnapshotStore for SqlStore<D> {
    #[tracing::instrument(skip_all, fields(volume_id = %new.volume_id), err)]
    async fn insert_snapshot(
        &self,
        new: &NewSnapshot,
        owner: &QuotaOwner,
    ) -> Result<Outcome<(), SnapshotCreateRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(volume) = Self::lock_volume(&mut tx, new.volume_id).await? else {
            return Ok(Outcome::Gone);
        };
        if let Err(refusal) = snapshot_rules::may_take(volume.status, new.in_use_allowed) {
            return Ok(Outcome::Refused(refusal));
        }
        let (limits, usage) = Self::locked_quota(&mut tx, owner).await?;
        let fits = quota::check_snapshot_create(&limits, &usage, volume.size, &owner.type_name);
        if let Err(over) = fits {
            return Ok(Outcome::Refused(SnapshotCreateRefusal::OverQuota(over)));
        }
        let insert = Sql::new(INSERT)
            .bind(new.id)
            .bind(new.volume_id)
            .bind(&new.user_id)
            .bind(&new.project_id)
            .bind(SnapshotStatus::Creating)
            .bind(volume.size)
            .bind(&new.name)
            .bind(&new.description)
            .bind(new.created_at);
        tx.execute(insert).await?;
        let items = new
            .metadata
            .iter()
            .map(|(k, v)| (k.clone(), Some(v.clone())));
        Self::insert_items(
            &mut tx,
            SideTable::SnapshotMetadata,
            new.id.uuid(),
            items,
            new.created_at,
        )
        .await?;
        let events = &[EventKind::SnapshotCreateStart];
        self.record_snapshot_events(&mut tx, events, new.id, new.created_at)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn live_snapshot_ids(&self, ids: &[SnapshotId]) -> Result<Vec<SnapshotId>, StoreError> {
        let mut live = Vec::new();
        for chunk in ids.chunks(super::volumes::ID_CHUNK) {
            let mut sql = Sql::new("select id from snapshots where deleted = false and id in (");
            sql.push_list(chunk.iter().copied()).push(")");
            let rows: Vec<(SnapshotId,)> = self.db.fetch_all(sql).await?;
            live.extend(rows.into_iter().map(|(id,)| id));
        }
        Ok(live)
    }

    #[tracing::instrument(skip_all, err)]
    async fn get_snapshot(&self, id: SnapshotId) -> Result<Option<Snapshot>, StoreError> {
        let mut reads = self.db.begin_read().await?;
        let Some(found) = reads
            .fetch_optional::<Snapshot>(Sql::new(&BY_ID).bind(id))
            .await?
        else {
            return Ok(None);
        };
        let rows: Vec<KeyValue> = reads.fetch_all(Sql::new(METADATA_OF).bind(id)).await?;
        let mut one = [found];
        Self::with_metadata(&mut one, rows);
        let [found] = one;
        Ok(Some(found))
    }

    #[tracing::instrument(skip_all, err)]
    async fn list_snapshots(
        &self,
        filters: &SnapshotFilters,
        page: &Page<SnapshotSortKey>,
    ) -> Result<Vec<Snapshot>, StoreError> {
        let mut sql = Sql::new("select ");
        sql.push(SNAPSHOT_COLUMNS).push(" from snapshots s");
        push_snapshot_filters(&mut sql, filters);
        push_page(&mut sql, page, "s", "snapshots");
        let mut reads = self.db.begin_read().await?;
        let mut found: Vec<Snapshot> = reads.fetch_all(sql).await?;
        if found.is_empty() {
            return Ok(found);
        }
        let metadata = items_of(SideTable::SnapshotMetadata, found.iter().map(|s| s.id));
        let rows: Vec<KeyValue> = reads.fetch_all(metadata).await?;
        Self::with_metadata(&mut found, rows);
        Ok(found)
    }

    #[tracing::instrument(skip_all, err)]
    async fn count_snapshots(&self, filters: &SnapshotFilters) -> Result<i64, StoreError> {
        let mut sql = Sql::new("select count(*) from snapshots s");
        push_snapshot_filters(&mut sql, filters);
        let count: Option<(i64,)> = self.db.fetch_optional(sql).await?;
        Ok(count.map_or(0, |(n,)| n))
    }

    #[tracing::instrument(skip_all, err)]
    async fn transition_snapshot(
        &self,
        id: SnapshotId,
        from: SnapshotStatus,
        to: SnapshotStatus,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), SnapshotStatusRefusal>, StoreError> {
        let rule = |status| {
            if status == from {
                Ok(())
            } else {
                Err(SnapshotStatusRefusal::Status(status))
            }
        };
        let made = from == SnapshotStatus::Creating && to == SnapshotStatus::Available;
        if !made {
            return self.set_status_if(id, rule, to, None, now).await;
        }
        let mut tx = match self.snapshot_write_if(id, rule).await? {
            Ok(tx) => tx,
            Err(answer) => return Ok(answer),
        };
        let sql = Sql::new(SET_STATUS)
            .bind(id)
            .bind(to)
            .bind(Some("100%".to_owned()))
            .bind(now);
        tx.execute(sql).await?;
        let events = &[EventKind::SnapshotCreateEnd];
        self.record_snapshot_events(&mut tx, events, id, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn reset_snapshot_status(
        &self,
        id: SnapshotId,
        status: SnapshotStatus,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError> {
        self.set_status_if(id, |_| Ok::<(), Infallible>(()), status, None, now)
            .await
    }

    #[tracing::instrument(skip_all, err)]
    async fn update_snapshot_status(
        &self,
        id: SnapshotId,
        status: SnapshotStatus,
        progress: Option<String>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), SnapshotStatusRefusal>, StoreError> {
        let rule = |current| snapshot_rules::may_update_status(current, status);
        self.set_status_if(id, rule, status, progress, now).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn update_snapshot(
        &self,
        id: SnapshotId,
        name: Option<&str>,
        description: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError> {
        let sql = Sql::new(RENAME)
            .bind(id)
            .bind(name.map(str::to_owned))
            .bind(description.map(str::to_owned))
            .bind(now);
        Ok(match self.db.execute(sql).await? {
            0 => Outcome::Gone,
            _ => Outcome::Done(()),
        })
    }

    #[tracing::instrument(skip_all, err)]
    async fn begin_snapshot_delete(
        &self,
        id: SnapshotId,
        force: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), SnapshotDeleteRefusal>, StoreError> {
        let rule = |status| snapshot_rules::may_delete(status, force);
        let mut tx = match self.snapshot_write_if(id, rule).await? {
            Ok(tx) => tx,
            Err(answer) => return Ok(answer),
        };
        if let Some(creating) = Self::creating_from_snapshot(&mut tx, id).await? {
            return Ok(Outcome::Refused(SnapshotDeleteRefusal::SourceOfCreating(
                creating,
            )));
        }
        let sql = Sql::new(SET_STATUS)
            .bind(id)
            .bind(SnapshotStatus::Deleting)
            .bind(None::<String>)
            .bind(now);
        tx.execute(sql).await?;
        let events = &[EventKind::SnapshotDeleteStart];
        self.record_snapshot_events(&mut tx, events, id, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn finish_snapshot_delete(
        &self,
        id: SnapshotId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError> {
        let mut tx = match self
            .snapshot_write_if(id, |_| Ok::<(), Infallible>(()))
            .await?
        {
            Ok(tx) => tx,
            Err(answer) => return Ok(answer),
        };
        Self::remove_items(&mut tx, SideTable::SnapshotMetadata, id.uuid(), None, now).await?;
        let delete = Sql::new(DELETE)
            .bind(id)
            .bind(now)
            .bind(SOFT_DELETED_STATUS);
        tx.execute(delete).await?;
        let events = &[EventKind::SnapshotDeleteEnd];
        self.record_snapshot_events(&mut tx, events, id, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn change_snapshot_metadata(
        &self,
        id: SnapshotId,
        change: &MetadataChange,
        now: DateTime<Utc>,
    ) -> Result<Outcome<BTreeMap<String, String>, MetadataRefusal>, StoreError> {
        let Some((mut tx, _)) = self.lock_snapshot(id).await? else {
            return Ok(Outcome::Gone);
        };
        let owner = id.uuid();
        let written = Self::write_items(&mut tx, SideTable::SnapshotMetadata, owner, change, now);
        if let Err(refusal) = written.await? {
            return Ok(Outcome::Refused(refusal));
        }
        let rows: Vec<KeyValue> = tx.fetch_all(Sql::new(METADATA_OF).bind(id)).await?;
        let metadata: BTreeMap<String, String> = rows
            .into_iter()
            .map(|r| (r.key, r.value.unwrap_or_default()))
            .collect();
        if let Err(refusal) = check_metadata_count(metadata.len()) {
            return Ok(Outcome::Refused(refusal));
        }
        tx.commit().await?;
        Ok(Outcome::Done(metadata))
    }
}

/// The `where` clause of a listing: live snapshots matching `filters`.
fn push_snapshot_filters(sql: &mut Sql, filters: &SnapshotFilters) {
    sql.push(" where s.deleted = false");
    if let Some(project) = &filters.project_id {
        sql.push(" and s.project_id = ").push_bind(project.clone());
    }
    if let Some(volume) = filters.volume_id {
        sql.push(" and s.volume_id = ").push_bind(volume);
    }
    if let Some(status) = filters.status {
        sql.push(" and s.status = ").push_bind(status);
    }
    if let Some(name) = &filters.name {
        sql.push(" and s.display_name = ").push_bind(name.clone());
    }
}
