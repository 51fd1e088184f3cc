//! The conditions of snapshot writes: taking one of a volume in a given status,
//! deleting one, a driver's status report, and deleting a volume that has snapshots.

use super::refusal::{
    SnapshotCreateRefusal, SnapshotDeleteRefusal, SnapshotStatusRefusal, VolumeDeleteRefusal,
};
use super::snapshot::{snapshot_statuses, SnapshotStatus};
use super::volume::VolumeStatus;

/// Whether a snapshot of a volume in `status` may be taken now.
pub fn may_take(status: VolumeStatus, in_use_allowed: bool) -> Result<(), SnapshotCreateRefusal> {
    if snapshot_statuses(in_use_allowed).contains(&status) {
        Ok(())
    } else {
        Err(SnapshotCreateRefusal::VolumeStatus(status))
    }
}

/// The statuses a snapshot may be deleted in (without `os-force_delete`).
pub const DELETABLE: [SnapshotStatus; 2] = [SnapshotStatus::Available, SnapshotStatus::Error];

/// Cinder's delete rule: `available` or `error`; an admin's `os-force_delete` deletes in
/// any status (a snapshot stuck in `creating` or `deleting` included).
pub fn may_delete(status: SnapshotStatus, force: bool) -> Result<(), SnapshotDeleteRefusal> {
    if force || DELETABLE.contains(&status) {
        Ok(())
    } else {
        Err(SnapshotDeleteRefusal::Status(status))
    }
}

/// `os-update_snapshot_status` (a volume driver reporting on a snapshot it takes, e.g.
/// Nova's assisted snapshots): from `creating` to `creating`, `available` or `error`, from
/// `deleting` to `deleting` or `error_deleting`.
pub fn may_update_status(
    current: SnapshotStatus,
    requested: SnapshotStatus,
) -> Result<(), SnapshotStatusRefusal> {
    use SnapshotStatus as S;
    let allowed: &[SnapshotStatus] = match current {
        S::Creating => &[S::Creating, S::Available, S::Error],
        S::Deleting => &[S::Deleting, S::ErrorDeleting],
        _ => return Err(SnapshotStatusRefusal::Status(current)),
    };
    if allowed.contains(&requested) {
        Ok(())
    } else {
        Err(SnapshotStatusRefusal::Change { current, requested })
    }
}

/// A volume with live snapshots is deleted only with `cascade`, and then only when each
/// snapshot may be deleted.
pub fn may_delete_volume_with(
    snapshots: &[SnapshotStatus],
    cascade: bool,
) -> Result<(), VolumeDeleteRefusal> {
    if snapshots.is_empty() {
        return Ok(());
    }
    if !cascade || snapshots.iter().any(|s| !DELETABLE.contains(s)) {
        return Err(VolumeDeleteRefusal::Undeletable);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_of_in_use_volumes_need_force_or_3_66() {
        assert_eq!(may_take(VolumeStatus::Available, false), Ok(()));
        assert_eq!(
            may_take(VolumeStatus::InUse, false),
            Err(SnapshotCreateRefusal::VolumeStatus(VolumeStatus::InUse))
        );
        assert_eq!(may_take(VolumeStatus::InUse, true), Ok(()));
        for status in [
            VolumeStatus::Reserved,
            VolumeStatus::Creating,
            VolumeStatus::Error,
        ] {
            assert!(may_take(status, true).is_err(), "{status}");
        }
    }

    #[test]
    fn deletes_follow_cinders_statuses() {
        for status in SnapshotStatus::ALL {
            let allowed = matches!(status, SnapshotStatus::Available | SnapshotStatus::Error);
            assert_eq!(may_delete(*status, false).is_ok(), allowed, "{status}");
            assert!(may_delete(*status, true).is_ok());
        }
    }

    #[test]
    fn volumes_with_snapshots_need_cascade() {
        let available = [SnapshotStatus::Available];
        assert_eq!(may_delete_volume_with(&[], false), Ok(()));
        assert_eq!(
            may_delete_volume_with(&available, false),
            Err(VolumeDeleteRefusal::Undeletable)
        );
        assert_eq!(may_delete_volume_with(&available, true), Ok(()));
        assert_eq!(
            may_delete_volume_with(&[SnapshotStatus::Creating], true),
            Err(VolumeDeleteRefusal::Undeletable)
        );
    }
}
