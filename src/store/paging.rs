//! Listing pages: sort keys as SQL expressions and the keyset condition for a marker.

use super::db::sql::Sql;
use crate::domain::attachment::AttachmentSortKey;
use crate::domain::backup::BackupSortKey;
use crate::domain::group::GroupSortKey;
use crate::domain::group_type::GroupTypeSortKey;
use crate::domain::paging::{Page, SortDir};
use crate::domain::qos::QosSortKey;
use crate::domain::snapshot::SnapshotSortKey;
use crate::domain::transfer::TransferSortKey;
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

impl SortColumn for SnapshotSortKey {
    const ID: Self = SnapshotSortKey::Id;
    const CREATED_AT: Self = SnapshotSortKey::CreatedAt;

    fn expr(self) -> &'static str {
        match self {
            SnapshotSortKey::Id => "{t}.id",
            SnapshotSortKey::CreatedAt => "{t}.created_at",
            SnapshotSortKey::UpdatedAt => "coalesce({t}.updated_at, {t}.created_at)",
            SnapshotSortKey::Name => "coalesce({t}.display_name, '')",
            SnapshotSortKey::Size => "{t}.volume_size",
            SnapshotSortKey::Status => "{t}.status",
            SnapshotSortKey::VolumeId => "{t}.volume_id",
            SnapshotSortKey::ProjectId => "{t}.project_id",
        }
    }
}

impl SortColumn for BackupSortKey {
    const ID: Self = BackupSortKey::Id;
    const CREATED_AT: Self = BackupSortKey::CreatedAt;

    fn expr(self) -> &'static str {
        match self {
            BackupSortKey::Id => "{t}.id",
            BackupSortKey::CreatedAt => "{t}.created_at",
            BackupSortKey::UpdatedAt => "coalesce({t}.updated_at, {t}.created_at)",
            BackupSortKey::Name => "coalesce({t}.display_name, '')",
            BackupSortKey::Size => "{t}.size",
            BackupSortKey::Status => "{t}.status",
            BackupSortKey::VolumeId => "{t}.volume_id",
            BackupSortKey::ProjectId => "{t}.project_id",
        }
    }
}

impl SortColumn for QosSortKey {
    const ID: Self = QosSortKey::Id;
    const CREATED_AT: Self = QosSortKey::CreatedAt;

    fn expr(self) -> &'static str {
        match self {
            QosSortKey::Id => "{t}.id",
            QosSortKey::Name => "{t}.name",
            QosSortKey::Consumer => "{t}.consumer",
            QosSortKey::CreatedAt => "{t}.created_at",
        }
    }
}

impl SortColumn for GroupTypeSortKey {
    const ID: Self = GroupTypeSortKey::Id;
    const CREATED_AT: Self = GroupTypeSortKey::CreatedAt;

    fn expr(self) -> &'static str {
        match self {
            GroupTypeSortKey::Id => "{t}.id",
            GroupTypeSortKey::Name => "{t}.name",
            GroupTypeSortKey::Description => "coalesce({t}.description, '')",
            GroupTypeSortKey::IsPublic => "{t}.is_public",
            GroupTypeSortKey::CreatedAt => "{t}.created_at",
        }
    }
}

impl SortColumn for GroupSortKey {
    const ID: Self = GroupSortKey::Id;
    const CREATED_AT: Self = GroupSortKey::CreatedAt;

    fn expr(self) -> &'static str {
        match self {
            GroupSortKey::Id => "{t}.id",
            GroupSortKey::Name => "coalesce({t}.name, '')",
            GroupSortKey::Status => "{t}.status",
            GroupSortKey::CreatedAt => "{t}.created_at",
        }
    }
}

impl SortColumn for TransferSortKey {
    const ID: Self = TransferSortKey::Id;
    const CREATED_AT: Self = TransferSortKey::CreatedAt;

    fn expr(self) -> &'static str {
        match self {
            TransferSortKey::Id => "{t}.id",
            TransferSortKey::CreatedAt => "{t}.created_at",
            TransferSortKey::Name => "coalesce({t}.display_name, '')",
            TransferSortKey::VolumeId => "{t}.volume_id",
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
fn total_order<K: SortColumn>(sort: &[(K, SortDir)]) -> Vec<(K, SortDir)> {
    let mut keys = sort.to_vec();
    let dir = keys.first().map(|(_, d)| *d).unwrap_or(SortDir::Desc);
    for key in [K::CREATED_AT, K::ID] {
        if !keys.iter().any(|(k, _)| *k == key) {
            keys.push((key, dir));
        }
    }
    keys
}

fn direction(dir: SortDir) -> &'static str {
    match dir {
        SortDir::Asc => "asc",
        SortDir::Desc => "desc",
    }
}

/// Appends the keyset condition for `page.marker` (rows strictly after it in the total
/// order), the order and the limit/offset. `alias` is the listed table's alias in the
/// query, `table` its name (the marker is looked up there).
pub(super) fn push_page<K: SortColumn>(sql: &mut Sql, page: &Page<K>, alias: &str, table: &str) {
    let order = total_order(&page.sort);
    let column = |key: K, alias: &str| key.expr().replace("{t}", alias);
    if let Some(marker) = page.marker {
        sql.push(" and (");
        for (i, (key, dir)) in order.iter().enumerate() {
            if i > 0 {
                sql.push(" or ");
            }
            sql.push("(");
            for (earlier, _) in &order[..i] {
                sql.push(&column(*earlier, alias))
                    .push(&format!(
                        " = (select {} from {table} mk where mk.id = ",
                        column(*earlier, "mk")
                    ))
                    .push_bind(marker)
                    .push(") and ");
            }
            let op = if *dir == SortDir::Asc { " > " } else { " < " };
            sql.push(&column(*key, alias))
                .push(op)
                .push(&format!(
                    "(select {} from {table} mk where mk.id = ",
                    column(*key, "mk")
                ))
                .push_bind(marker)
                .push("))");
        }
        sql.push(")");
    }
    sql.push(" order by ");
    for (i, (key, dir)) in order.iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        sql.push(&column(*key, alias))
            .push(" ")
            .push(direction(*dir));
    }
    sql.push(" limit ")
        .push_bind(page.limit)
        .push(" offset ")
        .push_bind(page.offset);
}
