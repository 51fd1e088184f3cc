//! `revert` (3.40): a volume's data put back to what its latest snapshot holds, as
//! Cinder's `revert_to_snapshot`.

use super::Service;
use crate::domain::error::RevertError;
use crate::domain::ids::{SnapshotId, VolumeId};
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::rules;

impl Service {
    /// Checks the request as Cinder's API does (the snapshot named is the volume's latest,
    /// of its size), moves the volume to `reverting` and the snapshot to `restoring`, has
    /// the backend put the snapshot's data back, and ends with both `available` (the
    /// volume `error` if the backend failed). The work runs to its end even if the
    /// caller goes away.
    pub async fn revert_volume(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        snapshot_id: Option<&str>,
    ) -> Result<(), DomainError> {
        let volume = self.volume_under_rule(caller, id, rules::REVERT).await?;
        let latest = self
            .store
            .latest_snapshot(id)
            .await?
            .ok_or(RevertError::NoSnapshots(id))?;
        let named = snapshot_id.and_then(SnapshotId::parse);
        if named != Some(latest.id) {
            return Err(RevertError::NotLatest {
                snapshot: snapshot_id.unwrap_or("None").to_owned(),
                volume: id,
            }
            .into());
        }
        if volume.size != latest.volume_size {
            return Err(RevertError::SizeDiffers {
                snapshot: latest.id,
                volume: id,
            }
            .into());
        }
        let now = self.clock.now();
        match self.store.begin_revert(id, latest.id, now).await? {
            Outcome::Done(()) => {}
            Outcome::Gone => return Err(super::volume_not_found(id)),
            Outcome::Refused(refusal) => {
                return Err(RevertError::Refused {
                    refusal,
                    snapshot: latest.id,
                    volume: id,
                }
                .into())
            }
        }
        let backend = self.backend_of(&volume)?.driver.clone();
        let service = self.clone();
        let snapshot = latest.id;
        let storage = volume.storage_id();
        crate::origin::spawn(async move {
            let reverted = backend.revert_to_snapshot(storage, snapshot).await;
            if let Err(err) = &reverted {
                tracing::warn!(volume_id = %id, snapshot_id = %snapshot, error = %err, "reverting the volume to its snapshot failed");
            }
            let now = service.clock.now();
            service
                .store
                .finish_revert(id, snapshot, reverted.is_ok(), now)
                .await
        })
        .await
        .map_err(|e| DomainError::Interrupted {
            what: "volume revert",
            detail: e.to_string(),
        })??;
        Ok(())
    }
}
