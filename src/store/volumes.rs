//! Volumes: creating the row, and every way of reading volumes.

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::attachments::ATTACHMENT_COLUMNS;
use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::paging::push_page;
use super::side_tables::{items_of, left_joined, KeyValue, SideTable};
use super::SqlStore;
use crate::domain::attachment::{AttachStatus, Attachment};
use crate::domain::event::EventKind;
use crate::domain::ids::VolumeId;
use crate::domain::paging::Page;
use crate::domain::quota::{self, QuotaOwner};
use crate::domain::refusal::VolumeCreateRefusal;
use crate::domain::volume::{
    NewVolume, TimeComparison, Volume, VolumeFilters, VolumeSortKey, VolumeStatus, VolumeSummary,
};
use crate::domain::Outcome;

#[async_trait]
pub trait VolumeStore: Send + Sync {
    /// Inserts a volume in `creating`, with its metadata, if the quota of `owner` allows
    /// it (`Refused(OverQuota)` otherwise).
    async fn insert_volume(
        &self,
        new: &NewVolume,
        owner: &QuotaOwner,
    ) -> Result<Outcome<(), VolumeCreateRefusal>, StoreError>;
    /// A live volume with its metadata, admin metadata and live attachments.
    async fn get_volume(&self, id: VolumeId) -> Result<Option<Volume>, StoreError>;
    /// A volume with its admin metadata only: what the attach paths need, in one
    /// statement.
    async fn get_volume_brief(&self, id: VolumeId) -> Result<Option<Volume>, StoreError>;
    /// Which of `ids` name a live volume's storage (`Volume::storage_id`: a manageable
    /// listing's `volume-<id>` objects), read in a few statements whatever their number.
    async fn live_volume_ids(&self, ids: &[VolumeId]) -> Result<Vec<VolumeId>, StoreError>;
    async fn list_volumes(
        &self,
        filters: &VolumeFilters,
        page: &Page<VolumeSortKey>,
    ) -> Result<Vec<Volume>, StoreError>;
    async fn count_volumes(&self, filters: &VolumeFilters) -> Result<i64, StoreError>;
    /// Count, total size and distinct metadata of the live volumes matching `filters`.
    async fn summarize_volumes(&self, filters: &VolumeFilters)
        -> Result<VolumeSummary, StoreError>;
    /// Live volumes (brief) in one of `statuses` whose last change is older than `before`.
    async fn volumes_stuck_in(
        &self,
        statuses: &[VolumeStatus],
        before: DateTime<Utc>,
    ) -> Result<Vec<Volume>, StoreError>;
}

/// Columns of `Volume` (volume alias `v`, its type joined as `t` by `VOLUME_FROM`).
const VOLUME_COLUMNS: &str = "v.id, v.user_id, v.project_id, v.host, v.size, \
     v.availability_zone, v.status, v.attach_status, v.migration_status, v.display_name, \
     v.display_description, v.volume_type_id, t.name, t.qos_specs_id, v.encryption_key_id, \
     v.bootable, v.multiattach, v.previous_status, v.service_uuid, v.shared_targets, \
     v.provider_id, v.group_id, v.consistencygroup_id, v.snapshot_id, v.source_volid, \
     v.created_at, v.updated_at, v.name_id";

const VOLUME_FROM: &str = " from volumes v left join volume_types t on t.id = v.volume_type_id";

impl FromRow for Volume {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(Volume {
            id: c.get()?,
            user_id: c.get()?,
            project_id: c.get()?,
            host: c.get()?,
            size: c.get()?,
            availability_zone: c.get()?,
            status: c.get()?,
            attach_status: c.get()?,
            migration_status: c.get()?,
            name: c.get()?,
            description: c.get()?,
            volume_type_id: c.get()?,
            volume_type_name: c.get()?,
            volume_type_qos_specs_id: c.get()?,
            encryption_key_id: c.get()?,
            bootable: c.get()?,
            multiattach: c.get()?,
            previous_status: c.get()?,
            service_uuid: c.get()?,
            shared_targets: c.get()?,
            provider_id: c.get()?,
            group_id: c.get()?,
            consistencygroup_id: c.get()?,
            snapshot_id: c.get()?,
            source_volid: c.get()?,
            created_at: c.get()?,
            updated_at: c.get()?,
            name_id: c.get()?,
            metadata: BTreeMap::new(),
            admin_metadata: BTreeMap::new(),
            image_metadata: BTreeMap::new(),
            attachments: Vec::new(),
        })
    }
}

static VOLUME_BY_ID: LazyLock<String> = LazyLock::new(|| {
    format!("select {VOLUME_COLUMNS}{VOLUME_FROM} where v.id = $1 and v.deleted = false")
});

