//! A volume moved to another backend: the move started under the volume's lock
//! (`migration_status` `starting`, the destination in `migration_host`), then made final
//! in one transaction (the volume's host and backend changed, a retype's writes with it)
//! or failed (`error`, the status it had before). The data moves between the two in
//! `service::volume_migrations`.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::SqlStore;
use crate::domain::attach;
use crate::domain::attachment::AttachStatus;
use crate::domain::attachment::Detached;
use crate::domain::compute_call::NewComputeCall;
use crate::domain::event::EventKind;
use crate::domain::ids::{ServiceId, VolumeId};
use crate::domain::migration::{self, MigrationRefusal};
use crate::domain::quota::{self, QuotaOwner};
use crate::domain::refusal::RetypeRefusal;
use crate::domain::volume::{
    LockedVolume, MigrationStatus, Retype, VolumeStatus, SOFT_DELETED_STATUS,
};
use crate::domain::{volume_rules, Outcome};

/// A retype that moves the volume, with the owner its new type's quotas count.
#[derive(Debug, Clone)]
pub struct MigratingRetype {
    pub retype: Retype,
    pub owner: QuotaOwner,
}

/// A move to start.
#[derive(Debug, Clone)]
pub struct MigrationStart {
    pub volume: VolumeId,
    pub from_host: String,
    /// The destination's volume host (`host@backend#pool`).
    pub to_host: String,
    pub lock: bool,
    pub retype: Option<MigratingRetype>,
    /// The temporary volume an attached volume is swapped onto, when Nova is configured
    /// (recorded only if the volume turns out attached).
    pub swap: Option<SwapTarget>,
    pub now: DateTime<Utc>,
}

/// The temporary volume of a swap, on the destination.
#[derive(Debug, Clone)]
pub struct SwapTarget {
    pub id: VolumeId,
    pub service: ServiceId,
    pub shared_targets: Option<bool>,
}

/// A move begun: the size to copy or create, and the server Nova swaps (`None`: the
/// data is copied here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationBegun {
    pub size: i64,
    pub swap_server: Option<String>,
}

/// A swap made final: where the volume's old storage is, to remove, and why a retype
/// that came with it was not applied, if it was not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwapEnded {
    pub old_host: Option<String>,
    pub old_storage: VolumeId,
    pub retype_refused: Option<RetypeRefusal>,
}

/// A swap undone: the temporary volume's storage to remove, and the connections of
/// attachments it still had, to end first.
#[derive(Debug, Clone)]
pub struct SwapUndone {
    pub host: Option<String>,
    pub storage: VolumeId,
    pub ended: Vec<Detached>,
}

/// A move to make final.
#[derive(Debug, Clone)]
pub struct MigrationEnd {
    pub volume: VolumeId,
    pub to_host: String,
    pub to_service: ServiceId,
    pub shared_targets: Option<bool>,
    /// The size the data was copied at.
    pub size: i64,
    pub retype: Option<MigratingRetype>,
    pub now: DateTime<Utc>,
}

/// Why a move ends otherwise than made final.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MigrationEndRefusal {
    Migration(MigrationRefusal),
    Retype(RetypeRefusal),
}

