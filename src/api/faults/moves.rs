//! How the errors of the actions that move a volume's data or place (revert, migration,
//! re-image) look on the wire: Cinder's statuses and texts.

use crate::api::error::ApiError;
use crate::domain::error::{MigrationError, ReimageError, RevertError};
use crate::domain::migration::MigrationRefusal;
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

pub(super) fn migration_fault(err: MigrationError) -> ApiError {
    let invalid_volume = |reason: String| ApiError::BadRequest(format!("Invalid volume: {reason}"));
    let invalid_host = |reason: String| ApiError::BadRequest(format!("Invalid host: {reason}"));
    match err {
        MigrationError::NoService(host) => {
            invalid_host(format!("No available service named {host}"))
        }
        MigrationError::DestinationHolds(host) => invalid_host(format!(
            "The destination {host} already holds storage for this volume."
        )),
        MigrationError::Backend(why) => {
            invalid_host(format!("The destination backend could not be asked: {why}"))
        }
        MigrationError::NotMidMigration(which) => {
            invalid_volume(format!("{which} volume not mid-migration."))
        }
        MigrationError::UnexpectedTarget { found, expected } => invalid_volume(format!(
            "Destination has migration_status {found}, expected {expected}."
        )),
        MigrationError::Refused { volume, refusal } => match refusal {
            MigrationRefusal::Status(status) => invalid_volume(format!(
                "Volume {volume} status must be available or in-use, but current status is: \
                 {status}."
            )),
            MigrationRefusal::Migrating => invalid_volume(format!(
                "Volume {volume} is already part of an active migration."
            )),
            MigrationRefusal::HasSnapshots => {
                invalid_volume(format!("Volume {volume} must not have snapshots."))
            }
            MigrationRefusal::SameHost => {
                invalid_host("Destination host must be different than the current host.".into())
            }
            MigrationRefusal::Attached => invalid_volume(format!(
                "Volume {volume} is attached: moving an attached volume needs Nova to swap it, \
                 and no Nova is configured ([nova]); detach it first."
            )),
            MigrationRefusal::NotOneServer => invalid_volume(format!(
                "Volume {volume} is attached other than by one server's connected attachment: \
                 Nova swaps one server onto the moved volume."
            )),
            MigrationRefusal::InGroup | MigrationRefusal::Changed => invalid_volume(format!(
                "Volume {volume} status must be available or in-use, must not be migrating, have \
                 snapshots, be replicated, be part of a group and destination host/cluster must \
                 be different than the current one"
            )),
        },
    }
}

pub(super) fn reimage_fault(err: ReimageError) -> ApiError {
    match err {
        ReimageError::SeveralServers => ApiError::Conflict(
            "Cannot re-image a volume which is attached to more than one server.".to_owned(),
        ),
        ReimageError::Status {
            volume,
            status,
            reserved_allowed,
        } => {
            let statuses = if reserved_allowed {
                "available, error or reserved"
            } else {
                "available or error"
            };
            ApiError::BadRequest(format!(
                "Invalid volume: Volume {volume} status must be {statuses}, but current status \
                 is {status}."
            ))
        }
    }
}