/// One statement (one row per admin metadata item): one snapshot, one round trip.
static VOLUME_BRIEF: LazyLock<String> = LazyLock::new(|| {
    format!(
        "select {VOLUME_COLUMNS}, m.key, m.value{VOLUME_FROM} \
           left join volume_admin_metadata m on m.volume_id = v.id and m.deleted = false \
          where v.id = $1 and v.deleted = false"
    )
});

const INSERT_VOLUME: &str = "\
    insert into volumes (id, user_id, project_id, host, size, availability_zone, status, \
                         attach_status, display_name, display_description, volume_type_id, \
                         bootable, multiattach, service_uuid, shared_targets, created_at, deleted, \
                         snapshot_id, source_volid, encryption_key_id, group_id) \
    values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $19, $12, $13, $14, $15, false, \
            $16, $17, $18, $20)";

/// How many ids one `in (...)` list binds (well inside SQLite's bound on parameters).
pub(super) const ID_CHUNK: usize = 500;

/// A clone takes its source's image metadata, as Cinder's create from a volume does; a
/// volume from a snapshot takes that of the snapshot's volume (Cinder copies it to the
/// snapshot when the snapshot is made).
const COPY_IMAGE_METADATA: &str = "\
    insert into volume_glance_metadata (volume_id, key, value, created_at, deleted) \
    select $1, key, value, $2, false from volume_glance_metadata \
     where deleted = false and volume_id = coalesce($3, \
           (select s.volume_id from snapshots s where s.id = $4))";

const ALLOCATED_ON_BACKEND: &str = "select cast(coalesce(sum(size), 0) as bigint) from volumes \
     where service_uuid = $1 and deleted = false";

/// A volume and one admin metadata item of `VOLUME_BRIEF`.
struct BriefRow(Volume, Option<String>, Option<String>);

impl FromRow for BriefRow {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(BriefRow(Volume::from_row(c)?, c.get()?, c.get()?))
    }
}

/// ` and (column op $n or ...)`: any one comparison admits a row, as in Cinder.
fn push_time_comparisons(sql: &mut Sql, column: &str, comparisons: &[TimeComparison]) {
    for (i, comparison) in comparisons.iter().enumerate() {
        sql.push(if i == 0 { " and (" } else { " or " });
        sql.push(column)
            .push(" ")
            .push(comparison.op.sql())
            .push(" ");
        sql.push_bind(comparison.at);
    }
    if !comparisons.is_empty() {
        sql.push(")");
    }
}

fn push_volume_filters(sql: &mut Sql, filters: &VolumeFilters) {
    sql.push(" where v.deleted = false");
    if let Some(project) = &filters.project_id {
        sql.push(" and v.project_id = ").push_bind(project);
    }
    if let Some(name) = &filters.name {
        sql.push(" and v.display_name = ").push_bind(name);
    }
    if let Some(status) = &filters.status {
        sql.push(" and v.status = ").push_bind(status);
    }
    if let Some(bootable) = filters.bootable {
        sql.push(" and v.bootable = ").push_bind(bootable);
    }
    if let Some(group) = &filters.group_id {
        sql.push(" and v.group_id = ").push_bind(group);
    }
    if let Some(zone) = &filters.availability_zone {
        sql.push(" and v.availability_zone = ").push_bind(zone);
    }
    if let Some(size) = filters.size {
        sql.push(" and v.size = ").push_bind(size);
    }
    if let Some(migration) = &filters.migration_status {
        sql.push(" and v.migration_status = ").push_bind(migration);
    }
    for (column, comparisons) in [
        ("v.created_at", &filters.created_at),
        ("v.updated_at", &filters.updated_at),
    ] {
        push_time_comparisons(sql, column, comparisons);
    }
    for (key, value) in &filters.metadata {
        sql.push(
            " and exists (select 1 from volume_metadata m \
                           where m.volume_id = v.id and m.deleted = false and m.key = ",
        )
        .push_bind(key)
        .push(" and m.value = ")
        .push_bind(value)
        .push(")");
    }
}

