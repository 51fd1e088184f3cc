//! The status aggregator: a volume's `(status, attach_status)` follows from its live
//! attachments, by one pure function, at every attachment event and in the consistency
//! checker.

use super::super::attachment::AttachStatus;
use super::super::volume::{LockedVolume, VolumeState, VolumeStatus};

/// A state the volume holds by itself, set by the legacy volume actions rather than by
/// an attachment: `os-reserve` (the volume is `attaching` with no attachment attaching)
/// and `os-begin_detaching` (the volume is `detaching`; attachments are never).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    None,
    Attaching,
    Detaching,
}

impl Hold {
    /// The hold a volume in `status` is under, given its live attachments before the
    /// event. A detach releases any hold (Cinder recomputes the volume from what remains),
    /// so detaches pass `Hold::None` instead.
    pub fn of(status: VolumeStatus, live: impl IntoIterator<Item = AttachStatus>) -> Self {
        match status {
            VolumeStatus::Detaching => Hold::Detaching,
            VolumeStatus::Attaching if !live.into_iter().any(|s| s == AttachStatus::Attaching) => {
                Hold::Attaching
            }
            _ => Hold::None,
        }
    }
}

/// Which attachment statuses are present among the live ones that count (error
/// attachments do not: Cinder ignores them when it recomputes a volume).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Present {
    attached: bool,
    attaching: bool,
    reserved: bool,
}

impl Present {
    fn of(live: impl IntoIterator<Item = AttachStatus>) -> Self {
        let mut present = Present::default();
        for status in live {
            match status {
                AttachStatus::Attached => present.attached = true,
                AttachStatus::Attaching => present.attaching = true,
                AttachStatus::Reserved => present.reserved = true,
                _ => {}
            }
        }
        present
    }

    /// The volume's `attach_status`: the most advanced attachment's.
    fn attach_status(self) -> AttachStatus {
        if self.attached {
            AttachStatus::Attached
        } else if self.attaching {
            AttachStatus::Attaching
        } else if self.reserved {
            AttachStatus::Reserved
        } else {
            AttachStatus::Detached
        }
    }
}

/// The volume's status from its live attachments: `in-use` if any is attached (even
/// while others attach), else `attaching` if any is attaching, else `reserved` if any is
/// reserved, else `available`. A legacy hold comes first (`detaching` while something is
/// still attached, `attaching` from `os-reserve`). A migrating or uploading volume with
/// nothing left keeps its status, as Cinder's `volume_detached` does.
pub fn status_of(
    status: VolumeStatus,
    migrating: bool,
    hold: Hold,
    live: impl IntoIterator<Item = AttachStatus>,
) -> VolumeState {
    let present = Present::of(live);
    let attach_status = present.attach_status();
    let status = match hold {
        Hold::Detaching if present.attached => VolumeStatus::Detaching,
        Hold::Attaching => VolumeStatus::Attaching,
        _ if present.attached => VolumeStatus::InUse,
        _ if present.attaching => VolumeStatus::Attaching,
        _ if present.reserved => VolumeStatus::Reserved,
        _ if migrating || status == VolumeStatus::Uploading => status,
        _ => VolumeStatus::Available,
    };
    VolumeState {
        status,
        attach_status,
    }
}

/// `status_of` for a locked volume.
pub fn aggregate(
    volume: &LockedVolume,
    hold: Hold,
    live: impl IntoIterator<Item = AttachStatus>,
) -> VolumeState {
    status_of(volume.status, volume.migrating(), hold, live)
}

/// The statuses the aggregator owns: any other (creating, extending, error, ...) is
/// set by another operation and is not the attach machine's to judge.
pub const AGGREGATED_STATUSES: &[VolumeStatus] = &[
    VolumeStatus::Available,
    VolumeStatus::Reserved,
    VolumeStatus::Attaching,
    VolumeStatus::InUse,
    VolumeStatus::Detaching,
];

/// Whether a volume status can stand with these live attachments: what the aggregator
/// makes of them (the invariant every write path keeps; the consistency checker's test).
pub fn status_consistent(status: VolumeStatus, attachments: &[AttachStatus]) -> bool {
    if !AGGREGATED_STATUSES.contains(&status) {
        return true;
    }
    let hold = Hold::of(status, attachments.iter().copied());
    status_of(status, false, hold, attachments.iter().copied()).status == status
}
