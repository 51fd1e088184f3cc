//! Cinder's volume usage payload (`_usage_from_volume`, without replication or Glance
//! metadata), as the attachment writes build it in the service from the rows their lock
//! read, then change as the write changes them: no statement re-reads the volume to
//! build it. Values the database renders (times, metadata) are kept in the JSON the
//! database gives for them, so a payload built here equals the one the outbox's SQL
//! builds for the same rows (`store::outbox`'s tests hold the two together).

use serde::Serialize;
use serde_json::Value;

use super::attachment::{AttachMode, AttachStatus, NewAttachment, NewConnection};
use super::ids::{AttachmentId, VolumeId};
use super::volume::{VolumeState, VolumeStatus};

/// A volume as its usage payload shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct VolumeUsage {
    pub id: VolumeId,
    pub project_id: String,
    pub host: Option<String>,
    pub user_id: Option<String>,
    pub availability_zone: Option<String>,
    pub volume_type_id: String,
    pub display_name: Option<String>,
    /// The database's JSON for the volume's creation time.
    pub created_at: Value,
    pub status: VolumeStatus,
    pub snapshot_id: Option<String>,
    pub size: i64,
    pub multiattach: bool,
    /// The live metadata, as a JSON object.
    pub metadata: Value,
    /// The live attachments, in the lock's order.
    pub attachments: Vec<AttachmentUsage>,
    /// Attachments the write removed: no longer listed, still the subject of its events.
    pub removed: Vec<AttachmentUsage>,
    /// The database's JSON for the write's time, for the times the write sets.
    pub now: Value,
}

/// An attachment as a usage payload shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct AttachmentUsage {
    pub id: AttachmentId,
    pub volume_id: VolumeId,
    pub instance_uuid: Option<String>,
    pub attached_host: Option<String>,
    pub mountpoint: Option<String>,
    pub attach_time: Value,
    pub detach_time: Value,
    pub attach_status: AttachStatus,
    pub attach_mode: Option<AttachMode>,
}

impl AttachmentUsage {
    /// A reservation as the write inserts it: no host, mountpoint or times yet.
    pub fn reserved(new: &NewAttachment) -> Self {
        AttachmentUsage {
            id: new.id,
            volume_id: new.volume_id,
            instance_uuid: new.instance_uuid.clone(),
            attached_host: None,
            mountpoint: None,
            attach_time: Value::Null,
            detach_time: Value::Null,
            attach_status: AttachStatus::Reserved,
            attach_mode: Some(new.attach_mode),
        }
    }

    /// Connected as a connect writes it (`attaching`, the connector's host or an empty
    /// one, its mountpoint, attached `now`).
    pub fn connect(&mut self, connection: &NewConnection, now: &Value) {
        self.attach_status = AttachStatus::Attaching;
        self.attached_host = Some(connection.connector.host().unwrap_or_default().to_owned());
        self.mountpoint = Some(connection.connector.mountpoint().to_owned());
        self.attach_time = now.clone();
        self.attach_mode = Some(connection.attach_mode);
    }

    fn view(&self) -> AttachmentView<'_> {
        AttachmentView {
            id: self.id,
            volume_id: self.volume_id,
            instance_uuid: self.instance_uuid.as_deref(),
            attached_host: self.attached_host.as_deref(),
            mountpoint: self.mountpoint.as_deref(),
            attach_time: &self.attach_time,
            detach_time: &self.detach_time,
            attach_status: self.attach_status.as_str(),
            attach_mode: self.attach_mode.map(AttachMode::as_str),
        }
    }
}

/// An attachment in a payload (`_usage_from_volume`'s `volume_attachment` items).
#[derive(Serialize)]
struct AttachmentView<'a> {
    id: AttachmentId,
    volume_id: VolumeId,
    instance_uuid: Option<&'a str>,
    attached_host: Option<&'a str>,
    mountpoint: Option<&'a str>,
    attach_time: &'a Value,
    detach_time: &'a Value,
    attach_status: &'static str,
    attach_mode: Option<&'static str>,
}

/// The payload as it is serialised, straight from the usage's fields (no JSON tree).
#[derive(Serialize)]
struct PayloadView<'a> {
    tenant_id: &'a str,
    host: Option<&'a str>,
    user_id: Option<&'a str>,
    availability_zone: Option<&'a str>,
    volume_id: VolumeId,
    volume_type: &'a str,
    display_name: Option<&'a str>,
    launched_at: &'a Value,
    created_at: &'a Value,
    status: &'static str,
    snapshot_id: Option<&'a str>,
    size: i64,
    multiattach: bool,
    replication_status: &'static str,
    replication_extended_status: Option<&'static str>,
    replication_driver_data: Option<&'static str>,
    metadata: &'a Value,
    volume_attachment: Vec<AttachmentView<'a>>,
    attachment_id: Option<AttachmentId>,
    attachment: Option<AttachmentView<'a>>,
}

impl VolumeUsage {
    /// The volume's status as a rule decided it (nothing for `None`).
    pub fn set_state(&mut self, state: Option<VolumeState>) {
        if let Some(state) = state {
            self.status = state.status;
        }
    }

    /// A new attachment the write adds.
    pub fn add(&mut self, attachment: AttachmentUsage) {
        self.attachments.push(attachment);
    }

    /// A live attachment, to change as the write does.
    pub fn attachment_mut(&mut self, id: AttachmentId) -> Option<&mut AttachmentUsage> {
        self.attachments.iter_mut().find(|a| a.id == id)
    }

    /// Takes `ids` off the live list as a detach does (status `detached`, detached now).
    pub fn detach(&mut self, ids: &[AttachmentId]) {
        let (gone, kept) = std::mem::take(&mut self.attachments)
            .into_iter()
            .partition(|a| ids.contains(&a.id));
        self.attachments = kept;
        for mut attachment in gone {
            attachment.attach_status = AttachStatus::Detached;
            attachment.detach_time = self.now.clone();
            self.removed.push(attachment);
        }
    }

    /// The payload of events about this volume and, when given, `attachment`, as JSON
    /// text.
    pub fn payload(&self, attachment: Option<AttachmentId>) -> String {
        let subject = attachment.and_then(|id| {
            self.attachments
                .iter()
                .chain(&self.removed)
                .find(|a| a.id == id)
                .map(AttachmentUsage::view)
        });
        let view = PayloadView {
            tenant_id: &self.project_id,
            host: self.host.as_deref(),
            user_id: self.user_id.as_deref(),
            availability_zone: self.availability_zone.as_deref(),
            volume_id: self.id,
            volume_type: &self.volume_type_id,
            display_name: self.display_name.as_deref(),
            launched_at: &self.created_at,
            created_at: &self.created_at,
            status: self.status.as_str(),
            snapshot_id: self.snapshot_id.as_deref(),
            size: self.size,
            multiattach: self.multiattach,
            replication_status: "disabled",
            replication_extended_status: None,
            replication_driver_data: None,
            metadata: &self.metadata,
            volume_attachment: self.attachments.iter().map(AttachmentUsage::view).collect(),
            attachment_id: attachment,
            attachment: subject,
        };
        // Strings, numbers and JSON values only: nothing here can fail to serialise.
        serde_json::to_string(&view).expect("a usage payload serialises")
    }
}
