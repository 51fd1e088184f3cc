//! Volume transfers. Every write locks the volume row first, so an offer, its
//! withdrawal, its acceptance and any other change of the volume never interleave: of two
//! accepts (or an accept and a delete) exactly one finds the offer still open.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::paging::push_page;
use super::SqlStore;
use crate::domain::event::EventKind;
use crate::domain::ids::{SnapshotId, TransferId, VolumeId};
use crate::domain::paging::Page;
use crate::domain::quota::{self, QuotaOwner};
use crate::domain::refusal::TransferRefusal;
use crate::domain::snapshot::SnapshotStatus;
use crate::domain::transfer::{NewTransfer, Transfer, TransferFilters, TransferSortKey};
use crate::domain::volume::VolumeStatus;
use crate::domain::Outcome;
use std::convert::Infallible;

/// A transfer with what its key is checked against.
#[derive(Debug, Clone)]
pub struct TransferSecret {
    pub transfer: Transfer,
    pub salt: String,
    pub crypt_hash: String,
}

/// Who takes a volume.
#[derive(Debug, Clone)]
pub struct Recipient {
    pub user_id: String,
    /// The receiving project and the quota its volumes count against.
    pub owner: QuotaOwner,
}

#[async_trait]
pub trait TransferStore: Send + Sync {
    /// Records the offer; the `available` volume becomes `awaiting-transfer`. Unless the
    /// transfer leaves them behind, every snapshot of the volume must be `available`.
    async fn insert_transfer(
        &self,
        new: &NewTransfer,
    ) -> Result<Outcome<(), TransferRefusal>, StoreError>;
    /// An open transfer (any project's).
    async fn get_transfer(&self, id: TransferId) -> Result<Option<TransferSecret>, StoreError>;
    async fn list_transfers(
        &self,
        filters: &TransferFilters,
        page: &Page<TransferSortKey>,
    ) -> Result<Vec<Transfer>, StoreError>;
    /// Withdraws an open offer; an `awaiting-transfer` volume becomes `available` again.
    async fn delete_transfer(
        &self,
        id: TransferId,
        volume_id: VolumeId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError>;
    /// Gives the volume (and, unless the offer says otherwise, its snapshots) to the
    /// recipient, if the offer is still open, the volume still `awaiting-transfer` and
    /// the recipient's quota has room. Answers the accepted transfer.
    async fn accept_transfer(
        &self,
        id: TransferId,
        volume_id: VolumeId,
        recipient: &Recipient,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Transfer, TransferRefusal>, StoreError>;
    /// Names key `new` as the volume's instead of `old` (a key moved to another
    /// project's keeping); `false` when the volume no longer names `old`.
    async fn swap_volume_key(
        &self,
        volume_id: VolumeId,
        old: &str,
        new: &str,
    ) -> Result<bool, StoreError>;
}

const TRANSFER_COLUMNS: &str = "t.id, t.volume_id, t.display_name, t.no_snapshots, \
     t.source_project_id, t.destination_project_id, t.accepted, t.created_at";

const INSERT: &str = "\
    insert into transfers (id, volume_id, display_name, salt, crypt_hash, no_snapshots, \
                           source_project_id, accepted, created_at, deleted) \
    values ($1, $2, $3, $4, $5, $6, $7, false, $8, false)";

const SET_VOLUME_STATUS: &str =
    "update volumes set status = $2, updated_at = $3 where id = $1 and deleted = false";

const SNAPSHOT_STATUSES: &str = "select id, status, volume_size from snapshots \
     where volume_id = $1 and deleted = false order by created_at, id";

const CLOSE: &str = "update transfers set deleted = true, deleted_at = $2 \
     where id = $1 and deleted = false";

const ACCEPTED: &str = "update transfers set deleted = true, deleted_at = $2, accepted = true, \
     destination_project_id = $3 where id = $1 and deleted = false";

const GIVE_VOLUME: &str = "update volumes set status = $5, user_id = $2, \
     project_id = $3, updated_at = $4 where id = $1 and deleted = false";

const SWAP_KEY: &str = "update volumes set encryption_key_id = $3 \
     where id = $1 and encryption_key_id = $2 and deleted = false";

const GIVE_SNAPSHOTS: &str = "update snapshots set user_id = $2, project_id = $3, \
     updated_at = $4 where volume_id = $1 and deleted = false";

impl FromRow for Transfer {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(Transfer {
            id: c.get()?,
            volume_id: c.get()?,
            name: c.get()?,
            no_snapshots: c.get()?,
            source_project_id: c.get()?,
            destination_project_id: c.get()?,
            accepted: c.get()?,
            created_at: c.get()?,
        })
    }
}

impl FromRow for TransferSecret {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(TransferSecret {
            transfer: Transfer::from_row(c)?,
            salt: c.get()?,
            crypt_hash: c.get()?,
        })
    }
}

