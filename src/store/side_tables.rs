//! Key/value side tables (volume metadata, admin and image metadata, type extra specs, an
//! attachment's connector): writing them, and reading them joined to their owner.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::{Bind, Sql};
use super::db::{Database, Executor};
use super::SqlStore;
use crate::domain::refusal::MetadataRefusal;
use crate::domain::volume::MetadataChange;

/// The side tables. Table and column names come from here, never from input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SideTable {
    VolumeMetadata,
    VolumeAdminMetadata,
    VolumeImageMetadata,
    TypeExtraSpecs,
    GroupTypeSpecs,
    AttachmentSpecs,
    QosSpecs,
    SnapshotMetadata,
    BackupMetadata,
}

impl SideTable {
    pub fn table(self) -> &'static str {
        match self {
            SideTable::VolumeMetadata => "volume_metadata",
            SideTable::VolumeAdminMetadata => "volume_admin_metadata",
            SideTable::VolumeImageMetadata => "volume_glance_metadata",
            SideTable::TypeExtraSpecs => "volume_type_extra_specs",
            SideTable::GroupTypeSpecs => "group_type_specs",
            SideTable::AttachmentSpecs => "attachment_specs",
            SideTable::QosSpecs => "qos_specs_items",
            SideTable::SnapshotMetadata => "snapshot_metadata",
            SideTable::BackupMetadata => "backup_metadata",
        }
    }

    pub fn owner_column(self) -> &'static str {
        match self {
            SideTable::VolumeMetadata
            | SideTable::VolumeAdminMetadata
            | SideTable::VolumeImageMetadata => "volume_id",
            SideTable::TypeExtraSpecs => "volume_type_id",
            SideTable::GroupTypeSpecs => "group_type_id",
            SideTable::AttachmentSpecs => "attachment_id",
            SideTable::QosSpecs => "qos_specs_id",
            SideTable::SnapshotMetadata => "snapshot_id",
            SideTable::BackupMetadata => "backup_id",
        }
    }
}

/// One `(key, value)` item of a side table.
pub(super) type Item = (String, Option<String>);

/// A `(owner id, key, value)` row of a side table.
pub(super) struct KeyValue {
    pub owner: Uuid,
    pub key: String,
    pub value: Option<String>,
}

impl FromRow for KeyValue {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(KeyValue {
            owner: c.get()?,
            key: c.get()?,
            value: c.get()?,
        })
    }
}

/// The live items of `table` that belong to `owners`, in one statement, by key (a
/// listing's metadata, specs or items after its page was read).
pub(super) fn items_of<B: Bind>(table: SideTable, owners: impl IntoIterator<Item = B>) -> Sql {
    let mut sql = Sql::new("select ");
    sql.push(table.owner_column())
        .push(", key, value from ")
        .push(table.table())
        .push(" where deleted = false and ")
        .push(table.owner_column())
        .push(" in (")
        .push_list(owners)
        .push(") order by key");
    sql
}

/// The rows of a lookup that left-joins a side table (one row per item, one row with no
/// item when there are none): the owner, taken from the first row, and every item.
/// `None` when there are no rows at all.
pub(super) fn left_joined<H>(
    rows: Vec<(H, Option<String>, Option<String>)>,
) -> Option<(H, Vec<Item>)> {
    let mut head = None;
    let mut items = Vec::with_capacity(rows.len());
    for (this, key, value) in rows {
        if let Some(key) = key {
            items.push((key, value));
        }
        head.get_or_insert(this);
    }
    head.map(|head| (head, items))
}

/// The statement inserting items owned by `owner` into `table`; `None` for no items.
pub(super) fn insert_items(
    table: SideTable,
    owner: Uuid,
    items: impl IntoIterator<Item = Item>,
    now: DateTime<Utc>,
) -> Option<Sql> {
    let mut sql = Sql::new("insert into ");
    sql.push(table.table())
        .push(" (")
        .push(table.owner_column())
        .push(", key, value, created_at, deleted) values ");
    let mut any = false;
    for (i, (key, value)) in items.into_iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        sql.push("(")
            .push_list([owner])
            .push(", ")
            .push_list([key])
            .push(", ")
            .push_list([value])
            .push(", ")
            .push_list([now])
            .push(", false)");
        any = true;
    }
    any.then_some(sql)
}

/// The statement soft-deleting the live items of `owner` in `table` (only `key`, when
/// given).
pub(super) fn remove_items(
    table: SideTable,
    owner: Uuid,
    key: Option<&str>,
    now: DateTime<Utc>,
) -> Sql {
    let mut sql = Sql::new("update ");
    sql.push(table.table())
        .push(" set deleted = true, deleted_at = ")
        .push_bind(now)
        .push(" where ")
        .push(table.owner_column())
        .push(" = ")
        .push_bind(owner)
        .push(" and deleted = false");
    if let Some(key) = key {
        sql.push(" and key = ").push_bind(key);
    }
    sql
}

impl<D: Database> SqlStore<D> {
    /// Inserts items owned by `owner` into `table`, in one statement.
    pub(super) async fn insert_items(
        tx: &mut D::Tx,
        table: SideTable,
        owner: Uuid,
        items: impl IntoIterator<Item = Item>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        if let Some(sql) = insert_items(table, owner, items, now) {
            tx.execute(sql).await?;
        }
        Ok(())
    }

    /// Soft-deletes the live items of `owner` in `table` (only `key`, when given); the
    /// number removed.
    pub(super) async fn remove_items(
        tx: &mut D::Tx,
        table: SideTable,
        owner: Uuid,
        key: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        tx.execute(remove_items(table, owner, key, now)).await
    }

    /// Adds `key` or replaces its value.
    async fn upsert_item(
        tx: &mut D::Tx,
        table: SideTable,
        owner: Uuid,
        key: &str,
        value: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut sql = Sql::new("insert into ");
        sql.push(table.table())
            .push(" (")
            .push(table.owner_column())
            .push(", key, value, created_at, deleted) values (")
            .push_list([owner])
            .push(", ")
            .push_list([key.to_owned()])
            .push(", ")
            .push_list([Some(value.to_owned())])
            .push(", ")
            .push_list([now])
            .push(", false) on conflict (")
            .push(table.owner_column())
            .push(
                ", key) where deleted = false \
                   do update set value = excluded.value, updated_at = excluded.created_at",
            );
        tx.execute(sql).await.map(drop)
    }

    /// Applies a metadata change to `owner`'s items; `false` when the key to remove is
    /// not there.
    pub(super) async fn write_items(
        tx: &mut D::Tx,
        table: SideTable,
        owner: Uuid,
        change: &MetadataChange,
        now: DateTime<Utc>,
    ) -> Result<Result<(), MetadataRefusal>, StoreError> {
        match change {
            MetadataChange::Remove(key) => {
                let removed = Self::remove_items(tx, table, owner, Some(key), now).await?;
                if removed == 0 {
                    return Ok(Err(MetadataRefusal::NoSuchKey(key.clone())));
                }
            }
            MetadataChange::Replace(metadata) => {
                Self::remove_items(tx, table, owner, None, now).await?;
                let items = metadata.iter().map(|(k, v)| (k.clone(), Some(v.clone())));
                Self::insert_items(tx, table, owner, items, now).await?;
            }
            MetadataChange::Merge(metadata) => {
                for (key, value) in metadata {
                    Self::upsert_item(tx, table, owner, key, value, now).await?;
                }
            }
        }
        Ok(Ok(()))
    }
}
