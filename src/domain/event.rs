//! Notifications: what Cinder tells the rest of a cloud about volumes and attachments
//! (oslo.messaging notifications, `volume.<action>.<phase>`), and the attachment
//! lifecycle events cinder-attach adds to them. Each is recorded in the transaction of
//! the change it reports (the outbox) and relayed to the message bus afterwards.

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use super::ids::{AttachmentId, VolumeId};
use super::volume::VolumeStatus;

/// The events recorded. `volume.*` are Cinder's own, sent where Cinder sends them;
/// `attachment.*` are this service's extension (Cinder 29 sends none for attachments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    VolumeCreateStart,
    VolumeCreateEnd,
    VolumeDeleteStart,
    VolumeDeleteEnd,
    VolumeAttachStart,
    VolumeAttachEnd,
    VolumeDetachStart,
    VolumeDetachEnd,
    VolumeResizeStart,
    VolumeResizeEnd,
    AttachmentCreateEnd,
    AttachmentUpdateEnd,
    AttachmentCompleteEnd,
    AttachmentDeleteEnd,
    /// A create that ended in `error` (no backend took it, or the backend failed):
    /// Cinder's manager sends nothing then; the audit trail needs the end of the story.
    VolumeCreateError,
    /// The clients of a host whose attachment ended were fenced, or kept on purpose
    /// (ours: `rbd` with shared credentials; the payload is the fence's record).
    VolumeHostFence,
    /// A fence the cluster could not make (reconciliation makes it later).
    VolumeHostFenceError,
    VolumeTransferCreateStart,
    VolumeTransferCreateEnd,
    VolumeTransferDeleteStart,
    VolumeTransferDeleteEnd,
    VolumeTransferAcceptStart,
    VolumeTransferAcceptEnd,
    /// Snapshot events carry Cinder's snapshot usage payload (`record_snapshot_events`).
    SnapshotCreateStart,
    SnapshotCreateEnd,
    SnapshotDeleteStart,
    SnapshotDeleteEnd,
    /// A retype done: the payload names the new type (Cinder's manager `retype`).
    VolumeRetype,
    VolumeRevertStart,
    VolumeRevertEnd,
    SnapshotRevertStart,
    SnapshotRevertEnd,
    /// Volume type changes, from Cinder's `volumeType` notifier: the type as it is after
    /// the change under `volume_types`.
    VolumeTypeCreate,
    VolumeTypeUpdate,
    VolumeTypeDelete,
    /// Extra spec changes, from Cinder's `volumeTypeExtraSpecs` notifier.
    VolumeTypeExtraSpecsCreate,
    VolumeTypeExtraSpecsUpdate,
    VolumeTypeExtraSpecsDelete,
    /// QoS specs changes, from Cinder's `QoSSpecs` notifier (its API controller's
    /// payloads: the id or name, the times, the specs or the type concerned).
    QosSpecsCreate,
    QosSpecsUpdate,
    QosSpecsDelete,
    QosSpecsDeleteKeys,
    QosSpecsAssociate,
    QosSpecsDisassociate,
    QosSpecsDisassociateAll,
    /// Group and group snapshot changes, from Cinder's volume manager, with its group
    /// (`_usage_from_group`) and group snapshot usage payloads.
    GroupCreateStart,
    GroupCreateEnd,
    GroupUpdateStart,
    GroupUpdateEnd,
    GroupDeleteStart,
    GroupDeleteEnd,
    GroupSnapshotCreateStart,
    GroupSnapshotCreateEnd,
    GroupSnapshotDeleteStart,
    GroupSnapshotDeleteEnd,
    /// Backup changes, from Cinder's backup manager (`backup` notifier), with its backup
    /// usage payload; `createprogress` adds `backup_percent`.
    BackupCreateStart,
    BackupCreateProgress,
    BackupCreateEnd,
    BackupDeleteStart,
    BackupDeleteEnd,
    BackupRestoreStart,
    BackupRestoreEnd,
}

impl EventKind {
    /// The event a plain status change reports, if any: a create that finished.
    pub fn of_transition(from: VolumeStatus, to: VolumeStatus) -> Option<EventKind> {
        (from == VolumeStatus::Creating && to == VolumeStatus::Available)
            .then_some(EventKind::VolumeCreateEnd)
    }

