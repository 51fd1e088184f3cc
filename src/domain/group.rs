//! Generic volume groups (3.13+): a project's volumes kept together on one backend, of
//! the volume types the group allows, so that they can be handled as one (snapshotted,
//! deleted). The rules here are Cinder's `group/api.py`: who may join, who may leave,
//! and when a group may be changed or deleted.

use chrono::{DateTime, Utc};

use super::ids::{GroupId, GroupTypeId, VolumeId, VolumeTypeId};
use super::string_enum::string_enum;
use super::volume::VolumeStatus;

string_enum! {
    /// `groups.status`.
    GroupStatus {
        Error => "error",
        Available => "available",
        Creating => "creating",
        Deleting => "deleting",
        Deleted => "deleted",
        Updating => "updating",
        InUse => "in-use",
        ErrorDeleting => "error_deleting",
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub id: GroupId,
    pub user_id: Option<String>,
    pub project_id: String,
    /// The backend holding its volumes (`host@backend#pool`); `None` when none could.
    pub host: Option<String>,
    pub availability_zone: String,
    pub status: GroupStatus,
    pub name: Option<String>,
    pub description: Option<String>,
    pub group_type_id: GroupTypeId,
    /// The volume types a member may have, in the order the creator gave them.
    pub volume_type_ids: Vec<VolumeTypeId>,
    pub group_snapshot_id: Option<String>,
    pub source_group_id: Option<String>,
    pub replication_status: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone)]
pub struct NewGroup {
    pub id: GroupId,
    pub user_id: String,
    pub project_id: String,
    pub host: Option<String>,
    pub availability_zone: String,
    pub status: GroupStatus,
    pub name: Option<String>,
    pub description: Option<String>,
    pub group_type_id: GroupTypeId,
    pub volume_type_ids: Vec<VolumeTypeId>,
    /// The group it is made from (`create-from-src`).
    pub source_group_id: Option<GroupId>,
    /// The group snapshot it is made from (`create-from-src`).
    pub group_snapshot_id: Option<super::ids::GroupSnapshotId>,
    pub created_at: DateTime<Utc>,
}

/// What a group listing may filter on.
#[derive(Debug, Clone, Default)]
pub struct GroupFilters {
    /// `None`: every project's (an admin's `all_tenants`).
    pub project_id: Option<String>,
    pub name: Option<String>,
    pub status: Option<GroupStatus>,
}

/// The keys a group listing sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupSortKey {
    Id,
    Name,
    Status,
    CreatedAt,
}

impl GroupSortKey {
    pub fn parse(key: &str) -> Option<Self> {
        Some(match key {
            "id" => GroupSortKey::Id,
            "name" => GroupSortKey::Name,
            "status" => GroupSortKey::Status,
            "created_at" => GroupSortKey::CreatedAt,
            _ => return None,
        })
    }
}

/// What a volume brings to a membership check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberCandidate {
    pub id: VolumeId,
    pub project_id: String,
    pub volume_type_id: VolumeTypeId,
    pub status: VolumeStatus,
    pub host: Option<String>,
    pub group_id: Option<String>,
}

/// Statuses a volume may join a group in (`VALID_ADD_VOL_TO_GROUP_STATUS`).
pub const JOINABLE: &[VolumeStatus] = &[VolumeStatus::Available, VolumeStatus::InUse];

/// Statuses a volume may leave a group in (`VALID_REMOVE_VOL_FROM_GROUP_STATUS`).
pub const LEAVABLE: &[VolumeStatus] = &[
    VolumeStatus::Available,
    VolumeStatus::InUse,
    VolumeStatus::Error,
    VolumeStatus::ErrorDeleting,
];

