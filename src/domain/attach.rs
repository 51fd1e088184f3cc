//! The attach state machine: which volume statuses allow a reservation, what each
//! attachment event does to the volume, and how connection info is put together.
//! Pure functions, used inside the store's transactions and by the service.

use serde_json::{Map, Value};
use uuid::Uuid;

use super::attachment::AttachStatus;
use super::volume::VolumeStatus;

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

/// Cinder's refusal of a reservation, naming the status the caller saw.
pub fn reserve_refusal(volume_id: Uuid, multiattach: bool, status: VolumeStatus) -> String {
    let allowed: Vec<&str> = reserve_statuses(multiattach)
        .iter()
        .map(|s| s.as_str())
        .collect();
    format!(
        "Volume {volume_id} status must be {} to reserve, but the current status is {status}.",
        allowed.join(" or ")
    )
}

/// Statuses from which the same instance may add an attachment without reserving.
pub const SAME_INSTANCE_STATUSES: &[VolumeStatus] = &[VolumeStatus::InUse, VolumeStatus::Reserved];

/// Cinder refuses attachment work on a volume whose status mentions `error`.
pub fn in_error_state(status: VolumeStatus) -> bool {
    status.as_str().contains("error")
}

/// What happens to a volume's attachments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachEvent {
    /// A new attachment reserved the volume (compare-and-swap won).
    Reserve,
    /// The same instance added an attachment to a volume it already holds.
    ReserveSameInstance,
    /// An attachment was connected to a host (update, or create with a connector).
    Connect,
    /// The host reported the attachment complete.
    Complete,
    /// An attachment was deleted; the volume follows the ones that remain.
    Detach,
}

/// The volume's state as the attach state machine sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VolumeAttachState {
    pub status: VolumeStatus,
    pub attach_status: AttachStatus,
    /// A migration in progress (not none, `success` or `error`).
    pub migrating: bool,
}

/// The volume's `(status, attach_status)` after `event`; `remaining` are the statuses of
/// its live attachments after the event (only `Detach` looks at them).
///
/// Reserve, connect and complete move the volume whatever its siblings are doing, as
/// Cinder does; a detach recomputes from what is left: among the live attachments not in
/// an error state the alphabetically first status wins (`attached` > `attaching` >
/// `detached` > `reserved`), none left means `detached`.
pub fn volume_status_after(
    event: AttachEvent,
    volume: VolumeAttachState,
    remaining: &[AttachStatus],
) -> (VolumeStatus, AttachStatus) {
    match event {
        AttachEvent::Reserve => (VolumeStatus::Reserved, volume.attach_status),
        AttachEvent::ReserveSameInstance => (volume.status, volume.attach_status),
        AttachEvent::Connect => (VolumeStatus::Attaching, AttachStatus::Attaching),
        AttachEvent::Complete => (VolumeStatus::InUse, AttachStatus::Attached),
        AttachEvent::Detach => {
            let attach_status = remaining
                .iter()
                .filter(|s| !s.as_str().starts_with("error_"))
                .map(|s| s.as_str())
                .min()
                .and_then(AttachStatus::parse)
                .unwrap_or(AttachStatus::Detached);
            let status = match attach_status {
                AttachStatus::Attached => VolumeStatus::InUse,
                AttachStatus::Detached => VolumeStatus::Available,
                AttachStatus::Attaching => VolumeStatus::Attaching,
                AttachStatus::Reserved => VolumeStatus::Reserved,
                // Error and deleted states were filtered out above.
                _ => VolumeStatus::Available,
            };
            // A migrating or uploading volume keeps its status when it ends up detached.
            let keep = attach_status == AttachStatus::Detached
                && (volume.migrating || volume.status == VolumeStatus::Uploading);
            (if keep { volume.status } else { status }, attach_status)
        }
    }
}

