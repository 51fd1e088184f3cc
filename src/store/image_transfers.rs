//! The status changes around an image's data: a volume made from an image ends
//! `downloading` as `available`, bootable, with the image's metadata, in one transaction;
//! a volume sent to Glance goes `uploading` and comes back to what its attachments make it.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::side_tables::SideTable;
use super::SqlStore;
use crate::domain::attach;
use crate::domain::event::EventKind;
use crate::domain::ids::VolumeId;
use crate::domain::message::Message;
use crate::domain::refusal::VolumeStatusRefusal;
use crate::domain::volume::{MetadataChange, VolumeStatus};
use crate::domain::Outcome;

#[async_trait]
pub trait ImageTransferStore: Send + Sync {
    /// A `downloading` volume has its image's data: it becomes `available` (or keeps the
    /// status an attachment made while it downloaded) and bootable, with `image_metadata`
    /// as its volume image metadata.
    async fn finish_image_download(
        &self,
        id: VolumeId,
        image_metadata: &BTreeMap<String, String>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), VolumeStatusRefusal>, StoreError>;
    /// An `available` volume (or, with `force`, an `in-use` one) becomes `uploading`.
    async fn begin_upload(
        &self,
        id: VolumeId,
        force: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), VolumeStatusRefusal>, StoreError>;
    /// An `uploading` volume returns to the status its attachments give it; a failed
    /// upload leaves `message` for its project.
    async fn end_upload(
        &self,
        id: VolumeId,
        message: Option<&Message>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), VolumeStatusRefusal>, StoreError>;
}

const DOWNLOADED: &str =
    "update volumes set status = $2, bootable = true, previous_status = null, \
     updated_at = $3 where id = $1";

const UPLOADING: &str = "update volumes set previous_status = status, status = $2, \
     updated_at = $3 where id = $1";

const UPLOADED: &str =
    "update volumes set status = $2, previous_status = null, updated_at = $3 where id = $1";

#[async_trait]
impl<D: Database> ImageTransferStore for SqlStore<D> {
    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn finish_image_download(
        &self,
        id: VolumeId,
        image_metadata: &BTreeMap<String, String>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), VolumeStatusRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume(&mut tx, id).await? else {
            return Ok(Outcome::Gone);
        };
        // An attachment may reserve a volume while it downloads (as Cinder lets Nova):
        // its status is then the attachments' to keep.
        let after = match locked.status {
            // `creating`: the volume was cloned from the image, without a download.
            VolumeStatus::Downloading | VolumeStatus::Creating => VolumeStatus::Available,
            s if attach::AGGREGATED_STATUSES.contains(&s) => s,
            other => return Ok(Outcome::Refused(VolumeStatusRefusal(other))),
        };
        let sql = Sql::new(DOWNLOADED).bind(id).bind(after).bind(now);
        tx.execute(sql).await?;
        let change = MetadataChange::Merge(image_metadata.clone());
        let table = SideTable::VolumeImageMetadata;
        if let Err(refusal) = Self::write_items(&mut tx, table, id.uuid(), &change, now).await? {
            return Err(StoreError::Other(format!("{refusal:?}").into()));
        }
        self.record_events(&mut tx, &[EventKind::VolumeCreateEnd], id, None, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id, force), err)]
    async fn begin_upload(
        &self,
        id: VolumeId,
        force: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), VolumeStatusRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume(&mut tx, id).await? else {
            return Ok(Outcome::Gone);
        };
        let allowed = locked.status == VolumeStatus::Available
            || (force && locked.status == VolumeStatus::InUse);
        if !allowed || locked.migrating() {
            return Ok(Outcome::Refused(VolumeStatusRefusal(locked.status)));
        }
        let sql = Sql::new(UPLOADING)
            .bind(id)
            .bind(VolumeStatus::Uploading)
            .bind(now);
        tx.execute(sql).await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn end_upload(
        &self,
        id: VolumeId,
        message: Option<&Message>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), VolumeStatusRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume_with_attachments(&mut tx, id).await? else {
            return Ok(Outcome::Gone);
        };
        if locked.volume.status != VolumeStatus::Uploading {
            return Ok(Outcome::Refused(VolumeStatusRefusal(locked.volume.status)));
        }
        // What the attachments make it, as if the upload had never held it.
        let live = locked.live.iter().map(|a| a.attach_status);
        let migrating = locked.volume.migrating();
        let after = attach::status_of(VolumeStatus::Available, migrating, attach::Hold::None, live);
        let sql = Sql::new(UPLOADED).bind(id).bind(after.status).bind(now);
        tx.execute(sql).await?;
        if let Some(message) = message {
            Self::add_message(&mut tx, message).await?;
        }
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }
}
