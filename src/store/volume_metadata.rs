//! A volume's name, description and user metadata. Cinder refuses these changes in some
//! statuses (`domain::volume_rules`), so each write locks the volume first.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::side_tables::SideTable;
use super::SqlStore;
use crate::domain::ids::VolumeId;
use crate::domain::refusal::VolumeUpdateRefusal;
use crate::domain::volume::{MetadataChange, VolumeUpdate};
use crate::domain::volume_rules::check_metadata_count;
use crate::domain::volume_rules::{self, METADATA_CHANGE_REFUSED, UPDATE_REFUSED};
use crate::domain::Outcome;

#[async_trait]
pub trait VolumeMetadataStore: Send + Sync {
    /// Replaces name, description and (if given) all user metadata.
    async fn update_volume(
        &self,
        id: VolumeId,
        update: &VolumeUpdate,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), VolumeUpdateRefusal>, StoreError>;
    /// A live volume's user metadata, or `None` when the volume is gone.
    async fn volume_metadata(
        &self,
        id: VolumeId,
    ) -> Result<Option<BTreeMap<String, String>>, StoreError>;
    /// Changes user metadata; returns the metadata as it is afterwards.
    async fn change_volume_metadata(
        &self,
        id: VolumeId,
        change: &MetadataChange,
        now: DateTime<Utc>,
    ) -> Result<Outcome<BTreeMap<String, String>, VolumeUpdateRefusal>, StoreError>;
    /// A live volume's image metadata, or `None` when the volume is gone.
    async fn image_metadata(
        &self,
        id: VolumeId,
    ) -> Result<Option<BTreeMap<String, String>>, StoreError>;
    /// Merges or removes image metadata, in the statuses user metadata may change in;
    /// returns the image metadata as it is afterwards.
    async fn change_image_metadata(
        &self,
        id: VolumeId,
        change: &MetadataChange,
        now: DateTime<Utc>,
    ) -> Result<Outcome<BTreeMap<String, String>, VolumeUpdateRefusal>, StoreError>;
}

const LIVE_VOLUME: &str = "select id from volumes where id = $1 and deleted = false";

const METADATA: &str = "select key, value from volume_metadata \
                         where volume_id = $1 and deleted = false order by key";

const IMAGE_METADATA: &str = "select key, value from volume_glance_metadata \
                               where volume_id = $1 and deleted = false order by key";

impl<D: Database> SqlStore<D> {
    /// A live volume's items of one kind (`statement` reads them), or `None`.
    async fn live_items(
        &self,
        statement: &'static str,
        id: VolumeId,
    ) -> Result<Option<BTreeMap<String, String>>, StoreError> {
        let mut reads = self.db.begin_read().await?;
        let live: Option<(VolumeId,)> =
            reads.fetch_optional(Sql::new(LIVE_VOLUME).bind(id)).await?;
        if live.is_none() {
            return Ok(None);
        }
        Ok(Some(Self::read_items(&mut reads, statement, id).await?))
    }

    /// A change to a volume's user metadata (`SideTable::VolumeMetadata`, its item count
    /// bounded) or image metadata, under the volume's lock and Cinder's status rule; the
    /// items as they are afterwards.
    async fn change_items(
        &self,
        table: SideTable,
        id: VolumeId,
        change: &MetadataChange,
        now: DateTime<Utc>,
    ) -> Result<Outcome<BTreeMap<String, String>, VolumeUpdateRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume(&mut tx, id).await? else {
            return Ok(Outcome::Gone);
        };
        if let Err(refusal) = volume_rules::change_allowed(&locked, METADATA_CHANGE_REFUSED) {
            return Ok(Outcome::Refused(refusal.into()));
        }
        if let Err(refusal) = Self::write_items(&mut tx, table, id.uuid(), change, now).await? {
            return Ok(Outcome::Refused(refusal.into()));
        }
        let (statement, counted) = match table {
            SideTable::VolumeMetadata => (METADATA, true),
            _ => (IMAGE_METADATA, false),
        };
        let items = Self::read_items(&mut tx, statement, id).await?;
        if counted {
            if let Err(refusal) = check_metadata_count(items.len()) {
                return Ok(Outcome::Refused(refusal.into()));
            }
        }
        tx.commit().await?;
        Ok(Outcome::Done(items))
    }

    async fn read_items(
        reads: &mut impl Executor,
        statement: &'static str,
        id: VolumeId,
    ) -> Result<BTreeMap<String, String>, StoreError> {
        let items: Vec<(String, Option<String>)> =
            reads.fetch_all(Sql::new(statement).bind(id)).await?;
        Ok(items
            .into_iter()
            .map(|(k, v)| (k, v.unwrap_or_default()))
            .collect())
    }
}

#[async_trait]
impl<D: Database> VolumeMetadataStore for SqlStore<D> {
    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn update_volume(
        &self,
        id: VolumeId,
        update: &VolumeUpdate,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), VolumeUpdateRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume(&mut tx, id).await? else {
            return Ok(Outcome::Gone);
        };
        if let Err(refusal) = volume_rules::change_allowed(&locked, UPDATE_REFUSED) {
            return Ok(Outcome::Refused(refusal.into()));
        }
        let mut sql = Sql::new("update volumes set updated_at = ");
        sql.push_bind(now);
        if let Some(name) = &update.name {
            sql.push(", display_name = ").push_bind(name);
        }
        if let Some(description) = &update.description {
            sql.push(", display_description = ").push_bind(description);
        }
        sql.push(" where id = ").push_bind(id);
        tx.execute(sql).await?;
        if let Some(metadata) = &update.metadata {
            let change = MetadataChange::Replace(metadata.clone());
            let written =
                Self::write_items(&mut tx, SideTable::VolumeMetadata, id.uuid(), &change, now);
            if let Err(refusal) = written.await? {
                return Ok(Outcome::Refused(refusal.into()));
            }
        }
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn volume_metadata(
        &self,
        id: VolumeId,
    ) -> Result<Option<BTreeMap<String, String>>, StoreError> {
        self.live_items(METADATA, id).await
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn change_volume_metadata(
        &self,
        id: VolumeId,
        change: &MetadataChange,
        now: DateTime<Utc>,
    ) -> Result<Outcome<BTreeMap<String, String>, VolumeUpdateRefusal>, StoreError> {
        self.change_items(SideTable::VolumeMetadata, id, change, now)
            .await
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn image_metadata(
        &self,
        id: VolumeId,
    ) -> Result<Option<BTreeMap<String, String>>, StoreError> {
        self.live_items(IMAGE_METADATA, id).await
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn change_image_metadata(
        &self,
        id: VolumeId,
        change: &MetadataChange,
        now: DateTime<Utc>,
    ) -> Result<Outcome<BTreeMap<String, String>, VolumeUpdateRefusal>, StoreError> {
        self.change_items(SideTable::VolumeImageMetadata, id, change, now)
            .await
    }
}
