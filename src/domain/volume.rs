//! Volume states, exactly Cinder's vocabulary (`cinder/objects/fields.py`).

use super::string_enum::string_enum;

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
        Reverting => "reverting",
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

use super::attachment::{AttachStatus, Attachment};
use super::ids::{ServiceId, VolumeId, VolumeTypeId};

/// The status a soft-deleted volume row is left with (not one a live volume can have).
pub const SOFT_DELETED_STATUS: &str = "deleted";

/// A volume with what its views need: type name, metadata and live attachments.
#[derive(Debug, Clone, PartialEq)]
pub struct Volume {
    pub id: VolumeId,
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
    pub volume_type_id: VolumeTypeId,
    pub volume_type_name: Option<String>,
    /// The QoS specs of its type, whose front-end part every connection carries.
    pub volume_type_qos_specs_id: Option<super::ids::QosSpecsId>,
    /// The snapshot it was made from, or the volume it was cloned from.
    pub snapshot_id: Option<super::ids::SnapshotId>,
    pub source_volid: Option<VolumeId>,
    pub encryption_key_id: Option<String>,
    pub bootable: bool,
    pub multiattach: bool,
    pub previous_status: Option<String>,
    pub service_uuid: Option<ServiceId>,
    pub shared_targets: Option<bool>,
    pub provider_id: Option<String>,
    pub group_id: Option<String>,
    pub consistencygroup_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
    /// The volume whose storage this one uses, when not its own (Cinder's `_name_id`:
    /// set by a move of an attached volume).
    pub name_id: Option<VolumeId>,
    pub metadata: BTreeMap<String, String>,
    pub admin_metadata: BTreeMap<String, String>,
    /// The image it was made from, as Cinder's `volume_glance_metadata` keeps it.
    pub image_metadata: BTreeMap<String, String>,
    pub attachments: Vec<Attachment>,
}

impl Volume {
    /// The id its storage is named after on its backend: every backend call names the
    /// volume by this.
    pub fn storage_id(&self) -> VolumeId {
        self.name_id.unwrap_or(self.id)
    }

    /// The volume-wide readonly flag (admin metadata `readonly == "True"`).
    pub fn is_readonly(&self) -> bool {
        self.admin_metadata.get("readonly").map(String::as_str) == Some("True")
    }
}

/// A volume's `(status, attach_status)` pair, which the attach rules move together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VolumeState {
    pub status: VolumeStatus,
    pub attach_status: AttachStatus,
}

/// The volume row as a write transaction holds it locked: what every rule about changing
/// a volume or its attachments looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedVolume {
    pub id: VolumeId,
    pub status: VolumeStatus,
    pub attach_status: AttachStatus,
    pub migration_status: Option<String>,
    pub multiattach: bool,
    pub size: i64,
    pub volume_type_id: VolumeTypeId,
    pub encrypted: bool,
    /// Part of a group or consistency group.
    pub in_group: bool,
    /// The type's `multiattach` spec is `<is> True`.
    pub type_multiattach: bool,
    /// The type's `cacheable` spec is `<is> True`.
    pub type_cacheable: bool,
    /// The type's `attach:max_attachments` spec, when it is a valid cap.
    pub type_max_attachments: Option<u32>,
    /// The type's `attach:single_writer` spec is `<is> True`.
    pub type_single_writer: bool,
    /// The admin metadata holds an `attached_mode` (the legacy attach's), which a detach
    /// removes.
    pub attached_mode_recorded: bool,
}

impl LockedVolume {
    /// A migration is in progress (not none, `success` or `error`).
    pub fn migrating(&self) -> bool {
        !matches!(
            self.migration_status.as_deref(),
            None | Some("success" | "error" | "none")
        )
    }

    pub fn state(&self) -> VolumeState {
        VolumeState {
            status: self.status,
            attach_status: self.attach_status,
        }
    }
}

/// The most user metadata items one volume holds. Beyond it a request is refused, before
/// it reaches the database (whose statements have a bound on parameters).
pub const MAX_METADATA_ITEMS: usize = 128;

