//! Calls owed to Nova (`compute_calls`): recorded in the transaction of the change that
//! owes them (`record_compute_call`), claimed by one relay at a time for a lease, and
//! settled with what Nova said (a user message beside a call given up).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::SqlStore;
use crate::domain::attach::LiveAttachment;
use crate::domain::compute_call::{
    ComputeCall, ComputeCallKind, ComputeCallStatus, NewComputeCall, Settlement,
};
use crate::domain::ids::VolumeId;
use crate::domain::message::{Message, Resource};

#[async_trait]
pub trait ComputeCallStore: Send + Sync {
    /// Takes, for `lease_until`, up to `limit` pending calls due at `now`, oldest first
    /// (a call another relay holds is skipped until its lease ends).
    async fn claim_compute_calls(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<ComputeCall>, StoreError>;
    /// Writes how try number `attempt` of call `id` ended (a failed call's user message
    /// in the same transaction).
    async fn settle_compute_call(
        &self,
        call: &ComputeCall,
        attempt: i64,
        settlement: &Settlement,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Every call recorded for a volume, oldest first.
    async fn compute_calls_of(&self, volume: VolumeId) -> Result<Vec<ComputeCall>, StoreError>;
}

const OF_VOLUME: &str = "select id, kind, volume_id, new_volume_id, project_id, servers, \
     status, attempts, next_attempt_at, answer, created_at from compute_calls \
     where volume_id = $1 order by created_at, id";

const INSERT: &str = "insert into compute_calls (id, kind, volume_id, new_volume_id, \
     project_id, servers, status, attempts, next_attempt_at, created_at) \
     values ($1, $2, $3, $4, $5, $6, 'pending', 0, $7, $7)";

/// The calls due, re-checked in the update itself: a relay that waited on another's row
/// lock finds it claimed and leaves it.
const CLAIM: &str = "update compute_calls set claimed_until = $2, updated_at = $1 \
     where id in (select id from compute_calls where status = 'pending' \
                  and next_attempt_at <= $1 \
                  and (claimed_until is null or claimed_until < $1) \
                  order by next_attempt_at, created_at limit $3) \
       and status = 'pending' and (claimed_until is null or claimed_until < $1) \
     returning id, kind, volume_id, new_volume_id, project_id, servers, status, attempts, \
               next_attempt_at, answer, created_at";

const SETTLE: &str = "update compute_calls set status = $2, attempts = $3, \
     next_attempt_at = $4, answer = $5, claimed_until = null, updated_at = $6 where id = $1";

impl FromRow for ComputeCall {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(ComputeCall {
            id: c.get()?,
            kind: c.get()?,
            volume_id: c.get()?,
            new_volume_id: c.get()?,
            project_id: c.get()?,
            servers: {
                let text: String = c.get()?;
                serde_json::from_str(&text).map_err(StoreError::corrupt)?
            },
            status: c.get()?,
            attempts: c.get()?,
            next_attempt_at: c.get()?,
            answer: c.get()?,
            created_at: c.get()?,
        })
    }
}

impl<D: Database> SqlStore<D> {
    /// Records in `tx` the event `kind` of volume `id` owed to the servers of its `live`
    /// attachments, when Nova is told at all (`tell_nova`: the volume's project).
    pub(super) async fn owe_event(
        tx: &mut D::Tx,
        kind: ComputeCallKind,
        id: VolumeId,
        tell_nova: Option<&str>,
        live: &[LiveAttachment],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let servers = live.iter().filter_map(|a| a.instance_uuid.clone());
        match tell_nova.and_then(|project| NewComputeCall::event(kind, id, project, servers, now)) {
            Some(call) => Self::record_compute_call(tx, &call).await,
            None => Ok(()),
        }
    }

    /// Records `call` in `tx`, due at once.
    pub(super) async fn record_compute_call(
        tx: &mut D::Tx,
        call: &NewComputeCall,
    ) -> Result<(), StoreError> {
        let servers = serde_json::to_string(&call.servers).map_err(StoreError::corrupt)?;
        let sql = Sql::new(INSERT)
            .bind(call.id)
            .bind(call.kind)
            .bind(call.volume_id)
            .bind(call.new_volume_id)
            .bind(&call.project_id)
            .bind(servers)
            .bind(call.created_at);
        tx.execute(sql).await?;
        Ok(())
    }
}

#[async_trait]
impl<D: Database> ComputeCallStore for SqlStore<D> {
    #[tracing::instrument(skip_all, err)]
    async fn claim_compute_calls(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<ComputeCall>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let sql = Sql::new(CLAIM).bind(now).bind(lease_until).bind(limit);
        let claimed: Vec<ComputeCall> = tx.fetch_all(sql).await?;
        tx.commit().await?;
        Ok(claimed)
    }

    #[tracing::instrument(skip_all, err)]
    async fn settle_compute_call(
        &self,
        call: &ComputeCall,
        attempt: i64,
        settlement: &Settlement,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let (status, next, answer) = match settlement {
            Settlement::Sent { answer } => (ComputeCallStatus::Sent, now, answer),
            Settlement::Retry { at, answer } => (ComputeCallStatus::Pending, *at, answer),
            Settlement::Failed { answer, .. } => (ComputeCallStatus::Failed, now, answer),
        };
        let mut tx = self.db.begin_write().await?;
        let sql = Sql::new(SETTLE)
            .bind(call.id)
            .bind(status)
            .bind(attempt)
            .bind(next)
            .bind(answer.as_str())
            .bind(now);
        tx.execute(sql).await?;
        if let Settlement::Failed {
            told: Some(told), ..
        } = settlement
        {
            let about = (Resource::Volume, &call.volume_id as &dyn std::fmt::Display);
            let message = Message::error(about, call.project_id.clone(), None, *told, now);
            Self::add_message(&mut tx, &message).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    #[tracing::instrument(skip_all, err)]
    async fn compute_calls_of(&self, volume: VolumeId) -> Result<Vec<ComputeCall>, StoreError> {
        self.db.fetch_all(Sql::new(OF_VOLUME).bind(volume)).await
    }
}
