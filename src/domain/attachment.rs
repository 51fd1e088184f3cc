//! Attachments: one consumer's hold on a volume, and the words that describe it.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::ids::{AttachmentId, VolumeId};
use super::string_enum::string_enum;

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

impl AttachStatus {
    pub fn is_error(self) -> bool {
        matches!(
            self,
            AttachStatus::ErrorAttaching | AttachStatus::ErrorDetaching
        )
    }
}

string_enum! {
    /// How a host may use an attachment. `Unset` is the literal `"null"` Cinder stores for
    /// a reservation made without a mode; it becomes `rw` (or the connector's mode) when
    /// the attachment is connected.
    AttachMode {
        ReadWrite => "rw",
        ReadOnly => "ro",
        Unset => "null",
    }
}

impl AttachMode {
    /// A mode a client may ask for (`rw` or `ro`).
    pub fn requested(text: &str) -> Option<Self> {
        match text {
            "rw" => Some(AttachMode::ReadWrite),
            "ro" => Some(AttachMode::ReadOnly),
            _ => None,
        }
    }

    /// The mode of a reservation without a connector: read-only volumes force `ro`
    /// (only when `readonly` is "True", unlike Cinder which forces it for any value), else
    /// the requested mode, else Cinder's `"null"`.
    pub fn reserved(readonly: bool, requested: Option<AttachMode>) -> Self {
        if readonly {
            AttachMode::ReadOnly
        } else {
            requested.unwrap_or(AttachMode::Unset)
        }
    }

    /// The mode an attachment is connected with: a mode fixed at create wins over the
    /// connector's, which wins over the default `rw`; read-only volumes are always `ro`.
    pub fn connected(
        readonly: bool,
        stored: Option<AttachMode>,
        connector: Option<AttachMode>,
    ) -> Self {
        if readonly {
            return AttachMode::ReadOnly;
        }
        let fixed = |mode: Option<AttachMode>| mode.filter(|m| *m != AttachMode::Unset);
        fixed(stored)
            .or(fixed(connector))
            .unwrap_or(AttachMode::ReadWrite)
    }
}

/// A host connector as Nova (os-brick) sends it: `host`, `initiator`, `ip`, `multipath`,
/// `mountpoint`, `mode`, and whatever else the host's connector reports. It is kept and
/// handed back exactly as it came.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Connector(Map<String, Value>);

impl Connector {
    /// The connector a request sent: an object, or `None` for null and anything else.
    pub fn from_json(value: Option<Value>) -> Option<Self> {
        match value {
            Some(Value::Object(map)) => Some(Connector(map)),
            _ => None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// A string-valued key.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    /// The connecting host's name.
    pub fn host(&self) -> Option<&str> {
        self.text("host")
    }

    /// The device the host will see, Cinder's `na` when the connector does not say.
    pub fn mountpoint(&self) -> &str {
        self.text("mountpoint").unwrap_or("na")
    }

    /// The mode the connector asks for, if it is a valid one.
    pub fn mode(&self) -> Option<AttachMode> {
        self.text("mode").and_then(AttachMode::requested)
    }

    pub fn enforce_multipath(&self) -> bool {
        self.get("enforce_multipath")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// Records the mode the attachment is connected with, as Cinder does.
    pub fn set_mode(&mut self, mode: AttachMode) {
        self.0
            .insert("mode".into(), Value::String(mode.as_str().to_owned()));
    }

    pub fn insert(&mut self, key: &str, value: Value) {
        self.0.insert(key.to_owned(), value);
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.0.iter()
    }
}

impl FromIterator<(String, Value)> for Connector {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(items: I) -> Self {
        Connector(items.into_iter().collect())
    }
}

/// An attachment as the API shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Attachment {
    pub id: AttachmentId,
    pub volume_id: VolumeId,
    pub instance_uuid: Option<String>,
    /// The connector's `host`, recorded when the attachment is connected.
    pub attached_host: Option<String>,
    /// The connector's `mountpoint` (the device the host sees).
    pub mountpoint: Option<String>,
    pub attach_status: AttachStatus,
    pub attach_mode: Option<AttachMode>,
    pub attach_time: Option<DateTime<Utc>>,
    pub detach_time: Option<DateTime<Utc>>,
    pub connection_info: Option<Value>,
    pub created_at: DateTime<Utc>,
    /// The other live attachments of the volume connected from the same host: the host
    /// keeps its session to the volume's target until the last of them is detached.
    pub shared_connections: Vec<AttachmentId>,
}

/// A live attachment's connection: which host has the volume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostConnection {
    pub id: AttachmentId,
    pub volume_id: VolumeId,
    pub host: String,
}

impl Attachment {
    /// Fills `shared_connections` from the connections of the attachment's volume.
    pub fn share_with(&mut self, connections: &[HostConnection]) {
        let Some(host) = self.attached_host.as_deref() else {
            return;
        };
        self.shared_connections = connections
            .iter()
            .filter(|c| c.volume_id == self.volume_id && c.id != self.id && c.host == host)
            .map(|c| c.id)
            .collect();
    }
}

/// An attachment with what its lookups need: the owning project, the volume's host
/// (which backend holds it) and the stored connector.
#[derive(Debug, Clone, PartialEq)]
pub struct AttachmentRecord {
    pub attachment: Attachment,
    pub project_id: String,
    pub volume_host: Option<String>,
    /// The id the volume's storage is named after (`Volume::storage_id`).
    pub volume_storage: VolumeId,
    pub connector: Connector,
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
    pub volume_id: Option<VolumeId>,
    pub instance_uuid: Option<String>,
    /// As given: a value that is no status matches nothing.
    pub attach_status: Option<String>,
}

/// A new reservation, as the store writes it once the attach rules allow it.
#[derive(Debug, Clone)]
pub struct NewAttachment {
    pub id: AttachmentId,
    pub volume_id: VolumeId,
    pub instance_uuid: Option<String>,
    /// The multiattach flag the caller read; a changed flag refuses the reservation.
    pub expected_multiattach: bool,
    pub attach_mode: AttachMode,
    /// The service's cap for volumes whose type sets none (`None`: no cap).
    pub default_max_attachments: Option<u32>,
    pub now: DateTime<Utc>,
}

/// Which attachments-API request an answer is for: Cinder words some refusals and
/// failures differently for the create (`POST /attachments`) and the update (`PUT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachmentCall {
    Create,
    Update,
}

