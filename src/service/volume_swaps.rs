//! An attached volume moved through Nova, as Cinder moves one: a temporary volume on the
//! destination gets storage of its own, then Nova is asked (from the outbox of calls to
//! Nova, so a restart loses no call) to swap the server onto it; its hypervisor copies
//! the data under the running guest. Nova then calls `os-migrate_volume_completion`: the
//! volume lives on where the temporary volume's storage is (`name_id`), with the
//! attachment Nova made, and its old storage goes; or, when Nova failed, refused or never
//! took the call, the temporary volume and its storage go and the move ends in `error`.

use std::sync::Arc;

use super::Service;
use crate::backend::Backend;
use crate::domain::compute_call::{ComputeCallKind, NewComputeCall};
use crate::domain::error::MigrationError;
use crate::domain::ids::{ComputeCallId, VolumeId};
use crate::domain::quota::QuotaOwner;
use crate::domain::volume::Retype;
use crate::domain::{DomainError, Outcome};
use crate::store::MigratingRetype;

/// A swap begun: what its temporary volume needs, and whom Nova moves.
pub(super) struct SwapPrepare {
    pub volume: VolumeId,
    pub project_id: String,
    pub temporary: VolumeId,
    pub target: Arc<dyn Backend>,
    pub server: String,
    pub size: i64,
}

impl Service {
    /// The temporary volume's storage, then Nova's swap owed; undone on any failure.
    pub(super) async fn prepare_swap(&self, swap: SwapPrepare) {
        let (id, temporary) = (swap.volume, swap.temporary);
        if let Err(err) = swap.target.create_volume(temporary, swap.size as u64).await {
            tracing::warn!(volume_id = %id, error = %err, "the destination could not make the volume's new storage; the move is undone");
            self.undo_swap(id, temporary).await;
            return;
        }
        let now = self.clock.now();
        let call = NewComputeCall {
            id: ComputeCallId::generate(),
            kind: ComputeCallKind::SwapVolume,
            volume_id: id,
            new_volume_id: Some(temporary),
            project_id: swap.project_id,
            servers: vec![swap.server],
            created_at: now,
        };
        match self.store.swap_ready(id, temporary, &call, now).await {
            Ok(Outcome::Done(())) => {
                tracing::info!(volume_id = %id, %temporary, "Nova is asked to swap the server onto the moved volume")
            }
            outcome => {
                tracing::warn!(volume_id = %id, ?outcome, "the volume changed before Nova could be asked; the move is undone");
                self.undo_swap(id, temporary).await;
            }
        }
    }

    /// `os-migrate_volume_completion` for a swap of `id` onto `temporary`: made final,
    /// or undone when Nova reports an error. The id Nova keeps: the volume's own.
    pub(super) async fn complete_swap(
        &self,
        id: VolumeId,
        temporary: VolumeId,
        error: bool,
    ) -> Result<VolumeId, DomainError> {
        if error {
            tracing::warn!(volume_id = %id, "Nova could not swap the server; the move is undone");
            self.undo_swap(id, temporary).await;
            return Ok(id);
        }
        let retype = self.swap_retype(id, temporary).await?;
        let ended = match self
            .store
            .finish_swap(id, temporary, retype.as_ref(), self.clock.now())
            .await?
        {
            Outcome::Done(ended) => ended,
            Outcome::Gone => return Err(super::volume_not_found(id)),
            Outcome::Refused(refusal) => {
                return Err(MigrationError::Refused {
                    volume: id,
                    refusal,
                }
                .into())
            }
        };
        tracing::info!(volume_id = %id, "the attached volume moved");
        if let Some(refusal) = &ended.retype_refused {
            tracing::warn!(volume_id = %id, ?refusal, "the volume moved, but its retype no longer fits: it keeps its type");
        }
        match self.backend_at(ended.old_host.as_deref(), id) {
            Ok(old) => {
                if let Err(err) = old.driver.delete_volume(ended.old_storage).await {
                    tracing::warn!(volume_id = %id, error = %err, "the old copy of a moved volume stays on its backend");
                }
            }
            Err(err) => {
                tracing::warn!(volume_id = %id, error = %err, "the old copy of a moved volume stays")
            }
        }
        Ok(id)
    }

    /// The retype a swap carries: the temporary volume was made of the new type.
    async fn swap_retype(
        &self,
        id: VolumeId,
        temporary: VolumeId,
    ) -> Result<Option<MigratingRetype>, DomainError> {
        let (Some(volume), Some(target)) = (
            self.store.get_volume_brief(id).await?,
            self.store.get_volume_brief(temporary).await?,
        ) else {
            return Ok(None);
        };
        if volume.volume_type_id == target.volume_type_id {
            return Ok(None);
        }
        let Some(new_type) = self.store.get_volume_type(target.volume_type_id).await? else {
            return Ok(None);
        };
        let retype = Retype {
            volume_id: id,
            new_type_id: new_type.id,
            expected_multiattach: volume.multiattach,
            new_multiattach: new_type.is_multiattach(),
            new_single_writer: new_type.is_single_writer(),
        };
        let owner = QuotaOwner {
            project_id: volume.project_id,
            type_name: new_type.name,
            defaults: self.settings.quota_defaults.clone(),
        };
        Ok(Some(MigratingRetype { retype, owner }))
    }

    /// Undoes the swap of `id` onto `temporary`, if it is still in flight: the temporary
    /// volume's connections, storage and record go; the move ends in `error`.
    pub(super) async fn undo_swap(&self, id: VolumeId, temporary: VolumeId) {
        let undone = match self.store.undo_swap(id, temporary, self.clock.now()).await {
            Ok(Some(undone)) => undone,
            Ok(None) => return,
            Err(err) => {
                tracing::error!(volume_id = %id, error = %err, "could not undo the move");
                return;
            }
        };
        let host = undone.host.as_deref();
        self.withdraw_all(undone.storage, host, &undone.ended).await;
        match self.backend_at(host, temporary) {
            Ok(backend) => {
                if let Err(err) = backend.driver.delete_volume(undone.storage).await {
                    tracing::warn!(volume_id = %id, error = %err, "the new storage of an undone move stays on its backend");
                }
            }
            Err(err) => {
                tracing::warn!(volume_id = %id, error = %err, "the new storage of an undone move stays")
            }
        }
    }

    /// After a restart, a swap of `id` in flight: one still making its temporary
    /// volume's storage (`starting`) is undone; one waiting for Nova is Nova's (its call
    /// is in the outbox). Whether it was undone; `None` when `id` has no swap.
    pub(super) async fn end_interrupted_swap(
        &self,
        id: VolumeId,
    ) -> Result<Option<bool>, DomainError> {
        let Some(temporary) = self.store.swap_target_of(id).await? else {
            return Ok(None);
        };
        let volume = self.store.get_volume_brief(id).await?;
        if volume.is_some_and(|v| v.migration_status.as_deref() != Some("starting")) {
            return Ok(Some(false));
        }
        self.undo_swap(id, temporary).await;
        Ok(Some(true))
    }

    /// The relay gave up Nova's swap of `id` onto `temporary` (Nova refused it, or did
    /// not answer in time): the move is undone, unless Nova began it meanwhile.
    pub(super) async fn swap_given_up(&self, id: VolumeId, temporary: VolumeId) {
        let attached = self
            .store
            .get_volume(temporary)
            .await
            .ok()
            .flatten()
            .is_some_and(|t| !t.attachments.is_empty());
        if attached {
            tracing::warn!(volume_id = %id, "the swap call is given up but Nova attached the new volume; its completion decides");
            return;
        }
        self.undo_swap(id, temporary).await;
    }
}
