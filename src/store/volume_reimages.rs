//! A volume re-imaged (`os-reimage`, 3.68; Nova's rebuild of a volume-backed server):
//! `downloading` while the image's data replaces the volume's, then back to the status it
//! had with the image's metadata in place of the old image's, and, for a volume Nova
//! reserved, a `volume-reimaged` event owed to Nova's servers; `error` when it failed.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

use super::db::error::StoreError;
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::side_tables::SideTable;
use super::SqlStore;
use crate::domain::compute_call::ComputeCallKind;
use crate::domain::ids::VolumeId;
use crate::domain::message::Message;
use crate::domain::refusal::VolumeStatusRefusal;
use crate::domain::volume::{MetadataChange, VolumeStatus};
use crate::domain::Outcome;

/// Why a re-image does not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReimageRefusal {
    /// Not one of the statuses allowed (`available`, `error`, and `reserved` when asked).
    Status(VolumeStatus),
    /// Attached to more than one server.
    SeveralServers,
}

#[async_trait]
pub trait VolumeReimageStore: Send + Sync {
    /// The volume becomes `downloading` (its status kept as the previous one).
    async fn begin_reimage(
        &self,
        id: VolumeId,
        reserved_allowed: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), ReimageRefusal>, StoreError>;
    /// Puts the status back (a check after `begin_reimage` refused the image).
    async fn undo_reimage(&self, id: VolumeId, now: DateTime<Utc>) -> Result<(), StoreError>;
    /// The image is in: the status it had, the image's metadata, and with `tell_nova`
    /// (the volume's project) a `volume-reimaged` event for the servers of a volume that
    /// was `reserved`.
    async fn finish_reimage(
        &self,
        id: VolumeId,
        image_metadata: &BTreeMap<String, String>,
        tell_nova: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), VolumeStatusRefusal>, StoreError>;
    /// The image did not make it: `error`, and `message` for the project.
    async fn fail_reimage(&self, id: VolumeId, message: &Message) -> Result<(), StoreError>;
}

const BEGIN: &str = "update volumes set previous_status = status, status = $3, \
     updated_at = $2 where id = $1";

const UNDO: &str = "update volumes set status = coalesce(previous_status, $4), \
     previous_status = null, updated_at = $2 where id = $1 and status = $3 \
     and deleted = false";

const FINISH: &str = "update volumes set status = $2, previous_status = null, updated_at = $3 \
     where id = $1";

const FAIL: &str = "update volumes set previous_status = status, status = $4, \
     updated_at = $2 where id = $1 and status = $3 and deleted = false";

#[async_trait]
impl<D: Database> VolumeReimageStore for SqlStore<D> {
    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn begin_reimage(
        &self,
        id: VolumeId,
        reserved_allowed: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), ReimageRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume_with_attachments(&mut tx, id).await? else {
            return Ok(Outcome::Gone);
        };
        let servers: std::collections::BTreeSet<_> = locked
            .live
            .iter()
            .filter_map(|a| a.instance_uuid.as_ref())
            .collect();
        if locked.live.len() > 1 || servers.len() > 1 {
            return Ok(Outcome::Refused(ReimageRefusal::SeveralServers));
        }
        let allowed = match locked.volume.status {
            VolumeStatus::Available | VolumeStatus::Error => true,
            VolumeStatus::Reserved => reserved_allowed,
            _ => false,
        };
        if !allowed {
            return Ok(Outcome::Refused(ReimageRefusal::Status(
                locked.volume.status,
            )));
        }
        let begin = Sql::new(BEGIN)
            .bind(id)
            .bind(now)
            .bind(VolumeStatus::Downloading);
        tx.execute(begin).await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn undo_reimage(&self, id: VolumeId, now: DateTime<Utc>) -> Result<(), StoreError> {
        self.db
            .execute(
                Sql::new(UNDO)
                    .bind(id)
                    .bind(now)
                    .bind(VolumeStatus::Downloading)
                    .bind(VolumeStatus::Available),
            )
            .await
            .map(drop)
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn finish_reimage(
        &self,
        id: VolumeId,
        image_metadata: &BTreeMap<String, String>,
        tell_nova: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), VolumeStatusRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume_with_attachments(&mut tx, id).await? else {
            return Ok(Outcome::Gone);
        };
        if locked.volume.status != VolumeStatus::Downloading {
            return Ok(Outcome::Refused(VolumeStatusRefusal(locked.volume.status)));
        }
        let (before,): (Option<VolumeStatus>,) = tx
            .fetch_optional(Sql::new("select previous_status from volumes where id = $1").bind(id))
            .await?
            .unwrap_or((None,));
        let after = before.unwrap_or(VolumeStatus::Available);
        tx.execute(Sql::new(FINISH).bind(id).bind(after).bind(now))
            .await?;
        let change = MetadataChange::Replace(image_metadata.clone());
        let table = SideTable::VolumeImageMetadata;
        if let Err(refusal) = Self::write_items(&mut tx, table, id.uuid(), &change, now).await? {
            return Err(StoreError::Other(format!("{refusal:?}").into()));
        }
        if after == VolumeStatus::Reserved {
            let kind = ComputeCallKind::VolumeReimaged;
            Self::owe_event(&mut tx, kind, id, tell_nova, &locked.live, now).await?;
        }
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn fail_reimage(&self, id: VolumeId, message: &Message) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().await?;
        tx.execute(
            Sql::new(FAIL)
                .bind(id)
                .bind(message.created_at)
                .bind(VolumeStatus::Downloading)
                .bind(VolumeStatus::Error),
        )
        .await?;
        Self::add_message(&mut tx, message).await?;
        tx.commit().await?;
        Ok(())
    }
}