impl From<Connecting> for AttachmentCall {
    fn from(by: Connecting) -> Self {
        match by {
            Connecting::NewReservation => Self::Create,
            Connecting::Update => Self::Update,
        }
    }
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

/// What the backend answered for a connector, before the attach rules add their keys.
#[derive(Debug, Clone, PartialEq)]
pub struct DriverConnection {
    pub driver_volume_type: String,
    pub data: Map<String, Value>,
}

/// A connection to record: the attachment becomes `attaching` with these details.
#[derive(Debug, Clone)]
pub struct NewConnection {
    pub attachment_id: AttachmentId,
    /// With `mode` set to `attach_mode`.
    pub connector: Connector,
    pub attach_mode: AttachMode,
    pub driver: DriverConnection,
    pub by: Connecting,
    pub now: DateTime<Utc>,
}

/// An attachment a detach removed, with the connector its export was made for (empty
/// when it was never connected).
#[derive(Debug, Clone, PartialEq)]
pub struct Detached {
    pub id: AttachmentId,
    pub attach_status: AttachStatus,
    pub connector: Connector,
}

#[cfg(test)]
mod tests {
    use super::*;
    use AttachMode::*;

    #[test]
    fn modes() {
        assert_eq!(AttachMode::reserved(false, None), Unset);
        assert_eq!(AttachMode::reserved(false, Some(ReadOnly)), ReadOnly);
        assert_eq!(AttachMode::reserved(true, Some(ReadWrite)), ReadOnly);
        assert_eq!(AttachMode::connected(false, Some(Unset), None), ReadWrite);
        assert_eq!(
            AttachMode::connected(false, Some(Unset), Some(ReadOnly)),
            ReadOnly
        );
        assert_eq!(
            AttachMode::connected(false, Some(ReadOnly), Some(ReadWrite)),
            ReadOnly,
            "the create mode wins"
        );
        assert_eq!(
            AttachMode::connected(true, Some(ReadWrite), Some(ReadWrite)),
            ReadOnly
        );
        assert_eq!(AttachMode::requested("null"), None);
        assert_eq!(AttachMode::parse("null"), Some(Unset));
    }

    #[test]
    fn connectors() {
        assert!(Connector::from_json(None).is_none());
        assert!(Connector::from_json(Some(Value::Null)).is_none());
        let mut c =
            Connector::from_json(Some(serde_json::json!({"host": "h", "mode": "ro"}))).unwrap();
        assert_eq!(c.host(), Some("h"));
        assert_eq!(c.mountpoint(), "na");
        assert_eq!(c.mode(), Some(ReadOnly));
        assert!(!c.enforce_multipath());
        c.set_mode(ReadWrite);
        assert_eq!(c.text("mode"), Some("rw"));
    }
}
