//! Quota limits (per project and per quota class) and the usage they are checked
//! against. Usage is counted from the live volumes and snapshots, and growth in flight
//! from `volumes.reserved_growth` (set with `extending`, cleared when the new size is
//! recorded or the extend fails); every write that adds to either takes the project's
//! lock first (`Database::PROJECT_LOCK`), so concurrent changes in one project, in any
//! process, are counted one after the other.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::SqlStore;
use crate::domain::quota::{
    self, BelowUsage, QuotaDefaults, QuotaOwner, QuotaRows, Usage, DEFAULT_CLASS,
};

/// Limits set by admins, and what a project uses.
#[async_trait]
pub trait QuotaStore: Send + Sync {
    /// The project's own limits and the `default` class's (over `configured`), with the
    /// project's usage.
    async fn project_quotas(
        &self,
        project_id: &str,
        configured: &QuotaDefaults,
    ) -> Result<(QuotaRows, Usage), StoreError>;
    /// The limits set for quota class `class_name`.
    async fn class_quotas(&self, class_name: &str) -> Result<BTreeMap<String, i64>, StoreError>;
    /// Sets project limits; refused (`BelowUsage`) if one is below what the project
    /// uses, counted under the project's lock.
    async fn set_project_quotas(
        &self,
        project_id: &str,
        limits: &BTreeMap<String, i64>,
        now: DateTime<Utc>,
    ) -> Result<Result<(), BelowUsage>, StoreError>;
    /// Drops every limit set for the project (it falls back to the defaults).
    async fn delete_project_quotas(
        &self,
        project_id: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    async fn set_class_quotas(
        &self,
        class_name: &str,
        limits: &BTreeMap<String, i64>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
}

/// The project's rows (`true`) and the default class's (`false`), in one round trip.
const LIMIT_ROWS: &str = "\
    select true, resource, hard_limit from quotas where project_id = $1 and deleted = false \
    union all \
    select false, resource, hard_limit from quota_classes \
     where class_name = $2 and deleted = false";

const CLASS_ROWS: &str =
    "select resource, hard_limit from quota_classes where class_name = $1 and deleted = false";

/// Volumes, gigabytes in use and gigabytes reserved for growth, by type name. A swap's
/// temporary volume (`target:<id>`) is not counted, as Cinder does not count it.
const USAGE_BY_TYPE: &str = "\
    select t.name, count(*), cast(coalesce(sum(v.size), 0) as bigint), \
           cast(coalesce(sum(v.reserved_growth), 0) as bigint) \
      from volumes v join volume_types t on t.id = v.volume_type_id \
     where v.project_id = $1 and v.deleted = false \
       and (v.migration_status is null or v.migration_status not like 'target:%') \
     group by t.name";

/// Snapshots and the gigabytes they hold, by the type name of their volume.
const SNAPSHOT_USAGE_BY_TYPE: &str = "\
    select t.name, count(*), cast(coalesce(sum(s.volume_size), 0) as bigint) \
      from snapshots s join volumes v on v.id = s.volume_id \
      join volume_types t on t.id = v.volume_type_id \
     where s.project_id = $1 and s.deleted = false \
     group by t.name";

const UPSERT_PROJECT_LIMIT: &str = "\
    insert into quotas (project_id, resource, hard_limit, created_at, deleted) \
    values ($1, $2, $3, $4, false) \
    on conflict (project_id, resource) where deleted = false \
    do update set hard_limit = excluded.hard_limit, updated_at = excluded.created_at";

const UPSERT_CLASS_LIMIT: &str = "\
    insert into quota_classes (class_name, resource, hard_limit, created_at, deleted) \
    values ($1, $2, $3, $4, false) \
    on conflict (class_name, resource) where deleted = false \
    do update set hard_limit = excluded.hard_limit, updated_at = excluded.created_at";

const DELETE_PROJECT_LIMITS: &str = "update quotas set deleted = true, deleted_at = $2 \
                                      where project_id = $1 and deleted = false";

/// Renames the per-type resources of a renamed type, in both tables.
const RENAME_PROJECT_RESOURCE: &str =
    "update quotas set resource = $2, updated_at = $3 where resource = $1 and deleted = false";
const RENAME_CLASS_RESOURCE: &str = "update quota_classes set resource = $2, updated_at = $3 \
                                      where resource = $1 and deleted = false";

impl<D: Database> SqlStore<D> {
    /// Takes the project's quota lock for the rest of `tx`.
    pub(super) async fn lock_project(tx: &mut D::Tx, project_id: &str) -> Result<(), StoreError> {
        if let Some(lock) = D::PROJECT_LOCK {
            tx.execute(Sql::new(lock).bind(project_id)).await?;
        }
        Ok(())
    }

    /// Every quota check starts here: the project's lock for the rest of `tx` (so checks
    /// of one project take turns, in any process), then its limits and what it uses and
    /// has reserved, counted as of now.
    pub(super) async fn locked_quota(
        tx: &mut D::Tx,
        owner: &QuotaOwner,
    ) -> Result<(QuotaRows, Usage), StoreError> {
        Self::lock_project(tx, &owner.project_id).await?;
        Self::quota_state(tx, &owner.project_id, &owner.defaults).await
    }

    /// The limits that apply to the project (`configured` under the rows set) and what
    /// it uses, read in `tx`.
    pub(super) async fn quota_state(
        tx: &mut impl Executor,
        project_id: &str,
        configured: &QuotaDefaults,
    ) -> Result<(QuotaRows, Usage), StoreError> {
        let limits: Vec<(bool, String, i64)> = tx
            .fetch_all(Sql::new(LIMIT_ROWS).bind(project_id).bind(DEFAULT_CLASS))
            .await?;
        let mut rows = QuotaRows {
            configured: configured.clone(),
            ..QuotaRows::default()
        };
        for (own, resource, limit) in limits {
            let map = if own {
                &mut rows.project
            } else {
                &mut rows.defaults
            };
            map.insert(resource, limit);
        }
        let by_type: Vec<(String, i64, i64, i64)> = tx
            .fetch_all(Sql::new(USAGE_BY_TYPE).bind(project_id))
            .await?;
        let mut usage = Usage::default();
        for (type_name, volumes, gigabytes, growth) in by_type {
            usage.volumes += volumes;
            usage.gigabytes += gigabytes;
            if growth != 0 {
                usage.reserve_growth(&type_name, growth);
            }
            usage.by_type.insert(type_name, (volumes, gigabytes));
        }
        let snapshots: Vec<(String, i64, i64)> = tx
            .fetch_all(Sql::new(SNAPSHOT_USAGE_BY_TYPE).bind(project_id))
            .await?;
        for (type_name, count, gigabytes) in snapshots {
            usage.snapshots += count;
            usage.gigabytes += gigabytes;
            usage.by_type.entry(type_name.clone()).or_default().1 += gigabytes;
            usage.snapshots_by_type.insert(type_name, count);
        }
        Ok((rows, usage))
    }

    /// Moves per-type limits from `old` to `new` type name (Cinder's
    /// `update_quota_resource`), inside the rename's transaction.
    pub(super) async fn rename_type_quotas(
        tx: &mut D::Tx,
        old: &str,
        new: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        for part in quota::PER_TYPE_PARTS {
            let (from, to) = (quota::per_type(part, old), quota::per_type(part, new));
            for statement in [RENAME_PROJECT_RESOURCE, RENAME_CLASS_RESOURCE] {
                tx.execute(Sql::new(statement).bind(&from).bind(&to).bind(now))
                    .await?;
            }
        }
        Ok(())
    }
}

#[async_trait]
impl<D: Database> QuotaStore for SqlStore<D> {
    #[tracing::instrument(skip_all, err)]
    async fn project_quotas(
        &self,
        project_id: &str,
        configured: &QuotaDefaults,
    ) -> Result<(QuotaRows, Usage), StoreError> {
        let mut reads = self.db.begin_read().await?;
        let (rows, mut usage) = Self::quota_state(&mut reads, project_id, configured).await?;
        usage.groups = Self::count_groups(&mut reads, project_id).await?;
        (usage.backups, usage.backup_gigabytes) =
            Self::count_project_backups(&mut reads, project_id).await?;
        Ok((rows, usage))
    }

    #[tracing::instrument(skip_all, err)]
    async fn class_quotas(&self, class_name: &str) -> Result<BTreeMap<String, i64>, StoreError> {
        let rows: Vec<(String, i64)> = self
            .db
            .fetch_all(Sql::new(CLASS_ROWS).bind(class_name))
            .await?;
        Ok(rows.into_iter().collect())
    }

    #[tracing::instrument(skip_all, err)]
    async fn set_project_quotas(
        &self,
        project_id: &str,
        limits: &BTreeMap<String, i64>,
        now: DateTime<Utc>,
    ) -> Result<Result<(), BelowUsage>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        Self::lock_project(&mut tx, project_id).await?;
        let (_, mut usage) =
            Self::quota_state(&mut tx, project_id, &QuotaDefaults::default()).await?;
        usage.groups = Self::count_groups(&mut tx, project_id).await?;
        (usage.backups, usage.backup_gigabytes) =
            Self::count_project_backups(&mut tx, project_id).await?;
        if let Err(below) = quota::check_new_limits(&usage, limits) {
            return Ok(Err(below));
        }
        for (resource, limit) in limits {
            let upsert = Sql::new(UPSERT_PROJECT_LIMIT)
                .bind(project_id)
                .bind(resource)
                .bind(*limit)
                .bind(now);
            tx.execute(upsert).await?;
        }
        tx.commit().await?;
        Ok(Ok(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn delete_project_quotas(
        &self,
        project_id: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let delete = Sql::new(DELETE_PROJECT_LIMITS).bind(project_id).bind(now);
        self.db.execute(delete).await?;
        Ok(())
    }

    #[tracing::instrument(skip_all, err)]
    async fn set_class_quotas(
        &self,
        class_name: &str,
        limits: &BTreeMap<String, i64>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().await?;
        for (resource, limit) in limits {
            let upsert = Sql::new(UPSERT_CLASS_LIMIT)
                .bind(class_name)
                .bind(resource)
                .bind(*limit)
                .bind(now);
            tx.execute(upsert).await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