    /// The notification's `event_type`.
    pub fn event_type(self) -> &'static str {
        match self {
            EventKind::VolumeCreateStart => "volume.create.start",
            EventKind::VolumeCreateEnd => "volume.create.end",
            EventKind::VolumeDeleteStart => "volume.delete.start",
            EventKind::VolumeDeleteEnd => "volume.delete.end",
            EventKind::VolumeAttachStart => "volume.attach.start",
            EventKind::VolumeAttachEnd => "volume.attach.end",
            EventKind::VolumeDetachStart => "volume.detach.start",
            EventKind::VolumeDetachEnd => "volume.detach.end",
            EventKind::VolumeResizeStart => "volume.resize.start",
            EventKind::VolumeResizeEnd => "volume.resize.end",
            EventKind::AttachmentCreateEnd => "attachment.create.end",
            EventKind::AttachmentUpdateEnd => "attachment.update.end",
            EventKind::AttachmentCompleteEnd => "attachment.complete.end",
            EventKind::AttachmentDeleteEnd => "attachment.delete.end",
            EventKind::VolumeCreateError => "volume.create.error",
            EventKind::VolumeHostFence => "volume.host_fence",
            EventKind::VolumeHostFenceError => "volume.host_fence.error",
            EventKind::VolumeTransferCreateStart => "volume.transfer.create.start",
            EventKind::VolumeTransferCreateEnd => "volume.transfer.create.end",
            EventKind::VolumeTransferDeleteStart => "volume.transfer.delete.start",
            EventKind::VolumeTransferDeleteEnd => "volume.transfer.delete.end",
            EventKind::VolumeTransferAcceptStart => "volume.transfer.accept.start",
            EventKind::VolumeTransferAcceptEnd => "volume.transfer.accept.end",
            EventKind::SnapshotCreateStart => "snapshot.create.start",
            EventKind::SnapshotCreateEnd => "snapshot.create.end",
            EventKind::SnapshotDeleteStart => "snapshot.delete.start",
            EventKind::SnapshotDeleteEnd => "snapshot.delete.end",
            EventKind::VolumeRetype => "volume.retype",
            EventKind::VolumeRevertStart => "volume.revert.start",
            EventKind::VolumeRevertEnd => "volume.revert.end",
            EventKind::SnapshotRevertStart => "snapshot.revert.start",
            EventKind::SnapshotRevertEnd => "snapshot.revert.end",
            EventKind::VolumeTypeCreate => "volume_type.create",
            EventKind::VolumeTypeUpdate => "volume_type.update",
            EventKind::VolumeTypeDelete => "volume_type.delete",
            EventKind::VolumeTypeExtraSpecsCreate => "volume_type_extra_specs.create",
            EventKind::VolumeTypeExtraSpecsUpdate => "volume_type_extra_specs.update",
            EventKind::VolumeTypeExtraSpecsDelete => "volume_type_extra_specs.delete",
            EventKind::QosSpecsCreate => "qos_specs.create",
            EventKind::QosSpecsUpdate => "qos_specs.update",
            EventKind::QosSpecsDelete => "qos_specs.delete",
            EventKind::QosSpecsDeleteKeys => "qos_specs.delete_keys",
            EventKind::QosSpecsAssociate => "qos_specs.associate",
            EventKind::QosSpecsDisassociate => "qos_specs.disassociate",
            EventKind::QosSpecsDisassociateAll => "qos_specs.disassociate_all",
            EventKind::GroupCreateStart => "group.create.start",
            EventKind::GroupCreateEnd => "group.create.end",
            EventKind::GroupUpdateStart => "group.update.start",
            EventKind::GroupUpdateEnd => "group.update.end",
            EventKind::GroupDeleteStart => "group.delete.start",
            EventKind::GroupDeleteEnd => "group.delete.end",
            EventKind::GroupSnapshotCreateStart => "group_snapshot.create.start",
            EventKind::GroupSnapshotCreateEnd => "group_snapshot.create.end",
            EventKind::GroupSnapshotDeleteStart => "group_snapshot.delete.start",
            EventKind::GroupSnapshotDeleteEnd => "group_snapshot.delete.end",
            EventKind::BackupCreateStart => "backup.create.start",
            EventKind::BackupCreateProgress => "backup.createprogress",
            EventKind::BackupCreateEnd => "backup.create.end",
            EventKind::BackupDeleteStart => "backup.delete.start",
            EventKind::BackupDeleteEnd => "backup.delete.end",
            EventKind::BackupRestoreStart => "backup.restore.start",
            EventKind::BackupRestoreEnd => "backup.restore.end",
        }
    }

    /// The notifier Cinder sends it from: the publisher is `<notifier>.<host>`.
    pub fn notifier(self) -> &'static str {
        match self {
            EventKind::VolumeTypeCreate
            | EventKind::VolumeTypeUpdate
            | EventKind::VolumeTypeDelete => "volumeType",
            EventKind::VolumeTypeExtraSpecsCreate
            | EventKind::VolumeTypeExtraSpecsUpdate
            | EventKind::VolumeTypeExtraSpecsDelete => "volumeTypeExtraSpecs",
            EventKind::QosSpecsCreate
            | EventKind::QosSpecsUpdate
            | EventKind::QosSpecsDelete
            | EventKind::QosSpecsDeleteKeys
            | EventKind::QosSpecsAssociate
            | EventKind::QosSpecsDisassociate
            | EventKind::QosSpecsDisassociateAll => "QoSSpecs",
            EventKind::BackupCreateStart
            | EventKind::BackupCreateProgress
            | EventKind::BackupCreateEnd
            | EventKind::BackupDeleteStart
            | EventKind::BackupDeleteEnd
            | EventKind::BackupRestoreStart
            | EventKind::BackupRestoreEnd => "backup",
            _ => "volume",
        }
    }

    /// The notification's priority: failures are `ERROR`, as oslo's notifier's `error()`.
    pub fn priority(self) -> &'static str {
        match self {
            EventKind::VolumeCreateError | EventKind::VolumeHostFenceError => "ERROR",
            _ => "INFO",
        }
    }
}