impl<D: Database> SqlStore<D> {
    /// Metadata, admin metadata and live attachments of `volumes`, filled in.
    async fn load_volume_details(
        reads: &mut D::Read,
        volumes: &mut [Volume],
    ) -> Result<(), StoreError> {
        if volumes.is_empty() {
            return Ok(());
        }
        let ids: Vec<VolumeId> = volumes.iter().map(|v| v.id).collect();
        let index: HashMap<VolumeId, usize> =
            ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        let metadata: Vec<KeyValue> = reads
            .fetch_all(items_of(SideTable::VolumeMetadata, ids.iter().copied()))
            .await?;
        let admin: Vec<KeyValue> = reads
            .fetch_all(items_of(
                SideTable::VolumeAdminMetadata,
                ids.iter().copied(),
            ))
            .await?;
        let image: Vec<KeyValue> = reads
            .fetch_all(items_of(
                SideTable::VolumeImageMetadata,
                ids.iter().copied(),
            ))
            .await?;
        let mut sql = Sql::new("select ");
        sql.push(ATTACHMENT_COLUMNS)
            .push(" from volume_attachment a where a.deleted = false and a.volume_id in (")
            .push_list(ids.iter().copied())
            .push(") order by a.created_at, a.id");
        let attachments: Vec<Attachment> = reads.fetch_all(sql).await?;
        let owner = |id: uuid::Uuid| index.get(&VolumeId::from(id)).copied();
        for item in metadata {
            if let Some(i) = owner(item.owner) {
                volumes[i]
                    .metadata
                    .insert(item.key, item.value.unwrap_or_default());
            }
        }
        for item in admin {
            if let Some(i) = owner(item.owner) {
                volumes[i]
                    .admin_metadata
                    .insert(item.key, item.value.unwrap_or_default());
            }
        }
        for item in image {
            if let Some(i) = owner(item.owner) {
                volumes[i]
                    .image_metadata
                    .insert(item.key, item.value.unwrap_or_default());
            }
        }
        for attachment in attachments {
            if let Some(i) = owner(attachment.volume_id.uuid()) {
                volumes[i].attachments.push(attachment);
            }
        }
        Ok(())
    }
}

#[async_trait]
impl<D: Database> VolumeStore for SqlStore<D> {
    #[tracing::instrument(skip_all, fields(volume_id = %new.id), err)]
    async fn insert_volume(
        &self,
        new: &NewVolume,
        owner: &QuotaOwner,
    ) -> Result<Outcome<(), VolumeCreateRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        // Only a volume a backend will make reads its source.
        if new.status == VolumeStatus::Creating {
            if let Err(refusal) = Self::pin_source(&mut tx, new).await? {
                return Ok(Outcome::Refused(refusal));
            }
        }
        let (limits, usage) = Self::locked_quota(&mut tx, owner).await?;
        let fits = quota::check_volume_create(&limits, &usage, new.size, &owner.type_name);
        if let Err(over) = fits {
            return Ok(Outcome::Refused(VolumeCreateRefusal::OverQuota(over)));
        }
        if let (Some(capacity), Some(backend)) = (new.backend_capacity_gb, new.service_uuid) {
            // Creates on one backend take turns here, so two never share its last space.
            Self::lock_project(&mut tx, &format!("backend {backend}")).await?;
            let (allocated,): (i64,) = tx
                .fetch_optional(Sql::new(ALLOCATED_ON_BACKEND).bind(backend))
                .await?
                .unwrap_or((0,));
            if (allocated + new.size) as f64 > capacity {
                return Ok(Outcome::Refused(VolumeCreateRefusal::NoCapacity));
            }
        }
        let encrypted = Self::hold_type_encryption(&mut tx, new.volume_type_id).await?;
        if encrypted.is_some_and(|yes| yes != new.encryption_key_id.is_some()) {
            return Ok(Outcome::Refused(VolumeCreateRefusal::EncryptionChanged));
        }
        let insert = Sql::new(INSERT_VOLUME)
            .bind(new.id)
            .bind(&new.user_id)
            .bind(&new.project_id)
            .bind(&new.host)
            .bind(new.size)
            .bind(&new.availability_zone)
            .bind(new.status)
            .bind(AttachStatus::Detached)
            .bind(&new.name)
            .bind(&new.description)
            .bind(new.volume_type_id)
            .bind(new.multiattach)
            .bind(new.service_uuid)
            .bind(new.shared_targets)
            .bind(new.created_at)
            .bind(new.snapshot_id)
            .bind(new.source_volid)
            .bind(&new.encryption_key_id)
            .bind(new.bootable)
            .bind(new.group_id.map(|g| g.to_string()));
        tx.execute(insert).await?;
        let items = new
            .metadata
            .iter()
            .map(|(k, v)| (k.clone(), Some(v.clone())));
        let owner = new.id.uuid();
        Self::insert_items(
            &mut tx,
            SideTable::VolumeMetadata,
            owner,
            items,
            new.created_at,
        )
        .await?;
        if new.source_volid.is_some() || new.snapshot_id.is_some() {
            let copy = Sql::new(COPY_IMAGE_METADATA)
                .bind(new.id)
                .bind(new.created_at)
                .bind(new.source_volid)
                .bind(new.snapshot_id);
            tx.execute(copy).await?;
        }
        // Recorded on no backend, the volume is in `error` already.
        let events: &[EventKind] = match new.status {
            VolumeStatus::Creating => &[EventKind::VolumeCreateStart],
            _ => &[EventKind::VolumeCreateError],
        };
        self.record_events(&mut tx, events, new.id, None, new.created_at)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn get_volume(&self, id: VolumeId) -> Result<Option<Volume>, StoreError> {
        let mut reads = self.db.begin_read().await?;
        let Some(volume) = reads
            .fetch_optional::<Volume>(Sql::new(&VOLUME_BY_ID).bind(id))
            .await?
        else {
            return Ok(None);
        };
        let mut volumes = [volume];
        Self::load_volume_details(&mut reads, &mut volumes).await?;
        let [volume] = volumes;
        Ok(Some(volume))
    }

