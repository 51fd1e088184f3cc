//! Events whose payload is built in code and stored as it is: QoS specs changes, as
//! Cinder's API controller sends them from its `QoSSpecs` notifier (the specs' id or
//! name, their times, the specs given or the type concerned), and groups and group
//! snapshots, as its volume manager reports them. They concern no volume: the row has no
//! `volume_id` and belongs to the caller's project.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::{insert_from_payload, waking, POSTGRES_JSON, SQLITE_JSON};
use crate::domain::event::EventKind;
use crate::store::db::error::StoreError;
use crate::store::db::sql::Sql;
use crate::store::db::{Database, Executor};
use crate::store::{SqlStore, StoreKind};
use std::sync::LazyLock;

/// `$10` the payload, as JSON text.
static QOS_POSTGRES: LazyLock<String> = LazyLock::new(|| {
    format!(
        "with p as materialized (select cast(null as uuid) as id, \
            coalesce(cast($5 as text), '') as project_id, cast($10 as text) as payload) {}",
        insert_from_payload(&POSTGRES_JSON)
    )
});
static QOS_SQLITE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "with p as materialized (select null as id, \
            coalesce(cast($5 as text), '') as project_id, $10 as payload) {}",
        insert_from_payload(&SQLITE_JSON)
    )
});
static QOS_WAKING: LazyLock<String> = LazyLock::new(|| waking(&QOS_POSTGRES));

impl<D: Database> SqlStore<D> {
    /// Records `kind` (a `qos_specs.*`, `group.*` or `group_snapshot.*` event) with
    /// `payload`, in `tx`.
    pub(crate) async fn record_payload_event(
        &self,
        tx: &mut D::Tx,
        kind: EventKind,
        payload: Value,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        if !self.events {
            return Ok(());
        }
        let text = match D::KIND {
            StoreKind::Postgres => self.while_listening(&QOS_POSTGRES, &QOS_WAKING),
            StoreKind::Sqlite => &QOS_SQLITE,
        };
        let origin = crate::origin::current();
        let host = origin
            .publisher_id
            .strip_prefix("volume.")
            .unwrap_or(&origin.publisher_id);
        let events = [(Uuid::new_v4(), kind.event_type(), kind.priority())];
        let sql = Sql::new(text)
            .bind(serde_json::json!(events).to_string())
            .bind(format!("{}.{host}", kind.notifier()))
            .bind(None::<Uuid>)
            .bind(origin.user_id.clone())
            .bind(origin.project_id.clone())
            .bind(origin.request_id.clone())
            .bind(now)
            .bind(None::<Uuid>)
            .bind(1_i64)
            .bind(payload.to_string());
        tx.execute(sql).await?;
        Ok(())
    }
}