/// What each attach operation reports: `before` its writes (a `.start`, showing the
/// volume as Cinder's notification does, before the change) and `after` them.
pub struct Reported {
    pub before: &'static [EventKind],
    pub after: &'static [EventKind],
}

/// The events of the attach operations, in the order Cinder would send them.
pub mod attach_events {
    use super::EventKind::*;
    use super::Reported;

    /// `POST /attachments` without a connector: a reservation (Cinder: no notification).
    pub const RESERVE: Reported = Reported {
        before: &[],
        after: &[AttachmentCreateEnd],
    };
    /// `POST /attachments` with a connector: Cinder's manager starts the attach.
    pub const RESERVE_CONNECTED: Reported = Reported {
        before: &[],
        after: &[VolumeAttachStart, AttachmentCreateEnd],
    };
    /// `PUT /attachments/{id}` with a connector.
    pub const CONNECT: Reported = Reported {
        before: &[VolumeAttachStart],
        after: &[AttachmentUpdateEnd],
    };
    /// `POST /attachments/{id}/action` `os-complete`.
    pub const COMPLETE: Reported = Reported {
        before: &[],
        after: &[AttachmentCompleteEnd],
    };
    /// `DELETE /attachments/{id}`: Cinder's detach start and end around the removal.
    pub const DELETE: Reported = Reported {
        before: &[VolumeDetachStart],
        after: &[VolumeDetachEnd, AttachmentDeleteEnd],
    };
    /// The legacy `os-attach` (Cinder's manager `attach_volume`).
    pub const LEGACY_ATTACH: Reported = Reported {
        before: &[],
        after: &[VolumeAttachStart, VolumeAttachEnd],
    };
    /// The legacy `os-detach` (Cinder's manager `detach_volume`).
    pub const LEGACY_DETACH: Reported = Reported {
        before: &[VolumeDetachStart],
        after: &[VolumeDetachEnd],
    };
}

/// Who caused an event: the request and its caller, and the publisher that reports it
/// (`volume.<host>`, as Cinder's notifier names itself).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    pub request_id: Option<String>,
    pub user_id: Option<String>,
    pub project_id: Option<String>,
    pub publisher_id: String,
}

