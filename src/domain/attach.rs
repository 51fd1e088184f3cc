//! The attach state machine. Every change to a volume's attachments is decided here, by
//! one pure function per event, from the volume as its transaction holds it locked and
//! the volume's live attachments. The store reads those two under the volume's lock,
//! asks, and writes what was decided (or answers the refusal); nothing else decides.

use serde_json::{Map, Value};

mod aggregate;

pub use aggregate::{aggregate, status_consistent, status_of, Hold, AGGREGATED_STATUSES};

use super::attachment::{
    AttachMode, AttachStatus, Connecting, DriverConnection, HostConnection, NewAttachment,
};
use super::ids::AttachmentId;
use super::refusal::AttachRefusal;
use super::volume::{LockedVolume, VolumeState, VolumeStatus};

/// A live (not deleted) attachment of the locked volume.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveAttachment {
    pub id: AttachmentId,
    pub volume_id: super::ids::VolumeId,
    pub instance_uuid: Option<String>,
    pub attach_status: AttachStatus,
    /// `None` for rows written before modes were recorded.
    pub attach_mode: Option<AttachMode>,
    /// The connected host.
    pub attached_host: Option<String>,
    /// It holds connection info (Cinder's test: a non-empty object).
    pub connected: bool,
}

impl LiveAttachment {
    fn writes(&self) -> bool {
        self.attach_mode == Some(AttachMode::ReadWrite)
    }

    /// A reservation about to be written.
    pub fn reserved(new: &NewAttachment) -> Self {
        LiveAttachment {
            id: new.id,
            volume_id: new.volume_id,
            instance_uuid: new.instance_uuid.clone(),
            attach_status: AttachStatus::Reserved,
            attach_mode: Some(new.attach_mode),
            attached_host: None,
            connected: false,
        }
    }

    /// Its connection, once it is connected to a host.
    pub fn host_connection(&self) -> Option<HostConnection> {
        Some(HostConnection {
            id: self.id,
            volume_id: self.volume_id,
            host: self.attached_host.clone()?,
        })
    }
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
    /// The volume moves to `state`; nothing is written when it is already there.
    pub(super) fn towards(volume: &LockedVolume, state: VolumeState) -> Self {
        Transition {
            volume: (state != volume.state()).then_some(state),
            detached: Vec::new(),
        }
    }
}

/// What a connect writes: the volume's state and the connection info Nova will read.
#[derive(Debug, Clone, PartialEq)]
pub struct Connection {
    /// The volume's state afterwards; `None` leaves the row alone.
    pub volume: Option<VolumeState>,
    pub info: Value,
}

/// Statuses from which a new attachment may reserve the volume. A multiattach volume
/// also takes one while others are reserved or attaching: every attachment write holds
/// the volume's lock, so the guard Cinder needed against concurrent attaches is not
/// needed here (Cinder refuses those).
pub fn reserve_statuses(multiattach: bool) -> &'static [VolumeStatus] {
    if multiattach {
        &[
            VolumeStatus::Available,
            VolumeStatus::InUse,
            VolumeStatus::Downloading,
            VolumeStatus::Reserved,
            VolumeStatus::Attaching,
        ]
    } else {
        &[VolumeStatus::Available, VolumeStatus::Downloading]
    }
}

/// Statuses from which the same instance may add an attachment without reserving.
pub const SAME_INSTANCE_STATUSES: &[VolumeStatus] = &[VolumeStatus::InUse, VolumeStatus::Reserved];

/// Cinder refuses attachment work on a volume whose status mentions `error` (its
/// `'error' in volume.status`): these.
pub fn in_error_state(status: VolumeStatus) -> bool {
    matches!(
        status,
        VolumeStatus::Error
            | VolumeStatus::ErrorDeleting
            | VolumeStatus::ErrorManaging
            | VolumeStatus::ErrorRestoring
            | VolumeStatus::ErrorBackingUp
            | VolumeStatus::ErrorExtending
    )
}

/// What a reservation asks for, besides the volume.
#[derive(Debug, Clone, Copy)]
pub struct Reservation<'a> {
    pub instance_uuid: Option<&'a str>,
    /// The multiattach flag the caller read; a changed flag refuses the reservation.
    pub expected_multiattach: bool,
    pub mode: AttachMode,
    /// The service-wide cap on live attachments of a volume whose type sets none.
    pub default_max_attachments: Option<u32>,
}