#[async_trait]
pub trait VolumeMigrationStore: Send + Sync {
    /// Starts a move (a retype's checks too): the volume's size, or why not.
    async fn begin_migration(
        &self,
        start: &MigrationStart,
    ) -> Result<Outcome<MigrationBegun, MigrationEndRefusal>, StoreError>;
    /// A swap's temporary volume has its storage: it becomes `available`, the volume
    /// `migrating`, and `call` (Nova's swap) is owed, in one transaction. `Refused`: the
    /// volume changed meanwhile (the swap is to be undone).
    async fn swap_ready(
        &self,
        volume: VolumeId,
        temporary: VolumeId,
        call: &NewComputeCall,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), MigrationRefusal>, StoreError>;
    /// Nova swapped the server: the volume lives where the temporary volume's storage is
    /// (`name_id`), with the attachments Nova made to it; the temporary record goes.
    async fn finish_swap(
        &self,
        volume: VolumeId,
        temporary: VolumeId,
        retype: Option<&MigratingRetype>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<SwapEnded, MigrationRefusal>, StoreError>;
    /// Undoes a swap: the temporary volume goes (its attachments with it) and the move
    /// ends in `error`. `None` when there was no such swap in flight.
    async fn undo_swap(
        &self,
        volume: VolumeId,
        temporary: VolumeId,
        now: DateTime<Utc>,
    ) -> Result<Option<SwapUndone>, StoreError>;
    /// The temporary volume of `volume`'s swap, if one is in flight.
    async fn swap_target_of(&self, volume: VolumeId) -> Result<Option<VolumeId>, StoreError>;
    /// `starting` becomes `migrating` (the destination holds the volume's storage).
    async fn migration_copying(
        &self,
        volume: VolumeId,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Makes the move final: the volume lives on the destination from now on.
    async fn finish_migration(
        &self,
        end: &MigrationEnd,
    ) -> Result<Outcome<(), MigrationEndRefusal>, StoreError>;
    /// Ends a move that failed: `migration_status` `error`, the status it had before.
    async fn fail_migration(&self, volume: VolumeId, now: DateTime<Utc>) -> Result<(), StoreError>;
    /// Moves in flight untouched since `before`: each volume with its destination.
    async fn migrations_in_flight(
        &self,
        before: DateTime<Utc>,
    ) -> Result<Vec<(VolumeId, Option<String>, Option<String>)>, StoreError>;
}

const RETYPE: &str =
    "update volumes set volume_type_id = $2, multiattach = $3, updated_at = $4 where id = $1";
/// How many live snapshots a volume has, and the gigabytes they hold.
const SNAPSHOT_TOTALS_OF_VOLUME: &str = "select count(*), \
     cast(coalesce(sum(volume_size), 0) as bigint) from snapshots \
     where volume_id = $1 and deleted = false";

const LIVE_SNAPSHOTS: &str =
    "select count(*) from snapshots where volume_id = $1 and deleted = false";

const BEGIN: &str = "update volumes set migration_status = 'starting', migration_host = $2, \
     previous_status = status, status = $3, updated_at = $4 where id = $1";

const COPYING: &str = "update volumes set migration_status = 'migrating', updated_at = $2 \
     where id = $1 and migration_status = 'starting' and deleted = false";

const FINISH: &str = "update volumes set host = $2, service_uuid = $3, shared_targets = $4, \
     migration_status = $7, migration_host = null, name_id = null, \
     status = coalesce(previous_status, $6), previous_status = null, \
     updated_at = $5 where id = $1";

/// The status a failed move gives back: the one before it, if the move changed it.
const FAIL: &str = "update volumes set migration_status = $6, migration_host = null, \
     status = case when status in ($3, $4) then coalesce(previous_status, $5) else status end, \
     previous_status = null, updated_at = $2 \
     where id = $1 and deleted = false and migration_status in ('starting', 'migrating', 'completing')";

/// The temporary volume of a swap (`$2` its id) as a copy of volume `$1` on the
/// destination (`$3` host, `$7` service, `$8` shared targets), `creating`, of a retype's
/// new type (`$10`, `$11` its multiattach flag) when the move is a retype's.
const INSERT_SWAP_TARGET: &str = "\
    insert into volumes (id, user_id, project_id, host, size, availability_zone, status, \
                         attach_status, migration_status, display_name, display_description, \
                         volume_type_id, encryption_key_id, bootable, multiattach, service_uuid, \
                         shared_targets, created_at, deleted) \
    select $2, user_id, project_id, $3, size, availability_zone, $4, $5, $6, display_name, \
           display_description, coalesce($10, volume_type_id), encryption_key_id, bootable, \
           coalesce($11, multiattach), $7, $8, $9, false \
      from volumes where id = $1";

/// The temporary volume has its storage (`$4` creating, `$5` its target marker).
const SWAP_TARGET_READY: &str = "update volumes set status = $2, updated_at = $3 \
     where id = $1 and deleted = false and status = $4 and migration_status = $5";

const VOLUME_PLACE: &str = "select host, name_id, service_uuid, shared_targets from volumes \
     where id = $1";

/// The volume made live where the temporary volume's storage is.
const SWAPPED: &str = "update volumes set host = $2, service_uuid = $3, shared_targets = $4, \
     name_id = $5, status = $6, attach_status = $7, migration_status = $8, \
     migration_host = null, previous_status = null, updated_at = $9 where id = $1";

/// Nova's attachments to the temporary volume become the volume's.
const MOVE_ATTACHMENTS: &str = "update volume_attachment set volume_id = $1, updated_at = $3 \
     where volume_id = $2 and deleted = false";

const DROP_SWAP_TARGET: &str = "update volumes set deleted = true, deleted_at = $2, \
     status = $3, attach_status = $4, migration_status = null, updated_at = $2 where id = $1";

const SWAP_TARGET_OF: &str = "select id from volumes where deleted = false \
     and migration_status = $1";

const IN_FLIGHT: &str = "select id, host, migration_host from volumes \
     where deleted = false and migration_status in ('starting', 'migrating', 'completing') \
       and coalesce(updated_at, created_at) < $1 order by id";

#[async_trait]
impl<D: Database> VolumeMigrationStore for SqlStore<D> {
    #[tracing::instrument(skip_all, fields(volume_id = %start.volume), err)]
    async fn begin_migration(
        &self,
        start: &MigrationStart,
    ) -> Result<Outcome<MigrationBegun, MigrationEndRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume_with_attachments(&mut tx, start.volume).await? else {
            return Ok(Outcome::Gone);
        };
        let volume = &locked.volume;
        let (snapshots,): (i64,) = tx
            .fetch_optional(Sql::new(LIVE_SNAPSHOTS).bind(start.volume))
            .await?
            .unwrap_or((0,));
        let refused = |r| Ok(Outcome::Refused(MigrationEndRefusal::Migration(r)));
        if let Err(refusal) =
            migration::may_start(volume, snapshots > 0, &start.from_host, &start.to_host)
        {
            return refused(refusal);
        }
        let swap_server = match migration::swap_server(volume, &locked.live, start.swap.is_some()) {
            Ok(server) => server,
            Err(refusal) => return refused(refusal),
        };
        if let Some(retype) = &start.retype {
            if let Err(refusal) = volume_rules::retype(volume, &retype.retype) {
                return Ok(Outcome::Refused(MigrationEndRefusal::Retype(refusal)));
            }
            if let Err(refusal) = Self::retype_fits(&mut tx, volume, retype).await? {
                return Ok(Outcome::Refused(MigrationEndRefusal::Retype(refusal)));
            }
        }
        let during = migration::status_during(volume.status, start.lock, start.retype.is_some());
        let sql = Sql::new(BEGIN)
            .bind(start.volume)
            .bind(&start.to_host)
            .bind(during)
            .bind(start.now);
        tx.execute(sql).await?;
        if let (Some(_), Some(target)) = (&swap_server, &start.swap) {
            let sql = Sql::new(INSERT_SWAP_TARGET)
                .bind(start.volume)
                .bind(target.id)
                .bind(&start.to_host)
                .bind(VolumeStatus::Creating)
                .bind(AttachStatus::Detached)
                .bind(migration::target_of(start.volume))
                .bind(target.service)
                .bind(target.shared_targets)
                .bind(start.now)
                .bind(start.retype.as_ref().map(|r| r.retype.new_type_id))
                .bind(start.retype.as_ref().map(|r| r.retype.new_multiattach));
            tx.execute(sql).await?;
        }
        tx.commit().await?;
        Ok(Outcome::Done(MigrationBegun {
            size: volume.size,
            swap_server,
        }))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %volume), err)]
    async fn swap_ready(
        &self,
        volume: VolumeId,
        temporary: VolumeId,
        call: &NewComputeCall,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), MigrationRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume(&mut tx, volume).await? else {
            return Ok(Outcome::Gone);
        };
        if locked.migration_status.as_deref() != Some("starting") {
            return Ok(Outcome::Refused(MigrationRefusal::Changed));
        }
        let ready = Sql::new(SWAP_TARGET_READY)
            .bind(temporary)
            .bind(VolumeStatus::Available)
            .bind(now)
            .bind(VolumeStatus::Creating)
            .bind(migration::target_of(volume));
        if tx.execute(ready).await? == 0 {
            return Ok(Outcome::Refused(MigrationRefusal::Changed));
        }
        tx.execute(Sql::new(COPYING).bind(volume).bind(now)).await?;
        Self::record_compute_call(&mut tx, call).await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %volume), err)]
    async fn finish_swap(
        &self,
        volume: VolumeId,
        temporary: VolumeId,
        retype: Option<&MigratingRetype>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<SwapEnded, MigrationRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume_with_attachments(&mut tx, volume).await? else {
            return Ok(Outcome::Gone);
        };
        let changed = Ok(Outcome::Refused(MigrationRefusal::Changed));
        let Some(target) = Self::lock_volume_with_attachments(&mut tx, temporary).await? else {
            return changed;
        };
        // Nova ends the server's old attachment before it calls; one left (or a new
        // one) would be a connection to the storage about to go.
        let swapping = locked.volume.migration_status.as_deref() == Some("migrating")
            && target.volume.migration_status.as_deref() == Some(&migration::target_of(volume))
            && locked.live.is_empty();
        if !swapping {
            return changed;
        }
        let place = |id| Sql::new(VOLUME_PLACE).bind(id);
        let (old_host, old_name_id, _, _): Place =
            tx.fetch_optional(place(volume)).await?.unwrap_or_default();
        let (new_host, new_name_id, new_service, new_shared): Place = tx
            .fetch_optional(place(temporary))
            .await?
            .unwrap_or_default();
        let statuses = target.live.iter().map(|a| a.attach_status);
        let state = attach::status_of(VolumeStatus::Available, false, attach::Hold::None, statuses);
        let swapped = Sql::new(SWAPPED)
            .bind(volume)
            .bind(new_host)
            .bind(new_service)
            .bind(new_shared)
            .bind(new_name_id.unwrap_or(temporary))
            .bind(state.status)
            .bind(state.attach_status)
            .bind(MigrationStatus::Success)
            .bind(now);
        tx.execute(swapped).await?;
        let moved = Sql::new(MOVE_ATTACHMENTS)
            .bind(volume)
            .bind(temporary)
            .bind(now);
        tx.execute(moved).await?;
        tx.execute(drop_swap_target(temporary, now)).await?;
        // Nova has moved the server already: a retype that no longer fits (its quota
        // used up meanwhile) leaves the volume moved under its old type.
        let retype_refused = match retype {
            Some(retype) => self
                .apply_retype(&mut tx, &locked.volume, retype, now)
                .await?
                .err(),
            None => None,
        };
        tx.commit().await?;
        Ok(Outcome::Done(SwapEnded {
            old_host,
            old_storage: old_name_id.unwrap_or(volume),
            retype_refused,
        }))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %volume), err)]
    async fn undo_swap(
        &self,
        volume: VolumeId,
        temporary: VolumeId,
        now: DateTime<Utc>,
    ) -> Result<Option<SwapUndone>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        Self::lock_volume(&mut tx, volume).await?;
        let Some(target) = Self::lock_volume_with_attachments(&mut tx, temporary).await? else {
            return Ok(None);
        };
        if target.volume.migration_status.as_deref() != Some(&migration::target_of(volume)) {
            return Ok(None);
        }
        let ended = Self::connectors_of(&mut tx, &target).await?;
        let ids: Vec<_> = target.live.iter().map(|a| a.id).collect();
        Self::remove_attachments(&mut tx, &target.volume, &ids, now).await?;
        let (host, name_id, _, _): Place = tx
            .fetch_optional(Sql::new(VOLUME_PLACE).bind(temporary))
            .await?
            .unwrap_or_default();
        tx.execute(drop_swap_target(temporary, now)).await?;
        tx.execute(fail_sql(volume, now)).await?;
        tx.commit().await?;
        Ok(Some(SwapUndone {
            host,
            storage: name_id.unwrap_or(temporary),
            ended,
        }))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %volume), err)]
    async fn swap_target_of(&self, volume: VolumeId) -> Result<Option<VolumeId>, StoreError> {
        let sql = Sql::new(SWAP_TARGET_OF).bind(migration::target_of(volume));
        let row: Option<(VolumeId,)> = self.db.fetch_optional(sql).await?;
        Ok(row.map(|(id,)| id))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %volume), err)]
    async fn migration_copying(
        &self,
        volume: VolumeId,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.db
            .execute(Sql::new(COPYING).bind(volume).bind(now))
            .await
            .map(drop)
    }

    #[tracing::instrument(skip_all, fields(volume_id = %end.volume), err)]
    async fn finish_migration(
        &self,
        end: &MigrationEnd,
    ) -> Result<Outcome<(), MigrationEndRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume_with_attachments(&mut tx, end.volume).await? else {
            return Ok(Outcome::Gone);
        };
        if let Err(refusal) = migration::may_finish(&locked.volume, locked.live.len(), end.size) {
            return Ok(Outcome::Refused(MigrationEndRefusal::Migration(refusal)));
        }
        if let Some(retype) = &end.retype {
            if let Err(refusal) = self
                .apply_retype(&mut tx, &locked.volume, retype, end.now)
                .await?
            {
                return Ok(Outcome::Refused(MigrationEndRefusal::Retype(refusal)));
            }
        }
        let sql = Sql::new(FINISH)
            .bind(end.volume)
            .bind(&end.to_host)
            .bind(end.to_service)
            .bind(end.shared_targets)
            .bind(end.now)
            .bind(VolumeStatus::Available)
            .bind(MigrationStatus::Success);
        tx.execute(sql).await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %volume), err)]
    async fn fail_migration(&self, volume: VolumeId, now: DateTime<Utc>) -> Result<(), StoreError> {
        self.db.execute(fail_sql(volume, now)).await.map(drop)
    }

    #[tracing::instrument(skip_all, err)]
    async fn migrations_in_flight(
        &self,
        before: DateTime<Utc>,
    ) -> Result<Vec<(VolumeId, Option<String>, Option<String>)>, StoreError> {
        self.db.fetch_all(Sql::new(IN_FLIGHT).bind(before)).await
    }
}