impl<D: Database> SqlStore<D> {
    /// The open transfer `id` of `volume_id`, read in `tx`.
    async fn open_transfer(
        tx: &mut D::Tx,
        id: TransferId,
        volume_id: VolumeId,
    ) -> Result<Option<Transfer>, StoreError> {
        let mut sql = Sql::new("select ");
        sql.push(TRANSFER_COLUMNS)
            .push(" from transfers t where t.deleted = false and t.id = ")
            .push_bind(id)
            .push(" and t.volume_id = ")
            .push_bind(volume_id);
        tx.fetch_optional(sql).await
    }

    /// The volume's live snapshots: the first one not `available`, else how many and
    /// their gigabytes.
    async fn snapshots_to_move(
        tx: &mut D::Tx,
        volume_id: VolumeId,
    ) -> Result<Result<(i64, i64), SnapshotId>, StoreError> {
        let rows: Vec<(SnapshotId, SnapshotStatus, i64)> = tx
            .fetch_all(Sql::new(SNAPSHOT_STATUSES).bind(volume_id))
            .await?;
        if let Some((id, _, _)) = rows
            .iter()
            .find(|(_, status, _)| *status != SnapshotStatus::Available)
        {
            return Ok(Err(*id));
        }
        Ok(Ok((rows.len() as i64, rows.iter().map(|r| r.2).sum())))
    }
}