/// Why a membership change is refused, in Cinder's words (`InvalidVolume`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MembershipRefusal {
    InBothLists(Vec<String>),
    NotFound(String),
    InOtherGroup {
        volume: VolumeId,
        other: String,
    },
    OtherProject(VolumeId),
    TypeNotAllowed {
        volume: VolumeId,
        type_id: VolumeTypeId,
    },
    CannotJoin {
        volume: VolumeId,
        status: VolumeStatus,
    },
    CannotLeave {
        volume: String,
        status: Option<VolumeStatus>,
    },
    NotLocal,
}

impl MembershipRefusal {
    /// Cinder's text, for group `group`.
    pub fn message(&self, group: GroupId) -> String {
        let list = |statuses: &[VolumeStatus]| {
            let names: Vec<String> = statuses.iter().map(|s| format!("'{s}'")).collect();
            format!("({})", names.join(", "))
        };
        match self {
            MembershipRefusal::InBothLists(ids) => {
                let ids: Vec<String> = ids.iter().map(|i| format!("'{i}'")).collect();
                format!("UUIDs [{}] are in both add and remove volume list.", ids.join(", "))
            }
            MembershipRefusal::NotFound(id) => format!(
                "Cannot add volume {id} to group {group} because volume cannot be found."
            ),
            MembershipRefusal::InOtherGroup { volume, other } => format!(
                "Cannot add volume {volume} to group {group} because it is already in group {other}."
            ),
            MembershipRefusal::OtherProject(volume) => format!(
                "Cannot add volume {volume} to group {group} as they belong to different projects."
            ),
            MembershipRefusal::TypeNotAllowed { volume, type_id } => format!(
                "Cannot add volume {volume} to group {group} because volume type {type_id} is \
                 not supported by the group."
            ),
            MembershipRefusal::CannotJoin { volume, status } => format!(
                "Cannot add volume {volume} to group {group} because volume is in an invalid \
                 state: {status}. Valid states are: {}.",
                list(JOINABLE)
            ),
            MembershipRefusal::CannotLeave {
                volume,
                status: Some(status),
            } => format!(
                "Cannot remove volume {volume} from group {group} because volume is in an \
                 invalid state: {status}. Valid states are: {}.",
                list(LEAVABLE)
            ),
            MembershipRefusal::CannotLeave { volume, .. } => format!(
                "Cannot remove volume {volume} from group {group} because it is not in the group."
            ),
            MembershipRefusal::NotLocal => "Volume is not local to this node.".to_owned(),
        }
    }
}

/// The backend part of `host@backend#pool` (Cinder's `extract_host`).
fn backend_of(host: Option<&str>) -> Option<&str> {
    host.map(|h| h.split('#').next().unwrap_or(h))
}

