//! Projects' own default volume types (3.62, `/default-types`): one row per project,
//! replaced in place and removed outright, as Cinder's `default_volume_types` table is.
//! A type that is some project's default is not deleted (`volume_types.rs` asks here).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::SqlStore;
use crate::domain::ids::VolumeTypeId;
use crate::domain::volume_type::ProjectDefaultType;
use crate::domain::Outcome;
use std::convert::Infallible;

#[async_trait]
pub trait DefaultTypeStore: Send + Sync {
    /// Makes live type `type_id` the default of `project`, replacing any; `Gone` when the
    /// type is not live (checked under its row lock, so a concurrent delete loses or waits).
    async fn set_project_default_type(
        &self,
        project: &str,
        type_id: VolumeTypeId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<ProjectDefaultType, Infallible>, StoreError>;
    async fn project_default_type(
        &self,
        project: &str,
    ) -> Result<Option<ProjectDefaultType>, StoreError>;
    /// Every project's default, by project.
    async fn list_project_default_types(&self) -> Result<Vec<ProjectDefaultType>, StoreError>;
    /// Removes `project`'s default; nothing to remove is no error.
    async fn unset_project_default_type(&self, project: &str) -> Result<(), StoreError>;
}

const ONE: &str = "select project_id, volume_type_id from default_volume_types \
                   where project_id = $1";

const ALL: &str = "select project_id, volume_type_id from default_volume_types \
                   order by project_id";

const LOCK_LIVE_TYPE: &str = "select id from volume_types where id = $1 and deleted = false";

const UPSERT: &str = "insert into default_volume_types \
       (project_id, volume_type_id, created_at) values ($1, $2, $3) \
     on conflict (project_id) \
     do update set volume_type_id = excluded.volume_type_id, updated_at = excluded.created_at";

const UNSET: &str = "delete from default_volume_types where project_id = $1";

/// Whether some project has the type as its default: one row is enough.
pub(super) const DEFAULT_OF_SOME_PROJECT: &str =
    "select project_id from default_volume_types where volume_type_id = $1 limit 1";

impl FromRow for ProjectDefaultType {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(ProjectDefaultType {
            project_id: c.get()?,
            volume_type_id: c.get()?,
        })
    }
}

#[async_trait]
impl<D: Database> DefaultTypeStore for SqlStore<D> {
    #[tracing::instrument(skip_all, err)]
    async fn set_project_default_type(
        &self,
        project: &str,
        type_id: VolumeTypeId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<ProjectDefaultType, Infallible>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let lock = Sql::locking(LOCK_LIVE_TYPE, D::FOR_UPDATE).bind(type_id);
        let live: Option<(VolumeTypeId,)> = tx.fetch_optional(lock).await?;
        if live.is_none() {
            return Ok(Outcome::Gone);
        }
        let upsert = Sql::new(UPSERT).bind(project).bind(type_id).bind(now);
        tx.execute(upsert).await?;
        tx.commit().await?;
        Ok(Outcome::Done(ProjectDefaultType {
            project_id: project.to_owned(),
            volume_type_id: type_id,
        }))
    }

    #[tracing::instrument(skip_all, err)]
    async fn project_default_type(
        &self,
        project: &str,
    ) -> Result<Option<ProjectDefaultType>, StoreError> {
        self.db.fetch_optional(Sql::new(ONE).bind(project)).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn list_project_default_types(&self) -> Result<Vec<ProjectDefaultType>, StoreError> {
        self.db.fetch_all(Sql::new(ALL)).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn unset_project_default_type(&self, project: &str) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().await?;
        tx.execute(Sql::new(UNSET).bind(project)).await?;
        tx.commit().await?;
        Ok(())
    }
}
