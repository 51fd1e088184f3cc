//! A new volume's source (a snapshot, or a volume to clone) is pinned while the backend
//! copies from it: the create locks the source and finds it readable in the transaction
//! that records the new volume `creating`, and a delete of the source locks it too and
//! is refused while any volume is still `creating` from it. Of a create and a delete of
//! its source, whichever locks first wins; the other is refused and changes nothing.

use super::db::error::StoreError;
use super::db::sql::Sql;
use super::db::{Database, Executor};
use super::SqlStore;
use crate::domain::ids::{SnapshotId, VolumeId};
use crate::domain::refusal::VolumeCreateRefusal;
use crate::domain::snapshot::SnapshotStatus;
use crate::domain::volume::{NewVolume, VolumeStatus};

const LOCK_SNAPSHOT: &str = "select status from snapshots where id = $1 and deleted = false";

/// A volume being created from snapshot `$1` (`$2` is `creating`).
const CREATING_FROM_SNAPSHOT: &str = "select id from volumes \
     where snapshot_id = $1 and deleted = false and status = $2 limit 1";

/// A volume being created from volume `$1` or from one of its live snapshots.
const CREATING_FROM_VOLUME: &str = "select id from volumes \
     where deleted = false and status = $2 \
       and (source_volid = $1 \
            or snapshot_id in (select s.id from snapshots s \
                                where s.volume_id = $1 and s.deleted = false)) \
     limit 1";

impl<D: Database> SqlStore<D> {
    /// Locks the source of `new` (when it has one) and checks it can still be read: a
    /// snapshot `available`, a volume `available` or `in-use`.
    pub(super) async fn pin_source(
        tx: &mut D::Tx,
        new: &NewVolume,
    ) -> Result<Result<(), VolumeCreateRefusal>, StoreError> {
        if let Some(group) = new.group_id {
            let status = Self::lock_group_status(tx, group).await?;
            if !status.is_some_and(crate::domain::group::accepts_new_volumes) {
                return Ok(Err(VolumeCreateRefusal::GroupUnavailable(status)));
            }
        }
        if let Some(snapshot) = new.snapshot_id {
            let lock = Sql::locking(LOCK_SNAPSHOT, D::FOR_UPDATE).bind(snapshot);
            let found: Option<(SnapshotStatus,)> = tx.fetch_optional(lock).await?;
            if found.map(|(s,)| s) != Some(SnapshotStatus::Available) {
                return Ok(Err(VolumeCreateRefusal::SourceUnavailable));
            }
        }
        if let Some(source) = new.source_volid {
            let readable = Self::lock_volume(tx, source)
                .await?
                .is_some_and(|v| matches!(v.status, VolumeStatus::Available | VolumeStatus::InUse));
            if !readable {
                return Ok(Err(VolumeCreateRefusal::SourceUnavailable));
            }
        }
        Ok(Ok(()))
    }

    /// A volume still being created from `snapshot` (locked by the caller).
    pub(super) async fn creating_from_snapshot(
        tx: &mut D::Tx,
        snapshot: SnapshotId,
    ) -> Result<Option<VolumeId>, StoreError> {
        let sql = Sql::new(CREATING_FROM_SNAPSHOT)
            .bind(snapshot)
            .bind(VolumeStatus::Creating);
        let found: Option<(VolumeId,)> = tx.fetch_optional(sql).await?;
        Ok(found.map(|(id,)| id))
    }

    /// A volume still being created from `volume` or from one of its snapshots (the
    /// caller holds the volume's lock and its snapshots' locks).
    pub(super) async fn creating_from_volume(
        tx: &mut D::Tx,
        volume: VolumeId,
    ) -> Result<Option<VolumeId>, StoreError> {
        let sql = Sql::new(CREATING_FROM_VOLUME)
            .bind(volume)
            .bind(VolumeStatus::Creating);
        let found: Option<(VolumeId,)> = tx.fetch_optional(sql).await?;
        Ok(found.map(|(id,)| id))
    }
}
