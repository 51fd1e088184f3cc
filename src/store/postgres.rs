//! The production store: PostgreSQL, shared by any number of API processes.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgPool, PgPoolOptions};
use uuid::Uuid;

use super::sqlite::{parse_attach_status, parse_json};
use super::{ConnectError, ConnectOptions, Store, StoreError, StoreKind};
use crate::domain::attachment::{Attachment, AttachmentScope};

static MIGRATOR: Migrator = sqlx::migrate!("migrations/postgres");

pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
    pub async fn connect(options: &ConnectOptions) -> Result<Self, ConnectError> {
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(options.acquire_timeout)
            .connect(&options.url)
            .await
            .map_err(|source| ConnectError::Connect {
                url: super::redact_password(&options.url),
                source,
            })?;
        if options.migrate {
            MIGRATOR.run(&pool).await?;
        }
        Ok(Self { pool })
    }
}

#[derive(sqlx::FromRow)]
struct AttachmentRow {
    id: Uuid,
    volume_id: Uuid,
    instance_uuid: Option<String>,
    attach_status: String,
    attach_mode: Option<String>,
    attach_time: Option<DateTime<Utc>>,
    detach_time: Option<DateTime<Utc>>,
    connection_info: Option<String>,
    created_at: DateTime<Utc>,
}

impl TryFrom<AttachmentRow> for Attachment {
    type Error = StoreError;

    fn try_from(row: AttachmentRow) -> Result<Self, StoreError> {
        Ok(Attachment {
            id: row.id,
            volume_id: row.volume_id,
            instance_uuid: row.instance_uuid,
            attach_status: parse_attach_status(&row.attach_status)?,
            attach_mode: row.attach_mode,
            attach_time: row.attach_time,
            detach_time: row.detach_time,
            connection_info: parse_json(row.connection_info)?,
            created_at: row.created_at,
        })
    }
}

const LIST_ATTACHMENTS: &str = "
    select a.id, a.volume_id, a.instance_uuid, a.attach_status, a.attach_mode,
           a.attach_time, a.detach_time, a.connection_info, a.created_at
      from volume_attachment a
      join volumes v on v.id = a.volume_id
     where a.deleted = false
       and ($1::text is null or v.project_id = $1)
     order by a.created_at desc, a.id desc";

#[async_trait]
impl Store for PgStore {
    fn kind(&self) -> StoreKind {
        StoreKind::Postgres
    }

    #[tracing::instrument(skip_all, err)]
    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("select 1").execute(&self.pool).await?;
        Ok(())
    }

    #[tracing::instrument(skip_all, err)]
    async fn list_attachments(
        &self,
        scope: &AttachmentScope,
    ) -> Result<Vec<Attachment>, StoreError> {
        let rows: Vec<AttachmentRow> = sqlx::query_as(LIST_ATTACHMENTS)
            .bind(scope.project_id.as_deref())
            .fetch_all(&self.pool)
            .await?;
        rows.into_iter().map(Attachment::try_from).collect()
    }

    async fn close(&self) {
        self.pool.close().await;
    }
}