/// Whether a volume status can stand with these live attachments: the invariant every
/// write path keeps (used by tests and the consistency checker).
pub fn status_consistent(status: VolumeStatus, attachments: &[AttachStatus]) -> bool {
    let live: Vec<AttachStatus> = attachments
        .iter()
        .copied()
        .filter(|s| {
            !s.as_str().starts_with("error_")
                && *s != AttachStatus::Deleted
                && *s != AttachStatus::Detached
        })
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

/// A per-attachment access mode.
pub fn parse_mode(text: &str) -> Option<&'static str> {
    match text {
        "rw" => Some("rw"),
        "ro" => Some("ro"),
        _ => None,
    }
}

/// `attach_mode` of a reservation without a connector: read-only volumes force `ro`
/// (only when `readonly` is "True", unlike Cinder which forces it for any value), else
/// the requested mode, else Cinder's literal `"null"`.
pub fn reserved_mode(readonly: bool, requested: Option<&str>) -> String {
    if readonly {
        "ro".to_owned()
    } else {
        requested.unwrap_or("null").to_owned()
    }
}

/// The mode an attachment is connected with: a mode fixed at create wins over the
/// connector's, which wins over the default `rw`; read-only volumes are always `ro`.
pub fn connect_mode(readonly: bool, stored: Option<&str>, connector: Option<&str>) -> String {
    if readonly {
        return "ro".to_owned();
    }
    match stored.and_then(parse_mode) {
        Some(mode) => mode.to_owned(),
        None => connector.and_then(parse_mode).unwrap_or("rw").to_owned(),
    }
}

/// Cinder's guard for non-multiattach volumes: with more than one live attachment, any
/// attachment already connected blocks another connect.
pub fn duplicate_connector(
    multiattach: bool,
    live_attachments: usize,
    any_connected: bool,
) -> bool {
    !multiattach && live_attachments > 1 && any_connected
}

/// What the service adds to a backend's connection data.
#[derive(Debug, Clone)]
pub struct ConnectionExtras {
    pub attachment_id: Uuid,
    pub access_mode: String,
    pub encrypted: bool,
    pub cacheable: bool,
    pub enforce_multipath: bool,
}

