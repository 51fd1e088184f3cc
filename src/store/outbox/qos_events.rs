//! Events whose payload is built in code and stored as it is: QoS specs changes, as
//! Cinder's API controller sends them from its `QoSSpecs` notifier (the specs' id or
//! name, their times, the specs given or the type concerned), and groups and group
//! snapshots, as its volume manager reports them. They concern no volume: the row has no
//! `volume_id` and belongs to the caller's project. Host fences (`volume.host_fence`)
//! are the one kind built in code that concerns a volume: their row names it and belongs
//! to its project.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::{insert_from_payload, waking, POSTGRES_JSON, SQLITE_JSON};
use crate::domain::event::EventKind;
use crate::domain::ids::VolumeId;
use crate::store::db::error::StoreError;
use crate::store::db::sql::Sql;
use crate::store::db::{Database, Executor};
use crate::store::{SqlStore, StoreKind};
use std::sync::LazyLock;

/// `$9` the payload, as JSON text.
static QOS_POSTGRES: LazyLock<String> = LazyLock::new(|| {
    format!(
        "with p as materialized (select cast(null as uuid) as id, \
            coalesce(cast($5 as text), '') as project_id, cast($9 as text) as payload) {}",
        insert_from_payload(&POSTGRES_JSON)
    )
});
static QOS_SQLITE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "with p as materialized (select null as id, \
            coalesce(cast($5 as text), '') as project_id, $9 as payload) {}",
        insert_from_payload(&SQLITE_JSON)
    )
});
static QOS_WAKING: LazyLock<String> = LazyLock::new(|| waking(&QOS_POSTGRES));

/// The same for an event about the volume whose storage is `$8` (`Volume::storage_id`):
/// the row names that volume and belongs to its project.
const VOLUME_OF_STORAGE: &str = "(v.id = $8 and v.name_id is null) or v.name_id = $8 limit 1";
/// The payload CTE of such an event: `payload` the dialect's `$9`.
fn volume_payload(payload: &str) -> String {
    format!(
        "with p as materialized (select \
            coalesce((select v.id from volumes v where {VOLUME_OF_STORAGE}), $8) as id, \
            coalesce((select v.project_id from volumes v where {VOLUME_OF_STORAGE}), \
                     cast($5 as text), '') as project_id, \
            {payload} as payload) "
    )
}
static VOLUME_POSTGRES: LazyLock<String> =
    LazyLock::new(|| volume_payload("cast($9 as text)") + &insert_from_payload(&POSTGRES_JSON));
static VOLUME_SQLITE: LazyLock<String> =
    LazyLock::new(|| volume_payload("$9") + &insert_from_payload(&SQLITE_JSON));
static VOLUME_WAKING: LazyLock<String> = LazyLock::new(|| waking(&VOLUME_POSTGRES));

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
        self.record_built_event(tx, kind, None, payload, now).await
    }

    /// Records `kind` about the volume whose storage is `volume` with `payload`, in `tx`.
    pub(crate) async fn record_volume_payload_event(
        &self,
        tx: &mut D::Tx,
        kind: EventKind,
        volume: VolumeId,
        payload: Value,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.record_built_event(tx, kind, Some(volume), payload, now)
            .await
    }

    async fn record_built_event(
        &self,
        tx: &mut D::Tx,
        kind: EventKind,
        volume: Option<VolumeId>,
        payload: Value,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        if !self.events {
            return Ok(());
        }
        let text = match (D::KIND, volume.is_some()) {
            (StoreKind::Postgres, false) => self.while_listening(&QOS_POSTGRES, &QOS_WAKING),
            (StoreKind::Postgres, true) => self.while_listening(&VOLUME_POSTGRES, &VOLUME_WAKING),
            (StoreKind::Sqlite, false) => &QOS_SQLITE,
            (StoreKind::Sqlite, true) => &VOLUME_SQLITE,
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
            .bind(volume)
            .bind(payload.to_string());
        tx.execute(sql).await?;
        Ok(())
    }
}
