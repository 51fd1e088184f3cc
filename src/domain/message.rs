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

/// Cinder's events for a snapshot the backend failed to take (action 009 "create
/// snapshot", detail 013) or to delete (action 010, detail 016), and their messages.
pub const EVENT_SNAPSHOT_CREATE_FAILED: &str = "VOLUME_VOLUME_SNAPSHOT_009_013";
pub const MESSAGE_SNAPSHOT_CREATE_FAILED: &str = "create snapshot: Snapshot failed to create.";
pub const EVENT_SNAPSHOT_DELETE_FAILED: &str = "VOLUME_VOLUME_SNAPSHOT_010_016";
pub const MESSAGE_SNAPSHOT_DELETE_FAILED: &str = "delete snapshot: Snapshot failed to delete.";
/// A delete the backend refused because the snapshot is still needed (it has clones).
pub const EVENT_SNAPSHOT_BUSY: &str = "VOLUME_VOLUME_SNAPSHOT_010_015";
pub const MESSAGE_SNAPSHOT_BUSY: &str = "delete snapshot: Snapshot is busy.";
