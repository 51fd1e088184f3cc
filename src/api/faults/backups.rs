//! How backup and adoption (`manage`) errors look on the wire: Cinder's statuses and
//! texts.

use crate::api::error::ApiError;
use crate::domain::error::{BackupError, ManageError};

pub(super) fn fault(err: BackupError) -> ApiError {
    use BackupError as E;
    match err {
        E::NotFound(id) => ApiError::NotFound(format!("Backup {id} could not be found.")),
        E::Invalid(reason) => ApiError::BadRequest(format!("Invalid backup: {reason}")),
        E::InvalidVolume(reason) => ApiError::BadRequest(format!("Invalid volume: {reason}")),
        E::InvalidSnapshot(reason) => ApiError::BadRequest(format!("Invalid snapshot: {reason}")),
        E::InvalidInput(reason) => {
            ApiError::BadRequest(format!("Invalid input received: {reason}"))
        }
        E::InvalidParameter(text) => ApiError::BadRequest(text),
        E::NoService => {
            ApiError::ServiceUnavailable("Service cinder-backup could not be found.".to_owned())
        }
    }
}

pub(super) fn manage_fault(err: ManageError) -> ApiError {
    match err {
        ManageError::InvalidInput(reason) => {
            ApiError::BadRequest(format!("Invalid input received: {reason}"))
        }
        ManageError::InvalidVolume(reason) => {
            ApiError::BadRequest(format!("Invalid volume: {reason}"))
        }
        ManageError::InvalidVolumeType(reason) => {
            ApiError::BadRequest(format!("Invalid volume type: {reason}"))
        }
        ManageError::BackendFailed(text) => ApiError::Failed(text),
    }
}