impl<'a> Reservation<'a> {
    /// What `new` asks for.
    pub fn of(new: &'a NewAttachment) -> Self {
        Reservation {
            instance_uuid: new.instance_uuid.as_deref(),
            expected_multiattach: new.expected_multiattach,
            mode: new.attach_mode,
            default_max_attachments: new.default_max_attachments,
        }
    }
}

/// A new attachment. Cinder's rule first: nothing is attached to a volume in an error
/// state; the volume's status must allow a reservation for the multiattach flag the
/// caller read (and the flag must not have changed since); failing that, an instance
/// that already holds an attachment of an `in-use` or `reserved` volume may add another
/// without reserving it again. Then the sharing limits: the volume's attachment cap, and
/// on a single-writer type at most one `rw` attachment.
pub fn reserve(
    volume: &LockedVolume,
    live: &[LiveAttachment],
    request: &Reservation<'_>,
) -> Result<Transition, AttachRefusal> {
    let same_instance = request.instance_uuid.is_some_and(|instance| {
        live.iter()
            .any(|a| a.instance_uuid.as_deref() == Some(instance))
    });
    reservation(
        volume.state(),
        volume.multiattach,
        request.expected_multiattach,
        same_instance,
    )?;
    // Sharing is ours, not Cinder's: a multiattach volume being migrated takes no new
    // attachment (a single-attach one keeps Cinder's rule, which does not ask).
    if volume.multiattach && volume.migrating() {
        return Err(AttachRefusal::Migrating);
    }
    sharing_limits(volume, live, request.mode, request.default_max_attachments)?;
    let hold = Hold::of(volume.status, statuses(live));
    let after = statuses(live).chain([AttachStatus::Reserved]);
    Ok(Transition::towards(volume, aggregate(volume, hold, after)))
}

/// The sharing limits a new attachment of `mode` must fit: the volume's attachment cap
/// (its type's, else the service's `default_max_attachments`) and, on a single-writer
/// type, at most one `rw` attachment.
pub(super) fn sharing_limits(
    volume: &LockedVolume,
    live: &[LiveAttachment],
    mode: AttachMode,
    default_max_attachments: Option<u32>,
) -> Result<(), AttachRefusal> {
    let limit = volume
        .type_max_attachments
        .map(|limit| AttachmentLimit {
            limit,
            from_type: true,
        })
        .or(default_max_attachments.map(|limit| AttachmentLimit {
            limit,
            from_type: false,
        }));
    if let Some(limit) = limit.filter(|l| live.len() >= l.limit as usize) {
        return Err(AttachRefusal::AttachmentLimit {
            limit: limit.limit,
            from_type: limit.from_type,
        });
    }
    single_writer(volume, live, None, mode)
}

/// A cap on a volume's live attachments, and where it comes from.
#[derive(Debug, Clone, Copy)]
struct AttachmentLimit {
    limit: u32,
    from_type: bool,
}

/// On a single-writer type, `mode` may be `rw` only while no other live attachment
/// (other than `target`, which is being reconnected) holds write access.
pub(super) fn single_writer(
    volume: &LockedVolume,
    live: &[LiveAttachment],
    target: Option<AttachmentId>,
    mode: AttachMode,
) -> Result<(), AttachRefusal> {
    if !volume.type_single_writer || mode != AttachMode::ReadWrite {
        return Ok(());
    }
    match live.iter().find(|a| Some(a.id) != target && a.writes()) {
        Some(holder) => Err(AttachRefusal::WriterHeld { holder: holder.id }),
        None => Ok(()),
    }
}

pub(super) fn statuses(live: &[LiveAttachment]) -> impl Iterator<Item = AttachStatus> + '_ {
    live.iter().map(|a| a.attach_status)
}

/// `live` with `target`'s status replaced.
fn with_status(
    live: &[LiveAttachment],
    target: AttachmentId,
    status: AttachStatus,
) -> impl Iterator<Item = AttachStatus> + '_ {
    live.iter().map(move |a| {
        if a.id == target {
            status
        } else {
            a.attach_status
        }
    })
}