/// The flat `connection_info` Nova reads: the driver's `data` merged with
/// `driver_volume_type`, plus access mode, encryption, QoS, caching, the attachment id and
/// `enforce_multipath`.
pub fn connection_info(
    driver_volume_type: &str,
    data: &Map<String, Value>,
    extras: &ConnectionExtras,
) -> Value {
    let mut info = data.clone();
    info.insert(
        "driver_volume_type".into(),
        Value::String(driver_volume_type.to_owned()),
    );
    info.entry("qos_specs").or_insert(Value::Null);
    info.insert(
        "access_mode".into(),
        Value::String(extras.access_mode.clone()),
    );
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
mod tests {
    use super::*;
    use AttachStatus::*;

    fn volume(status: VolumeStatus, attach_status: AttachStatus) -> VolumeAttachState {
        VolumeAttachState {
            status,
            attach_status,
            migrating: false,
        }
    }

    #[test]
    fn events_move_the_volume() {
        let available = volume(VolumeStatus::Available, Detached);
        let in_use = volume(VolumeStatus::InUse, Attached);
        let cases = [
            (
                AttachEvent::Reserve,
                available,
                (VolumeStatus::Reserved, Detached),
            ),
            (
                AttachEvent::Reserve,
                in_use,
                (VolumeStatus::Reserved, Attached),
            ),
            (
                AttachEvent::ReserveSameInstance,
                in_use,
                (VolumeStatus::InUse, Attached),
            ),
            (
                AttachEvent::Connect,
                in_use,
                (VolumeStatus::Attaching, Attaching),
            ),
            (
                AttachEvent::Complete,
                volume(VolumeStatus::Attaching, Attaching),
                (VolumeStatus::InUse, Attached),
            ),
        ];
        for (event, before, after) in cases {
            assert_eq!(
                volume_status_after(event, before, &[]),
                after,
                "{event:?} from {before:?}"
            );
        }
    }

    /// Every combination of up to two remaining attachments.
    #[test]
    fn detach_recomputes_from_what_remains() {
        let v = volume(VolumeStatus::InUse, Attached);
        let table: &[(&[AttachStatus], (VolumeStatus, AttachStatus))] = &[
            (&[], (VolumeStatus::Available, Detached)),
            (&[Attached], (VolumeStatus::InUse, Attached)),
            (&[Attaching], (VolumeStatus::Attaching, Attaching)),
            (&[Reserved], (VolumeStatus::Reserved, Reserved)),
            (&[ErrorAttaching], (VolumeStatus::Available, Detached)),
            (&[ErrorDetaching], (VolumeStatus::Available, Detached)),
            (&[Attached, Reserved], (VolumeStatus::InUse, Attached)),
            (&[Reserved, Attached], (VolumeStatus::InUse, Attached)),
            (&[Attaching, Reserved], (VolumeStatus::Attaching, Attaching)),
            (&[Attached, Attaching], (VolumeStatus::InUse, Attached)),
            (&[Reserved, Reserved], (VolumeStatus::Reserved, Reserved)),
            (
                &[ErrorAttaching, Reserved],
                (VolumeStatus::Reserved, Reserved),
            ),
            (&[ErrorAttaching, Attached], (VolumeStatus::InUse, Attached)),
            (
                &[ErrorDetaching, ErrorAttaching],
                (VolumeStatus::Available, Detached),
            ),
        ];
        for (remaining, expected) in table {
            assert_eq!(
                volume_status_after(AttachEvent::Detach, v, remaining),
                *expected,
                "{remaining:?}"
            );
        }
    }

    #[test]
    fn migrating_or_uploading_volumes_keep_their_status_when_detached() {
        let migrating = VolumeAttachState {
            status: VolumeStatus::InUse,
            attach_status: Attached,
            migrating: true,
        };
        assert_eq!(
            volume_status_after(AttachEvent::Detach, migrating, &[]),
            (VolumeStatus::InUse, Detached)
        );
        let uploading = volume(VolumeStatus::Uploading, Attached);
        assert_eq!(
            volume_status_after(AttachEvent::Detach, uploading, &[]),
            (VolumeStatus::Uploading, Detached)
        );
        // Only a full detach is held back.
        assert_eq!(
            volume_status_after(AttachEvent::Detach, migrating, &[Reserved]),
            (VolumeStatus::Reserved, Reserved)
        );
    }

    #[test]
    fn reserve_rules() {
        assert_eq!(
            reserve_statuses(false),
            [VolumeStatus::Available, VolumeStatus::Downloading]
        );
        assert!(reserve_statuses(true).contains(&VolumeStatus::InUse));
        let id = Uuid::nil();
        assert_eq!(
            reserve_refusal(id, false, VolumeStatus::InUse),
            format!("Volume {id} status must be available or downloading to reserve, but the current status is in-use.")
        );
        assert!(reserve_refusal(id, true, VolumeStatus::Reserved)
            .contains("available or in-use or downloading"));
        for status in [
            VolumeStatus::Error,
            VolumeStatus::ErrorDeleting,
            VolumeStatus::ErrorBackingUp,
        ] {
            assert!(in_error_state(status));
        }
        assert!(!in_error_state(VolumeStatus::InUse));
    }

    #[test]
    fn modes() {
        assert_eq!(reserved_mode(false, None), "null");
        assert_eq!(reserved_mode(false, Some("ro")), "ro");
        assert_eq!(reserved_mode(true, Some("rw")), "ro");
        assert_eq!(connect_mode(false, Some("null"), None), "rw");
        assert_eq!(connect_mode(false, Some("null"), Some("ro")), "ro");
        assert_eq!(
            connect_mode(false, Some("ro"), Some("rw")),
            "ro",
            "the create mode wins"
        );
        assert_eq!(connect_mode(true, Some("rw"), Some("rw")), "ro");
    }

    #[test]
    fn duplicate_guard() {
        assert!(
            !duplicate_connector(false, 1, true),
            "one attachment reconnecting is fine"
        );
        assert!(duplicate_connector(false, 2, true));
        assert!(!duplicate_connector(false, 2, false));
        assert!(!duplicate_connector(true, 5, true));
    }

    #[test]
    fn consistency() {
        assert!(status_consistent(VolumeStatus::Available, &[]));
        assert!(status_consistent(
            VolumeStatus::Available,
            &[ErrorAttaching]
        ));
        assert!(!status_consistent(VolumeStatus::Available, &[Reserved]));
        assert!(!status_consistent(VolumeStatus::InUse, &[]));
        assert!(status_consistent(
            VolumeStatus::InUse,
            &[Attached, Reserved]
        ));
        assert!(!status_consistent(VolumeStatus::Reserved, &[Attached]));
    }

    #[test]
    fn flat_connection_info() {
        let mut data = Map::new();
        data.insert("target_iqn".into(), Value::String("iqn.x".into()));
        let id = Uuid::new_v4();
        let extras = ConnectionExtras {
            attachment_id: id,
            access_mode: "ro".into(),
            encrypted: false,
            cacheable: false,
            enforce_multipath: false,
        };
        let info = connection_info("iscsi", &data, &extras);
        assert_eq!(info["driver_volume_type"], "iscsi");
        assert_eq!(info["target_iqn"], "iqn.x");
        assert_eq!(info["access_mode"], "ro");
        assert_eq!(info["attachment_id"], id.to_string());
        assert_eq!(info["qos_specs"], Value::Null);
        assert_eq!(info["encrypted"], false);
        assert_eq!(info["enforce_multipath"], false);
        assert!(info.get("data").is_none(), "flat, not nested");
    }
}

/// How a reservation is decided once the volume row is locked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReserveDecision {
    /// Swap the volume to `reserved` and add the attachment.
    Reserve,
    /// Add the attachment, leave the volume as it is (same instance already holds it).
    SameInstance,
    /// Refuse, naming the current status.
    Refuse,
}

