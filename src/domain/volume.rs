//! Volume states, exactly Cinder's vocabulary (`cinder/objects/fields.py`).

/// Declares a string-backed status enum with `as_str`, `parse` and the full value list.
macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            pub fn parse(text: &str) -> Option<Self> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use string_enum;

string_enum! {
    /// `volumes.status`.
    VolumeStatus {
        Creating => "creating",
        Available => "available",
        Deleting => "deleting",
        Error => "error",
        ErrorDeleting => "error_deleting",
        ErrorManaging => "error_managing",
        Managing => "managing",
        Attaching => "attaching",
        InUse => "in-use",
        Detaching => "detaching",
        Maintenance => "maintenance",
        RestoringBackup => "restoring-backup",
        ErrorRestoring => "error_restoring",
        Reserved => "reserved",
        AwaitingTransfer => "awaiting-transfer",
        BackingUp => "backing-up",
        ErrorBackingUp => "error_backing-up",
        ErrorExtending => "error_extending",
        Downloading => "downloading",
        Uploading => "uploading",
        Retyping => "retyping",
        Extending => "extending",
    }
}

string_enum! {
    /// `volumes.migration_status` values an admin may set (`VolumeMigrationStatus`).
    MigrationStatus {
        Migrating => "migrating",
        Error => "error",
        Success => "success",
        Completing => "completing",
        None => "none",
        Starting => "starting",
    }
}

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::attachment::{AttachStatus, Attachment};

/// A volume with what its views need: type name, metadata and live attachments.
#[derive(Debug, Clone, PartialEq)]
pub struct Volume {
    pub id: Uuid,
    pub user_id: Option<String>,
    pub project_id: String,
    pub host: Option<String>,
    pub size: i64,
    pub availability_zone: String,
    pub status: VolumeStatus,
    pub attach_status: AttachStatus,
    pub migration_status: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub volume_type_id: Uuid,
    pub volume_type_name: Option<String>,
    pub encryption_key_id: Option<String>,
    pub bootable: bool,
    pub multiattach: bool,
    pub previous_status: Option<String>,
    pub service_uuid: Option<Uuid>,
    pub shared_targets: Option<bool>,
    pub provider_id: Option<String>,
    pub group_id: Option<String>,
    pub consistencygroup_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
    pub metadata: BTreeMap<String, String>,
    pub admin_metadata: BTreeMap<String, String>,
    pub attachments: Vec<Attachment>,
}

impl Volume {
    /// The volume-wide readonly flag (admin metadata `readonly == "True"`).
    pub fn is_readonly(&self) -> bool {
        self.admin_metadata.get("readonly").map(String::as_str) == Some("True")
    }

    /// The backend part of `host` (`host@backend`), without the pool.
    pub fn backend_host(&self) -> Option<&str> {
        self.host
            .as_deref()
            .map(|h| h.split('#').next().unwrap_or(h))
    }
}

/// What creating a volume writes before the backend is asked.
#[derive(Debug, Clone)]
pub struct NewVolume {
    pub id: Uuid,
    pub user_id: String,
    pub project_id: String,
    pub host: String,
    pub size: i64,
    pub availability_zone: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub volume_type_id: Uuid,
    pub multiattach: bool,
    pub service_uuid: Uuid,
    pub shared_targets: Option<bool>,
    pub metadata: BTreeMap<String, String>,
    pub created_at: DateTime<Utc>,
}

/// `GET /volumes/summary`: how many volumes match, their total size in GiB, and (3.36+)
/// every metadata value each key has among them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VolumeSummary {
    pub count: i64,
    pub total_size: i64,
    pub metadata: BTreeMap<String, Vec<String>>,
}

/// How an extend request met the volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtendStart {
    /// Now `extending`.
    Started,
    /// The new size is not larger than `current`; nothing written.
    TooSmall { current: i64 },
    /// Only `available` volumes are extended here; nothing written.
    WrongStatus(VolumeStatus),
}

/// `PUT /volumes/{id}`: each field present is replaced (`Some(None)` clears it);
/// metadata, when given, replaces all user metadata.
#[derive(Debug, Clone, Default)]
pub struct VolumeUpdate {
    pub name: Option<Option<String>>,
    pub description: Option<Option<String>>,
    pub metadata: Option<BTreeMap<String, String>>,
}

/// A change to a volume's user metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataChange {
    /// Add these keys, overwriting existing values.
    Merge(BTreeMap<String, String>),
    /// Make the metadata exactly this.
    Replace(BTreeMap<String, String>),
    /// Remove one key.
    Remove(String),
}

