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

/// Which attachments a listing may return.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AttachmentScope {
    /// `Some(p)`: only attachments of volumes owned by project `p`; `None`: every project.
    pub project_id: Option<String>,
}