/// Whether a volume in `status` refuses every reservation, even one for an instance that
/// already holds it: such a request is answered from a read without the volume's lock
/// (the rule of `reserve`, assuming the most it could). The lock's decision stays the
/// one that counts: this only spares a refused request its turn at the lock.
pub fn refuses_any_reservation(status: VolumeStatus, multiattach: bool) -> Option<AttachRefusal> {
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
) -> Result<(), AttachRefusal> {
    if in_error_state(volume.status) {
        return Err(AttachRefusal::VolumeInError(volume.status));
    }
    let status_allows = multiattach == expected_multiattach
        && reserve_statuses(expected_multiattach).contains(&volume.status);
    if status_allows || (same_instance && SAME_INSTANCE_STATUSES.contains(&volume.status)) {
        return Ok(());
    }
    Err(AttachRefusal::Reservation {
        status: volume.status,
        multiattach: expected_multiattach,
    })
}

/// Connects `target` to a host: the attachment becomes `attaching`, and the volume what
/// its attachments make it (`in-use` stays `in-use` while another host attaches). An
/// update (not the create that reserved it) is refused on a volume in an error state,
/// and on a volume without multiattach while another of its attachments is connected. On
/// a single-writer type an `rw` connection needs no other writer.
pub fn connect(
    volume: &LockedVolume,
    live: &[LiveAttachment],
    target: &LiveAttachment,
    by: Connecting,
    mode: AttachMode,
    driver: &DriverConnection,
    enforce_multipath: bool,
) -> Result<Connection, AttachRefusal> {
    if by == Connecting::Update {
        if in_error_state(volume.status) {
            return Err(AttachRefusal::VolumeInError(volume.status));
        }
        let any_connected = live.iter().any(|a| a.connected);
        // Cinder reads the volume's flag and its type's spec here.
        let multiattach = volume.multiattach || volume.type_multiattach;
        if !multiattach && live.len() > 1 && any_connected {
            return Err(AttachRefusal::DuplicateConnector);
        }
    }
    single_writer(volume, live, Some(target.id), mode)?;
    let extras = ConnectionExtras {
        attachment_id: target.id,
        access_mode: mode,
        encrypted: volume.encrypted,
        cacheable: volume.type_cacheable,
        enforce_multipath,
    };
    let hold = Hold::of(volume.status, statuses(live));
    let after = with_status(live, target.id, AttachStatus::Attaching);
    Ok(Connection {
        volume: Transition::towards(volume, aggregate(volume, hold, after)).volume,
        info: connection_info(driver, &extras),
    })
}

/// The host finished attaching `target`: it is `attached`, so the volume is `in-use`.
pub fn complete(
    volume: &LockedVolume,
    live: &[LiveAttachment],
    target: &LiveAttachment,
) -> Transition {
    let hold = Hold::of(volume.status, statuses(live));
    let after = with_status(live, target.id, AttachStatus::Attached);
    Transition::towards(volume, aggregate(volume, hold, after))
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
        detached: vec![target.id],
        ..Transition::towards(volume, aggregate(volume, Hold::None, remaining))
    }
}

/// Removes every attachment (`os-reset_status` with `attach_status=detached`).
pub fn detach_all(volume: &LockedVolume, live: &[LiveAttachment]) -> Transition {
    Transition {
        detached: live.iter().map(|a| a.id).collect(),
        ..Transition::towards(volume, aggregate(volume, Hold::None, []))
    }
}

/// Cinder's "has connection_info": a non-empty JSON object. Decided from the stored
/// text without building the value: every write to a volume reads the info of all its
/// live attachments, and on a shared volume with 64 of them building each value took a
/// measurable share of SQLite's one writer (issue 27). An error for text that is not JSON.
pub fn is_connected(info: Option<&str>) -> Result<bool, serde_json::Error> {
    match info {
        None => Ok(false),
        Some(text) => {
            let mut json = serde_json::Deserializer::from_str(text);
            let connected = serde::Deserializer::deserialize_any(&mut json, NonEmptyObject)?;
            json.end()?;
            Ok(connected)
        }
    }
}

/// Visits a JSON value without keeping any of it: whether it is an object with a key.
struct NonEmptyObject;

impl<'de> serde::de::Visitor<'de> for NonEmptyObject {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut keys = 0_usize;
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {
            keys += 1;
        }
        Ok(keys > 0)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(false)
    }

    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
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
