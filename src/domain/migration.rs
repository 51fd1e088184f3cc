//! Moving a volume to another backend (Cinder's `os-migrate_volume`, and a retype with
//! `migration_policy: on-demand`): when it may start, what the volume shows meanwhile
//! (`migration_status` `starting`, `migrating`, then `success` or `error`; the status
//! `maintenance` with `lock_volume`, `retyping` for a retype), and when the move may be
//! made final.

use super::attachment::AttachStatus;
use super::volume::{LockedVolume, VolumeStatus};

/// Why a migration does not start, or is not made final.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MigrationRefusal {
    /// Not `available` or `in-use`.
    Status(VolumeStatus),
    /// Already migrating.
    Migrating,
    HasSnapshots,
    /// In a group (Cinder's conditional update refuses it, with its long reason).
    InGroup,
    /// The destination is the volume's own backend.
    SameHost,
    /// Attached: moving an attached volume needs Nova to swap it, which is not built.
    Attached,
    /// At the end: the volume changed meanwhile (attached, grown, reset).
    Changed,
}

/// Migration states in which a volume is not being moved.
pub fn is_migrating(migration_status: Option<&str>) -> bool {
    !matches!(
        migration_status,
        None | Some("" | "deleting" | "error" | "success")
    )
}

/// Whether `volume`, on backend `from_host`, may start moving to `to_host`.
pub fn may_start(
    volume: &LockedVolume,
    has_snapshots: bool,
    from_host: &str,
    to_host: &str,
) -> Result<(), MigrationRefusal> {
    if !matches!(volume.status, VolumeStatus::Available | VolumeStatus::InUse) {
        return Err(MigrationRefusal::Status(volume.status));
    }
    if is_migrating(volume.migration_status.as_deref()) {
        return Err(MigrationRefusal::Migrating);
    }
    if has_snapshots {
        return Err(MigrationRefusal::HasSnapshots);
    }
    if volume.in_group {
        return Err(MigrationRefusal::InGroup);
    }
    let backend = |host: &str| host.split('#').next().unwrap_or(host).to_owned();
    if backend(from_host) == backend(to_host) {
        return Err(MigrationRefusal::SameHost);
    }
    if volume.status == VolumeStatus::InUse || volume.attach_status == AttachStatus::Attached {
        return Err(MigrationRefusal::Attached);
    }
    Ok(())
}

/// The status a volume shows while it moves: `retyping` for a retype, `maintenance`
/// when the admin locked it (`lock_volume`), else its own.
pub fn status_during(status: VolumeStatus, lock: bool, retype: bool) -> VolumeStatus {
    if retype {
        VolumeStatus::Retyping
    } else if lock && status == VolumeStatus::Available {
        VolumeStatus::Maintenance
    } else {
        status
    }
}

/// Whether the move may be made final: still `migrating`, no attachment taken meanwhile
/// (its writes would be on the old copy), the size it was copied at.
pub fn may_finish(
    volume: &LockedVolume,
    live_attachments: usize,
    copied_size: i64,
) -> Result<(), MigrationRefusal> {
    let still = volume.migration_status.as_deref() == Some("migrating")
        && live_attachments == 0
        && volume.size == copied_size
        && matches!(
            volume.status,
            VolumeStatus::Available | VolumeStatus::Maintenance | VolumeStatus::Retyping
        );
    still.then_some(()).ok_or(MigrationRefusal::Changed)
}

#[cfg(test)]
mod tests;
