//! The embedded store: one SQLite file in WAL mode.
//!
//! Ids are kept as hyphenated text (sqlx would otherwise bind a `Uuid` as a BLOB).
//! Write transactions start with `BEGIN IMMEDIATE` so they take the write lock up front
//! and wait on `busy_timeout` instead of failing with SQLITE_BUSY half-way.

use std::str::FromStr;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use uuid::fmt::Hyphenated;

use super::{ConnectError, ConnectOptions, Store, StoreError, StoreKind};
use crate::domain::attachment::{AttachStatus, Attachment, AttachmentScope};

static MIGRATOR: Migrator = sqlx::migrate!("migrations/sqlite");

pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    pub async fn connect(options: &ConnectOptions) -> Result<Self, ConnectError> {
        let connect_error = |source| ConnectError::Connect {
            url: options.url.clone(),
            source,
        };
        let sqlite = SqliteConnectOptions::from_str(&options.url)
            .map_err(connect_error)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(options.acquire_timeout);
        if let Some(dir) = sqlite.get_filename().parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|source| ConnectError::Directory {
                    path: dir.display().to_string(),
                    source,
                })?;
            }
        }
        let pool = SqlitePoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(options.acquire_timeout)
            .connect_with(sqlite)
            .await
            .map_err(connect_error)?;
        if options.migrate {
            MIGRATOR.run(&pool).await?;
        }
        Ok(Self { pool })
    }
}

#[derive(sqlx::FromRow)]
struct AttachmentRow {
    id: Hyphenated,
    volume_id: Hyphenated,
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
            id: row.id.into_uuid(),
            volume_id: row.volume_id.into_uuid(),
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

pub(super) fn parse_attach_status(text: &str) -> Result<AttachStatus, StoreError> {
    AttachStatus::parse(text).ok_or_else(|| StoreError::Corrupt(format!("attach_status {text:?}")))
}

pub(super) fn parse_json(text: Option<String>) -> Result<Option<serde_json::Value>, StoreError> {
    text.map(|t| serde_json::from_str(&t).map_err(|e| StoreError::Corrupt(e.to_string())))
        .transpose()
}

const LIST_ATTACHMENTS: &str = "
    select a.id, a.volume_id, a.instance_uuid, a.attach_status, a.attach_mode,
           a.attach_time, a.detach_time, a.connection_info, a.created_at
      from volume_attachment a
      join volumes v on v.id = a.volume_id
     where a.deleted = false
       and ($1 is null or v.project_id = $1)
     order by a.created_at desc, a.id desc";

#[async_trait]
impl Store for SqliteStore {
    fn kind(&self) -> StoreKind {
        StoreKind::Sqlite
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
