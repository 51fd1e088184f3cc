//! Reverting a volume to its latest snapshot (3.40, Cinder's `revert`): the snapshot must
//! be the volume's newest and of its size, the volume `available` (it becomes
//! `reverting`) and the snapshot `available` (it becomes `restoring`); both go back to
//! `available` when the backend is done, or the volume to `error` when it failed.

use super::snapshot::SnapshotStatus;
use super::volume::VolumeStatus;

/// Why a revert does not start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RevertRefusal {
    /// The volume is not `available` (Cinder's `InvalidVolume`, a 409).
    VolumeStatus(VolumeStatus),
    /// The snapshot is not `available` (Cinder's `InvalidSnapshot`, a 409).
    SnapshotStatus(SnapshotStatus),
    /// Another snapshot became the latest meanwhile.
    NotLatest,
}

/// Whether a volume and its latest snapshot, as locked, may start a revert.
pub fn may_start(volume: VolumeStatus, snapshot: SnapshotStatus) -> Result<(), RevertRefusal> {
    if volume != VolumeStatus::Available {
        return Err(RevertRefusal::VolumeStatus(volume));
    }
    if snapshot != SnapshotStatus::Available {
        return Err(RevertRefusal::SnapshotStatus(snapshot));
    }
    Ok(())
}

/// Where the volume goes when the backend's revert ended.
pub fn volume_after(succeeded: bool) -> VolumeStatus {
    if succeeded {
        VolumeStatus::Available
    } else {
        VolumeStatus::Error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_available_volume_and_snapshot_start_a_revert() {
        use SnapshotStatus as S;
        use VolumeStatus as V;
        let table = [
            (V::Available, S::Available, Ok(())),
            (
                V::InUse,
                S::Available,
                Err(RevertRefusal::VolumeStatus(V::InUse)),
            ),
            (
                V::Reverting,
                S::Restoring,
                Err(RevertRefusal::VolumeStatus(V::Reverting)),
            ),
            (
                V::Available,
                S::Creating,
                Err(RevertRefusal::SnapshotStatus(S::Creating)),
            ),
            (
                V::Available,
                S::Restoring,
                Err(RevertRefusal::SnapshotStatus(S::Restoring)),
            ),
        ];
        for (volume, snapshot, expected) in table {
            assert_eq!(may_start(volume, snapshot), expected, "{volume} {snapshot}");
        }
        assert_eq!(volume_after(true), V::Available);
        assert_eq!(volume_after(false), V::Error);
    }
}
