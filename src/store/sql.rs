//! The SQL both stores run. The text is the same for SQLite and PostgreSQL (`$N`
//! placeholders, `DbId` for ids, timestamps bound from Rust), so it is written once as a
//! macro that each dialect module expands over its own pool type. What differs is passed
//! in: `for_update` (the row-lock suffix Postgres needs; SQLite's `BEGIN IMMEDIATE`
//! write transactions already serialise writers) and the module's `begin_write`.

use crate::domain::attachment::AttachmentSortKey;
use crate::domain::paging::SortDir;
use crate::domain::volume::VolumeSortKey;

/// A sort key and the SQL expression it orders by (`{t}` is the table alias). Nullable
/// columns are coalesced so that keyset comparisons never meet a NULL.
pub(super) trait SortColumn: Copy + PartialEq {
    const ID: Self;
    const CREATED_AT: Self;
    fn expr(self) -> &'static str;
}

impl SortColumn for VolumeSortKey {
    const ID: Self = VolumeSortKey::Id;
    const CREATED_AT: Self = VolumeSortKey::CreatedAt;

    fn expr(self) -> &'static str {
        match self {
            VolumeSortKey::Id => "{t}.id",
            VolumeSortKey::CreatedAt => "{t}.created_at",
            VolumeSortKey::UpdatedAt => "coalesce({t}.updated_at, {t}.created_at)",
            VolumeSortKey::Name => "coalesce({t}.display_name, '')",
            VolumeSortKey::Size => "{t}.size",
            VolumeSortKey::Status => "{t}.status",
            VolumeSortKey::Bootable => "{t}.bootable",
            VolumeSortKey::AvailabilityZone => "{t}.availability_zone",
            VolumeSortKey::ProjectId => "{t}.project_id",
        }
    }
}

impl SortColumn for AttachmentSortKey {
    const ID: Self = AttachmentSortKey::Id;
    const CREATED_AT: Self = AttachmentSortKey::CreatedAt;

    fn expr(self) -> &'static str {
        match self {
            AttachmentSortKey::Id => "{t}.id",
            AttachmentSortKey::CreatedAt => "{t}.created_at",
            AttachmentSortKey::UpdatedAt => "coalesce({t}.updated_at, {t}.created_at)",
            AttachmentSortKey::VolumeId => "{t}.volume_id",
            AttachmentSortKey::InstanceUuid => "coalesce({t}.instance_uuid, '')",
            AttachmentSortKey::AttachStatus => "{t}.attach_status",
            AttachmentSortKey::AttachMode => "coalesce({t}.attach_mode, '')",
            AttachmentSortKey::AttachTime => "coalesce({t}.attach_time, {t}.created_at)",
            AttachmentSortKey::DetachTime => "coalesce({t}.detach_time, {t}.created_at)",
            AttachmentSortKey::AttachedHost => "coalesce({t}.attached_host, '')",
            AttachmentSortKey::Mountpoint => "coalesce({t}.mountpoint, '')",
        }
    }
}

/// The sort keys with `created_at` and `id` appended (in the first key's direction) as
/// tie-breakers, as Cinder does, so the order is total and a marker names one position.
pub(super) fn total_order<K: SortColumn>(sort: &[(K, SortDir)]) -> Vec<(K, SortDir)> {
    let mut keys = sort.to_vec();
    let dir = keys.first().map(|(_, d)| *d).unwrap_or(SortDir::Desc);
    for key in [K::CREATED_AT, K::ID] {
        if !keys.iter().any(|(k, _)| *k == key) {
            keys.push((key, dir));
        }
    }
    keys
}

