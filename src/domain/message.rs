//! User-visible messages: why something the user asked for failed later.

use super::ids::MessageId;
use chrono::{DateTime, Utc};

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub id: MessageId,
    pub project_id: String,
    pub request_id: Option<String>,
    pub resource_type: String,
    pub resource_uuid: Option<String>,
    pub event_id: String,
    pub message_level: String,
    pub user_message: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// Cinder's event id `VOLUME_<resource>_<action>_<detail>` for "create volume from
/// backend storage" (action 008) failing with "an unknown error" (detail 001).
pub const EVENT_CREATE_VOLUME_FROM_BACKEND: &str = "VOLUME_VOLUME_008_001";
/// The action part of the user message for that event.
pub const ACTION_CREATE_VOLUME_FROM_BACKEND: &str = "create volume from backend storage";

/// A volume made from an image that could not get the image's data (action 005 "copy
/// image to volume", detail 001), and a volume whose upload to Glance failed (action 003
/// "copy volume to image", detail 004 "Failed to upload volume to image at backend.").
pub const EVENT_COPY_IMAGE_TO_VOLUME: &str = "VOLUME_VOLUME_005_001";
pub const ACTION_COPY_IMAGE_TO_VOLUME: &str = "copy image to volume";
pub const EVENT_COPY_VOLUME_TO_IMAGE: &str = "VOLUME_VOLUME_003_004";
pub const ACTION_COPY_VOLUME_TO_IMAGE: &str = "copy volume to image";

impl Message {
    /// An error message about volume `volume` for its project, kept 30 days as Cinder's are.
    pub fn volume_error(
        volume: impl std::fmt::Display,
        project_id: String,
        request_id: Option<String>,
        event_id: &str,
        user_message: String,
        now: DateTime<Utc>,
    ) -> Message {
        Message {
            id: MessageId::generate(),
            project_id,
            request_id,
            resource_type: "VOLUME".to_owned(),
            resource_uuid: Some(volume.to_string()),
            event_id: event_id.to_owned(),
            message_level: "ERROR".to_owned(),
            user_message,
            created_at: now,
            expires_at: Some(now + chrono::Duration::days(30)),
        }
    }
}

/// Cinder's events for a snapshot the backend failed to take (action 009 "create
/// snapshot", detail 013) or to delete (action 010, detail 016), and their messages.
pub const EVENT_SNAPSHOT_CREATE_FAILED: &str = "VOLUME_VOLUME_SNAPSHOT_009_013";
pub const MESSAGE_SNAPSHOT_CREATE_FAILED: &str = "create snapshot: Snapshot failed to create.";
pub const EVENT_SNAPSHOT_DELETE_FAILED: &str = "VOLUME_VOLUME_SNAPSHOT_010_016";
pub const MESSAGE_SNAPSHOT_DELETE_FAILED: &str = "delete snapshot: Snapshot failed to delete.";
/// A delete the backend refused because the snapshot is still needed (it has clones).
pub const EVENT_SNAPSHOT_BUSY: &str = "VOLUME_VOLUME_SNAPSHOT_010_015";
pub const MESSAGE_SNAPSHOT_BUSY: &str = "delete snapshot: Snapshot is busy.";