/// How a volume write ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VolumeWrite<T> {
    Done(T),
    VolumeNotFound,
    /// The volume's status forbids the change; nothing was written.
    Refused(VolumeStatus),
    /// The metadata key to remove does not exist.
    KeyNotFound,
}

/// Statuses in which Cinder refuses to update a volume.
pub const UPDATE_REFUSED: &[VolumeStatus] = &[VolumeStatus::Maintenance];

/// Statuses in which Cinder refuses to change a volume's metadata.
pub const METADATA_CHANGE_REFUSED: &[VolumeStatus] =
    &[VolumeStatus::Maintenance, VolumeStatus::Uploading];

/// Statuses from which a volume may be deleted without `force`.
pub const DELETABLE_STATUSES: &[VolumeStatus] = &[
    VolumeStatus::Available,
    VolumeStatus::Error,
    VolumeStatus::ErrorRestoring,
    VolumeStatus::ErrorExtending,
    VolumeStatus::ErrorManaging,
];

/// Migration states that do not block a delete.
pub fn migration_allows_delete(migration_status: Option<&str>) -> bool {
    matches!(
        migration_status,
        None | Some("deleting" | "error" | "success")
    )
}

/// Cinder's refusal text for a delete, with or without `force`.
pub fn delete_refusal(force: bool) -> String {
    // With force the status clause is empty, which leaves Cinder's double space.
    let statuses = if force {
        String::new()
    } else {
        let names: Vec<&str> = DELETABLE_STATUSES.iter().map(|s| s.as_str()).collect();
        format!("status must be {} and", names.join(" or "))
    };
    format!(
        "Volume {statuses} must not be migrating, attached, belong to a group, have snapshots, \
         awaiting a transfer, or be disassociated from snapshots after volume transfer."
    )
}

/// Whether a delete may proceed, the same test the store's compare-and-swap applies.
pub fn may_delete(volume: &Volume, force: bool) -> bool {
    volume.attach_status != AttachStatus::Attached
        && migration_allows_delete(volume.migration_status.as_deref())
        && volume.group_id.is_none()
        && volume.consistencygroup_id.is_none()
        && (force || DELETABLE_STATUSES.contains(&volume.status))
}

/// Cinder's refusal for a retype that fails its compare-and-swap.
pub const RETYPE_REFUSAL: &str =
    "Retype needs volume to be in available or in-use state, not be part \
of an active migration or a consistency group, requested type has to be different that the one \
from the volume, and for in-use volumes front-end qos specs cannot change.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_messages() {
        assert_eq!(
            delete_refusal(false),
            "Volume status must be available or error or error_restoring or error_extending or \
             error_managing and must not be migrating, attached, belong to a group, have \
             snapshots, awaiting a transfer, or be disassociated from snapshots after volume \
             transfer."
        );
        assert!(delete_refusal(true).starts_with("Volume  must not be migrating, attached"));
    }

    #[test]
    fn status_names_round_trip() {
        for status in VolumeStatus::ALL {
            assert_eq!(VolumeStatus::parse(status.as_str()), Some(*status));
        }
        assert_eq!(VolumeStatus::parse("in-use"), Some(VolumeStatus::InUse));
        assert_eq!(VolumeStatus::parse("bogus"), None);
    }
}

/// Keys a volume listing may be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VolumeSortKey {
    Id,
    CreatedAt,
    UpdatedAt,
    Name,
    Size,
    Status,
    Bootable,
    AvailabilityZone,
    ProjectId,
}

impl VolumeSortKey {
    pub fn parse(key: &str) -> Option<Self> {
        Some(match key {
            "id" => VolumeSortKey::Id,
            "created_at" => VolumeSortKey::CreatedAt,
            "updated_at" => VolumeSortKey::UpdatedAt,
            "name" | "display_name" => VolumeSortKey::Name,
            "size" => VolumeSortKey::Size,
            "status" => VolumeSortKey::Status,
            "bootable" => VolumeSortKey::Bootable,
            "availability_zone" => VolumeSortKey::AvailabilityZone,
            "project_id" => VolumeSortKey::ProjectId,
            _ => return None,
        })
    }
}

/// Filters of a volume listing; `None` means "any".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VolumeFilters {
    /// `Some(p)`: only project `p`; `None`: every project.
    pub project_id: Option<String>,
    pub name: Option<String>,
    pub status: Option<String>,
    pub bootable: Option<bool>,
    pub availability_zone: Option<String>,
    pub size: Option<i64>,
    pub metadata: BTreeMap<String, String>,
}