macro_rules! sql_store {
    ($Store:ident, $DB:ty, $Conn:ty, for_update = $for_update:literal, for_update_of_volume = $for_update_of_volume:literal) => {
        use async_trait::async_trait;
        use chrono::{DateTime, Utc};
        use db::QueryBuilder;
        use uuid::Uuid;

        use super::rows::{self, AttachmentRow, KeyValueRow, MessageRow, ProjectAccessRow, VolumeRow, VolumeTypeRow};
        use super::sql::{total_order, SortColumn};
        use super::{DbId, PoolUse, Retype, ServiceRegistration, StatusCounts, SpecsCheck, StatusReset, Store, StoreError, StoreKind};
        use super::rows::LockedVolume;
        use crate::domain::attach::{self, AttachEvent, ReserveDecision};
        use crate::domain::attachment::{
            AttachStatus, Attachment, AttachmentFilters, AttachmentRecord, AttachmentSortKey, ConnectOutcome,
            Connecting, Connection, ReserveOutcome, Reservation,
        };
        use crate::domain::consistency::{AttachmentFacts, Snapshot, VolumeFacts};
        use crate::domain::legacy_attach::{self, LegacyAction, LegacyOutcome};
        use crate::domain::message::Message;
        use crate::domain::paging::{Page, SortDir};
        use crate::domain::volume::{
            ExtendStart, MetadataChange, NewVolume, Volume, VolumeFilters, VolumeSortKey, VolumeStatus, VolumeSummary, VolumeUpdate,
            VolumeWrite,
            DELETABLE_STATUSES,
        };
        use std::collections::BTreeMap;
        use crate::domain::volume_type::{ExtraSpecs, NewVolumeType, TypeWrite, VolumeType, VolumeTypeUpdate};

        impl $Store {
            /// A live volume's row (with its type's name), without side tables.
            async fn volume_row(conn: &mut $Conn, id: Uuid) -> Result<Option<Volume>, StoreError> {
                let sql = format!("select {}{} where v.id = $1 and v.deleted = false", rows::VOLUME_COLUMNS, rows::VOLUME_FROM);
                let row: Option<VolumeRow> = db::query_as(&sql).bind(DbId(id)).fetch_optional(&mut *conn).await?;
                row.map(VolumeRow::into_volume).transpose()
            }

            /// Metadata, admin metadata and live attachments of `volumes`, filled in.
            async fn load_volume_details(conn: &mut $Conn, volumes: &mut [Volume]) -> Result<(), StoreError> {
                if volumes.is_empty() {
                    return Ok(());
                }
                let ids: Vec<DbId> = volumes.iter().map(|v| DbId(v.id)).collect();
                let side = |table: &str| {
                    let mut q = QueryBuilder::<$DB>::new(format!(
                        "select volume_id as owner, key, value from {table} where deleted = false and volume_id in ("
                    ));
                    let mut list = q.separated(", ");
                    for id in &ids {
                        list.push_bind(*id);
                    }
                    q.push(") order by key");
                    q
                };
                let metadata: Vec<KeyValueRow> =
                    side("volume_metadata").build_query_as().fetch_all(&mut *conn).await?;
                let admin: Vec<KeyValueRow> =
                    side("volume_admin_metadata").build_query_as().fetch_all(&mut *conn).await?;
                let mut q = QueryBuilder::<$DB>::new(format!(
                    "select {} from volume_attachment a where a.deleted = false and a.volume_id in (",
                    rows::ATTACHMENT_COLUMNS
                ));
                let mut list = q.separated(", ");
                for id in &ids {
                    list.push_bind(*id);
                }
                q.push(") order by a.created_at, a.id");
                let attachments: Vec<AttachmentRow> = q.build_query_as().fetch_all(&mut *conn).await?;
                rows::assemble_volumes(volumes, metadata, admin, attachments)
            }

            /// Specs and access lists of `types`, filled in.
            async fn load_type_details(&self, types: &mut [VolumeType]) -> Result<(), StoreError> {
                if types.is_empty() {
                    return Ok(());
                }
                let specs: Vec<KeyValueRow> = db::query_as(
                    "select volume_type_id as owner, key, value from volume_type_extra_specs
                      where deleted = false order by key",
                )
                .fetch_all(&self.pool)
                .await?;
                let projects: Vec<ProjectAccessRow> = db::query_as(
                    "select volume_type_id as owner, project_id from volume_type_projects
                      where deleted = false order by project_id",
                )
                .fetch_all(&self.pool)
                .await?;
                rows::assemble_types(types, specs, projects);
                Ok(())
            }

            fn push_volume_filters(q: &mut QueryBuilder<'_, $DB>, filters: &VolumeFilters) {
                q.push(" where v.deleted = false");
                if let Some(project) = &filters.project_id {
                    q.push(" and v.project_id = ").push_bind(project.clone());
                }
                if let Some(name) = &filters.name {
                    q.push(" and v.display_name = ").push_bind(name.clone());
                }
                if let Some(status) = &filters.status {
                    q.push(" and v.status = ").push_bind(status.clone());
                }
                if let Some(bootable) = filters.bootable {
                    q.push(" and v.bootable = ").push_bind(bootable);
                }
                if let Some(zone) = &filters.availability_zone {
                    q.push(" and v.availability_zone = ").push_bind(zone.clone());
                }
                if let Some(size) = filters.size {
                    q.push(" and v.size = ").push_bind(size);
                }
                for (key, value) in &filters.metadata {
                    q.push(" and exists (select 1 from volume_metadata m where m.volume_id = v.id and m.deleted = false and m.key = ")
                        .push_bind(key.clone())
                        .push(" and m.value = ")
                        .push_bind(value.clone())
                        .push(")");
                }
            }

            /// Appends the keyset condition for `page.marker` (rows strictly after it in the
            /// total order), the order and the limit/offset. `alias` is the listed table's
            /// alias in the query, `table` its name (the marker is looked up there).
            fn push_page<K: SortColumn>(q: &mut QueryBuilder<'_, $DB>, page: &Page<K>, alias: &str, table: &str) {
                let order = total_order(&page.sort);
                if let Some(marker) = page.marker {
                    q.push(" and (");
                    for (i, (key, dir)) in order.iter().enumerate() {
                        if i > 0 {
                            q.push(" or ");
                        }
                        q.push("(");
                        for (earlier, _) in &order[..i] {
                            q.push(earlier.expr().replace("{t}", alias))
                                .push(format!(" = (select {} from {table} mk where mk.id = ", earlier.expr().replace("{t}", "mk")))
                                .push_bind(DbId(marker))
                                .push(") and ");
                        }
                        let op = if *dir == SortDir::Asc { " > " } else { " < " };
                        q.push(key.expr().replace("{t}", alias))
                            .push(op)
                            .push(format!("(select {} from {table} mk where mk.id = ", key.expr().replace("{t}", "mk")))
                            .push_bind(DbId(marker))
                            .push("))");
                    }
                    q.push(")");
                }
                q.push(" order by ");
                for (i, (key, dir)) in order.iter().enumerate() {
                    if i > 0 {
                        q.push(", ");
                    }
                    q.push(key.expr().replace("{t}", alias)).push(" ").push(dir.sql());
                }
                q.push(" limit ").push_bind(page.limit).push(" offset ").push_bind(page.offset);
            }

            /// Inserts `(key, value)` rows of a key/value side table owned by `owner`, in one
            /// statement. `table` and `owner_column` are always literals of this module.
            async fn insert_key_values(
                tx: &mut db::Transaction<'_, $DB>,
                table: &'static str,
                owner_column: &'static str,
                owner: Uuid,
                pairs: impl Iterator<Item = (String, Option<String>)>,
                now: DateTime<Utc>,
            ) -> Result<(), StoreError> {
                let pairs: Vec<(String, Option<String>)> = pairs.collect();
                if pairs.is_empty() {
                    return Ok(());
                }
                let mut q = QueryBuilder::<$DB>::new(format!(
                    "insert into {table} ({owner_column}, key, value, created_at, deleted) "
                ));
                q.push_values(pairs, |mut row, (key, value)| {
                    row.push_bind(DbId(owner)).push_bind(key).push_bind(value).push_bind(now).push("false");
                });
                q.build().execute(&mut **tx).await?;
                Ok(())
            }

            /// Locks a live volume row; `Some` (not found, or refused by its status) ends
            /// the write.
            async fn check_volume_status(
                tx: &mut db::Transaction<'_, $DB>,
                id: Uuid,
                refused: &[VolumeStatus],
            ) -> Result<Option<VolumeWrite<()>>, StoreError> {
                let row: Option<(String,)> = db::query_as(concat!(
                    "select status from volumes where id = $1 and deleted = false",
                    $for_update
                ))
                .bind(DbId(id))
                .fetch_optional(&mut **tx)
                .await?;
                let Some((status,)) = row else {
                    return Ok(Some(VolumeWrite::VolumeNotFound));
                };
                let status = rows::volume_status(&status)?;
                Ok(refused.contains(&status).then_some(VolumeWrite::Refused(status)))
            }

            /// Applies a metadata change; `false` when the key to remove is not there.
            async fn write_metadata(
                tx: &mut db::Transaction<'_, $DB>,
                id: Uuid,
                change: &MetadataChange,
                now: DateTime<Utc>,
            ) -> Result<bool, StoreError> {
                let remove = |key: Option<&str>| {
                    let mut q = QueryBuilder::<$DB>::new("update volume_metadata set deleted = true, deleted_at = ");
                    q.push_bind(now).push(" where deleted = false and volume_id = ").push_bind(DbId(id));
                    if let Some(key) = key {
                        q.push(" and key = ").push_bind(key.to_owned());
                    }
                    q
                };
                match change {
                    MetadataChange::Remove(key) => {
                        let done = remove(Some(key)).build().execute(&mut **tx).await?;
                        return Ok(done.rows_affected() > 0);
                    }
                    MetadataChange::Replace(metadata) => {
                        remove(None).build().execute(&mut **tx).await?;
                        let pairs = metadata.iter().map(|(k, v)| (k.clone(), Some(v.clone())));
                        Self::insert_key_values(tx, "volume_metadata", "volume_id", id, pairs, now).await?;
                    }
                    MetadataChange::Merge(metadata) => {
                        for (key, value) in metadata {
                            db::query(
                                "insert into volume_metadata (volume_id, key, value, created_at, deleted)
                                 values ($1, $2, $3, $4, false)
                                 on conflict (volume_id, key) where deleted = false
                                 do update set value = excluded.value, updated_at = excluded.created_at",
                            )
                            .bind(DbId(id))
                            .bind(key)
                            .bind(value)
                            .bind(now)
                            .execute(&mut **tx)
                            .await?;
                        }
                    }
                }
                Ok(true)
            }

            async fn read_metadata(
                conn: &mut $Conn,
                id: Uuid,
            ) -> Result<BTreeMap<String, String>, StoreError> {
                let rows: Vec<(String, Option<String>)> = db::query_as(
                    "select key, value from volume_metadata where volume_id = $1 and deleted = false order by key",
                )
                .bind(DbId(id))
                .fetch_all(&mut *conn)
                .await?;
                Ok(rows.into_iter().map(|(k, v)| (k, v.unwrap_or_default())).collect())
            }

            /// Locks a live volume row for the rest of the transaction and reads what the
            /// attach state machine needs.
            async fn lock_volume(tx: &mut db::Transaction<'_, $DB>, id: Uuid) -> Result<Option<LockedVolume>, StoreError> {
                let row: Option<rows::VolumeStateRow> = db::query_as(concat!(
                    "select status, attach_status, migration_status, multiattach, volume_type_id
                       from volumes where id = $1 and deleted = false",
                    $for_update
                ))
                .bind(DbId(id))
                .fetch_optional(&mut **tx)
                .await?;
                row.map(LockedVolume::try_from).transpose()
            }

            /// The volume of a live attachment, locked as `lock_volume` does, in one
            /// statement. Only the volume row is locked: every transaction takes the volume
            /// before the attachments it changes, so lock order stays the same everywhere.
            async fn lock_attachment_volume(
                tx: &mut db::Transaction<'_, $DB>,
                attachment_id: Uuid,
            ) -> Result<Option<(Uuid, LockedVolume)>, StoreError> {
                let row: Option<rows::AttachedVolumeStateRow> = db::query_as(concat!(
                    "select v.id, v.status, v.attach_status, v.migration_status, v.multiattach, v.volume_type_id
                       from volume_attachment a join volumes v on v.id = a.volume_id
                      where a.id = $1 and a.deleted = false and v.deleted = false",
                    $for_update_of_volume
                ))
                .bind(DbId(attachment_id))
                .fetch_optional(&mut **tx)
                .await?;
                row.map(|r| Ok((r.id.0, LockedVolume::try_from(r.state)?))).transpose()
            }

            async fn type_spec(tx: &mut db::Transaction<'_, $DB>, type_id: Uuid, key: &str) -> Result<Option<String>, StoreError> {
                let found: Option<(Option<String>,)> = db::query_as(
                    "select value from volume_type_extra_specs where volume_type_id = $1 and key = $2 and deleted = false",
                )
                .bind(DbId(type_id))
                .bind(key)
                .fetch_optional(&mut **tx)
                .await?;
                Ok(found.and_then(|(v,)| v))
            }

            async fn write_volume_status(
                tx: &mut db::Transaction<'_, $DB>,
                id: Uuid,
                status: VolumeStatus,
                attach_status: crate::domain::attachment::AttachStatus,
                now: DateTime<Utc>,
            ) -> Result<(), StoreError> {
                db::query("update volumes set status = $2, attach_status = $3, updated_at = $4 where id = $1")
                    .bind(DbId(id))
                    .bind(status.as_str())
                    .bind(attach_status.as_str())
                    .bind(now)
                    .execute(&mut **tx)
                    .await?;
                Ok(())
            }

            /// Locks the live type row for the rest of the transaction; `false` if absent.
            async fn lock_type(tx: &mut db::Transaction<'_, $DB>, id: Uuid) -> Result<bool, StoreError> {
                let found: Option<(DbId,)> = db::query_as(concat!(
                    "select id from volume_types where id = $1 and deleted = false",
                    $for_update
                ))
                .bind(DbId(id))
                .fetch_optional(&mut **tx)
                .await?;
                Ok(found.is_some())
            }

            async fn type_in_use(tx: &mut db::Transaction<'_, $DB>, id: Uuid) -> Result<bool, StoreError> {
                let used: Option<(DbId,)> = db::query_as(
                    "select id from volumes where volume_type_id = $1 and deleted = false limit 1",
                )
                .bind(DbId(id))
                .fetch_optional(&mut **tx)
                .await?;
                Ok(used.is_some())
            }

            async fn fetch_type(&self, sql: &str, key: TypeKey<'_>) -> Result<Option<VolumeType>, StoreError> {
                let query = db::query_as(sql);
                let query = match key {
                    TypeKey::Id(id) => query.bind(DbId(id)),
                    TypeKey::Name(name) => query.bind(name.to_owned()),
                };
                let found: Option<VolumeTypeRow> = query.fetch_optional(&self.pool).await?;
                let Some(row) = found else {
                    return Ok(None);
                };
                let mut types = vec![row.into_type()];
                self.load_type_details(&mut types).await?;
                Ok(types.pop())
            }
        }

        enum TypeKey<'a> {
            Id(Uuid),
            Name(&'a str),
        }

        const TYPE_COLUMNS: &str =
            "select id, name, description, is_public, qos_specs_id, created_at, updated_at from volume_types";

        #[async_trait]
        impl Store for $Store {
            fn kind(&self) -> StoreKind {
                Self::KIND
            }

            #[tracing::instrument(skip_all, err)]
            async fn ping(&self) -> Result<(), StoreError> {
                db::query("select 1").execute(&self.pool).await?;
                Ok(())
            }

            #[tracing::instrument(skip_all, err)]
            async fn status_counts(&self) -> Result<StatusCounts, StoreError> {
                let attachments: Vec<(String, i64)> = db::query_as(
                    "select attach_status, count(*) from volume_attachment where deleted = false \
                     group by attach_status order by attach_status",
                )
                .fetch_all(&self.pool)
                .await?;
                let volumes: Vec<(String, i64)> = db::query_as(
                    "select status, count(*) from volumes where deleted = false group by status order by status",
                )
                .fetch_all(&self.pool)
                .await?;
                Ok(StatusCounts { attachments, volumes })
            }

            fn pool_use(&self) -> Vec<PoolUse> {
                self.pools_in_use()
            }


            #[tracing::instrument(skip_all, err)]
            async fn consistency_snapshot(&self) -> Result<Snapshot, StoreError> {
                let mut tx = self.begin_snapshot().await?;
                let volumes: Vec<(DbId, String, bool, Option<String>)> = db::query_as(
                    "select v.id, v.status, v.multiattach, v.host from volumes v where v.deleted = false order by v.id",
                )
                .fetch_all(&mut *tx)
                .await?;
                let attachments: Vec<(DbId, DbId, Option<String>, String)> = db::query_as(
                    "select a.id, a.volume_id, a.instance_uuid, a.attach_status from volume_attachment a \
                     where a.deleted = false order by a.volume_id, a.created_at, a.id",
                )
                .fetch_all(&mut *tx)
                .await?;
                let specs: Vec<(DbId, String)> = db::query_as(
                    "select s.attachment_id, s.key from attachment_specs s \
                     join volume_attachment a on a.id = s.attachment_id \
                     where s.deleted = false and a.deleted = true order by s.attachment_id, s.key",
                )
                .fetch_all(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(Snapshot {
                    volumes: volumes
                        .into_iter()
                        .map(|(id, status, multiattach, host)| {
                            Ok(VolumeFacts { id: id.0, status: rows::volume_status(&status)?, multiattach, host })
                        })
                        .collect::<Result<_, StoreError>>()?,
                    attachments: attachments
                        .into_iter()
                        .map(|(id, volume_id, instance_uuid, status)| {
                            Ok(AttachmentFacts {
                                id: id.0,
                                volume_id: volume_id.0,
                                instance_uuid,
                                attach_status: rows::attach_status(&status)?,
                            })
                        })
                        .collect::<Result<_, StoreError>>()?,
                    specs_of_deleted_attachments: specs.into_iter().map(|(id, key)| (id.0, key)).collect(),
                })
            }

            #[tracing::instrument(skip_all, err)]
            async fn list_attachments(
                &self,
                filters: &AttachmentFilters,
                page: &Page<AttachmentSortKey>,
            ) -> Result<Vec<Attachment>, StoreError> {
                let mut q = QueryBuilder::<$DB>::new(format!(
                    "select {} from volume_attachment a join volumes v on v.id = a.volume_id where a.deleted = false",
                    rows::ATTACHMENT_COLUMNS
                ));
                if let Some(project) = &filters.project_id {
                    q.push(" and v.project_id = ").push_bind(project.clone());
                }
                if let Some(volume) = filters.volume_id {
                    q.push(" and a.volume_id = ").push_bind(DbId(volume));
                }
                if let Some(instance) = &filters.instance_uuid {
                    q.push(" and a.instance_uuid = ").push_bind(instance.clone());
                }
                if let Some(status) = &filters.attach_status {
                    q.push(" and a.attach_status = ").push_bind(status.clone());
                }
                Self::push_page(&mut q, page, "a", "volume_attachment");
                let found: Vec<AttachmentRow> = q.build_query_as().fetch_all(&self.pool).await?;
                found.into_iter().map(Attachment::try_from).collect()
            }

            #[tracing::instrument(skip_all, fields(attachment_id = %id), err)]
            async fn get_attachment(&self, id: Uuid) -> Result<Option<AttachmentRecord>, StoreError> {
                // One statement (one row per connector spec), so one snapshot and one
                // round trip.
                let sql = format!(
                    "select {}, v.project_id, v.host as volume_host, s.key as spec_key, s.value as spec_value
                       from volume_attachment a join volumes v on v.id = a.volume_id
                       left join attachment_specs s on s.attachment_id = a.id and s.deleted = false
                      where a.id = $1 and a.deleted = false",
                    rows::ATTACHMENT_COLUMNS
                );
                let found: Vec<rows::AttachmentLookupRow> =
                    db::query_as(&sql).bind(DbId(id)).fetch_all(&self.pool).await?;
                let joined = rows::left_joined(found, |r| {
                    ((r.attachment, r.project_id, r.volume_host), r.spec_key, r.spec_value)
                });
                let Some(((attachment, project_id, volume_host), specs)) = joined else {
                    return Ok(None);
                };
                Ok(Some(AttachmentRecord {
                    attachment: Attachment::try_from(attachment)?,
                    project_id,
                    volume_host,
                    connector: super::connector_specs::decode(specs)?,
                }))
            }

            #[tracing::instrument(skip_all, fields(volume_id = %reservation.volume_id), err)]
            async fn reserve_attachment(&self, reservation: &Reservation) -> Result<ReserveOutcome, StoreError> {
                let mut tx = self.begin_write().await?;
                // The lock and the same-instance question in one statement (no instance
                // compares with null: never the same).
                let row: Option<rows::ReservedVolumeStateRow> = db::query_as(concat!(
                    "select status, attach_status, migration_status, multiattach, volume_type_id,
                            exists(select 1 from volume_attachment
                                    where volume_id = $1 and instance_uuid = $2 and deleted = false) as same_instance
                       from volumes where id = $1 and deleted = false",
                    $for_update
                ))
                .bind(DbId(reservation.volume_id))
                .bind(&reservation.instance_uuid)
                .fetch_optional(&mut *tx)
                .await?;
                let Some(row) = row else {
                    return Ok(ReserveOutcome::VolumeGone);
                };
                let same_instance = row.same_instance;
                let volume = LockedVolume::try_from(row.state)?;
                let decision = attach::decide_reservation(
                    volume.status,
                    volume.multiattach,
                    reservation.expected_multiattach,
                    same_instance,
                );
                let outcome = match decision {
                    ReserveDecision::Refuse => return Ok(ReserveOutcome::Refused(volume.status)),
                    ReserveDecision::Reserve => ReserveOutcome::Reserved,
                    ReserveDecision::SameInstance => ReserveOutcome::SameInstance,
                };
                if decision == ReserveDecision::Reserve {
                    // The row is locked already; the swap still checks status and flag so a
                    // reservation can never be won twice.
                    let (status, _) = attach::volume_status_after(AttachEvent::Reserve, volume.state(), &[]);
                    let mut swap = QueryBuilder::<$DB>::new("update volumes set status = ");
                    swap.push_bind(status.as_str())
                        .push(", updated_at = ")
                        .push_bind(reservation.now)
                        .push(" where id = ")
                        .push_bind(DbId(reservation.volume_id))
                        .push(" and deleted = false and multiattach = ")
                        .push_bind(reservation.expected_multiattach)
                        .push(" and status in (");
                    let mut allowed = swap.separated(", ");
                    for status in attach::reserve_statuses(reservation.expected_multiattach) {
                        allowed.push_bind(status.as_str());
                    }
                    swap.push(")");
                    if swap.build().execute(&mut *tx).await?.rows_affected() != 1 {
                        return Ok(ReserveOutcome::Refused(volume.status));
                    }
                }
                db::query(
                    "insert into volume_attachment (id, volume_id, instance_uuid, attach_status, attach_mode,
                                                    connection_info, created_at, deleted)
                     values ($1, $2, $3, 'reserved', $4, '{}', $5, false)",
                )
                .bind(DbId(reservation.attachment_id))
                .bind(DbId(reservation.volume_id))
                .bind(&reservation.instance_uuid)
                .bind(&reservation.attach_mode)
                .bind(reservation.now)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(outcome)
            }

            #[tracing::instrument(skip_all, fields(attachment_id = %connection.attachment_id), err)]
            async fn connect_attachment(&self, connection: &Connection) -> Result<ConnectOutcome, StoreError> {
                let mut tx = self.begin_write().await?;
                let Some((volume_id, volume)) = Self::lock_attachment_volume(&mut tx, connection.attachment_id).await? else {
                    return Ok(ConnectOutcome::AttachmentGone);
                };
                let updating = connection.by == Connecting::Update;
                if updating {
                    if attach::in_error_state(volume.status) {
                        return Ok(ConnectOutcome::VolumeInError(volume.status));
                    }
                    let infos: Vec<(Option<String>,)> = db::query_as(
                        "select connection_info from volume_attachment where volume_id = $1 and deleted = false",
                    )
                    .bind(DbId(volume_id))
                    .fetch_all(&mut *tx)
                    .await?;
                    let any_connected = infos.iter().any(|(info,)| rows::is_connected(info.as_deref()));
                    let type_multiattach = Self::type_spec(&mut tx, volume.volume_type_id, "multiattach").await?
                        .is_some_and(|v| v == crate::domain::volume_type::SPEC_TRUE);
                    if attach::duplicate_connector(volume.multiattach || type_multiattach, infos.len(), any_connected) {
                        return Ok(ConnectOutcome::DuplicateConnector);
                    }
                }
                // Under the lock now: a delete that won the race leaves nothing to update.
                let sql = format!(
                    "update volume_attachment
                        set attach_status = 'attaching', attached_host = $2, mountpoint = $3, attach_time = $4,
                            attach_mode = $5, connection_info = $6, updated_at = $4
                      where id = $1 and deleted = false
                  returning {}",
                    rows::ATTACHMENT_RETURNING
                );
                let updated: Option<AttachmentRow> = db::query_as(&sql)
                    .bind(DbId(connection.attachment_id))
                    .bind(&connection.attached_host)
                    .bind(&connection.mountpoint)
                    .bind(connection.now)
                    .bind(&connection.attach_mode)
                    .bind(connection.connection_info.to_string())
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some(updated) = updated else {
                    return Ok(ConnectOutcome::AttachmentGone);
                };
                if updating {
                    db::query(
                        "update attachment_specs set deleted = true, deleted_at = $2 where attachment_id = $1 and deleted = false",
                    )
                    .bind(DbId(connection.attachment_id))
                    .bind(connection.now)
                    .execute(&mut *tx)
                    .await?;
                }
                let specs = super::connector_specs::encode(&connection.connector).into_iter();
                Self::insert_key_values(&mut tx, "attachment_specs", "attachment_id", connection.attachment_id, specs, connection.now)
                    .await?;
                let (status, attach_status) = attach::volume_status_after(AttachEvent::Connect, volume.state(), &[]);
                Self::write_volume_status(&mut tx, volume_id, status, attach_status, connection.now).await?;
                tx.commit().await?;
                Ok(ConnectOutcome::Connected(Attachment::try_from(updated)?))
            }

            #[tracing::instrument(skip_all, fields(attachment_id = %id), err)]
            async fn complete_attachment(&self, id: Uuid, now: DateTime<Utc>) -> Result<bool, StoreError> {
                let mut tx = self.begin_write().await?;
                let Some((volume_id, volume)) = Self::lock_attachment_volume(&mut tx, id).await? else {
                    return Ok(false);
                };
                let done = db::query(
                    "update volume_attachment set attach_status = 'attached', updated_at = $2 where id = $1 and deleted = false",
                )
                .bind(DbId(id))
                .bind(now)
                .execute(&mut *tx)
                .await?;
                if done.rows_affected() == 0 {
                    return Ok(false);
                }
                let (status, attach_status) = attach::volume_status_after(AttachEvent::Complete, volume.state(), &[]);
                Self::write_volume_status(&mut tx, volume_id, status, attach_status, now).await?;
                tx.commit().await?;
                Ok(true)
            }

            #[tracing::instrument(skip_all, fields(attachment_id = %id), err)]
            async fn delete_attachment(&self, id: Uuid, now: DateTime<Utc>) -> Result<Option<Vec<Attachment>>, StoreError> {
                let mut tx = self.begin_write().await?;
                let Some((volume_id, volume)) = Self::lock_attachment_volume(&mut tx, id).await? else {
                    return Ok(None);
                };
                let done = db::query(
                    "update volume_attachment
                        set deleted = true, deleted_at = $2, attach_status = 'detached', detach_time = $2, updated_at = $2
                      where id = $1 and deleted = false",
                )
                .bind(DbId(id))
                .bind(now)
                .execute(&mut *tx)
                .await?;
                if done.rows_affected() == 0 {
                    return Ok(None);
                }
                for sql in [
                    "update attachment_specs set deleted = true, deleted_at = $2 where attachment_id = $1 and deleted = false",
                ] {
                    db::query(sql).bind(DbId(id)).bind(now).execute(&mut *tx).await?;
                }
                db::query(
                    "update volume_admin_metadata set deleted = true, deleted_at = $2
                      where volume_id = $1 and key = 'attached_mode' and deleted = false",
                )
                .bind(DbId(volume_id))
                .bind(now)
                .execute(&mut *tx)
                .await?;
                let remaining: Vec<AttachmentRow> = db::query_as(&format!(
                    "select {} from volume_attachment a where a.volume_id = $1 and a.deleted = false order by a.created_at, a.id",
                    rows::ATTACHMENT_COLUMNS
                ))
                .bind(DbId(volume_id))
                .fetch_all(&mut *tx)
                .await?;
                let remaining: Vec<Attachment> = remaining.into_iter().map(Attachment::try_from).collect::<Result<_, _>>()?;
                let statuses: Vec<_> = remaining.iter().map(|a| a.attach_status).collect();
                let (status, attach_status) = attach::volume_status_after(AttachEvent::Detach, volume.state(), &statuses);
                Self::write_volume_status(&mut tx, volume_id, status, attach_status, now).await?;
                tx.commit().await?;
                Ok(Some(remaining.into_iter().filter(|a| a.attach_status != AttachStatus::Detached).collect()))
            }

            #[tracing::instrument(skip_all, fields(host = %service.host), err)]
            async fn register_service(&self, service: &ServiceRegistration) -> Result<Uuid, StoreError> {
                let capabilities = service.capabilities.to_string();
                let mut tx = self.begin_write().await?;
                db::query(
                    "insert into services (uuid, host, binary_name, backend_name, driver, availability_zone,
                                           capabilities, created_at, deleted)
                     values ($1, $2, 'cinder-volume', $3, $4, $5, $6, $7, false)
                     on conflict (host) where deleted = false do nothing",
                )
                .bind(DbId(service.new_uuid))
                .bind(&service.host)
                .bind(&service.backend_name)
                .bind(&service.driver)
                .bind(&service.availability_zone)
                .bind(&capabilities)
                .bind(service.now)
                .execute(&mut *tx)
                .await?;
                let (uuid,): (DbId,) = db::query_as(
                    "update services set driver = $2, availability_zone = $3, capabilities = $4, updated_at = $5
                      where host = $1 and deleted = false returning uuid",
                )
                .bind(&service.host)
                .bind(&service.driver)
                .bind(&service.availability_zone)
                .bind(&capabilities)
                .bind(service.now)
                .fetch_one(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(uuid.0)
            }

            #[tracing::instrument(skip_all, fields(name = %new.name), err)]
            async fn create_volume_type(&self, new: &NewVolumeType) -> Result<(), StoreError> {
                let mut tx = self.begin_write().await?;
                db::query(
                    "insert into volume_types (id, name, description, is_public, created_at, deleted)
                     values ($1, $2, $3, $4, $5, false)",
                )
                .bind(DbId(new.id))
                .bind(&new.name)
                .bind(&new.description)
                .bind(new.is_public)
                .bind(new.created_at)
                .execute(&mut *tx)
                .await?;
                let specs = new.extra_specs.iter().map(|(k, v)| (k.clone(), v.clone()));
                Self::insert_key_values(&mut tx, "volume_type_extra_specs", "volume_type_id", new.id, specs, new.created_at).await?;
                tx.commit().await?;
                Ok(())
            }

            #[tracing::instrument(skip_all, err)]
            async fn get_volume_type(&self, id: Uuid) -> Result<Option<VolumeType>, StoreError> {
                let sql = format!("{TYPE_COLUMNS} where id = $1 and deleted = false");
                self.fetch_type(&sql, TypeKey::Id(id)).await
            }

            #[tracing::instrument(skip_all, err)]
            async fn get_volume_type_by_name(&self, name: &str) -> Result<Option<VolumeType>, StoreError> {
                let sql = format!("{TYPE_COLUMNS} where name = $1 and deleted = false");
                self.fetch_type(&sql, TypeKey::Name(name)).await
            }

            #[tracing::instrument(skip_all, err)]
            async fn list_volume_types(&self) -> Result<Vec<VolumeType>, StoreError> {
                let sql = format!("{TYPE_COLUMNS} where deleted = false order by created_at, id");
                let found: Vec<VolumeTypeRow> = db::query_as(&sql).fetch_all(&self.pool).await?;
                let mut types: Vec<VolumeType> = found.into_iter().map(VolumeTypeRow::into_type).collect();
                self.load_type_details(&mut types).await?;
                Ok(types)
            }

            #[tracing::instrument(skip_all, err)]
            async fn update_volume_type(
                &self,
                id: Uuid,
                update: &VolumeTypeUpdate,
                now: DateTime<Utc>,
            ) -> Result<TypeWrite, StoreError> {
                let done = db::query(
                    "update volume_types
                        set name = coalesce($2, name), description = coalesce($3, description),
                            is_public = coalesce($4, is_public), updated_at = $5
                      where id = $1 and deleted = false",
                )
                .bind(DbId(id))
                .bind(&update.name)
                .bind(&update.description)
                .bind(update.is_public)
                .bind(now)
                .execute(self.writer())
                .await?;
                Ok(if done.rows_affected() == 1 { TypeWrite::Done } else { TypeWrite::TypeNotFound })
            }

            #[tracing::instrument(skip_all, err)]
            async fn delete_volume_type(&self, id: Uuid, now: DateTime<Utc>) -> Result<TypeWrite, StoreError> {
                let mut tx = self.begin_write().await?;
                if !Self::lock_type(&mut tx, id).await? {
                    return Ok(TypeWrite::TypeNotFound);
                }
                if Self::type_in_use(&mut tx, id).await? {
                    return Ok(TypeWrite::InUse);
                }
                for sql in [
                    "update volume_type_extra_specs set deleted = true, deleted_at = $2 where volume_type_id = $1 and deleted = false",
                    "update volume_type_projects set deleted = true, deleted_at = $2 where volume_type_id = $1 and deleted = false",
                    "update volume_types set deleted = true, deleted_at = $2 where id = $1 and deleted = false",
                ] {
                    db::query(sql).bind(DbId(id)).bind(now).execute(&mut *tx).await?;
                }
                tx.commit().await?;
                Ok(TypeWrite::Done)
            }

            #[tracing::instrument(skip_all, err)]
            async fn set_extra_specs(
                &self,
                id: Uuid,
                specs: &ExtraSpecs,
                check: &SpecsCheck,
                now: DateTime<Utc>,
            ) -> Result<TypeWrite, StoreError> {
                let mut tx = self.begin_write().await?;
                if !Self::lock_type(&mut tx, id).await? {
                    return Ok(TypeWrite::TypeNotFound);
                }
                if Self::type_in_use(&mut tx, id).await? {
                    return Ok(TypeWrite::InUse);
                }
                let stored: Vec<KeyValueRow> = db::query_as(
                    "select volume_type_id as owner, key, value from volume_type_extra_specs
                      where volume_type_id = $1 and deleted = false",
                )
                .bind(DbId(id))
                .fetch_all(&mut *tx)
                .await?;
                let existing: ExtraSpecs = stored.into_iter().map(|r| (r.key, r.value)).collect();
                if let Err(reason) = check(&existing) {
                    return Ok(TypeWrite::Refused(reason));
                }
                for (key, value) in specs {
                    db::query(
                        "insert into volume_type_extra_specs (volume_type_id, key, value, created_at, deleted)
                         values ($1, $2, $3, $4, false)
                         on conflict (volume_type_id, key) where deleted = false
                         do update set value = excluded.value, updated_at = excluded.created_at",
                    )
                    .bind(DbId(id))
                    .bind(key)
                    .bind(value)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                }
                db::query("update volume_types set updated_at = $2 where id = $1")
                    .bind(DbId(id))
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(TypeWrite::Done)
            }

            #[tracing::instrument(skip_all, err)]
            async fn delete_extra_spec(&self, id: Uuid, key: &str, now: DateTime<Utc>) -> Result<TypeWrite, StoreError> {
                let mut tx = self.begin_write().await?;
                if !Self::lock_type(&mut tx, id).await? {
                    return Ok(TypeWrite::TypeNotFound);
                }
                if Self::type_in_use(&mut tx, id).await? {
                    return Ok(TypeWrite::InUse);
                }
                let done = db::query(
                    "update volume_type_extra_specs set deleted = true, deleted_at = $3
                      where volume_type_id = $1 and key = $2 and deleted = false",
                )
                .bind(DbId(id))
                .bind(key)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                if done.rows_affected() == 0 {
                    return Ok(TypeWrite::KeyNotFound);
                }
                tx.commit().await?;
                Ok(TypeWrite::Done)
            }

            #[tracing::instrument(skip_all, fields(volume_id = %new.id), err)]
            async fn insert_volume(&self, new: &NewVolume) -> Result<(), StoreError> {
                let mut tx = self.begin_write().await?;
                db::query(
                    "insert into volumes (id, user_id, project_id, host, size, availability_zone, status,
                                          attach_status, display_name, display_description, volume_type_id,
                                          bootable, multiattach, service_uuid, shared_targets, created_at, deleted)
                     values ($1, $2, $3, $4, $5, $6, 'creating', 'detached', $7, $8, $9, false, $10, $11, $12, $13, false)",
                )
                .bind(DbId(new.id))
                .bind(&new.user_id)
                .bind(&new.project_id)
                .bind(&new.host)
                .bind(new.size)
                .bind(&new.availability_zone)
                .bind(&new.name)
                .bind(&new.description)
                .bind(DbId(new.volume_type_id))
                .bind(new.multiattach)
                .bind(DbId(new.service_uuid))
                .bind(new.shared_targets)
                .bind(new.created_at)
                .execute(&mut *tx)
                .await?;
                let metadata = new.metadata.iter().map(|(k, v)| (k.clone(), Some(v.clone())));
                Self::insert_key_values(&mut tx, "volume_metadata", "volume_id", new.id, metadata, new.created_at).await?;
                tx.commit().await?;
                Ok(())
            }

            #[tracing::instrument(skip_all, fields(volume_id = %id, %from, %to), err)]
            async fn transition_volume(
                &self,
                id: Uuid,
                from: VolumeStatus,
                to: VolumeStatus,
                now: DateTime<Utc>,
            ) -> Result<bool, StoreError> {
                let done = db::query(
                    "update volumes set status = $3, updated_at = $4
                      where id = $1 and status = $2 and deleted = false",
                )
                .bind(DbId(id))
                .bind(from.as_str())
                .bind(to.as_str())
                .bind(now)
                .execute(self.writer())
                .await?;
                Ok(done.rows_affected() == 1)
            }

            #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
            async fn get_volume_brief(&self, id: Uuid) -> Result<Option<Volume>, StoreError> {
                // One statement (one row per admin metadata item): one snapshot, one round trip.
                let sql = format!(
                    "select {}, m.key as admin_key, m.value as admin_value{}
                       left join volume_admin_metadata m on m.volume_id = v.id and m.deleted = false
                      where v.id = $1 and v.deleted = false",
                    rows::VOLUME_COLUMNS,
                    rows::VOLUME_FROM
                );
                let found: Vec<rows::VolumeBriefRow> =
                    db::query_as(&sql).bind(DbId(id)).fetch_all(&self.pool).await?;
                let Some((volume, admin)) = rows::left_joined(found, |r| (r.volume, r.admin_key, r.admin_value)) else {
                    return Ok(None);
                };
                let mut volume = volume.into_volume()?;
                volume.admin_metadata = admin.into_iter().map(|(k, v)| (k, v.unwrap_or_default())).collect();
                Ok(Some(volume))
            }

            #[tracing::instrument(skip_all, err)]
            async fn volume_type_spec(&self, type_id: Uuid, key: &str) -> Result<Option<String>, StoreError> {
                let found: Option<(Option<String>,)> = db::query_as(
                    "select value from volume_type_extra_specs where volume_type_id = $1 and key = $2 and deleted = false",
                )
                .bind(DbId(type_id))
                .bind(key)
                .fetch_optional(&self.pool)
                .await?;
                Ok(found.and_then(|(v,)| v))
            }

            #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
            async fn get_volume(&self, id: Uuid) -> Result<Option<Volume>, StoreError> {
                let mut conn = self.begin_read().await?;
                let Some(volume) = Self::volume_row(&mut conn, id).await? else {
                    return Ok(None);
                };
                let mut volumes = vec![volume];
                Self::load_volume_details(&mut conn, &mut volumes).await?;
                Ok(volumes.pop())
            }

            #[tracing::instrument(skip_all, err)]
            async fn list_volumes(
                &self,
                filters: &VolumeFilters,
                page: &Page<VolumeSortKey>,
            ) -> Result<Vec<Volume>, StoreError> {
                let mut q = QueryBuilder::<$DB>::new(format!("select {}{}", rows::VOLUME_COLUMNS, rows::VOLUME_FROM));
                Self::push_volume_filters(&mut q, filters);
                Self::push_page(&mut q, page, "v", "volumes");
                let mut conn = self.begin_read().await?;
                let found: Vec<VolumeRow> = q.build_query_as().fetch_all(&mut *conn).await?;
                let mut volumes = found.into_iter().map(VolumeRow::into_volume).collect::<Result<Vec<_>, _>>()?;
                Self::load_volume_details(&mut conn, &mut volumes).await?;
                Ok(volumes)
            }

            #[tracing::instrument(skip_all, err)]
            async fn count_volumes(&self, filters: &VolumeFilters) -> Result<i64, StoreError> {
                let mut q = QueryBuilder::<$DB>::new("select count(*) from volumes v");
                Self::push_volume_filters(&mut q, filters);
                let (count,): (i64,) = q.build_query_as().fetch_one(&self.pool).await?;
                Ok(count)
            }

            #[tracing::instrument(skip_all, err)]
            async fn summarize_volumes(&self, filters: &VolumeFilters) -> Result<VolumeSummary, StoreError> {
                let mut conn = self.pool.begin().await?;
                // Postgres sums bigint to numeric; the cast keeps both dialects on i64.
                let mut q = QueryBuilder::<$DB>::new(
                    "select count(*), cast(coalesce(sum(v.size), 0) as bigint) from volumes v",
                );
                Self::push_volume_filters(&mut q, filters);
                let (count, total_size): (i64, i64) = q.build_query_as().fetch_one(&mut *conn).await?;
                let mut q = QueryBuilder::<$DB>::new(
                    "select distinct m.key, m.value from volume_metadata m where m.deleted = false \
                     and m.volume_id in (select v.id from volumes v",
                );
                Self::push_volume_filters(&mut q, filters);
                q.push(") order by m.key, m.value");
                let pairs: Vec<(String, Option<String>)> = q.build_query_as().fetch_all(&mut *conn).await?;
                conn.commit().await?;
                let mut metadata: BTreeMap<String, Vec<String>> = BTreeMap::new();
                for (key, value) in pairs {
                    metadata.entry(key).or_default().push(value.unwrap_or_default());
                }
                Ok(VolumeSummary { count, total_size, metadata })
            }

            #[tracing::instrument(skip_all, fields(volume_id = %id, force), err)]
            async fn begin_volume_delete(&self, id: Uuid, force: bool, now: DateTime<Utc>) -> Result<bool, StoreError> {
                let mut q = QueryBuilder::<$DB>::new(
                    "update volumes set previous_status = status, status = 'deleting', updated_at = ",
                );
                q.push_bind(now)
                    .push(" where id = ")
                    .push_bind(DbId(id))
                    .push(
                        " and deleted = false and attach_status <> 'attached'
                          and (migration_status is null or migration_status in ('deleting', 'error', 'success'))
                          and group_id is null and consistencygroup_id is null",
                    );
                if !force {
                    q.push(" and status in (");
                    let mut list = q.separated(", ");
                    for status in DELETABLE_STATUSES {
                        list.push_bind(status.as_str());
                    }
                    q.push(")");
                }
                let done = q.build().execute(self.writer()).await?;
                Ok(done.rows_affected() == 1)
            }

            #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
            async fn finish_volume_delete(&self, id: Uuid, now: DateTime<Utc>) -> Result<(), StoreError> {
                let mut tx = self.begin_write().await?;
                for sql in [
                    "update attachment_specs set deleted = true, deleted_at = $2
                      where deleted = false and attachment_id in
                            (select id from volume_attachment where volume_id = $1)",
                    "update volume_attachment set deleted = true, deleted_at = $2, attach_status = 'deleted'
                      where volume_id = $1 and deleted = false",
                    "update volume_metadata set deleted = true, deleted_at = $2 where volume_id = $1 and deleted = false",
                    "update volume_admin_metadata set deleted = true, deleted_at = $2 where volume_id = $1 and deleted = false",
                    "update volumes set deleted = true, deleted_at = $2, status = 'deleted', migration_status = null
                      where id = $1 and deleted = false",
                ] {
                    db::query(sql).bind(DbId(id)).bind(now).execute(&mut *tx).await?;
                }
                tx.commit().await?;
                Ok(())
            }

            #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
            async fn set_bootable(&self, id: Uuid, bootable: bool, now: DateTime<Utc>) -> Result<bool, StoreError> {
                let done = db::query("update volumes set bootable = $2, updated_at = $3 where id = $1 and deleted = false")
                    .bind(DbId(id))
                    .bind(bootable)
                    .bind(now)
                    .execute(self.writer())
                    .await?;
                Ok(done.rows_affected() == 1)
            }

            #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
            async fn update_volume(
                &self,
                id: Uuid,
                update: &VolumeUpdate,
                refused: &[VolumeStatus],
                now: DateTime<Utc>,
            ) -> Result<VolumeWrite<()>, StoreError> {
                let mut tx = self.begin_write().await?;
                if let Some(outcome) = Self::check_volume_status(&mut tx, id, refused).await? {
                    return Ok(outcome);
                }
                let mut q = QueryBuilder::<$DB>::new("update volumes set updated_at = ");
                q.push_bind(now);
                if let Some(name) = &update.name {
                    q.push(", display_name = ").push_bind(name.clone());
                }
                if let Some(description) = &update.description {
                    q.push(", display_description = ").push_bind(description.clone());
                }
                q.push(" where id = ").push_bind(DbId(id));
                q.build().execute(&mut *tx).await?;
                if let Some(metadata) = &update.metadata {
                    Self::write_metadata(&mut tx, id, &MetadataChange::Replace(metadata.clone()), now).await?;
                }
                tx.commit().await?;
                Ok(VolumeWrite::Done(()))
            }

            #[tracing::instrument(skip_all, err)]
            async fn volumes_stuck_in(&self, statuses: &[VolumeStatus], before: DateTime<Utc>) -> Result<Vec<Volume>, StoreError> {
                if statuses.is_empty() {
                    return Ok(Vec::new());
                }
                let mut q = QueryBuilder::<$DB>::new(format!("select {}{} where v.deleted = false and v.status in (", rows::VOLUME_COLUMNS, rows::VOLUME_FROM));
                let mut list = q.separated(", ");
                for status in statuses {
                    list.push_bind(status.as_str());
                }
                q.push(") and coalesce(v.updated_at, v.created_at) < ").push_bind(before);
                q.push(" order by v.created_at, v.id");
                let found: Vec<VolumeRow> = q.build_query_as().fetch_all(&self.pool).await?;
                found.into_iter().map(VolumeRow::into_volume).collect()
            }

            #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
            async fn begin_extend(&self, id: Uuid, new_size: i64, now: DateTime<Utc>) -> Result<Option<ExtendStart>, StoreError> {
                let mut tx = self.begin_write().await?;
                let row: Option<(String, i64)> = db::query_as(concat!(
                    "select status, size from volumes where id = $1 and deleted = false",
                    $for_update
                ))
                .bind(DbId(id))
                .fetch_optional(&mut *tx)
                .await?;
                let Some((status, size)) = row else {
                    return Ok(None);
                };
                let status = rows::volume_status(&status)?;
                if new_size <= size {
                    return Ok(Some(ExtendStart::TooSmall { current: size }));
                }
                if status != VolumeStatus::Available {
                    return Ok(Some(ExtendStart::WrongStatus(status)));
                }
                db::query(
                    "update volumes set previous_status = status, status = 'extending', updated_at = $2 where id = $1",
                )
                .bind(DbId(id))
                .bind(now)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(Some(ExtendStart::Started))
            }

            #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
            async fn finish_extend(&self, id: Uuid, new_size: i64, now: DateTime<Utc>) -> Result<bool, StoreError> {
                let done = db::query(
                    "update volumes set size = $2, status = 'available', updated_at = $3
                      where id = $1 and status = 'extending' and deleted = false",
                )
                .bind(DbId(id))
                .bind(new_size)
                .bind(now)
                .execute(self.writer())
                .await?;
                Ok(done.rows_affected() == 1)
            }

            #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
            async fn legacy_attach_action(
                &self,
                id: Uuid,
                action: LegacyAction,
                now: DateTime<Utc>,
            ) -> Result<Option<LegacyOutcome>, StoreError> {
                let mut tx = self.begin_write().await?;
                let Some(volume) = Self::lock_volume(&mut tx, id).await? else {
                    return Ok(None);
                };
                let attached: Option<(DbId,)> = db::query_as(
                    "select id from volume_attachment where volume_id = $1 and deleted = false and attach_status = 'attached' limit 1",
                )
                .bind(DbId(id))
                .fetch_optional(&mut *tx)
                .await?;
                let outcome = legacy_attach::decide(action, volume.state(), volume.multiattach, attached.is_some());
                if let LegacyOutcome::Set(status) = outcome {
                    Self::write_volume_status(&mut tx, id, status, volume.attach_status, now).await?;
                    tx.commit().await?;
                }
                Ok(Some(outcome))
            }

            #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
            async fn volume_metadata(&self, id: Uuid) -> Result<Option<BTreeMap<String, String>>, StoreError> {
                let mut conn = self.pool.acquire().await?;
                let live: Option<(DbId,)> = db::query_as("select id from volumes where id = $1 and deleted = false")
                    .bind(DbId(id))
                    .fetch_optional(&mut *conn)
                    .await?;
                if live.is_none() {
                    return Ok(None);
                }
                Ok(Some(Self::read_metadata(&mut conn, id).await?))
            }

            #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
            async fn change_volume_metadata(
                &self,
                id: Uuid,
                change: &MetadataChange,
                refused: &[VolumeStatus],
                now: DateTime<Utc>,
            ) -> Result<VolumeWrite<BTreeMap<String, String>>, StoreError> {
                let mut tx = self.begin_write().await?;
                if let Some(outcome) = Self::check_volume_status(&mut tx, id, refused).await? {
                    return Ok(match outcome {
                        VolumeWrite::Refused(status) => VolumeWrite::Refused(status),
                        _ => VolumeWrite::VolumeNotFound,
                    });
                }
                if !Self::write_metadata(&mut tx, id, change, now).await? {
                    return Ok(VolumeWrite::KeyNotFound);
                }
                let metadata = Self::read_metadata(&mut tx, id).await?;
                tx.commit().await?;
                Ok(VolumeWrite::Done(metadata))
            }

            #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
            async fn set_readonly(&self, id: Uuid, readonly: bool, now: DateTime<Utc>) -> Result<bool, StoreError> {
                let mut tx = self.begin_write().await?;
                let available: Option<(DbId,)> = db::query_as(concat!(
                    "select id from volumes where id = $1 and deleted = false and status = 'available'",
                    $for_update
                ))
                .bind(DbId(id))
                .fetch_optional(&mut *tx)
                .await?;
                if available.is_none() {
                    return Ok(false);
                }
                db::query(
                    "insert into volume_admin_metadata (volume_id, key, value, created_at, deleted)
                     values ($1, 'readonly', $2, $3, false)
                     on conflict (volume_id, key) where deleted = false
                     do update set value = excluded.value, updated_at = excluded.created_at",
                )
                .bind(DbId(id))
                .bind(if readonly { "True" } else { "False" })
                .bind(now)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(true)
            }

            #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
            async fn reset_status(&self, id: Uuid, reset: &StatusReset, now: DateTime<Utc>) -> Result<bool, StoreError> {
                let done = db::query(
                    "update volumes
                        set status = coalesce($2, status), attach_status = coalesce($3, attach_status),
                            migration_status = case when $4 then $5 else migration_status end,
                            updated_at = $6
                      where id = $1 and deleted = false",
                )
                .bind(DbId(id))
                .bind(reset.status.map(|s| s.as_str()))
                .bind(reset.attach_status.map(|s| s.as_str()))
                .bind(reset.migration_status.is_some())
                .bind(reset.migration_status.as_deref().filter(|s| *s != "none"))
                .bind(now)
                .execute(self.writer())
                .await?;
                Ok(done.rows_affected() == 1)
            }

            #[tracing::instrument(skip_all, fields(volume_id = %retype.volume_id), err)]
            async fn retype_volume(&self, retype: &Retype, now: DateTime<Utc>) -> Result<bool, StoreError> {
                let done = db::query(
                    "update volumes set volume_type_id = $2, multiattach = $3, updated_at = $4
                      where id = $1 and deleted = false
                        and status in ('available', 'in-use')
                        and volume_type_id <> $2
                        and multiattach = $5
                        and ($3 = $5 or status = 'available')
                        and (migration_status is null or migration_status in ('deleting', 'error', 'success'))
                        and group_id is null and consistencygroup_id is null",
                )
                .bind(DbId(retype.volume_id))
                .bind(DbId(retype.new_type_id))
                .bind(retype.new_multiattach)
                .bind(now)
                .bind(retype.expected_multiattach)
                .execute(self.writer())
                .await?;
                Ok(done.rows_affected() == 1)
            }

            #[tracing::instrument(skip_all, err)]
            async fn insert_message(&self, message: &Message) -> Result<(), StoreError> {
                db::query(
                    "insert into messages (id, project_id, request_id, resource_type, resource_uuid, event_id,
                                           message_level, user_message, created_at, expires_at, deleted)
                     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, false)",
                )
                .bind(DbId(message.id))
                .bind(&message.project_id)
                .bind(&message.request_id)
                .bind(&message.resource_type)
                .bind(&message.resource_uuid)
                .bind(&message.event_id)
                .bind(&message.message_level)
                .bind(&message.user_message)
                .bind(message.created_at)
                .bind(message.expires_at)
                .execute(self.writer())
                .await?;
                Ok(())
            }

            #[tracing::instrument(skip_all, err)]
            async fn list_messages(&self, project_id: Option<&str>) -> Result<Vec<Message>, StoreError> {
                let mut q = QueryBuilder::<$DB>::new(
                    "select id, project_id, request_id, resource_type, resource_uuid, event_id, message_level,
                            user_message, created_at, expires_at
                       from messages where deleted = false",
                );
                if let Some(project) = project_id {
                    q.push(" and project_id = ").push_bind(project.to_owned());
                }
                q.push(" order by created_at desc, id desc");
                let found: Vec<MessageRow> = q.build_query_as().fetch_all(&self.pool).await?;
                Ok(found.into_iter().map(Message::from).collect())
            }

            #[tracing::instrument(skip_all, err)]
            async fn get_message(&self, id: Uuid) -> Result<Option<Message>, StoreError> {
                let found: Option<MessageRow> = db::query_as(
                    "select id, project_id, request_id, resource_type, resource_uuid, event_id, message_level,
                            user_message, created_at, expires_at
                       from messages where id = $1 and deleted = false",
                )
                .bind(DbId(id))
                .fetch_optional(&self.pool)
                .await?;
                Ok(found.map(Message::from))
            }

            #[tracing::instrument(skip_all, err)]
            async fn delete_message(&self, id: Uuid, now: DateTime<Utc>) -> Result<bool, StoreError> {
                let done = db::query("update messages set deleted = true, deleted_at = $2 where id = $1 and deleted = false")
                    .bind(DbId(id))
                    .bind(now)
                    .execute(self.writer())
                    .await?;
                Ok(done.rows_affected() == 1)
            }

            async fn close(&self) {
                self.pool.close().await;
                self.writer().close().await;
            }
        }
    };
}

pub(super) use sql_store;
