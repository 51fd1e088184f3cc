//! The attach state machine. Every change to a volume's attachments is decided here, by
//! one pure function per event, from the volume as its transaction holds it locked and
//! the volume's live attachments. The store reads those two under the volume's lock,
//! asks, and writes what was decided (or answers the refusal); nothing else decides.

use serde_json::{Map, Value};

use super::attachment::{AttachMode, AttachStatus, Connecting, DriverConnection};
use super::ids::AttachmentId;
use super::outcome::Refusal;
use super::volume::{LockedVolume, VolumeState, VolumeStatus};

/// A live (not deleted) attachment of the locked volume.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveAttachment {
    pub id: AttachmentId,
    pub volume_id: super::ids::VolumeId,
    pub instance_uuid: Option<String>,
    pub attach_status: AttachStatus,
    /// It holds connection info (Cinder's test: a non-empty object).
    pub connected: bool,
}

/// What an attachment event writes besides its own attachment row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// The volume's `(status, attach_status)` afterwards; `None` leaves the row alone.
    pub volume: Option<VolumeState>,
    /// Attachments the event removes.
    pub detached: Vec<AttachmentId>,
}

impl Transition {
    fn volume(state: VolumeState) -> Self {
        Transition {
            volume: Some(state),
            detached: Vec::new(),
        }
    }

    fn unchanged() -> Self {
        Transition {
            volume: None,
            detached: Vec::new(),
        }
    }
}

/// What a connect writes: the volume's state and the connection info Nova will read.
#[derive(Debug, Clone, PartialEq)]
pub struct Connection {
    pub volume: VolumeState,
    pub info: Value,
}

/// Statuses from which a new attachment may reserve the volume.
pub fn reserve_statuses(multiattach: bool) -> &'static [VolumeStatus] {
    if multiattach {
        &[
            VolumeStatus::Available,
            VolumeStatus::InUse,
            VolumeStatus::Downloading,
        ]
    } else {
        &[VolumeStatus::Available, VolumeStatus::Downloading]
    }
}

/// Statuses from which the same instance may add an attachment without reserving.
pub const SAME_INSTANCE_STATUSES: &[VolumeStatus] = &[VolumeStatus::InUse, VolumeStatus::Reserved];

/// Cinder refuses attachment work on a volume whose status mentions `error`.
pub fn in_error_state(status: VolumeStatus) -> bool {
    status.as_str().contains("error")
}

/// A new attachment for `instance_uuid`. Cinder's rule: nothing is attached to a volume
/// in an error state; the volume's status must allow a reservation for the multiattach
/// flag the caller read (and the flag must not have changed since); failing that, an
/// instance that already holds an attachment of an `in-use` or `reserved` volume may add
/// another without reserving it again.
pub fn reserve(
    volume: &LockedVolume,
    live: &[LiveAttachment],
    instance_uuid: Option<&str>,
    expected_multiattach: bool,
) -> Result<Transition, Refusal> {
    let same_instance = instance_uuid.is_some_and(|instance| {
        live.iter()
            .any(|a| a.instance_uuid.as_deref() == Some(instance))
    });
    reservation(
        volume.state(),
        volume.multiattach,
        expected_multiattach,
        same_instance,
    )
}

/// Whether a volume in `status` refuses every reservation, even one for an instance that
/// already holds it: such a request is answered from a read without the volume's lock
/// (the rule of `reserve`, assuming the most it could). The lock's decision stays the
/// one that counts: this only spares a refused request its turn at the lock.
pub fn refuses_any_reservation(status: VolumeStatus, multiattach: bool) -> Option<Refusal> {
    let state = VolumeState {
        status,
        attach_status: AttachStatus::Detached,
    };
    reservation(state, multiattach, multiattach, true).err()
}

fn reservation(
    volume: VolumeState,
    multiattach: bool,
    expected_multiattach: bool,
    same_instance: bool,
) -> Result<Transition, Refusal> {
    if in_error_state(volume.status) {
        return Err(Refusal::VolumeInError(volume.status));
    }
    if multiattach == expected_multiattach
        && reserve_statuses(expected_multiattach).contains(&volume.status)
    {
        return Ok(Transition::volume(VolumeState {
            status: VolumeStatus::Reserved,
            attach_status: volume.attach_status,
        }));
    }
    if same_instance && SAME_INSTANCE_STATUSES.contains(&volume.status) {
        return Ok(Transition::unchanged());
    }
    Err(Refusal::Reservation {
        status: volume.status,
        multiattach: expected_multiattach,
    })
}

/// Connects `target` to a host: the attachment and the volume become `attaching`. An
/// update (not the create that reserved it) is refused on a volume in an error state, and
/// on a volume without multiattach while another of its attachments is connected.
pub fn connect(
    volume: &LockedVolume,
    live: &[LiveAttachment],
    target: &LiveAttachment,
    by: Connecting,
    mode: AttachMode,
    driver: &DriverConnection,
    enforce_multipath: bool,
) -> Result<Connection, Refusal> {
    if by == Connecting::Update {
        if in_error_state(volume.status) {
            return Err(Refusal::VolumeInError(volume.status));
        }
        let any_connected = live.iter().any(|a| a.connected);
        // Cinder reads the volume's flag and its type's spec here.
        let multiattach = volume.multiattach || volume.type_multiattach;
        if !multiattach && live.len() > 1 && any_connected {
            return Err(Refusal::DuplicateConnector);
        }
    }
    let extras = ConnectionExtras {
        attachment_id: target.id,
        access_mode: mode,
        encrypted: volume.encrypted,
        cacheable: volume.type_cacheable,
        enforce_multipath,
    };
    Ok(Connection {
        volume: VolumeState {
            status: VolumeStatus::Attaching,
            attach_status: AttachStatus::Attaching,
        },
        info: connection_info(driver, &extras),
    })
}

