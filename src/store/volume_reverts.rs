//! A volume reverted to its latest snapshot: both rows locked and moved together
//! (`reverting` and `restoring`), then back when the backend is done.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::SqlStore;
use crate::domain::event::EventKind;
use crate::domain::ids::{SnapshotId, VolumeId};
use crate::domain::revert::{self, RevertRefusal};
use crate::domain::snapshot::SnapshotStatus;
use crate::domain::volume::VolumeStatus;
use crate::domain::Outcome;

/// A volume's newest live snapshot: its id and the size it was taken at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatestSnapshot {
    pub id: SnapshotId,
    pub volume_size: i64,
}

#[async_trait]
pub trait VolumeRevertStore: Send + Sync {
    /// The newest live snapshot of `volume` (Cinder's `get_latest_snapshot`).
    async fn latest_snapshot(&self, volume: VolumeId)
        -> Result<Option<LatestSnapshot>, StoreError>;
    /// Starts a revert of `volume` to `snapshot`, still its latest: the volume becomes
    /// `reverting` and the snapshot `restoring`, both or neither.
    async fn begin_revert(
        &self,
        volume: VolumeId,
        snapshot: SnapshotId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), RevertRefusal>, StoreError>;
    /// Ends a revert: the snapshot `available` again, the volume `available` (or `error`
    /// when the backend failed).
    async fn finish_revert(
        &self,
        volume: VolumeId,
        snapshot: SnapshotId,
        succeeded: bool,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
}

const LATEST: &str = "select id, volume_size from snapshots \
     where volume_id = $1 and deleted = false order by created_at desc, id desc limit 1";

const LOCK_SNAPSHOT: &str = "select status from snapshots where id = $1 and deleted = false";

const SET_VOLUME: &str = "update volumes set status = $2, updated_at = $3 where id = $1";

const SET_SNAPSHOT: &str = "update snapshots set status = $2, updated_at = $3 where id = $1";

/// The snapshot back from `restoring` (unless an admin reset it meanwhile).
const RESTORED: &str = "update snapshots set status = $2, updated_at = $3 \
     where id = $1 and status = 'restoring' and deleted = false";

#[async_trait]
impl<D: Database> VolumeRevertStore for SqlStore<D> {
    #[tracing::instrument(skip_all, err)]
    async fn latest_snapshot(
        &self,
        volume: VolumeId,
    ) -> Result<Option<LatestSnapshot>, StoreError> {
        let found: Option<(SnapshotId, i64)> = self
            .db
            .fetch_optional(Sql::new(LATEST).bind(volume))
            .await?;
        Ok(found.map(|(id, volume_size)| LatestSnapshot { id, volume_size }))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %volume), err)]
    async fn begin_revert(
        &self,
        volume: VolumeId,
        snapshot: SnapshotId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), RevertRefusal>, StoreError> {
        let (mut tx, locked) = match self.write_volume_if(volume, |_| Ok(())).await? {
            Ok(begun) => begun,
            Err(answer) => return Ok(answer),
        };
        let lock = Sql::locking(LOCK_SNAPSHOT, D::FOR_UPDATE).bind(snapshot);
        let Some((status,)): Option<(SnapshotStatus,)> = tx.fetch_optional(lock).await? else {
            return Ok(Outcome::Refused(RevertRefusal::NotLatest));
        };
        let latest: Option<(SnapshotId, i64)> =
            tx.fetch_optional(Sql::new(LATEST).bind(volume)).await?;
        if latest.map(|(id, _)| id) != Some(snapshot) {
            return Ok(Outcome::Refused(RevertRefusal::NotLatest));
        }
        if let Err(refusal) = revert::may_start(locked.status, status) {
            return Ok(Outcome::Refused(refusal));
        }
        let set_volume = Sql::new(SET_VOLUME)
            .bind(volume)
            .bind(VolumeStatus::Reverting)
            .bind(now);
        tx.execute(set_volume).await?;
        let set_snapshot = Sql::new(SET_SNAPSHOT)
            .bind(snapshot)
            .bind(SnapshotStatus::Restoring)
            .bind(now);
        tx.execute(set_snapshot).await?;
        self.record_events(&mut tx, &[EventKind::VolumeRevertStart], volume, None, now)
            .await?;
        self.record_snapshot_events(&mut tx, &[EventKind::SnapshotRevertStart], snapshot, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %volume), err)]
    async fn finish_revert(
        &self,
        volume: VolumeId,
        snapshot: SnapshotId,
        succeeded: bool,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let rule = |v: &crate::domain::volume::LockedVolume| {
            crate::domain::volume_rules::transition(v, VolumeStatus::Reverting)
        };
        let mut tx = match self.write_volume_if::<(), _>(volume, rule).await? {
            Ok((tx, _)) => tx,
            // An admin's reset took the volume out of `reverting`: it is theirs now.
            Err(_) => return Ok(()),
        };
        let set_volume = Sql::new(SET_VOLUME)
            .bind(volume)
            .bind(revert::volume_after(succeeded))
            .bind(now);
        tx.execute(set_volume).await?;
        let set_snapshot = Sql::new(RESTORED)
            .bind(snapshot)
            .bind(SnapshotStatus::Available)
            .bind(now);
        tx.execute(set_snapshot).await?;
        if succeeded {
            self.record_events(&mut tx, &[EventKind::VolumeRevertEnd], volume, None, now)
                .await?;
            self.record_snapshot_events(&mut tx, &[EventKind::SnapshotRevertEnd], snapshot, now)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