/// Parses a comma list of volume ids as Cinder does (`strip(',')`, `split(',')`).
pub fn id_list(text: Option<&str>) -> Vec<String> {
    match text.map(|t| t.trim_matches(',')) {
        Some(t) if !t.is_empty() => t.split(',').map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

/// Refuses ids named to be added and removed at once.
pub fn check_disjoint(add: &[String], remove: &[String]) -> Result<(), MembershipRefusal> {
    let both: Vec<String> = add.iter().filter(|a| remove.contains(a)).cloned().collect();
    if both.is_empty() {
        Ok(())
    } else {
        Err(MembershipRefusal::InBothLists(both))
    }
}

/// Whether `volume` may join `group` (already a member: nothing to do, `Ok(false)`).
pub fn may_join(group: &Group, volume: &MemberCandidate) -> Result<bool, MembershipRefusal> {
    let group_id = group.id.to_string();
    match volume.group_id.as_deref() {
        Some(g) if g == group_id => return Ok(false),
        Some(other) => {
            return Err(MembershipRefusal::InOtherGroup {
                volume: volume.id,
                other: other.to_owned(),
            })
        }
        None => {}
    }
    if volume.project_id != group.project_id {
        return Err(MembershipRefusal::OtherProject(volume.id));
    }
    if !group.volume_type_ids.contains(&volume.volume_type_id) {
        return Err(MembershipRefusal::TypeNotAllowed {
            volume: volume.id,
            type_id: volume.volume_type_id,
        });
    }
    if !JOINABLE.contains(&volume.status) {
        return Err(MembershipRefusal::CannotJoin {
            volume: volume.id,
            status: volume.status,
        });
    }
    if backend_of(volume.host.as_deref()) != backend_of(group.host.as_deref()) {
        return Err(MembershipRefusal::NotLocal);
    }
    Ok(true)
}

/// Whether the member `volume` (`None`: not a member) may leave the group.
pub fn may_leave(id: &str, member: Option<&MemberCandidate>) -> Result<(), MembershipRefusal> {
    match member {
        None => Err(MembershipRefusal::CannotLeave {
            volume: id.to_owned(),
            status: None,
        }),
        Some(v) if !LEAVABLE.contains(&v.status) => Err(MembershipRefusal::CannotLeave {
            volume: id.to_owned(),
            status: Some(v.status),
        }),
        Some(_) => Ok(()),
    }
}

/// What a group's members hold that stops a delete.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MembersState {
    /// Live group snapshots of the group.
    pub group_snapshots: bool,
    pub volumes: usize,
    pub attached: bool,
    pub with_snapshots: bool,
}

/// Why a group may not be deleted, in Cinder's words (`InvalidGroup`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupDeleteRefusal {
    Status(GroupStatus),
    HasSnapshots,
    HasVolumes,
    Attached,
    VolumesWithSnapshots,
}

impl GroupDeleteRefusal {
    pub fn message(&self, group: GroupId) -> String {
        match self {
            GroupDeleteRefusal::Status(status) => {
                format!("Group status must be available or error, but current status is: {status}")
            }
            GroupDeleteRefusal::HasSnapshots => "Group has existing snapshots.".to_owned(),
            GroupDeleteRefusal::HasVolumes => format!(
                "Group {group} still contains volumes. The delete-volumes flag is required to \
                 delete it."
            ),
            GroupDeleteRefusal::Attached => {
                format!("Volume in group {group} is attached. Need to detach first.")
            }
            GroupDeleteRefusal::VolumesWithSnapshots => {
                "Volume in group still has dependent snapshots.".to_owned()
            }
        }
    }
}

/// Cinder's checks before a delete: without `delete_volumes` the group is `available` or
/// `error` and empty; with it, no member is attached or has snapshots.
pub fn may_delete(
    status: GroupStatus,
    members: MembersState,
    delete_volumes: bool,
) -> Result<(), GroupDeleteRefusal> {
    if !delete_volumes && !matches!(status, GroupStatus::Available | GroupStatus::Error) {
        return Err(GroupDeleteRefusal::Status(status));
    }
    if members.group_snapshots {
        return Err(GroupDeleteRefusal::HasSnapshots);
    }
    if members.volumes > 0 && !delete_volumes {
        return Err(GroupDeleteRefusal::HasVolumes);
    }
    if members.attached {
        return Err(GroupDeleteRefusal::Attached);
    }
    if members.with_snapshots {
        return Err(GroupDeleteRefusal::VolumesWithSnapshots);
    }
    Ok(())
}

/// Cinder's group usage payload (`_usage_from_group`) of a group in `status`.
pub fn usage_payload(group: &Group, status: GroupStatus) -> serde_json::Value {
    serde_json::json!({
        "tenant_id": group.project_id,
        "user_id": group.user_id,
        "availability_zone": group.availability_zone,
        "group_id": group.id,
        "group_type": group.group_type_id,
        "name": group.name,
        "created_at": super::time::format_timestamp(&group.created_at),
        "status": status.as_str(),
    })
}

/// Statuses a new volume may be created into a group in (`GROUP_PROCEED_STATUS`).
pub fn accepts_new_volumes(status: GroupStatus) -> bool {
    matches!(status, GroupStatus::Available | GroupStatus::Creating)
}

#[cfg(test)]
mod tests;