/// A recorded event, as the audit trail shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedEvent {
    pub seq: i64,
    pub message_id: Uuid,
    pub event_type: String,
    pub priority: String,
    pub publisher_id: String,
    /// `None` for events about no volume (volume types).
    pub volume_id: Option<VolumeId>,
    pub attachment_id: Option<AttachmentId>,
    /// The volume's project; for events about no volume, the caller's.
    pub project_id: String,
    pub caller_user_id: Option<String>,
    pub caller_project_id: Option<String>,
    pub request_id: Option<String>,
    pub payload: serde_json::Value,
    pub created_at: DateTime<Utc>,
    /// When the broker confirmed it; `None` while it waits.
    pub sent_at: Option<DateTime<Utc>>,
    /// The outbox row that holds it, which the relay marks sent once the broker
    /// confirmed every event in it.
    #[serde(skip)]
    pub row: OutboxRow,
}

/// A row of the outbox: one of the transaction points of today's `outbox` (holding
/// the events recorded at that point, numbered from its `seq`), or one of the
/// one-event rows of `events`, where versions before 0.3.0 recorded them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutboxRow {
    Point(i64),
    Event(i64),
}

#[cfg(test)]
impl RecordedEvent {
    /// An event with nothing but its number and row, for the tests of what is done
    /// with events by number and row (the relay's batches and marks).
    pub(crate) fn numbered(seq: i64, row: OutboxRow) -> Self {
        RecordedEvent {
            seq,
            message_id: Uuid::nil(),
            event_type: "volume.attach.start".into(),
            priority: "INFO".into(),
            publisher_id: "volume.h".into(),
            volume_id: None,
            attachment_id: None,
            project_id: "p".into(),
            caller_user_id: None,
            caller_project_id: None,
            request_id: None,
            payload: serde_json::Value::Null,
            created_at: DateTime::from_timestamp(0, 0).expect("epoch"),
            sent_at: None,
            row,
        }
    }
}

/// Which events an audit query wants; every field narrows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventFilters {
    pub volume_id: Option<VolumeId>,
    pub attachment_id: Option<AttachmentId>,
    pub project_id: Option<String>,
    pub event_type: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// Only events after this sequence number (paging).
    pub after_seq: Option<i64>,
    pub limit: u32,
}

/// The oslo.messaging envelope of a notification (`messagingv2` driver): the message
/// itself travels as a JSON string under `oslo.message`.
pub fn oslo_envelope(event: &RecordedEvent) -> serde_json::Value {
    let message = serde_json::json!({
        "message_id": event.message_id,
        "publisher_id": event.publisher_id,
        "event_type": event.event_type,
        "priority": event.priority,
        "payload": event.payload,
        "timestamp": event.created_at.format("%Y-%m-%d %H:%M:%S%.6f").to_string(),
        "_context_request_id": event.request_id,
        "_context_user_id": event.caller_user_id,
        "_context_project_id": event.caller_project_id,
        "_unique_id": event.message_id.simple().to_string(),
    });
    serde_json::json!({
        "oslo.version": "2.0",
        "oslo.message": message.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_carries_the_message_as_a_json_string() {
        let event = RecordedEvent {
            seq: 7,
            message_id: Uuid::nil(),
            event_type: "volume.attach.start".into(),
            priority: "INFO".into(),
            publisher_id: "volume.host1".into(),
            volume_id: Some(VolumeId::from(Uuid::nil())),
            attachment_id: None,
            project_id: "p1".into(),
            caller_user_id: Some("u1".into()),
            caller_project_id: Some("p1".into()),
            request_id: Some("req-1".into()),
            payload: serde_json::json!({"volume_id": "v"}),
            created_at: DateTime::from_timestamp(0, 0).expect("epoch"),
            sent_at: None,
            row: OutboxRow::Point(7),
        };
        let envelope = oslo_envelope(&event);
        assert_eq!(envelope["oslo.version"], "2.0");
        let inner: serde_json::Value =
            serde_json::from_str(envelope["oslo.message"].as_str().expect("a string"))
                .expect("json");
        assert_eq!(inner["event_type"], "volume.attach.start");
        assert_eq!(inner["publisher_id"], "volume.host1");
        assert_eq!(inner["priority"], "INFO");
        assert_eq!(inner["payload"]["volume_id"], "v");
        assert_eq!(inner["timestamp"], "1970-01-01 00:00:00.000000");
        assert_eq!(inner["_context_request_id"], "req-1");
    }
}