#[async_trait]
impl<D: Database> TransferStore for SqlStore<D> {
    #[tracing::instrument(skip_all, fields(volume_id = %new.transfer.volume_id), err)]
    async fn insert_transfer(
        &self,
        new: &NewTransfer,
    ) -> Result<Outcome<(), TransferRefusal>, StoreError> {
        let transfer = &new.transfer;
        let mut tx = self.db.begin_write().await?;
        let Some(volume) = Self::lock_volume(&mut tx, transfer.volume_id).await? else {
            return Ok(Outcome::Gone);
        };
        if volume.status != VolumeStatus::Available {
            return Ok(Outcome::Refused(TransferRefusal::VolumeStatus(
                volume.status,
            )));
        }
        if !transfer.no_snapshots {
            if let Err(snapshot) = Self::snapshots_to_move(&mut tx, volume.id).await? {
                return Ok(Outcome::Refused(TransferRefusal::SnapshotNotAvailable(
                    snapshot,
                )));
            }
        }
        let now = transfer.created_at;
        let events = &[EventKind::VolumeTransferCreateStart];
        self.record_events(&mut tx, events, volume.id, None, now)
            .await?;
        let status = Sql::new(SET_VOLUME_STATUS)
            .bind(volume.id)
            .bind(VolumeStatus::AwaitingTransfer)
            .bind(now);
        tx.execute(status).await?;
        let insert = Sql::new(INSERT)
            .bind(transfer.id)
            .bind(transfer.volume_id)
            .bind(&transfer.name)
            .bind(&new.salt)
            .bind(&new.crypt_hash)
            .bind(transfer.no_snapshots)
            .bind(&transfer.source_project_id)
            .bind(now);
        tx.execute(insert).await?;
        let events = &[EventKind::VolumeTransferCreateEnd];
        self.record_events(&mut tx, events, volume.id, None, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(transfer_id = %id), err)]
    async fn get_transfer(&self, id: TransferId) -> Result<Option<TransferSecret>, StoreError> {
        let mut sql = Sql::new("select ");
        sql.push(TRANSFER_COLUMNS)
            .push(", t.salt, t.crypt_hash from transfers t where t.deleted = false and t.id = ")
            .push_bind(id);
        self.db.fetch_optional(sql).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn list_transfers(
        &self,
        filters: &TransferFilters,
        page: &Page<TransferSortKey>,
    ) -> Result<Vec<Transfer>, StoreError> {
        let mut sql = Sql::new("select ");
        sql.push(TRANSFER_COLUMNS)
            .push(" from transfers t where t.deleted = false");
        if let Some(project) = &filters.project_id {
            sql.push(" and t.source_project_id = ")
                .push_bind(project.clone());
        }
        if let Some(volume) = filters.volume_id {
            sql.push(" and t.volume_id = ").push_bind(volume);
        }
        if let Some(name) = &filters.name {
            sql.push(" and t.display_name = ").push_bind(name.clone());
        }
        push_page(&mut sql, page, "t", "transfers");
        self.db.fetch_all(sql).await
    }

    #[tracing::instrument(skip_all, fields(transfer_id = %id), err)]
    async fn delete_transfer(
        &self,
        id: TransferId,
        volume_id: VolumeId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let volume = Self::lock_volume(&mut tx, volume_id).await?;
        if Self::open_transfer(&mut tx, id, volume_id).await?.is_none() {
            return Ok(Outcome::Gone);
        }
        // The volume's events, while it is there (a transfer outlives no volume).
        let reported = volume.is_some().then_some(volume_id);
        if let Some(volume_id) = reported {
            let events = &[EventKind::VolumeTransferDeleteStart];
            self.record_events(&mut tx, events, volume_id, None, now)
                .await?;
        }
        tx.execute(Sql::new(CLOSE).bind(id).bind(now)).await?;
        // Cinder returns the volume only from `awaiting-transfer` (an admin may have
        // reset it since).
        if volume.is_some_and(|v| v.status == VolumeStatus::AwaitingTransfer) {
            let status = Sql::new(SET_VOLUME_STATUS)
                .bind(volume_id)
                .bind(VolumeStatus::Available)
                .bind(now);
            tx.execute(status).await?;
        }
        if let Some(volume_id) = reported {
            let events = &[EventKind::VolumeTransferDeleteEnd];
            self.record_events(&mut tx, events, volume_id, None, now)
                .await?;
        }
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(transfer_id = %id), err)]
    async fn accept_transfer(
        &self,
        id: TransferId,
        volume_id: VolumeId,
        recipient: &Recipient,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Transfer, TransferRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(volume) = Self::lock_volume(&mut tx, volume_id).await? else {
            return Ok(Outcome::Gone);
        };
        let Some(mut transfer) = Self::open_transfer(&mut tx, id, volume_id).await? else {
            return Ok(Outcome::Gone);
        };
        if volume.status != VolumeStatus::AwaitingTransfer {
            return Ok(Outcome::Refused(TransferRefusal::VolumeStatus(
                volume.status,
            )));
        }
        let (snapshots, snapshot_gb) = if transfer.no_snapshots {
            (0, 0)
        } else {
            match Self::snapshots_to_move(&mut tx, volume_id).await? {
                Ok(counted) => counted,
                Err(snapshot) => {
                    return Ok(Outcome::Refused(TransferRefusal::SnapshotNotAvailable(
                        snapshot,
                    )))
                }
            }
        };
        let owner = &recipient.owner;
        let (limits, usage) = Self::locked_quota(&mut tx, owner).await?;
        let fits = quota::check_transfer_in(
            &limits,
            &usage,
            volume.size,
            snapshots,
            snapshot_gb,
            &owner.type_name,
        );
        if let Err(over) = fits {
            return Ok(Outcome::Refused(TransferRefusal::OverQuota(over)));
        }
        let events = &[EventKind::VolumeTransferAcceptStart];
        self.record_events(&mut tx, events, volume_id, None, now)
            .await?;
        let give = Sql::new(GIVE_VOLUME)
            .bind(volume_id)
            .bind(&recipient.user_id)
            .bind(&owner.project_id)
            .bind(now)
            .bind(VolumeStatus::Available);
        tx.execute(give).await?;
        if !transfer.no_snapshots {
            let give = Sql::new(GIVE_SNAPSHOTS)
                .bind(volume_id)
                .bind(&recipient.user_id)
                .bind(&owner.project_id)
                .bind(now);
            tx.execute(give).await?;
        }
        let accepted = Sql::new(ACCEPTED)
            .bind(id)
            .bind(now)
            .bind(&owner.project_id);
        tx.execute(accepted).await?;
        let events = &[EventKind::VolumeTransferAcceptEnd];
        self.record_events(&mut tx, events, volume_id, None, now)
            .await?;
        tx.commit().await?;
        transfer.accepted = true;
        transfer.destination_project_id = Some(owner.project_id.clone());
        Ok(Outcome::Done(transfer))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %volume_id), err)]
    async fn swap_volume_key(
        &self,
        volume_id: VolumeId,
        old: &str,
        new: &str,
    ) -> Result<bool, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let swap = Sql::new(SWAP_KEY).bind(volume_id).bind(old).bind(new);
        let changed = tx.execute(swap).await?;
        tx.commit().await?;
        Ok(changed == 1)
    }
}
