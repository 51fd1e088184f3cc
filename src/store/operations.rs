//! What the process itself asks of the database: health, metrics, the consistency
//! checker's snapshot, and the registration of configured backends.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::{PoolUse, SqlStore, StoreKind};
use crate::domain::attachment::AttachStatus;
use crate::domain::consistency::{AttachmentFacts, ProjectQuota, Snapshot, VolumeFacts};
use crate::domain::ids::{AttachmentId, ServiceId, SnapshotId, VolumeId};
use crate::domain::quota::QuotaDefaults;
use crate::domain::volume::VolumeStatus;

#[async_trait]
pub trait Operations: Send + Sync {
    fn kind(&self) -> StoreKind;
    /// One round trip to the database.
    async fn ping(&self) -> Result<(), StoreError>;
    /// Live attachments and volumes counted by status (for metrics).
    async fn status_counts(&self) -> Result<StatusCounts, StoreError>;
    /// How busy each connection pool is.
    fn pool_use(&self) -> Vec<PoolUse>;
    /// Volumes, live attachments and stray connector rows, read in one snapshot for the
    /// consistency checker.
    async fn consistency_snapshot(&self) -> Result<Snapshot, StoreError>;
    /// Records a configured backend (idempotent by host) and returns its stable uuid.
    async fn register_service(
        &self,
        service: &ServiceRegistration,
    ) -> Result<ServiceId, StoreError>;
    /// Waits for pooled connections to be returned and closes them.
    async fn close(&self);
}

/// Live rows per status: `(status, count)`, ordered by status.
#[derive(Debug, Clone, Default)]
pub struct StatusCounts {
    pub attachments: Vec<(String, i64)>,
    pub volumes: Vec<(String, i64)>,
    /// Calls owed to Nova, every row (settled ones stay until purged).
    pub compute_calls: Vec<(String, i64)>,
    /// Host fences by outcome, every row (until purged).
    pub host_fences: Vec<(String, i64)>,
}

/// A configured backend as the `services` table records it.
#[derive(Debug, Clone)]
pub struct ServiceRegistration {
    pub new_uuid: ServiceId,
    pub host: String,
    /// `cinder-volume` for a backend, `cinder-scheduler` and `cinder-backup` for the
    /// process itself.
    pub binary: &'static str,
    pub backend_name: String,
    pub driver: String,
    pub availability_zone: String,
    pub capabilities: serde_json::Value,
    pub now: DateTime<Utc>,
}

const ATTACHMENT_COUNTS: &str = "select attach_status, count(*) from volume_attachment \
     where deleted = false group by attach_status order by attach_status";

const COMPUTE_CALL_COUNTS: &str =
    "select status, count(*) from compute_calls group by status order by status";

const HOST_FENCE_COUNTS: &str =
    "select outcome, count(*) from host_fences group by outcome order by outcome";

const VOLUME_COUNTS: &str =
    "select status, count(*) from volumes where deleted = false group by status order by status";

/// Every live snapshot and its volume.
const SNAPSHOT_SNAPSHOTS: &str =
    "select id, volume_id from snapshots where deleted = false order by id";

const SNAPSHOT_VOLUMES: &str = "select v.id, coalesce(v.name_id, v.id), v.status, \
     v.multiattach, v.host, v.reserved_growth from volumes v where v.deleted = false order by v.id";

/// Projects whose quotas the checker compares with their usage.
const SNAPSHOT_PROJECTS: &str = "\
    select project_id from volumes where deleted = false \
    union select project_id from snapshots where deleted = false \
    union select project_id from groups where deleted = false \
    union select project_id from backups where deleted = false \
    union select project_id from quotas where deleted = false \
    order by 1";

const SNAPSHOT_ATTACHMENTS: &str = "select a.id, a.volume_id, a.instance_uuid, a.attach_status \
     from volume_attachment a where a.deleted = false order by a.volume_id, a.created_at, a.id";

const SNAPSHOT_STRAY_SPECS: &str = "select s.attachment_id, s.key from attachment_specs s \
     join volume_attachment a on a.id = s.attachment_id \
     where s.deleted = false and a.deleted = true order by s.attachment_id, s.key";

const REGISTER_SERVICE: &str = "\
    insert into services (uuid, host, binary_name, backend_name, driver, availability_zone, \
                          capabilities, created_at, deleted) \
    values ($1, $2, $8, $3, $4, $5, $6, $7, false) \
    on conflict (host, binary_name) where deleted = false do nothing";

const REFRESH_SERVICE: &str = "\
    update services set driver = $2, availability_zone = $3, capabilities = $4, updated_at = $5 \
     where host = $1 and binary_name = $6 and deleted = false returning uuid";

