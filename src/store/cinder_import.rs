//! Writes an `import-cinder` plan in one transaction: every row whose id is not here yet
//! is inserted as Cinder had it; a row already here (an earlier run's) is left alone, so
//! a second run writes nothing. A dry run does the same and rolls back.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::db::error::StoreError;
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::side_tables::{Item, SideTable};
use super::SqlStore;
use crate::domain::cinder_import::{ImportPlan, Pairs, TakenAttachment, TakenVolume};
use crate::domain::ids::{SnapshotId, VolumeId};
use crate::domain::snapshot::SnapshotStatus;

/// What a run wrote, by kind (`volumes`, `snapshots`, ...).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImportTally {
    pub inserted: BTreeMap<&'static str, usize>,
    /// Rows an earlier run (or someone) put here already.
    pub already_here: BTreeMap<&'static str, usize>,
    /// Quota limits set here to another value than Cinder's: kept, and listed.
    pub kept_here: Vec<String>,
}

impl ImportTally {
    fn count(&mut self, kind: &'static str, inserted: bool) {
        let counts = if inserted {
            &mut self.inserted
        } else {
            &mut self.already_here
        };
        *counts.entry(kind).or_default() += 1;
    }
}

#[async_trait]
pub trait CinderImportStore: Send + Sync {
    /// Inserts what the plan takes and is not here yet; commits unless `dry_run`.
    async fn import_cinder(
        &self,
        plan: &ImportPlan,
        now: DateTime<Utc>,
        dry_run: bool,
    ) -> Result<ImportTally, StoreError>;
}

const QOS_HERE: &str = "select id from qos_specs where id = $1";
const INSERT_QOS: &str = "insert into qos_specs (id, name, consumer, created_at, deleted) \
                          values ($1, $2, $3, $4, false)";
const TYPE_HERE: &str = "select id from volume_types where id = $1";
const INSERT_TYPE: &str = "insert into volume_types \
     (id, name, description, is_public, qos_specs_id, created_at, deleted) \
     values ($1, $2, $3, $4, $5, $6, false)";
const INSERT_ACCESS: &str = "insert into volume_type_projects \
     (volume_type_id, project_id, created_at, deleted) values ($1, $2, $3, false)";
const QUOTA_HERE: &str = "select hard_limit from quotas \
     where project_id = $1 and resource = $2 and deleted = false";
const INSERT_QUOTA: &str = "insert into quotas \
     (project_id, resource, hard_limit, created_at, deleted) values ($1, $2, $3, $4, false)";
const CLASS_HERE: &str = "select hard_limit from quota_classes \
     where class_name = $1 and resource = $2 and deleted = false";
const INSERT_CLASS: &str = "insert into quota_classes \
     (class_name, resource, hard_limit, created_at, deleted) values ($1, $2, $3, $4, false)";
const VOLUME_HERE: &str = "select id from volumes where id = $1";
const INSERT_VOLUME: &str = "insert into volumes \
     (id, user_id, project_id, host, size, availability_zone, status, attach_status, \
      display_name, display_description, volume_type_id, bootable, multiattach, service_uuid, \
      snapshot_id, source_volid, created_at, updated_at, shared_targets, deleted) \
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, \
             $19, false)";
const SNAPSHOT_HERE: &str = "select id from snapshots where id = $1";
const INSERT_SNAPSHOT: &str = "insert into snapshots \
     (id, volume_id, user_id, project_id, status, progress, volume_size, display_name, \
      display_description, created_at, updated_at, deleted) \
     values ($1, $2, $3, $4, $5, '100%', $6, $7, $8, $9, $10, false)";
const ATTACHMENT_HERE: &str = "select id from volume_attachment where id = $1";
const INSERT_ATTACHMENT: &str = "insert into volume_attachment \
     (id, volume_id, instance_uuid, attached_host, mountpoint, attach_time, attach_status, \
      attach_mode, connection_info, created_at, updated_at, deleted) \
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, false)";

