//! User-visible messages: why something the user asked for failed later. As Cinder's,
//! a message is one of its fixed actions with one of its fixed details (the event id is
//! made of both); what went wrong in detail (paths, a tool's words) goes to the log only.

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

/// One of Cinder's actions (`message_field.Action`): its id and its words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action(pub &'static str, pub &'static str);

/// One of Cinder's details (`message_field.Detail`): its id and its words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detail(pub &'static str, pub &'static str);

/// The actions messages here are about, with Cinder's ids.
pub mod action {
    use super::Action;
    pub const SCHEDULE_ALLOCATE_VOLUME: Action = Action("001", "schedule allocate volume");
    pub const COPY_VOLUME_TO_IMAGE: Action = Action("003", "copy volume to image");
    pub const COPY_IMAGE_TO_VOLUME: Action = Action("005", "copy image to volume");
    pub const EXTEND_VOLUME: Action = Action("007", "extend volume");
    pub const CREATE_VOLUME_FROM_BACKEND: Action =
        Action("008", "create volume from backend storage");
    pub const SNAPSHOT_CREATE: Action = Action("009", "create snapshot");
    pub const SNAPSHOT_DELETE: Action = Action("010", "delete snapshot");
    pub const REIMAGE_VOLUME: Action = Action("016", "reimage volume");
}

/// The details messages here give, with Cinder's ids and words.
pub mod detail {
    use super::Detail;
    pub const UNKNOWN_ERROR: Detail = Detail("001", "An unknown error occurred.");
    pub const NO_BACKEND_AVAILABLE: Detail =
        Detail("003", "Could not find any available weighted backend.");
    pub const FAILED_TO_UPLOAD_VOLUME: Detail =
        Detail("004", "Failed to upload volume to image at backend.");
    pub const NOT_ENOUGH_SPACE_FOR_IMAGE: Detail = Detail(
        "007",
        "Image used for creating volume exceeds available space.",
    );
    pub const NOTIFY_COMPUTE_SERVICE_FAILED: Detail =
        Detail("009", "Compute service failed to extend volume.");
    pub const DRIVER_FAILED_EXTEND: Detail =
        Detail("010", "Volume Driver failed to extend volume.");
    pub const DRIVER_FAILED_CREATE: Detail = Detail("012", "Driver failed to create the volume.");
    pub const SNAPSHOT_CREATE_ERROR: Detail = Detail("013", "Snapshot failed to create.");
    pub const SNAPSHOT_IS_BUSY: Detail = Detail("015", "Snapshot is busy.");
    pub const SNAPSHOT_DELETE_ERROR: Detail = Detail("016", "Snapshot failed to delete.");
    pub const REIMAGE_VOLUME_FAILED: Detail =
        Detail("028", "Compute service failed to reimage volume.");
    pub const IMAGE_FORMAT_UNACCEPTABLE: Detail = Detail(
        "029",
        "The image disk format must be the same as the volume format for the volume type you \
         are requesting.",
    );
}

/// What a message is about (`message_field.Resource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    Volume,
    Snapshot,
}

impl Resource {
    fn as_str(self) -> &'static str {
        match self {
            Resource::Volume => "VOLUME",
            Resource::Snapshot => "VOLUME_SNAPSHOT",
        }
    }
}

/// The words a user reads for `action` failing with `detail`.
pub fn user_message(action: Action, detail: Detail) -> String {
    format!("{}: {}", action.1, detail.1)
}

/// Cinder's event id, `VOLUME_<resource>_<action>_<detail>`.
pub fn event_id(resource: Resource, action: Action, detail: Detail) -> String {
    format!("VOLUME_{}_{}_{}", resource.as_str(), action.0, detail.0)
}

impl Message {
    /// An error message about `resource` `uuid` for its project, kept 30 days as
    /// Cinder's are.
    pub fn error(
        (resource, uuid): (Resource, &dyn std::fmt::Display),
        project_id: String,
        request_id: Option<String>,
        (action, detail): (Action, Detail),
        now: DateTime<Utc>,
    ) -> Message {
        Message {
            id: MessageId::generate(),
            project_id,
            request_id,
            resource_type: resource.as_str().to_owned(),
            resource_uuid: Some(uuid.to_string()),
            event_id: event_id(resource, action, detail),
            message_level: "ERROR".to_owned(),
            user_message: user_message(action, detail),
            created_at: now,
            expires_at: Some(now + chrono::Duration::days(30)),
        }
    }

    /// An error message about volume `volume`.
    pub fn volume_error(
        volume: impl std::fmt::Display,
        project_id: String,
        request_id: Option<String>,
        why: (Action, Detail),
        now: DateTime<Utc>,
    ) -> Message {
        Message::error(
            (Resource::Volume, &volume),
            project_id,
            request_id,
            why,
            now,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_and_ids_are_cinders() {
        let m = Message::volume_error(
            "v1",
            "p".into(),
            None,
            (
                action::SCHEDULE_ALLOCATE_VOLUME,
                detail::NO_BACKEND_AVAILABLE,
            ),
            Utc::now(),
        );
        assert_eq!(m.event_id, "VOLUME_VOLUME_001_003");
        assert_eq!(
            m.user_message,
            "schedule allocate volume: Could not find any available weighted backend."
        );
        let e = event_id(
            Resource::Snapshot,
            action::SNAPSHOT_DELETE,
            detail::SNAPSHOT_IS_BUSY,
        );
        assert_eq!(e, "VOLUME_VOLUME_SNAPSHOT_010_015");
    }
}
