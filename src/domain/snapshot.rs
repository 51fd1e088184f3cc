//! Snapshots: states (Cinder's `SnapshotStatus`), the record and its listings (the rules
//! of taking and deleting one are in `snapshot_rules`). A snapshot is taken synchronously through the volume's backend,
//! like a volume create: the answer already says `available` (or `error`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::ids::{SnapshotId, VolumeId};
use super::string_enum::string_enum;
use super::volume::VolumeStatus;

string_enum! {
    /// `snapshots.status`.
    SnapshotStatus {
        Creating => "creating",
        Available => "available",
        Deleting => "deleting",
        Error => "error",
        ErrorDeleting => "error_deleting",
        Unmanaging => "unmanaging",
        BackingUp => "backing-up",
        Restoring => "restoring",
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub id: SnapshotId,
    pub volume_id: VolumeId,
    pub user_id: Option<String>,
    pub project_id: String,
    pub status: SnapshotStatus,
    pub progress: Option<String>,
    /// The size of the volume when it was taken, GiB.
    pub volume_size: i64,
    pub name: Option<String>,
    pub description: Option<String>,
    pub metadata: BTreeMap<String, String>,
    /// The group snapshot it was taken in (3.14+).
    pub group_snapshot_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone)]
pub struct NewSnapshot {
    pub id: SnapshotId,
    pub volume_id: VolumeId,
    pub user_id: String,
    pub project_id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub metadata: BTreeMap<String, String>,
    /// `in-use` volumes too (`force`, or 3.66+).
    pub in_use_allowed: bool,
    pub created_at: DateTime<Utc>,
}

/// The keys a snapshot listing sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotSortKey {
    Id,
    CreatedAt,
    UpdatedAt,
    Name,
    Size,
    Status,
    VolumeId,
    ProjectId,
}

impl SnapshotSortKey {
    pub fn parse(key: &str) -> Option<Self> {
        Some(match key {
            "id" => SnapshotSortKey::Id,
            "created_at" => SnapshotSortKey::CreatedAt,
            "updated_at" => SnapshotSortKey::UpdatedAt,
            "name" | "display_name" => SnapshotSortKey::Name,
            "size" | "volume_size" => SnapshotSortKey::Size,
            "status" => SnapshotSortKey::Status,
            "volume_id" => SnapshotSortKey::VolumeId,
            "project_id" => SnapshotSortKey::ProjectId,
            _ => return None,
        })
    }
}

/// The volume statuses a snapshot may be taken in.
pub fn snapshot_statuses(in_use_allowed: bool) -> &'static [VolumeStatus] {
    if in_use_allowed {
        &[VolumeStatus::Available, VolumeStatus::InUse]
    } else {
        &[VolumeStatus::Available]
    }
}

/// Which snapshots a listing returns.
#[derive(Debug, Clone, Default)]
pub struct SnapshotFilters {
    pub project_id: Option<String>,
    pub volume_id: Option<VolumeId>,
    pub status: Option<SnapshotStatus>,
    pub name: Option<String>,
}