/// A volume's place: host, `name_id`, service and shared targets.
type Place = (
    Option<String>,
    Option<VolumeId>,
    Option<ServiceId>,
    Option<bool>,
);

fn fail_sql(volume: VolumeId, now: DateTime<Utc>) -> Sql {
    Sql::new(FAIL)
        .bind(volume)
        .bind(now)
        .bind(VolumeStatus::Maintenance)
        .bind(VolumeStatus::Retyping)
        .bind(VolumeStatus::Available)
        .bind(MigrationStatus::Error)
}

fn drop_swap_target(temporary: VolumeId, now: DateTime<Utc>) -> Sql {
    Sql::new(DROP_SWAP_TARGET)
        .bind(temporary)
        .bind(now)
        .bind(SOFT_DELETED_STATUS)
        .bind(AttachStatus::Detached)
}

impl<D: Database> SqlStore<D> {
    /// Whether the new type's quotas take the volume and its snapshots, and its
    /// encryption stays.
    async fn retype_fits(
        tx: &mut D::Tx,
        locked: &LockedVolume,
        retype: &MigratingRetype,
    ) -> Result<Result<(), RetypeRefusal>, StoreError> {
        let id = retype.retype.volume_id;
        let (limits, usage) = Self::locked_quota(tx, &retype.owner).await?;
        let (snapshots, snapshot_gb): (i64, i64) = tx
            .fetch_optional(Sql::new(SNAPSHOT_TOTALS_OF_VOLUME).bind(id))
            .await?
            .unwrap_or((0, 0));
        let fits = quota::check_retype(
            &limits,
            &usage,
            locked.size,
            snapshots,
            snapshot_gb,
            &retype.owner.type_name,
        );
        if let Err(over) = fits {
            return Ok(Err(RetypeRefusal::OverQuota(over)));
        }
        let (differs, new_encrypted) =
            Self::hold_retype_encryption(tx, locked.volume_type_id, retype.retype.new_type_id)
                .await?;
        if retype.retype.new_multiattach && new_encrypted {
            return Ok(Err(RetypeRefusal::EncryptedMultiattach));
        }
        if differs {
            return Ok(Err(RetypeRefusal::EncryptionChanges));
        }
        Ok(Ok(()))
    }

    /// The writes of a retype of the locked volume, in `tx`, if it still fits (the new
    /// type's quotas, the encryption): the type and the multiattach flag change, and
    /// `volume.retype` is recorded.
    pub(super) async fn apply_retype(
        &self,
        tx: &mut D::Tx,
        locked: &LockedVolume,
        retype: &MigratingRetype,
        now: DateTime<Utc>,
    ) -> Result<Result<(), RetypeRefusal>, StoreError> {
        if let Err(refusal) = Self::retype_fits(tx, locked, retype).await? {
            return Ok(Err(refusal));
        }
        let id = retype.retype.volume_id;
        let sql = Sql::new(RETYPE)
            .bind(id)
            .bind(retype.retype.new_type_id)
            .bind(retype.retype.new_multiattach)
            .bind(now);
        tx.execute(sql).await?;
        self.record_events(tx, &[EventKind::VolumeRetype], id, None, now)
            .await?;
        Ok(Ok(()))
    }
}
