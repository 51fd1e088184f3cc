//! A volume named in the URL (`/volumes/{volume_id}/...`), shared by the volume, action
//! and metadata handlers.

use serde::Deserialize;

use super::error::ApiError;
use crate::domain::ids::VolumeId;
use crate::domain::DomainError;

#[derive(Debug, Deserialize)]
pub struct VolumePath {
    pub volume_id: String,
}

/// A volume id from the URL: anything that is not a uuid cannot name a volume.
pub fn volume_id(path: &VolumePath) -> Result<VolumeId, ApiError> {
    VolumeId::parse(&path.volume_id).ok_or_else(|| volume_not_found(&path.volume_id))
}

pub fn volume_not_found(id: &str) -> ApiError {
    DomainError::VolumeNotFound(id.to_owned()).into()
}