    #[tracing::instrument(skip_all, err)]
    async fn live_volume_ids(&self, ids: &[VolumeId]) -> Result<Vec<VolumeId>, StoreError> {
        let mut live = Vec::new();
        for chunk in ids.chunks(ID_CHUNK) {
            // A storage object is named after the volume's `name_id` when it has one.
            let mut sql = Sql::new(
                "select coalesce(name_id, id) from volumes where deleted = false \
                   and ((name_id is null and id in (",
            );
            sql.push_list(chunk.iter().copied())
                .push(")) or name_id in (")
                .push_list(chunk.iter().copied())
                .push("))");
            let rows: Vec<(VolumeId,)> = self.db.fetch_all(sql).await?;
            live.extend(rows.into_iter().map(|(id,)| id));
        }
        Ok(live)
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn get_volume_brief(&self, id: VolumeId) -> Result<Option<Volume>, StoreError> {
        let rows: Vec<BriefRow> = self.db.fetch_all(Sql::new(&VOLUME_BRIEF).bind(id)).await?;
        let rows = rows.into_iter().map(|BriefRow(v, k, value)| (v, k, value));
        let Some((mut volume, admin)) = left_joined(rows.collect()) else {
            return Ok(None);
        };
        volume.admin_metadata = admin
            .into_iter()
            .map(|(k, v)| (k, v.unwrap_or_default()))
            .collect();
        Ok(Some(volume))
    }

    #[tracing::instrument(skip_all, err)]
    async fn list_volumes(
        &self,
        filters: &VolumeFilters,
        page: &Page<VolumeSortKey>,
    ) -> Result<Vec<Volume>, StoreError> {
        let mut sql = Sql::new("select ");
        sql.push(VOLUME_COLUMNS).push(VOLUME_FROM);
        push_volume_filters(&mut sql, filters);
        push_page(&mut sql, page, "v", "volumes");
        let mut reads = self.db.begin_read().await?;
        let mut volumes: Vec<Volume> = reads.fetch_all(sql).await?;
        Self::load_volume_details(&mut reads, &mut volumes).await?;
        Ok(volumes)
    }

    #[tracing::instrument(skip_all, err)]
    async fn count_volumes(&self, filters: &VolumeFilters) -> Result<i64, StoreError> {
        let mut sql = Sql::new("select count(*) from volumes v");
        push_volume_filters(&mut sql, filters);
        let count: Option<(i64,)> = self.db.fetch_optional(sql).await?;
        Ok(count.map_or(0, |(n,)| n))
    }

    #[tracing::instrument(skip_all, err)]
    async fn summarize_volumes(
        &self,
        filters: &VolumeFilters,
    ) -> Result<VolumeSummary, StoreError> {
        let mut reads = self.db.begin_read().await?;
        // Postgres sums bigint to numeric; the cast keeps both dialects on i64.
        let mut totals =
            Sql::new("select count(*), cast(coalesce(sum(v.size), 0) as bigint) from volumes v");
        push_volume_filters(&mut totals, filters);
        let (count, total_size): (i64, i64) = reads.fetch_optional(totals).await?.unwrap_or((0, 0));
        let mut pairs = Sql::new(
            "select distinct m.key, m.value from volume_metadata m where m.deleted = false \
             and m.volume_id in (select v.id from volumes v",
        );
        push_volume_filters(&mut pairs, filters);
        pairs.push(") order by m.key, m.value");
        let pairs: Vec<(String, Option<String>)> = reads.fetch_all(pairs).await?;
        let mut metadata: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (key, value) in pairs {
            metadata
                .entry(key)
                .or_default()
                .push(value.unwrap_or_default());
        }
        Ok(VolumeSummary {
            count,
            total_size,
            metadata,
        })
    }

    #[tracing::instrument(skip_all, err)]
    async fn volumes_stuck_in(
        &self,
        statuses: &[VolumeStatus],
        before: DateTime<Utc>,
    ) -> Result<Vec<Volume>, StoreError> {
        if statuses.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = Sql::new("select ");
        sql.push(VOLUME_COLUMNS)
            .push(VOLUME_FROM)
            .push(" where v.deleted = false and v.status in (")
            .push_list(statuses.iter().copied())
            .push(") and coalesce(v.updated_at, v.created_at) < ")
            .push_bind(before)
            .push(" order by v.created_at, v.id");
        self.db.fetch_all(sql).await
    }
}
