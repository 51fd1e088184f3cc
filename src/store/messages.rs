//! User messages (`/messages`): why something a user asked for failed later.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::SqlStore;
use crate::domain::ids::MessageId;
use crate::domain::message::Message;
use crate::domain::Outcome;
use std::convert::Infallible;

#[async_trait]
pub trait MessageStore: Send + Sync {
    async fn insert_message(&self, message: &Message) -> Result<(), StoreError>;
    /// Messages of `project_id` (`None`: all), newest first.
    async fn list_messages(&self, project_id: Option<&str>) -> Result<Vec<Message>, StoreError>;
    async fn get_message(&self, id: MessageId) -> Result<Option<Message>, StoreError>;
    async fn delete_message(
        &self,
        id: MessageId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError>;
}

const MESSAGE_COLUMNS: &str = "select id, project_id, request_id, resource_type, resource_uuid, \
     event_id, message_level, user_message, created_at, expires_at from messages";

const INSERT_MESSAGE: &str = "\
    insert into messages (id, project_id, request_id, resource_type, resource_uuid, event_id, \
                          message_level, user_message, created_at, expires_at, deleted) \
    values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, false)";

const DELETE_MESSAGE: &str =
    "update messages set deleted = true, deleted_at = $2 where id = $1 and deleted = false";

impl<D: Database> SqlStore<D> {
    /// Inserts `message` in `tx`.
    pub(super) async fn add_message(tx: &mut D::Tx, message: &Message) -> Result<(), StoreError> {
        let sql = Sql::new(INSERT_MESSAGE)
            .bind(message.id)
            .bind(&message.project_id)
            .bind(&message.request_id)
            .bind(&message.resource_type)
            .bind(&message.resource_uuid)
            .bind(&message.event_id)
            .bind(&message.message_level)
            .bind(&message.user_message)
            .bind(message.created_at)
            .bind(message.expires_at);
        tx.execute(sql).await?;
        Ok(())
    }
}

impl FromRow for Message {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(Message {
            id: c.get()?,
            project_id: c.get()?,
            request_id: c.get()?,
            resource_type: c.get()?,
            resource_uuid: c.get()?,
            event_id: c.get()?,
            message_level: c.get()?,
            user_message: c.get()?,
            created_at: c.get()?,
            expires_at: c.get()?,
        })
    }
}

#[async_trait]
impl<D: Database> MessageStore for SqlStore<D> {
    #[tracing::instrument(skip_all, err)]
    async fn insert_message(&self, message: &Message) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().await?;
        Self::add_message(&mut tx, message).await?;
        tx.commit().await
    }

    #[tracing::instrument(skip_all, err)]
    async fn list_messages(&self, project_id: Option<&str>) -> Result<Vec<Message>, StoreError> {
        let mut sql = Sql::new(MESSAGE_COLUMNS);
        sql.push(" where deleted = false");
        if let Some(project) = project_id {
            sql.push(" and project_id = ").push_bind(project);
        }
        sql.push(" order by created_at desc, id desc");
        self.db.fetch_all(sql).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn get_message(&self, id: MessageId) -> Result<Option<Message>, StoreError> {
        let mut sql = Sql::new(MESSAGE_COLUMNS);
        sql.push(" where id = ")
            .push_bind(id)
            .push(" and deleted = false");
        self.db.fetch_optional(sql).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn delete_message(
        &self,
        id: MessageId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError> {
        Ok(
            match self
                .db
                .execute(Sql::new(DELETE_MESSAGE).bind(id).bind(now))
                .await?
            {
                0 => Outcome::Gone,
                _ => Outcome::Done(()),
            },
        )
    }
}
