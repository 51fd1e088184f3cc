//! Group snapshots (3.14+): a snapshot of each member of a group, taken as one request,
//! and Cinder's rules for them: which members can be snapshotted, and when a group
//! snapshot may be deleted.

use chrono::{DateTime, Utc};

use super::group::GroupStatus;
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

/// Why a group cannot be snapshotted (`InvalidGroup`): only an `available` group is,
/// so that a snapshot never races the group's delete or a change of its members.
pub fn check_group(group: GroupId, status: GroupStatus) -> Result<(), String> {
    if status == GroupStatus::Available {
        Ok(())
    } else {
        Err(format!(
            "Group {group} status must be available, but current status is: {status}."
        ))
    }
}

/// Why a member cannot be snapshotted, in Cinder's words (`InvalidVolume`); beyond
/// Cinder's checks, the member must be `available` or `in-use` (not being deleted,
/// restored, uploaded...).
pub fn check_member(volume: &SnapshotCandidate) -> Result<(), String> {
    let refuse = |why: &str| Err(why.to_owned());
    if !volume.has_host {
        return refuse(
            "The snapshot cannot be created because volume has not been scheduled to any host.",
        );
    }
    if volume.status == VolumeStatus::Maintenance {
        return refuse("The snapshot cannot be created when the volume is in maintenance mode.");
    }
    // Cinder's `_is_volume_migrating`: any migration status but these.
    let migrating = volume
        .migration_status
        .as_deref()
        .is_some_and(|s| !["", "deleting", "error", "success"].contains(&s));
    if migrating {
        return refuse("Snapshot cannot be created while volume is migrating.");
    }
    if volume.status == VolumeStatus::Error {
        return refuse("The snapshot cannot be created when the volume is in error status.");
    }
    if !matches!(volume.status, VolumeStatus::Available | VolumeStatus::InUse) {
        return Err(format!(
            "Volume {} status must be available or in-use, but current status is: {}.",
            volume.id, volume.status
        ));
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

    #[test]
    fn only_available_or_in_use_members_of_an_available_group() {
        let cases = [
            (VolumeStatus::Available, true),
            (VolumeStatus::InUse, true),
            (VolumeStatus::Deleting, false),
            (VolumeStatus::Creating, false),
            (VolumeStatus::Downloading, false),
            (VolumeStatus::Uploading, false),
            (VolumeStatus::BackingUp, false),
            (VolumeStatus::ErrorDeleting, false),
        ];
        for (status, taken) in cases {
            let member = SnapshotCandidate {
                status,
                ..candidate()
            };
            let checked = check_member(&member);
            assert_eq!(checked.is_ok(), taken, "{status}: {checked:?}");
            if !taken {
                let why = checked.unwrap_err();
                assert!(
                    why.ends_with(&format!("current status is: {status}.")),
                    "{why}"
                );
            }
        }
        let group = GroupId::generate();
        assert_eq!(check_group(group, GroupStatus::Available), Ok(()));
        for status in [
            GroupStatus::Deleting,
            GroupStatus::Creating,
            GroupStatus::Error,
        ] {
            let why = check_group(group, status).unwrap_err();
            assert!(why.contains("must be available"), "{why}");
        }
    }
}
