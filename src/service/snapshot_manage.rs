//! Adoption of snapshots (Cinder's snapshot `manage`/`unmanage`): a snapshot object on a
//! volume's backend taken as a snapshot of that volume (renamed `snapshot-<id>`, its data
//! kept, counted against the quota), and a snapshot let go with its data kept
//! (`unmanaged-snapshot-<id>`).

use std::collections::{BTreeMap, BTreeSet};

use super::snapshots::Removal;
use super::volume_manage::invalid_reference;
use super::Service;
use crate::backend::manage::whole_gib;
use crate::domain::error::ManageError;
use crate::domain::ids::SnapshotId;
use crate::domain::snapshot::{Snapshot, SnapshotStatus};
use crate::domain::{DomainError, RequestContext};
use crate::policy::{rules, Target};

/// What `POST /os-snapshot-manage` asks for.
#[derive(Debug, Clone, Default)]
pub struct ManageSnapshot {
    pub volume_id: String,
    /// The snapshot object's `source-name`.
    pub source_name: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub metadata: BTreeMap<String, String>,
}

/// One snapshot object as the manageable listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManageableSnapshotView {
    pub source_name: String,
    pub size_gib: u64,
    /// The snapshot it already is, when it is one.
    pub cinder_id: Option<SnapshotId>,
    /// The volume storage it belongs to (`volume-<id>`).
    pub volume_name: String,
}

impl Service {
    /// The snapshot objects of the backend at `host` (admins), each with whether it is
    /// a snapshot already.
    pub async fn manageable_snapshots(
        &self,
        caller: &RequestContext,
        host: &str,
    ) -> Result<Vec<ManageableSnapshotView>, DomainError> {
        let target = Target::caller(caller);
        self.policy
            .enforce(rules::SNAPSHOT_LIST_MANAGEABLE, caller, &target)?;
        let backend = self.backend_at_host(host)?;
        let found = backend
            .driver
            .manageable_snapshots()
            .await
            .map_err(|e| ManageError::BackendFailed(e.to_string()))?;
        let id_in = |name: &str| name.strip_prefix("snapshot-").and_then(SnapshotId::parse);
        let named: Vec<SnapshotId> = found.iter().filter_map(|o| id_in(&o.name)).collect();
        let live: BTreeSet<SnapshotId> = self
            .store
            .live_snapshot_ids(&named)
            .await?
            .into_iter()
            .collect();
        Ok(found
            .into_iter()
            .map(|object| ManageableSnapshotView {
                cinder_id: id_in(&object.name).filter(|id| live.contains(id)),
                size_gib: whole_gib(object.size_bytes),
                source_name: object.name,
                volume_name: object.volume_name,
            })
            .collect())
    }

    /// Takes a snapshot object of a volume's backend as a new snapshot of that volume
    /// (admins): checked, recorded `creating` (quota counted; an `in-use` volume is
    /// fine, as Cinder's manage forces it), renamed by the backend, then `available`
    /// (or `error` when the backend could not take it).
    pub async fn manage_snapshot(
        &self,
        caller: &RequestContext,
        request: ManageSnapshot,
    ) -> Result<Snapshot, DomainError> {
        let volume = self
            .volume_to_snapshot(caller, &request.volume_id, rules::SNAPSHOT_MANAGE)
            .await?;
        let backend = self.backend_of(&volume)?;
        let name = request.source_name.as_str();
        // A live volume's storage is never anyone's snapshot (the named volume's own
        // included): taking it would move that volume's data away from it.
        if self.volume_named(name).await?.is_some() {
            return Err(invalid_reference(
                name,
                "it is the storage of a live volume, not a snapshot.",
            ));
        }
        match backend.driver.existing_snapshot_size(volume.id, name).await {
            Ok(Some(_)) => {}
            Ok(None) => return Err(invalid_reference(name, "the backend has no such object.")),
            Err(err) => return Err(invalid_reference(name, &err.to_string())),
        }
        // Cinder forces a managed snapshot: an in-use volume is fine.
        let text = (request.name, request.description);
        let new = self.new_snapshot(caller, &volume, text, request.metadata, true)?;
        self.record_snapshot(&new, &volume).await?;
        let taken = backend
            .driver
            .manage_snapshot(volume.storage_id(), new.id, name)
            .await;
        let to = match taken {
            Ok(()) => SnapshotStatus::Available,
            Err(err) => {
                tracing::warn!(snapshot_id = %new.id, error = %err, "the backend could not manage the snapshot");
                SnapshotStatus::Error
            }
        };
        let now = self.clock.now();
        self.store
            .transition_snapshot(new.id, SnapshotStatus::Creating, to, now)
            .await?;
        self.store
            .get_snapshot(new.id)
            .await?
            .ok_or_else(|| super::snapshots::snapshot_not_found(new.id))
    }

    /// The snapshot's `os-unmanage` (admins): it leaves the service as a delete would
    /// (the same rules), its data kept as `unmanaged-snapshot-<id>`.
    pub async fn unmanage_snapshot(
        &self,
        caller: &RequestContext,
        id: &str,
    ) -> Result<(), DomainError> {
        let rule = rules::SNAPSHOT_UNMANAGE;
        self.end_snapshot(caller, id, rule, false, Removal::Unmanage)
            .await
    }
}