/// What creating a volume writes before the backend is asked.
#[derive(Debug, Clone)]
pub struct NewVolume {
    pub id: VolumeId,
    pub user_id: String,
    pub project_id: String,
    /// `None` when no backend could take it (the volume is recorded in `error`).
    pub host: Option<String>,
    pub status: VolumeStatus,
    pub size: i64,
    pub availability_zone: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub volume_type_id: VolumeTypeId,
    /// The group the volume is created in.
    pub group_id: Option<super::ids::GroupId>,
    pub snapshot_id: Option<super::ids::SnapshotId>,
    pub source_volid: Option<VolumeId>,
    pub multiattach: bool,
    pub service_uuid: Option<ServiceId>,
    /// The backend's size in GiB, when it has one: the volume is recorded only if it
    /// still fits beside the backend's other volumes.
    pub backend_capacity_gb: Option<f64>,
    pub shared_targets: Option<bool>,
    pub metadata: BTreeMap<String, String>,
    /// The key manager's key id when the type is encrypted (the create checks, in its
    /// transaction, that the type still is, or still is not).
    pub encryption_key_id: Option<String>,
    /// A clone, or a volume from a snapshot, boots if its source does (Cinder's
    /// `bootable` copied from the source volume or the snapshot's volume).
    pub bootable: bool,
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

/// `os-reset_status`: each field given is written as is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusReset {
    pub status: Option<VolumeStatus>,
    pub attach_status: Option<AttachStatus>,
    /// `none` clears the migration status.
    pub migration_status: Option<MigrationStatus>,
}

/// A retype as the store applies it.
#[derive(Debug, Clone)]
pub struct Retype {
    pub volume_id: VolumeId,
    pub new_type_id: VolumeTypeId,
    /// The multiattach flag the caller read (and checked policy for).
    pub expected_multiattach: bool,
    pub new_multiattach: bool,
    /// The new type's `attach:single_writer`.
    pub new_single_writer: bool,
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
    /// Members of this group only (3.10+).
    pub group_id: Option<String>,
    pub migration_status: Option<String>,
    /// 3.60+: a volume matches when any one comparison holds (Cinder joins them with OR).
    pub created_at: Vec<TimeComparison>,
    pub updated_at: Vec<TimeComparison>,
}

/// One `op:time` of a `created_at`/`updated_at` filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeComparison {
    pub op: ComparisonOp,
    pub at: DateTime<Utc>,
}

/// Cinder's time comparison operators (`gt`, `gte`, `eq`, `neq`, `lt`, `lte`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComparisonOp {
    Gt,
    Gte,
    Eq,
    Neq,
    Lt,
    Lte,
}

impl ComparisonOp {
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "gt" => Self::Gt,
            "gte" => Self::Gte,
            "eq" => Self::Eq,
            "neq" => Self::Neq,
            "lt" => Self::Lt,
            "lte" => Self::Lte,
            _ => return None,
        })
    }

    pub fn sql(self) -> &'static str {
        match self {
            Self::Gt => ">",
            Self::Gte => ">=",
            Self::Eq => "=",
            Self::Neq => "<>",
            Self::Lt => "<",
            Self::Lte => "<=",
        }
    }
}

/// A locked volume for the rules' tests.
#[cfg(test)]
pub(crate) fn locked(
    status: VolumeStatus,
    attach_status: AttachStatus,
    multiattach: bool,
) -> LockedVolume {
    LockedVolume {
        id: VolumeId::generate(),
        status,
        attach_status,
        migration_status: None,
        multiattach,
        size: 1,
        volume_type_id: VolumeTypeId::generate(),
        encrypted: false,
        in_group: false,
        type_multiattach: false,
        type_cacheable: false,
        type_max_attachments: None,
        type_single_writer: false,
        attached_mode_recorded: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_round_trip() {
        for status in VolumeStatus::ALL {
            assert_eq!(VolumeStatus::parse(status.as_str()), Some(*status));
        }
        assert_eq!(VolumeStatus::parse("in-use"), Some(VolumeStatus::InUse));
        assert_eq!(VolumeStatus::parse("bogus"), None);
        assert_eq!(VolumeStatus::parse(SOFT_DELETED_STATUS), None);
    }
}
