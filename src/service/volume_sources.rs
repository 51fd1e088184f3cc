//! Volumes made from a snapshot or cloned from another volume: the source is resolved
//! and checked as Cinder's create flow does, and the new volume goes where its data is.

use super::Service;
use crate::backend::DataSource;
use crate::domain::ids::VolumeId;
use crate::domain::snapshot::SnapshotStatus;
use crate::domain::volume::{Volume, VolumeStatus};
use crate::domain::{DomainError, RequestContext};

/// A new volume's source, checked: its data (as the backend names it: the volume's
/// storage id), the volume it lives beside, and its size (the default and the least the
/// new volume may have).
pub(super) struct Origin {
    pub source: DataSource,
    pub volume: Volume,
    pub size: i64,
}

impl Origin {
    pub fn is_snapshot(&self) -> bool {
        matches!(self.source, DataSource::Snapshot(..))
    }

    /// Cinder's `cloned_volume_same_az`: a zone other than the source's is refused.
    pub fn check_zone(&self, zone: Option<&str>) -> Result<(), DomainError> {
        match zone {
            Some(zone) if zone != self.volume.availability_zone => Err(DomainError::ZoneOfSource {
                from_snapshot: self.is_snapshot(),
            }),
            _ => Ok(()),
        }
    }

    pub fn check_size(&self, size: i64) -> Result<(), DomainError> {
        if size < self.size {
            return Err(DomainError::SmallerThanSource {
                size,
                source_size: self.size,
                from_snapshot: self.is_snapshot(),
            });
        }
        Ok(())
    }
}

impl Service {
    /// The source named by `snapshot_id` or `source_volid` (the snapshot wins, as in
    /// Cinder's flow); `None` without either.
    pub(super) async fn resolve_origin(
        &self,
        caller: &RequestContext,
        snapshot_id: Option<&str>,
        source_volid: Option<&str>,
    ) -> Result<Option<Origin>, DomainError> {
        if let Some(snapshot_id) = snapshot_id {
            let snapshot = self.get_snapshot(caller, snapshot_id).await?;
            if snapshot.status != SnapshotStatus::Available {
                return Err(DomainError::SourceSnapshotUnavailable);
            }
            let volume = self
                .store
                .get_volume_brief(snapshot.volume_id)
                .await?
                .ok_or_else(|| DomainError::VolumeNotFound(snapshot.volume_id.to_string()))?;
            return Ok(Some(Origin {
                source: DataSource::Snapshot(snapshot.id, volume.storage_id()),
                volume,
                size: snapshot.volume_size,
            }));
        }
        let Some(source_volid) = source_volid else {
            return Ok(None);
        };
        let id = VolumeId::parse(source_volid)
            .ok_or_else(|| DomainError::VolumeNotFound(source_volid.to_owned()))?;
        let volume = self.get_volume_brief(caller, id).await?;
        if !matches!(volume.status, VolumeStatus::Available | VolumeStatus::InUse) {
            return Err(DomainError::SourceVolumeUnavailable);
        }
        Ok(Some(Origin {
            source: DataSource::Volume(volume.storage_id()),
            size: volume.size,
            volume,
        }))
    }
}
