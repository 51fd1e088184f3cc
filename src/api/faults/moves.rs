//! How the errors of the actions that move a volume's data or place (revert, migration,
//! re-image) look on the wire: Cinder's statuses and texts.

use crate::api::error::ApiError;
use crate::domain::error::RevertError;
use crate::domain::revert::RevertRefusal;

pub(super) fn revert_fault(err: RevertError) -> ApiError {
    let not_latest = |snapshot: &dyn std::fmt::Display, volume: &dyn std::fmt::Display| {
        ApiError::BadRequest(format!(
            "Specified snapshot {snapshot} is None or not the latest one of volume {volume}."
        ))
    };
    let cannot = |volume: &dyn std::fmt::Display, snapshot: &dyn std::fmt::Display| {
        format!("Can't revert volume {volume} to its latest snapshot {snapshot}.")
    };
    match err {
        RevertError::NoSnapshots(volume) => {
            ApiError::BadRequest(format!("Volume {volume} doesn't have any snapshots."))
        }
        RevertError::NotLatest { snapshot, volume } => not_latest(&snapshot, &volume),
        RevertError::SizeDiffers { snapshot, volume } => ApiError::BadRequest(format!(
            "{} The volume size must be equal to the snapshot size.",
            cannot(&volume, &snapshot)
        )),
        RevertError::Refused {
            refusal,
            snapshot,
            volume,
        } => match refusal {
            RevertRefusal::VolumeStatus(_) => ApiError::Conflict(format!(
                "Invalid volume: {} Volume's status must be 'available'.",
                cannot(&volume, &snapshot)
            )),
            RevertRefusal::SnapshotStatus(_) => ApiError::Conflict(format!(
                "Invalid snapshot: {} Snapshot's status must be 'available'.",
                cannot(&volume, &snapshot)
            )),
            RevertRefusal::NotLatest => not_latest(&snapshot, &volume),
        },
    }
}
