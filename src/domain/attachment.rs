//! Attachments: one consumer's hold on a volume.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::volume::string_enum;

string_enum! {
    /// `volume_attachment.attach_status` (also `volumes.attach_status`).
    AttachStatus {
        Attached => "attached",
        Attaching => "attaching",
        Detached => "detached",
        Reserved => "reserved",
        ErrorAttaching => "error_attaching",
        ErrorDetaching => "error_detaching",
        Deleted => "deleted",
    }
}

/// An attachment as the API shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Attachment {
    pub id: Uuid,
    pub volume_id: Uuid,
    pub instance_uuid: Option<String>,
    /// The connector's `host`, recorded when the attachment is connected.
    pub attached_host: Option<String>,
    /// The connector's `mountpoint` (the device the host sees).
    pub mountpoint: Option<String>,
    pub attach_status: AttachStatus,
    /// `"rw"`, `"ro"`, the literal `"null"` Cinder stores before a mode is known, or none.
    pub attach_mode: Option<String>,
    pub attach_time: Option<DateTime<Utc>>,
    pub detach_time: Option<DateTime<Utc>>,
    pub connection_info: Option<serde_json::Value>,
    pub created_at: DateTime<Utc>,
}

/// An attachment with what its lookups need: the owning project, the volume's host
/// (which backend holds it) and the stored connector.
#[derive(Debug, Clone, PartialEq)]
pub struct AttachmentRecord {
    pub attachment: Attachment,
    pub project_id: String,
    pub volume_host: Option<String>,
    pub connector: serde_json::Map<String, serde_json::Value>,
}

/// Keys an attachment listing may be sorted by (attachment columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachmentSortKey {
    Id,
    CreatedAt,
    UpdatedAt,
    VolumeId,
    InstanceUuid,
    AttachStatus,
    AttachMode,
    AttachTime,
    DetachTime,
    AttachedHost,
    Mountpoint,
}

impl AttachmentSortKey {
    pub fn parse(key: &str) -> Option<Self> {
        Some(match key {
            "id" => Self::Id,
            "created_at" => Self::CreatedAt,
            "updated_at" => Self::UpdatedAt,
            "volume_id" => Self::VolumeId,
            "instance_uuid" => Self::InstanceUuid,
            "attach_status" => Self::AttachStatus,
            "attach_mode" => Self::AttachMode,
            "attach_time" => Self::AttachTime,
            "detach_time" => Self::DetachTime,
            "attached_host" => Self::AttachedHost,
            "mountpoint" => Self::Mountpoint,
            _ => return None,
        })
    }
}

/// Filters of an attachment listing; `None` means "any".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AttachmentFilters {
    /// `Some(p)`: attachments of project `p`'s volumes only.
    pub project_id: Option<String>,
    pub volume_id: Option<Uuid>,
    pub instance_uuid: Option<String>,
    pub attach_status: Option<String>,
}

/// A new reservation as the store writes it.
#[derive(Debug, Clone)]
pub struct Reservation {
    pub attachment_id: Uuid,
    pub volume_id: Uuid,
    pub instance_uuid: Option<String>,
    /// The multiattach flag the caller read; a changed flag refuses the reservation.
    pub expected_multiattach: bool,
    pub attach_mode: String,
    pub now: DateTime<Utc>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReserveOutcome {
    Reserved,
    SameInstance,
    Refused(crate::domain::volume::VolumeStatus),
    VolumeGone,
}

/// A connection to record: the attachment becomes `attaching` with these details.
#[derive(Debug, Clone)]
pub struct Connection {
    pub attachment_id: Uuid,
    pub connector: serde_json::Map<String, serde_json::Value>,
    pub connection_info: serde_json::Value,
    pub attach_mode: String,
    pub attached_host: String,
    pub mountpoint: String,
    pub by: Connecting,
    pub now: DateTime<Utc>,
}

/// Which request records a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connecting {
    /// A create with a connector, right after its own reservation: Cinder skips the
    /// update-time checks, and no one else knows the attachment's id yet, so it has no
    /// earlier connector to replace.
    NewReservation,
    /// `PUT /attachments/{id}`: the update-time checks (volume in error, duplicate
    /// connectors) apply, and an earlier connector is replaced.
    Update,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ConnectOutcome {
    /// Recorded; the attachment as stored now.
    Connected(Attachment),
    AttachmentGone,
    VolumeInError(crate::domain::volume::VolumeStatus),
    DuplicateConnector,
}
