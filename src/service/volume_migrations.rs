//! Moving a volume to another backend of this process (Cinder's `os-migrate_volume`,
//! and a retype whose new type needs another backend, `migration_policy: on-demand`):
//! the move starts under the volume's lock and answers at once; the destination then gets
//! storage of the volume's id and its data (the backends' own read and write, between
//! any two of `file`, `tgt`, `rbd`), and the move is made final in one transaction, after
//! which the old copy goes. A failure removes the new copy and leaves
//! `migration_status` `error`; a restart does the same for a move it finds unfinished.
//! An attached volume moves through Nova (see `domain::migration`): its temporary
//! volume's storage is made on the destination, Nova's swap is owed (the outbox of calls
//! to Nova), and Nova's `os-migrate_volume_completion` makes the move final or undoes
//! it; a swap Nova refuses, or never takes, is undone too. `os-migrate_volume_completion`
//! also answers Nova after a swap of volumes no migration asked for.

use std::sync::Arc;

use super::volume_swaps::SwapPrepare;
use super::Service;
use crate::backend::{Backend, ConfiguredBackend};
use crate::domain::error::MigrationError;
use crate::domain::ids::VolumeId;
use crate::domain::migration;
use crate::domain::volume::Volume;
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::{rules, Target};
use crate::store::{
    MigratingRetype, MigrationBegun, MigrationEnd, MigrationEndRefusal, MigrationStart, SwapTarget,
};

/// What `os-migrate_volume` asks.
#[derive(Debug, Clone)]
pub struct MigrateVolume {
    pub host: String,
    pub force_host_copy: bool,
    pub lock_volume: bool,
}

impl Service {
    /// `os-migrate_volume` (admins): starts the move and answers; the data moves after.
    pub async fn migrate_volume(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        request: MigrateVolume,
    ) -> Result<(), DomainError> {
        let volume = self.get_volume(caller, id).await?;
        self.policy
            .enforce(rules::MIGRATE, caller, &Target::project(&volume.project_id))?;
        let target = self
            .backends
            .for_host(&request.host)
            .ok_or_else(|| MigrationError::NoService(request.host.clone()))?;
        // Data is always copied through the backends (`force_host_copy` asks no more).
        let _ = request.force_host_copy;
        self.start_migration(volume, target, request.lock_volume, None)
            .await
    }

    /// Starts moving `volume` to `target` (with a retype's writes at the end) and spawns
    /// the copy.
    pub(super) async fn start_migration(
        &self,
        volume: Volume,
        target: &ConfiguredBackend,
        lock: bool,
        retype: Option<MigratingRetype>,
    ) -> Result<(), DomainError> {
        let id = volume.id;
        let source = self.backend_of(&volume)?;
        let to_host = target.volume_host();
        if source.host != target.host
            && target
                .driver
                .volume_exists(id)
                .await
                .map_err(|e| MigrationError::Backend(e.to_string()))?
        {
            return Err(MigrationError::DestinationHolds(to_host).into());
        }
        // An attached volume is swapped by Nova onto a temporary volume, when there is a
        // Nova to ask.
        let swap = self.settings.nova.as_ref().map(|_| SwapTarget {
            id: VolumeId::generate(),
            service: target.service_uuid,
            shared_targets: target.driver.capabilities().shared_targets,
        });
        let start = MigrationStart {
            volume: id,
            from_host: volume.host.clone().unwrap_or_default(),
            to_host: to_host.clone(),
            lock,
            retype: retype.clone(),
            swap: swap.clone(),
            now: self.clock.now(),
        };
        let begun = match self.store.begin_migration(&start).await? {
            Outcome::Done(begun) => begun,
            Outcome::Gone => return Err(super::volume_not_found(id)),
            Outcome::Refused(MigrationEndRefusal::Migration(refusal)) => {
                return Err(MigrationError::Refused {
                    volume: id,
                    refusal,
                }
                .into())
            }
            Outcome::Refused(MigrationEndRefusal::Retype(refusal)) => {
                return Err(super::volume_actions::retype_refused(refusal))
            }
        };
        let MigrationBegun { size, swap_server } = begun;
        if let (Some(server), Some(swap)) = (swap_server, swap) {
            let prepare = SwapPrepare {
                volume: id,
                project_id: volume.project_id.clone(),
                temporary: swap.id,
                target: target.driver.clone(),
                server,
                size,
            };
            let service = self.clone();
            crate::origin::spawn(async move { service.prepare_swap(prepare).await });
            return Ok(());
        }
        let copy = Copy {
            volume: id,
            source_storage: volume.storage_id(),
            source: source.driver.clone(),
            target: target.driver.clone(),
            end: MigrationEnd {
                volume: id,
                to_host,
                to_service: target.service_uuid,
                shared_targets: target.driver.capabilities().shared_targets,
                size,
                retype,
                now: self.clock.now(),
            },
        };
        let service = self.clone();
        crate::origin::spawn(async move { service.copy_and_finish(copy).await });
        Ok(())
    }

