//! Moving a volume to another backend (Cinder's `os-migrate_volume`, and a retype with
//! `migration_policy: on-demand`): when it may start, what the volume shows meanwhile
//! (`migration_status` `starting`, `migrating`, then `success` or `error`; the status
//! `maintenance` with `lock_volume`, `retyping` for a retype), and when the move may be
//! made final.
//!
//! An attached volume moves as Cinder moves it: a temporary volume is made on the
//! destination (`migration_status` `target:<id>`), Nova is asked to swap the server onto
//! it (its hypervisor copies the data under the running guest), and Nova's
//! `os-migrate_volume_completion` makes the volume live where the temporary one's storage
//! is (its `name_id`), the temporary record gone.

use super::attach::LiveAttachment;
use super::attachment::AttachStatus;
use super::ids::VolumeId;
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
    /// Attached, and no Nova is configured to swap it.
    Attached,
    /// Attached other than by one server's connected attachment: Nova swaps one server.
    NotOneServer,
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
    Ok(())
}

/// How a volume that may start moving moves: its data copied (`None`, nothing attached),
/// or its one server swapped onto a temporary volume by Nova (`Some(server)`; `nova`:
/// whether a Nova is configured to ask).
pub fn swap_server(
    volume: &LockedVolume,
    live: &[LiveAttachment],
    nova: bool,
) -> Result<Option<String>, MigrationRefusal> {
    let attached =
        volume.status == VolumeStatus::InUse || volume.attach_status == AttachStatus::Attached;
    if live.is_empty() && !attached {
        return Ok(None);
    }
    if !nova {
        return Err(MigrationRefusal::Attached);
    }
    match live {
        [only] if only.attach_status == AttachStatus::Attached && only.connected => only
            .instance_uuid
            .clone()
            .filter(|server| !server.is_empty())
            .map(Some)
            .ok_or(MigrationRefusal::NotOneServer),
        _ => Err(MigrationRefusal::NotOneServer),
    }
}

/// The `migration_status` of the temporary volume a swap moves `volume` onto.
pub fn target_of(volume: VolumeId) -> String {
    format!("target:{volume}")
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