#[async_trait]
impl<D: Database> Operations for SqlStore<D> {
    fn kind(&self) -> StoreKind {
        D::KIND
    }

    #[tracing::instrument(skip_all, err)]
    async fn ping(&self) -> Result<(), StoreError> {
        let _: Option<()> = self.db.fetch_optional(Sql::new("select 1")).await?;
        Ok(())
    }

    #[tracing::instrument(skip_all, err)]
    async fn status_counts(&self) -> Result<StatusCounts, StoreError> {
        let mut reads = self.db.begin_read().await?;
        let attachments = reads.fetch_all(Sql::new(ATTACHMENT_COUNTS)).await?;
        let volumes = reads.fetch_all(Sql::new(VOLUME_COUNTS)).await?;
        let compute_calls = reads.fetch_all(Sql::new(COMPUTE_CALL_COUNTS)).await?;
        let host_fences = reads.fetch_all(Sql::new(HOST_FENCE_COUNTS)).await?;
        Ok(StatusCounts {
            attachments,
            volumes,
            compute_calls,
            host_fences,
        })
    }

    fn pool_use(&self) -> Vec<PoolUse> {
        self.db.pool_use()
    }

    #[tracing::instrument(skip_all, err)]
    async fn consistency_snapshot(&self) -> Result<Snapshot, StoreError> {
        let mut tx = self.db.begin_snapshot().await?;
        let volumes: Vec<(VolumeId, VolumeId, VolumeStatus, bool, Option<String>, i64)> =
            tx.fetch_all(Sql::new(SNAPSHOT_VOLUMES)).await?;
        let attachments: Vec<(AttachmentId, VolumeId, Option<String>, AttachStatus)> =
            tx.fetch_all(Sql::new(SNAPSHOT_ATTACHMENTS)).await?;
        let specs: Vec<(AttachmentId, String)> =
            tx.fetch_all(Sql::new(SNAPSHOT_STRAY_SPECS)).await?;
        let projects: Vec<(String,)> = tx.fetch_all(Sql::new(SNAPSHOT_PROJECTS)).await?;
        let snapshots: Vec<(SnapshotId, VolumeId)> =
            tx.fetch_all(Sql::new(SNAPSHOT_SNAPSHOTS)).await?;
        let mut quotas = Vec::with_capacity(projects.len());
        for (project_id,) in projects {
            // Only limits stored in the database: the checker reads no configuration.
            let configured = QuotaDefaults::unlimited();
            let (rows, mut usage) = Self::quota_state(&mut tx, &project_id, &configured).await?;
            usage.groups = Self::count_groups(&mut tx, &project_id).await?;
            (usage.backups, usage.backup_gigabytes) =
                Self::count_project_backups(&mut tx, &project_id).await?;
            quotas.push(ProjectQuota {
                project_id,
                rows,
                usage,
            });
        }
        tx.commit().await?;
        Ok(Snapshot {
            volumes: volumes
                .into_iter()
                .map(
                    |(id, storage, status, multiattach, host, reserved_growth)| VolumeFacts {
                        id,
                        storage,
                        status,
                        multiattach,
                        host,
                        reserved_growth,
                    },
                )
                .collect(),
            attachments: attachments
                .into_iter()
                .map(
                    |(id, volume_id, instance_uuid, attach_status)| AttachmentFacts {
                        id,
                        volume_id,
                        instance_uuid,
                        attach_status,
                    },
                )
                .collect(),
            specs_of_deleted_attachments: specs,
            quotas,
            snapshots,
        })
    }

    #[tracing::instrument(skip_all, fields(host = %service.host), err)]
    async fn register_service(
        &self,
        service: &ServiceRegistration,
    ) -> Result<ServiceId, StoreError> {
        let capabilities = service.capabilities.to_string();
        let mut tx = self.db.begin_write().await?;
        let insert = Sql::new(REGISTER_SERVICE)
            .bind(service.new_uuid)
            .bind(&service.host)
            .bind(&service.backend_name)
            .bind(&service.driver)
            .bind(&service.availability_zone)
            .bind(&capabilities)
            .bind(service.now)
            .bind(service.binary);
        tx.execute(insert).await?;
        let refresh = Sql::new(REFRESH_SERVICE)
            .bind(&service.host)
            .bind(&service.driver)
            .bind(&service.availability_zone)
            .bind(&capabilities)
            .bind(service.now)
            .bind(service.binary);
        let (uuid,): (ServiceId,) = tx
            .fetch_optional(refresh)
            .await?
            .ok_or_else(|| StoreError::corrupt(format!("service {} vanished", service.host)))?;
        tx.commit().await?;
        Ok(uuid)
    }

    async fn close(&self) {
        self.db.close().await;
    }
}