/// Cinder's reservation rule: the compare-and-swap (status allowed for the multiattach
/// flag the caller read, flag unchanged), else the same-instance override.
pub fn decide_reservation(
    status: VolumeStatus,
    multiattach: bool,
    expected_multiattach: bool,
    same_instance_present: bool,
) -> ReserveDecision {
    if multiattach == expected_multiattach
        && reserve_statuses(expected_multiattach).contains(&status)
    {
        ReserveDecision::Reserve
    } else if same_instance_present && SAME_INSTANCE_STATUSES.contains(&status) {
        ReserveDecision::SameInstance
    } else {
        ReserveDecision::Refuse
    }
}

#[cfg(test)]
mod reserve_tests {
    use super::*;
    use VolumeStatus::*;

    #[test]
    fn reservation_table() {
        use ReserveDecision as D;
        let cases = [
            // (status, multiattach, expected, same instance) -> decision
            (Available, false, false, false, D::Reserve),
            (Downloading, false, false, false, D::Reserve),
            (InUse, false, false, false, D::Refuse),
            (InUse, false, false, true, D::SameInstance),
            (Reserved, false, false, true, D::SameInstance),
            (Reserved, false, false, false, D::Refuse),
            (Attaching, false, false, true, D::Refuse),
            (InUse, true, true, false, D::Reserve),
            (Reserved, true, true, false, D::Refuse),
            (Attaching, true, true, false, D::Refuse),
            (Available, true, false, false, D::Refuse),
            (Error, false, false, true, D::Refuse),
        ];
        for (status, multiattach, expected, same, decision) in cases {
            assert_eq!(
                decide_reservation(status, multiattach, expected, same),
                decision,
                "{status} {multiattach} {expected} {same}"
            );
        }
    }
}
