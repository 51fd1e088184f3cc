//! Group snapshots (3.14+): a snapshot of each member of a group, taken as one request,
//! and Cinder's rules for them: which members can be snapshotted, and when a group
//! snapshot may be deleted.

use chrono::{DateTime, Utc};

use super::ids::{GroupId, GroupSnapshotId, GroupTypeId, SnapshotId, VolumeId};
use super::string_enum::string_enum;
use super::volume::VolumeStatus;

string_enum! {
    /// `group_snapshots.status`, in Cinder's order (its messages list them so).
    GroupSnapshotStatus {
        Error => "error",
        Available => "available",
        Creating => "creating",
        Deleting => "deleting",
        Deleted => "deleted",
        Updating => "updating",
        ErrorDeleting => "error_deleting",
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSnapshot {
    pub id: GroupSnapshotId,
    pub group_id: GroupId,
    pub user_id: Option<String>,
    pub project_id: String,
    pub group_type_id: GroupTypeId,
    pub status: GroupSnapshotStatus,
    pub name: Option<String>,
    pub description: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone)]
pub struct NewGroupSnapshot {
    pub id: GroupSnapshotId,
    pub group_id: GroupId,
    pub user_id: String,
    pub project_id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// One member's snapshot in a group snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberSnapshot {
    pub snapshot: SnapshotId,
    pub volume: VolumeId,
}

/// What a group snapshot listing may filter on.
#[derive(Debug, Clone, Default)]
pub struct GroupSnapshotFilters {
    /// `None`: every project's (an admin's `all_tenants`).
    pub project_id: Option<String>,
    pub name: Option<String>,
    pub status: Option<GroupSnapshotStatus>,
    pub group_id: Option<GroupId>,
}

/// What a member brings to the check before its snapshot is recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotCandidate {
    pub id: VolumeId,
    pub status: VolumeStatus,
    pub migration_status: Option<String>,
    pub has_host: bool,
    pub size: i64,
    pub type_name: String,
}

/// Why a member cannot be snapshotted, in Cinder's words (`InvalidVolume`).
pub fn check_member(volume: &SnapshotCandidate) -> Result<(), &'static str> {
    if !volume.has_host {
        return Err(
            "The snapshot cannot be created because volume has not been scheduled to any host.",
        );
    }
    if volume.status == VolumeStatus::Maintenance {
        return Err("The snapshot cannot be created when the volume is in maintenance mode.");
    }
    // Cinder's `_is_volume_migrating`: any migration status but these.
    let migrating = volume
        .migration_status
        .as_deref()
        .is_some_and(|s| !["", "deleting", "error", "success"].contains(&s));
    if migrating {
        return Err("Snapshot cannot be created while volume is migrating.");
    }
    if volume.status == VolumeStatus::Error {
        return Err("The snapshot cannot be created when the volume is in error status.");
    }
    Ok(())
}

/// Cinder's group snapshot usage payload (`_usage_from_group_snapshot`) in `status`.
pub fn usage_payload(snapshot: &GroupSnapshot, status: GroupSnapshotStatus) -> serde_json::Value {
    serde_json::json!({
        "tenant_id": snapshot.project_id,
        "user_id": snapshot.user_id,
        "group_snapshot_id": snapshot.id,
        "name": snapshot.name,
        "group_id": snapshot.group_id,
        "created_at": super::time::format_timestamp(&snapshot.created_at),
        "status": status.as_str(),
    })
}

/// Why a group snapshot may not be deleted (`InvalidGroupSnapshot`).
pub const DELETE_REFUSED: &str = "GroupSnapshot status must be available or error, and no Group \
     can be currently using it as source for its creation.";

/// Cinder deletes a group snapshot that is `available` or `error` (and no group is being
/// made from it).
pub fn may_delete(status: GroupSnapshotStatus) -> bool {
    matches!(
        status,
        GroupSnapshotStatus::Available | GroupSnapshotStatus::Error
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate() -> SnapshotCandidate {
        SnapshotCandidate {
            id: VolumeId::generate(),
            status: VolumeStatus::InUse,
            migration_status: Some("success".into()),
            has_host: true,
            size: 1,
            type_name: "t".into(),
        }
    }

    #[test]
    fn members_in_use_are_snapshotted_but_not_those_in_error_or_on_no_host() {
        assert_eq!(check_member(&candidate()), Ok(()));
        let error = SnapshotCandidate {
            status: VolumeStatus::Error,
            ..candidate()
        };
        assert!(check_member(&error).unwrap_err().contains("error status"));
        let nowhere = SnapshotCandidate {
            has_host: false,
            ..candidate()
        };
        assert!(check_member(&nowhere).unwrap_err().contains("any host"));
        assert!(may_delete(GroupSnapshotStatus::Error));
        assert!(!may_delete(GroupSnapshotStatus::Creating));
    }
}