/// The host finished attaching `target`: the volume is `in-use`, whatever its other
/// attachments are doing, as in Cinder.
pub fn complete(_volume: &LockedVolume, _target: &LiveAttachment) -> Transition {
    Transition::volume(VolumeState {
        status: VolumeStatus::InUse,
        attach_status: AttachStatus::Attached,
    })
}

/// Removes `target`; the volume follows the attachments that remain.
pub fn detach(
    volume: &LockedVolume,
    live: &[LiveAttachment],
    target: &LiveAttachment,
) -> Transition {
    let remaining = live
        .iter()
        .filter(|a| a.id != target.id)
        .map(|a| a.attach_status);
    Transition {
        volume: Some(after_detach(volume, remaining)),
        detached: vec![target.id],
    }
}

/// Removes every attachment (`os-reset_status` with `attach_status=detached`).
pub fn detach_all(volume: &LockedVolume, live: &[LiveAttachment]) -> Transition {
    Transition {
        volume: Some(after_detach(volume, std::iter::empty())),
        detached: live.iter().map(|a| a.id).collect(),
    }
}

/// The volume's state after a detach, from the statuses of the attachments that remain:
/// among those not in an error state the alphabetically first status wins (`attached` >
/// `attaching` > `detached` > `reserved`), none left means `detached`. A migrating or
/// uploading volume keeps its status when it ends up detached (Cinder's
/// `volume_detached`).
pub fn after_detach(
    volume: &LockedVolume,
    remaining: impl Iterator<Item = AttachStatus>,
) -> VolumeState {
    let attach_status = remaining
        .filter(|s| !s.is_error())
        .min_by_key(|s| s.as_str())
        .unwrap_or(AttachStatus::Detached);
    let status = match attach_status {
        AttachStatus::Attached => VolumeStatus::InUse,
        AttachStatus::Attaching => VolumeStatus::Attaching,
        AttachStatus::Reserved => VolumeStatus::Reserved,
        // Detached, and (never live) deleted.
        _ => VolumeStatus::Available,
    };
    let keep = attach_status == AttachStatus::Detached
        && (volume.migrating() || volume.status == VolumeStatus::Uploading);
    VolumeState {
        status: if keep { volume.status } else { status },
        attach_status,
    }
}

/// Whether a volume status can stand with these live attachments: the invariant every
/// write path keeps (used by tests and the consistency checker).
pub fn status_consistent(status: VolumeStatus, attachments: &[AttachStatus]) -> bool {
    let live: Vec<AttachStatus> = attachments
        .iter()
        .copied()
        .filter(|s| !s.is_error() && *s != AttachStatus::Deleted && *s != AttachStatus::Detached)
        .collect();
    let has = |wanted: AttachStatus| live.contains(&wanted);
    match status {
        VolumeStatus::Available => live.is_empty(),
        VolumeStatus::Reserved => has(AttachStatus::Reserved),
        // Also the status of a legacy `os-reserve`, which creates no attachment.
        VolumeStatus::Attaching => true,
        VolumeStatus::InUse => has(AttachStatus::Attached),
        // Other statuses are not the attach machine's to judge.
        _ => true,
    }
}

/// Cinder's "has connection_info": a non-empty JSON object.
pub fn is_connected(info: Option<&Value>) -> bool {
    info.and_then(Value::as_object)
        .is_some_and(|object| !object.is_empty())
}

/// What is added to a backend's connection data.
#[derive(Debug, Clone)]
pub struct ConnectionExtras {
    pub attachment_id: AttachmentId,
    pub access_mode: AttachMode,
    pub encrypted: bool,
    /// The volume type's `cacheable` spec.
    pub cacheable: bool,
    pub enforce_multipath: bool,
}

/// The flat `connection_info` Nova reads: the driver's `data` merged with
/// `driver_volume_type`, plus access mode, encryption, QoS, caching, the attachment id and
/// `enforce_multipath`.
pub fn connection_info(driver: &DriverConnection, extras: &ConnectionExtras) -> Value {
    let mut info: Map<String, Value> = driver.data.clone();
    info.insert(
        "driver_volume_type".into(),
        Value::String(driver.driver_volume_type.clone()),
    );
    info.entry("qos_specs").or_insert(Value::Null);
    let access_mode = match extras.access_mode {
        AttachMode::ReadOnly => "ro",
        _ => "rw",
    };
    info.insert("access_mode".into(), Value::String(access_mode.to_owned()));
    info.entry("encrypted")
        .or_insert(Value::Bool(extras.encrypted));
    let driver_cacheable = info
        .get("cacheable")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    info.insert(
        "cacheable".into(),
        Value::Bool(extras.cacheable && driver_cacheable),
    );
    info.insert(
        "attachment_id".into(),
        Value::String(extras.attachment_id.to_string()),
    );
    info.insert(
        "enforce_multipath".into(),
        Value::Bool(extras.enforce_multipath),
    );
    Value::Object(info)
}

#[cfg(test)]
mod tests;