    /// The data to the destination, then the move made final (or undone).
    async fn copy_and_finish(&self, mut copy: Copy) {
        let id = copy.volume;
        let copied = self.copy_data(&copy).await;
        let finished = match copied {
            Ok(()) => {
                copy.end.now = self.clock.now();
                match self.store.finish_migration(&copy.end).await {
                    Ok(Outcome::Done(())) => Ok(()),
                    Ok(Outcome::Gone) => Err("the volume was deleted while it moved".to_owned()),
                    Ok(Outcome::Refused(refusal)) => Err(format!(
                        "the volume changed while it moved ({refusal:?}); the move is undone"
                    )),
                    Err(err) => Err(err.to_string()),
                }
            }
            Err(why) => Err(why),
        };
        match finished {
            Ok(()) => {
                tracing::info!(volume_id = %id, host = %copy.end.to_host, "volume moved");
                if let Err(err) = copy.source.delete_volume(copy.source_storage).await {
                    tracing::warn!(volume_id = %id, error = %err, "the old copy of a moved volume stays on its backend");
                }
            }
            Err(why) => {
                tracing::warn!(volume_id = %id, error = %why, "moving the volume failed");
                if let Err(err) = copy.target.delete_volume(id).await {
                    tracing::warn!(volume_id = %id, error = %err, "the new copy of a failed move stays on its backend");
                }
                if let Err(err) = self.store.fail_migration(id, self.clock.now()).await {
                    tracing::error!(volume_id = %id, error = %err, "could not record the failed move");
                }
            }
        }
    }

    async fn copy_data(&self, copy: &Copy) -> Result<(), String> {
        let id = copy.volume;
        copy.target
            .create_volume(id, copy.end.size as u64)
            .await
            .map_err(|e| e.to_string())?;
        self.store
            .migration_copying(id, self.clock.now())
            .await
            .map_err(|e| e.to_string())?;
        let (reader, writer) = (copy.source.clone(), copy.target.clone());
        let from = copy.source_storage;
        crate::backend::data::relay(
            move |sink| async move { reader.read_data(from, sink).await },
            move |data| async move { writer.write_data(id, data).await },
        )
        .await
        .map(drop)
        .map_err(|e| e.to_string())
    }

    /// After a restart: moves this process started and no longer runs end as failed,
    /// their new copies removed. How many.
    pub(super) async fn end_interrupted_migrations(
        &self,
        before: chrono::DateTime<chrono::Utc>,
    ) -> Result<usize, DomainError> {
        let mut ended = 0;
        for (id, host, to) in self.store.migrations_in_flight(before).await? {
            let ours = |host: &Option<String>| {
                host.as_deref()
                    .and_then(|h| self.backends.for_host(h))
                    .map(|b| b.driver.clone())
            };
            let Some(_) = ours(&host) else {
                continue; // another process's volume
            };
            // An attached volume's move: undone if its new storage was in the making,
            // else Nova's to finish.
            if let Some(undone) = self.end_interrupted_swap(id).await? {
                ended += usize::from(undone);
                continue;
            }
            if let (Some(target), true) = (ours(&to), to != host) {
                if let Err(err) = target.delete_volume(id).await {
                    tracing::warn!(volume_id = %id, error = %err, "the new copy of an interrupted move stays");
                }
            }
            self.store.fail_migration(id, self.clock.now()).await?;
            tracing::warn!(volume_id = %id, "a move was interrupted by a restart; it is undone");
            ended += 1;
        }
        Ok(ended)
    }

    /// `os-migrate_volume_completion` (admins; Nova calls it after swapping a server from
    /// `id` to `new_volume`, `error` when it failed): a migration's swap is made final or
    /// undone (`volume_swaps`), and the answer is the volume's own id; for a swap that is
    /// no migration (neither volume moves), Cinder's answer is the new volume, whose
    /// attachments Nova made.
    pub async fn complete_volume_migration(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        new_volume: &str,
        error: bool,
    ) -> Result<VolumeId, DomainError> {
        let volume = self.get_volume(caller, id).await?;
        self.policy.enforce(
            rules::MIGRATE_COMPLETE,
            caller,
            &Target::project(&volume.project_id),
        )?;
        let new_id = VolumeId::parse(new_volume)
            .ok_or_else(|| DomainError::VolumeNotFound(new_volume.to_owned()))?;
        let new = self.get_volume(caller, new_id).await?;
        let moving = |v: &Volume| migration::is_migrating(v.migration_status.as_deref());
        let expected = migration::target_of(volume.id);
        match (moving(&volume), moving(&new)) {
            (false, false) => Ok(new.id),
            (false, true) => Err(MigrationError::NotMidMigration("Source").into()),
            (true, false) => Err(MigrationError::NotMidMigration("Destination").into()),
            (true, true) if new.migration_status.as_deref() == Some(&expected) => {
                self.complete_swap(volume.id, new.id, error).await
            }
            (true, true) => Err(MigrationError::UnexpectedTarget {
                found: new.migration_status.unwrap_or_default(),
                expected,
            }
            .into()),
        }
    }
}

/// A move's data copy: the volume, both backends, and how it ends. The copy on the
/// destination is named after the volume's own id.
struct Copy {
    volume: VolumeId,
    /// What the source backend names the volume by (`Volume::storage_id`).
    source_storage: VolumeId,
    source: Arc<dyn Backend>,
    target: Arc<dyn Backend>,
    end: MigrationEnd,
}
