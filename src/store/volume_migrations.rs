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
use crate::domain::event::EventKind;
use crate::domain::ids::{ServiceId, VolumeId};
use crate::domain::migration::{self, MigrationRefusal};
use crate::domain::quota::{self, QuotaOwner};
use crate::domain::refusal::RetypeRefusal;
use crate::domain::volume::{LockedVolume, MigrationStatus, Retype, VolumeStatus};
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
    pub now: DateTime<Utc>,
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
    ) -> Result<Outcome<i64, MigrationEndRefusal>, StoreError>;
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
     migration_status = $7, migration_host = null, \
     status = coalesce(previous_status, $6), previous_status = null, \
     updated_at = $5 where id = $1";

/// The status a failed move gives back: the one before it, if the move changed it.
const FAIL: &str = "update volumes set migration_status = $6, migration_host = null, \
     status = case when status in ($3, $4) then coalesce(previous_status, $5) else status end, \
     previous_status = null, updated_at = $2 \
     where id = $1 and deleted = false and migration_status in ('starting', 'migrating', 'completing')";

const IN_FLIGHT: &str = "select id, host, migration_host from volumes \
     where deleted = false and migration_status in ('starting', 'migrating', 'completing') \
       and coalesce(updated_at, created_at) < $1 order by id";

#[async_trait]
impl<D: Database> VolumeMigrationStore for SqlStore<D> {
    #[tracing::instrument(skip_all, fields(volume_id = %start.volume), err)]
    async fn begin_migration(
        &self,
        start: &MigrationStart,
    ) -> Result<Outcome<i64, MigrationEndRefusal>, StoreError> {
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
        if !locked.live.is_empty() {
            return refused(MigrationRefusal::Attached);
        }
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
        tx.commit().await?;
        Ok(Outcome::Done(volume.size))
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
        self.db
            .execute(
                Sql::new(FAIL)
                    .bind(volume)
                    .bind(now)
                    .bind(VolumeStatus::Maintenance)
                    .bind(VolumeStatus::Retyping)
                    .bind(VolumeStatus::Available)
                    .bind(MigrationStatus::Error),
            )
            .await
            .map(drop)
    }

    #[tracing::instrument(skip_all, err)]
    async fn migrations_in_flight(
        &self,
        before: DateTime<Utc>,
    ) -> Result<Vec<(VolumeId, Option<String>, Option<String>)>, StoreError> {
        self.db.fetch_all(Sql::new(IN_FLIGHT).bind(before)).await
    }
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