fn items(pairs: &Pairs) -> Vec<Item> {
    pairs.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

#[async_trait]
impl<D: Database> CinderImportStore for SqlStore<D> {
    #[tracing::instrument(skip_all, err)]
    async fn import_cinder(
        &self,
        plan: &ImportPlan,
        now: DateTime<Utc>,
        dry_run: bool,
    ) -> Result<ImportTally, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let mut tally = ImportTally::default();
        for qos in &plan.qos {
            let new = Self::absent(&mut tx, QOS_HERE, qos.id.uuid()).await?;
            tally.count("qos_specs", new);
            if new {
                let insert = Sql::new(INSERT_QOS)
                    .bind(qos.id)
                    .bind(qos.name.as_str())
                    .bind(qos.consumer.as_str())
                    .bind(qos.created_at);
                tx.execute(insert).await?;
                let specs = qos.specs.iter().map(|(k, v)| (k.clone(), Some(v.clone())));
                Self::insert_items(&mut tx, SideTable::QosSpecs, qos.id.uuid(), specs, now).await?;
            }
        }
        for t in &plan.types {
            let new = Self::absent(&mut tx, TYPE_HERE, t.id.uuid()).await?;
            tally.count("volume_types", new);
            if !new {
                continue;
            }
            let s = &t.source;
            let insert = Sql::new(INSERT_TYPE)
                .bind(t.id)
                .bind(s.name.as_str())
                .bind(s.description.clone())
                .bind(s.is_public)
                .bind(t.qos_specs_id)
                .bind(s.created_at);
            tx.execute(insert).await?;
            let specs = items(&s.specs);
            Self::insert_items(&mut tx, SideTable::TypeExtraSpecs, t.id.uuid(), specs, now).await?;
            for project in &s.projects {
                let access = Sql::new(INSERT_ACCESS).bind(t.id).bind(project).bind(now);
                tx.execute(access).await?;
            }
        }
        for (owners, here, insert, kind) in [
            (&plan.quotas, QUOTA_HERE, INSERT_QUOTA, "quotas"),
            (
                &plan.quota_classes,
                CLASS_HERE,
                INSERT_CLASS,
                "quota_classes",
            ),
        ] {
            for (owner, resource, limit) in owners {
                let found = tx
                    .fetch_optional::<(i64,)>(Sql::new(here).bind(owner).bind(resource))
                    .await?;
                match found {
                    None => {
                        let sql = Sql::new(insert).bind(owner).bind(resource).bind(*limit);
                        tx.execute(sql.bind(now)).await?;
                        tally.count(kind, true);
                    }
                    Some((value,)) if value == *limit => tally.count(kind, false),
                    Some((value,)) => tally.kept_here.push(format!(
                        "{owner} {resource}: {value} here, {limit} in Cinder (kept {value})"
                    )),
                }
            }
        }
        for volume in &plan.volumes {
            let new = Self::absent(&mut tx, VOLUME_HERE, volume.id.uuid()).await?;
            tally.count("volumes", new);
            if new {
                Self::insert_volume(&mut tx, volume, now).await?;
            }
        }
        for snapshot in &plan.snapshots {
            let new = Self::absent(&mut tx, SNAPSHOT_HERE, snapshot.id.uuid()).await?;
            tally.count("snapshots", new);
            if !new {
                continue;
            }
            let s = &snapshot.source;
            let insert = Sql::new(INSERT_SNAPSHOT)
                .bind(snapshot.id)
                .bind(snapshot.volume_id)
                .bind(s.user_id.clone())
                .bind(snapshot.project_id.as_str())
                .bind(SnapshotStatus::Available)
                .bind(s.volume_size)
                .bind(s.display_name.clone())
                .bind(s.display_description.clone())
                .bind(s.created_at)
                .bind(now);
            tx.execute(insert).await?;
            let metadata = items(&s.metadata);
            let owner = snapshot.id.uuid();
            Self::insert_items(&mut tx, SideTable::SnapshotMetadata, owner, metadata, now).await?;
        }
        for attachment in &plan.attachments {
            let new = Self::absent(&mut tx, ATTACHMENT_HERE, attachment.id.uuid()).await?;
            tally.count("attachments", new);
            if new {
                Self::insert_attachment(&mut tx, attachment, now).await?;
            }
        }
        if !dry_run {
            tx.commit().await?;
        }
        Ok(tally)
    }
}

impl<D: Database> SqlStore<D> {
    /// Whether no row (live or deleted) has the id: a deleted one stays deleted.
    async fn absent(tx: &mut D::Tx, sql: &'static str, id: uuid::Uuid) -> Result<bool, StoreError> {
        let found = tx
            .fetch_optional::<(uuid::Uuid,)>(Sql::new(sql).bind(id))
            .await?;
        Ok(found.is_none())
    }

    async fn insert_volume(
        tx: &mut D::Tx,
        volume: &TakenVolume,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let v = &volume.source;
        let insert = Sql::new(INSERT_VOLUME)
            .bind(volume.id)
            .bind(v.user_id.clone())
            .bind(volume.project_id.as_str())
            .bind(volume.host.as_str())
            .bind(v.size)
            .bind(volume.availability_zone.as_str())
            .bind(volume.status)
            .bind(volume.attach_status)
            .bind(v.display_name.clone())
            .bind(v.display_description.clone())
            .bind(volume.volume_type_id)
            .bind(v.bootable)
            .bind(v.multiattach)
            .bind(volume.service_uuid)
            .bind(v.snapshot_id.as_deref().and_then(SnapshotId::parse))
            .bind(v.source_volid.as_deref().and_then(VolumeId::parse))
            .bind(v.created_at)
            .bind(now)
            .bind(volume.shared_targets);
        tx.execute(insert).await?;
        let owner = volume.id.uuid();
        for (table, pairs) in [
            (SideTable::VolumeMetadata, &v.metadata),
            (SideTable::VolumeAdminMetadata, &v.admin_metadata),
            (SideTable::VolumeImageMetadata, &v.image_metadata),
        ] {
            Self::insert_items(tx, table, owner, items(pairs), now).await?;
        }
        Ok(())
    }

    async fn insert_attachment(
        tx: &mut D::Tx,
        attachment: &TakenAttachment,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let a = &attachment.source;
        let info = attachment
            .connection_info
            .as_ref()
            .map_or_else(|| "{}".to_owned(), ToString::to_string);
        let insert = Sql::new(INSERT_ATTACHMENT)
            .bind(attachment.id)
            .bind(attachment.volume_id)
            .bind(a.instance_uuid.clone())
            .bind(a.attached_host.clone())
            .bind(a.mountpoint.clone())
            .bind(a.attach_time)
            .bind(attachment.attach_status)
            .bind(attachment.attach_mode)
            .bind(info)
            .bind(a.created_at)
            .bind(now);
        tx.execute(insert).await?;
        let connector = super::connector_specs::encode(&attachment.connector);
        let owner = attachment.id.uuid();
        Self::insert_items(tx, SideTable::AttachmentSpecs, owner, connector, now).await?;
        Ok(())
    }
}
