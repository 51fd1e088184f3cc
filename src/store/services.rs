//! The `services` table as the admin views read and change it (`os-services`,
//! `os-hosts`, `scheduler-stats`), the heartbeat that keeps services `up`, and what each
//! backend holds (placement's free space).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::SqlStore;
use crate::domain::ids::ServiceId;
use crate::domain::service_record::{host_matches, ProjectUsage, ServiceRecord};

#[async_trait]
pub trait ServiceStore: Send + Sync {
    /// Live services whose host matches `host` (Cinder's host filter) and whose binary is
    /// `binary`, oldest first.
    async fn list_services(
        &self,
        host: Option<&str>,
        binary: Option<&str>,
    ) -> Result<Vec<ServiceRecord>, StoreError>;
    /// Enables or disables the service `binary` on exactly `host`; `None` when there is
    /// none. Enabling clears the reason.
    async fn set_service_disabled(
        &self,
        host: &str,
        binary: &str,
        disabled: bool,
        reason: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Option<ServiceRecord>, StoreError>;
    /// Freezes or thaws the volume services on `host` (and its backends); how many.
    async fn set_frozen(&self, host: &str, frozen: bool) -> Result<u64, StoreError>;
    /// Whether the backend `service` is frozen.
    async fn is_frozen(&self, service: ServiceId) -> Result<bool, StoreError>;
    /// Records that the services on `hosts` are alive.
    /// Reports the live services of `hosts` alive, except those of `silent` (a binary
    /// that cannot work yet).
    async fn heartbeat(
        &self,
        hosts: &[String],
        silent: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// The gigabytes of live volumes each backend holds, by `service_uuid`.
    async fn allocated_gb(&self) -> Result<Vec<(ServiceId, i64)>, StoreError>;
    /// Live volumes and snapshots on one backend, by project.
    async fn usage_on_backend(&self, service: ServiceId) -> Result<Vec<ProjectUsage>, StoreError>;
}

const SERVICE_COLUMNS: &str = "select uuid, host, binary_name, availability_zone, disabled, \
     disabled_reason, frozen, created_at, updated_at from services where deleted = false";

const SET_DISABLED: &str = "update services set disabled = $3, disabled_reason = $4, \
     updated_at = $5 where host = $1 and binary_name = $2 and deleted = false";

const SET_FROZEN: &str = "update services set frozen = $2 \
     where (host = $1 or host like $1 || '@%') and binary_name = 'cinder-volume' \
       and deleted = false";

const IS_FROZEN: &str = "select frozen from services where uuid = $1 and deleted = false";

const ALLOCATED: &str = "select service_uuid, cast(coalesce(sum(size), 0) as bigint) \
     from volumes where deleted = false and service_uuid is not null group by service_uuid";

const VOLUMES_ON_BACKEND: &str = "select project_id, count(*), \
     cast(coalesce(sum(size), 0) as bigint) from volumes \
     where service_uuid = $1 and deleted = false group by project_id order by project_id";

const SNAPSHOTS_ON_BACKEND: &str = "select s.project_id, count(*), \
     cast(coalesce(sum(s.volume_size), 0) as bigint) from snapshots s \
     join volumes v on v.id = s.volume_id \
     where v.service_uuid = $1 and s.deleted = false group by s.project_id";

impl FromRow for ServiceRecord {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(ServiceRecord {
            uuid: c.get()?,
            host: c.get()?,
            binary: c.get()?,
            availability_zone: c.get()?,
            disabled: c.get()?,
            disabled_reason: c.get()?,
            frozen: c.get()?,
            created_at: c.get()?,
            updated_at: c.get()?,
        })
    }
}

#[async_trait]
impl<D: Database> ServiceStore for SqlStore<D> {
    #[tracing::instrument(skip_all, err)]
    async fn list_services(
        &self,
        host: Option<&str>,
        binary: Option<&str>,
    ) -> Result<Vec<ServiceRecord>, StoreError> {
        let mut sql = Sql::new(SERVICE_COLUMNS);
        if let Some(binary) = binary {
            sql.push(" and binary_name = ").push_bind(binary.to_owned());
        }
        sql.push(" order by id");
        let all: Vec<ServiceRecord> = self.db.fetch_all(sql).await?;
        Ok(all
            .into_iter()
            .filter(|s| host.is_none_or(|h| host_matches(&s.host, h)))
            .collect())
    }

    #[tracing::instrument(skip_all, err)]
    async fn set_service_disabled(
        &self,
        host: &str,
        binary: &str,
        disabled: bool,
        reason: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Option<ServiceRecord>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let update = Sql::new(SET_DISABLED)
            .bind(host)
            .bind(binary)
            .bind(disabled)
            .bind(reason.map(str::to_owned))
            .bind(now);
        if tx.execute(update).await? == 0 {
            return Ok(None);
        }
        let mut read = Sql::new(SERVICE_COLUMNS);
        read.push(" and host = ")
            .push_bind(host.to_owned())
            .push(" and binary_name = ")
            .push_bind(binary.to_owned());
        let found: Option<ServiceRecord> = tx.fetch_optional(read).await?;
        tx.commit().await?;
        Ok(found)
    }

    #[tracing::instrument(skip_all, err)]
    async fn set_frozen(&self, host: &str, frozen: bool) -> Result<u64, StoreError> {
        self.db
            .execute(Sql::new(SET_FROZEN).bind(host).bind(frozen))
            .await
    }

    #[tracing::instrument(skip_all, err)]
    async fn is_frozen(&self, service: ServiceId) -> Result<bool, StoreError> {
        let found: Option<(bool,)> = self
            .db
            .fetch_optional(Sql::new(IS_FROZEN).bind(service))
            .await?;
        Ok(found.is_some_and(|(frozen,)| frozen))
    }

    #[tracing::instrument(skip_all, err)]
    async fn heartbeat(
        &self,
        hosts: &[String],
        silent: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        if hosts.is_empty() {
            return Ok(());
        }
        let mut sql = Sql::new("update services set updated_at = ");
        sql.push_bind(now)
            .push(" where deleted = false and host in (")
            .push_list(hosts.iter().cloned())
            .push(")");
        if let Some(binary) = silent {
            sql.push(" and binary_name <> ")
                .push_bind(binary.to_owned());
        }
        self.db.execute(sql).await?;
        Ok(())
    }

    #[tracing::instrument(skip_all, err)]
    async fn allocated_gb(&self) -> Result<Vec<(ServiceId, i64)>, StoreError> {
        self.db.fetch_all(Sql::new(ALLOCATED)).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn usage_on_backend(&self, service: ServiceId) -> Result<Vec<ProjectUsage>, StoreError> {
        let mut reads = self.db.begin_read().await?;
        let volumes: Vec<(String, i64, i64)> = reads
            .fetch_all(Sql::new(VOLUMES_ON_BACKEND).bind(service))
            .await?;
        let snapshots: Vec<(String, i64, i64)> = reads
            .fetch_all(Sql::new(SNAPSHOTS_ON_BACKEND).bind(service))
            .await?;
        let mut usage: Vec<ProjectUsage> = volumes
            .into_iter()
            .map(|(project_id, volume_count, volume_gb)| ProjectUsage {
                project_id,
                volume_count,
                volume_gb,
                ..ProjectUsage::default()
            })
            .collect();
        for (project, count, gb) in snapshots {
            if let Some(entry) = usage.iter_mut().find(|u| u.project_id == project) {
                entry.snapshot_count = count;
                entry.snapshot_gb = gb;
            }
        }
        Ok(usage)
    }
}
