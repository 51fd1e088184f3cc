//! The outbox of notifications (`domain::event`). A write that Cinder would notify about
//! records its events with `record_events`, inside its own transaction, so an event
//! exists exactly when its change committed. Each point of a transaction that records
//! events adds one row to `outbox`: the events as an array (event i numbered `seq + i`)
//! and their one payload (Cinder's volume usage info). The attachment writes build it in
//! the service from the rows their lock read, changed as the write changes them
//! (`domain::volume_usage`), and bind it into one of their own statements; the other
//! writes have the database build it from the rows as the transaction left them, in the
//! statement that records it. The relay reads the pending rows in `seq` order (`reads`)
//! and marks a row sent once the broker confirmed all its events; one process relays at a time, the
//! holder of a lease row. Rows a 0.2.0 process recorded, one per event, in `events`, are
//! read and relayed alongside until a contract step moves them.

mod qos_events;
mod reads;
mod type_events;
#[cfg(test)]
mod usage_tests;

use std::sync::LazyLock;

use async_trait::async_trait;
use std::sync::atomic::Ordering;
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::db::error::StoreError;
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::{SqlStore, StoreKind};
use crate::domain::event::{EventFilters, EventKind, OutboxRow, RecordedEvent};
use crate::domain::ids::{AttachmentId, SnapshotId, VolumeId};
use crate::domain::volume_usage::VolumeUsage;
pub(crate) use type_events::SpecsChange;

#[async_trait]
pub trait EventStore: Send + Sync {
    /// Recorded events matching `filters`, oldest first.
    async fn list_events(&self, filters: &EventFilters) -> Result<Vec<RecordedEvent>, StoreError>;

    /// About `limit` events the broker has not confirmed yet, in `seq` order: the
    /// events of the rows that hold the first `limit`, so a row is never cut in two.
    async fn pending_events(&self, limit: u32) -> Result<Vec<RecordedEvent>, StoreError>;

    /// How many events wait for the broker, and when the oldest of them was recorded.
    async fn event_backlog(&self) -> Result<EventBacklog, StoreError>;

    /// The broker confirmed every event these rows hold.
    async fn mark_events_sent(
        &self,
        rows: &[OutboxRow],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;

    /// Waits for new events, as the relay's lease holder with nothing left to send: on
    /// PostgreSQL until a write of this process records one (it notifies while the relay
    /// waits) or `longest` passed; where the database cannot notify, for `poll`.
    async fn wait_for_events(&self, poll: Duration, longest: Duration) -> Result<(), StoreError>;

    /// Takes or renews the relay's lease for `holder` until `until` (refused while
    /// another holder's lease runs). Whether `holder` holds it now.
    async fn take_relay_lease(
        &self,
        holder: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
}

/// The events the broker has not confirmed yet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventBacklog {
    pub pending: i64,
    /// When the oldest of them was recorded.
    pub oldest: Option<DateTime<Utc>>,
}

/// The JSON functions of each database, for the payload statement.
struct JsonDialect {
    object: &'static str,
    array_agg: &'static str,
    object_agg: &'static str,
    empty_array: &'static str,
    empty_object: &'static str,
    /// Wraps a subquery whose value is JSON (SQLite loses the JSON-ness of a value
    /// passed through a subquery; `json()` restores it).
    subquery_open: &'static str,
    subquery_close: &'static str,
    to_text: &'static str,
    /// `v.multiattach` as a JSON boolean (SQLite keeps booleans as 0 and 1).
    multiattach: &'static str,
    /// The column and value of the row's number where the insert gives one: SQLite's
    /// next number of the counter both outbox tables share (migration 0028).
    seq_column: &'static str,
    seq_value: &'static str,
}

const POSTGRES_JSON: JsonDialect = JsonDialect {
    object: "json_build_object",
    array_agg: "json_agg",
    object_agg: "json_object_agg",
    empty_array: "'[]'::json",
    empty_object: "'{}'::json",
    subquery_open: "(",
    subquery_close: ")",
    to_text: "::text",
    multiattach: "v.multiattach",
    seq_column: "",
    seq_value: "",
};

const SQLITE_JSON: JsonDialect = JsonDialect {
    object: "json_object",
    array_agg: "json_group_array",
    object_agg: "json_group_object",
    empty_array: "json('[]')",
    empty_object: "json('{}')",
    subquery_open: "json((",
    subquery_close: "))",
    to_text: "",
    multiattach: "json(case when v.multiattach then 'true' else 'false' end)",
    seq_column: "seq, ",
    seq_value: "(select seq from sqlite_sequence where name = 'events') + 1, ",
};

/// Records the events of one point of a transaction about one volume as one row, their
/// payload built once: `$1` the events as a JSON array of `[message id, event type,
/// priority]`, in order, `$2` publisher, `$3` attachment (or null), `$4` caller user, `$5`
/// caller project, `$6` request id, `$7` time, `$8` the volume. The payload has the
/// fields of Cinder's `_usage_from_volume` (no replication, no glance metadata), plus the
/// attachment the events are about, if any (on a volume shared by 64 hosts it is about
/// 16 KB: stored once, not once per event, BENCHMARKS.md).
fn insert_events(d: &JsonDialect) -> String {
    let JsonDialect {
        object,
        array_agg,
        object_agg,
        empty_array,
        empty_object,
        subquery_open: open,
        subquery_close: close,
        to_text,
        multiattach,
        ..
    } = d;
    let attachment = format!(
        "{object}('id', a.id, 'volume_id', a.volume_id, 'instance_uuid', a.instance_uuid, \
                   'attached_host', a.attached_host, 'mountpoint', a.mountpoint, \
                   'attach_time', a.attach_time, 'detach_time', a.detach_time, \
                   'attach_status', a.attach_status, 'attach_mode', a.attach_mode)"
    );
    format!(
        "with p as materialized (\
           select v.id, v.project_id, \
                {object}('tenant_id', v.project_id, 'host', v.host, 'user_id', v.user_id, \
                  'availability_zone', v.availability_zone, 'volume_id', v.id, \
                  'volume_type', v.volume_type_id, 'display_name', v.display_name, \
                  'launched_at', v.created_at, 'created_at', v.created_at, \
                  'status', v.status, 'snapshot_id', v.snapshot_id, 'size', v.size, \
                  'multiattach', {multiattach}, 'replication_status', 'disabled', \
                  'replication_extended_status', null, 'replication_driver_data', null, \
                  'metadata', coalesce({open}select {object_agg}(m.key, m.value) \
                      from volume_metadata m where m.volume_id = v.id and m.deleted = false\
                      {close}, {empty_object}), \
                  'volume_attachment', coalesce({open}select {array_agg}({attachment}) \
                      from volume_attachment a where a.volume_id = v.id and a.deleted = false\
                      {close}, {empty_array}), \
                  'attachment_id', $3, \
                  'attachment', {open}select {attachment} from volume_attachment a \
                      where a.id = $3{close}){to_text} as payload \
             from volumes v where v.id = $8) \
         {}",
        insert_from_payload(d)
    )
}

/// The insert of every events statement, from `p` (the volume's id or null, the
/// project and the payload): one row.
fn insert_from_payload(d: &JsonDialect) -> String {
    let JsonDialect {
        seq_column,
        seq_value,
        ..
    } = d;
    format!(
        "insert into outbox ({seq_column}events, publisher_id, volume_id, attachment_id, \
                             project_id, caller_user_id, caller_project_id, request_id, \
                             created_at, payload) \
         select {seq_value}$1, $2, p.id, $3, p.project_id, $4, $5, $6, $7, p.payload from p"
    )
}

/// Records the events of `points` points of one transaction about one volume, each
/// with the payload the service built from the rows its lock read (`domain::volume_usage`):
/// no re-read, and a plain insert, so it can be one of the writes of the statement it
/// follows. `$1` publisher, `$2` the volume, `$3` attachment (or null), `$4` the volume's
/// project, `$5` caller user, `$6` caller project, `$7` request id, `$8` time; point k
/// (from 0) `$(9 + 2k)` its events (as `insert_events`' `$1`) and `$(10 + 2k)` its payload.
/// On PostgreSQL one statement for all points, their rows numbered in the order given
/// (the writes of one statement run in no set order, so the points cannot be two); on
/// SQLite one point a statement, as each takes the next number of the shared counter.
fn insert_usage_events(points: usize, waking: bool) -> String {
    let rows: Vec<String> = (0..points)
        .map(|k| format!("(${}, ${})", 9 + 2 * k, 10 + 2 * k))
        .collect();
    // As `waking`, from a subquery: there is no `p` to join.
    let wake = if waking {
        format!(", (select pg_notify('{RELAY_CHANNEL}', '')) wake")
    } else {
        String::new()
    };
    format!(
        "insert into outbox ({USAGE_EVENT_COLUMNS}) \
         select e.events, {USAGE_EVENT_SHARED}, e.payload \
           from (values {}) as e (events, payload){wake}",
        rows.join(", ")
    )
}

/// `insert_usage_events` on SQLite, for one point.
fn insert_usage_events_sqlite() -> String {
    let JsonDialect {
        seq_column,
        seq_value,
        ..
    } = SQLITE_JSON;
    format!(
        "insert into outbox ({seq_column}{USAGE_EVENT_COLUMNS}) \
         select {seq_value}$9, {USAGE_EVENT_SHARED}, $10"
    )
}

const USAGE_EVENT_COLUMNS: &str = "events, publisher_id, volume_id, attachment_id, project_id, \
     caller_user_id, caller_project_id, request_id, created_at, payload";
const USAGE_EVENT_SHARED: &str = "$1, $2, $3, $4, $5, $6, $7, $8";

/// Like `insert_events`, for events about snapshot `$8` (`$3` null): the payload has the
/// fields of Cinder's `_usage_from_snapshot`; the events belong to the snapshot's volume
/// and project.
fn insert_snapshot_events(d: &JsonDialect) -> String {
    // A payload key, not a status: kept out of the SQL text, which spells no status.
    const DELETED_KEY: &str = "deleted";
    let JsonDialect {
        object,
        object_agg,
        empty_object,
        subquery_open: open,
        subquery_close: close,
        to_text,
        ..
    } = d;
    format!(
        "with p as materialized (\
           select v.id, s.project_id, \
                {object}('tenant_id', s.project_id, 'user_id', s.user_id, \
                  'availability_zone', v.availability_zone, 'volume_id', s.volume_id, \
                  'volume_size', s.volume_size, 'snapshot_id', s.id, \
                  'display_name', s.display_name, 'created_at', s.created_at, \
                  'status', s.status, \
                  '{DELETED_KEY}', case when s.deleted then 'True' else 'False' end, \
                  'metadata', coalesce({open}select {object_agg}(m.key, m.value) \
                      from snapshot_metadata m \
                      where m.snapshot_id = s.id and m.deleted = false{close}, \
                      {empty_object})){to_text} as payload \
             from snapshots s join volumes v on v.id = s.volume_id where s.id = $8) \
         {}",
        insert_from_payload(d)
    )
}

static INSERT_EVENTS_POSTGRES: LazyLock<String> = LazyLock::new(|| insert_events(&POSTGRES_JSON));
static INSERT_EVENTS_SQLITE: LazyLock<String> = LazyLock::new(|| insert_events(&SQLITE_JSON));
static INSERT_SNAPSHOT_EVENTS_POSTGRES: LazyLock<String> =
    LazyLock::new(|| insert_snapshot_events(&POSTGRES_JSON));
static INSERT_SNAPSHOT_EVENTS_SQLITE: LazyLock<String> =
    LazyLock::new(|| insert_snapshot_events(&SQLITE_JSON));
static INSERT_EVENTS_WAKING: LazyLock<String> = LazyLock::new(|| waking(&INSERT_EVENTS_POSTGRES));
static INSERT_SNAPSHOT_EVENTS_WAKING: LazyLock<String> =
    LazyLock::new(|| waking(&INSERT_SNAPSHOT_EVENTS_POSTGRES));
static INSERT_USAGE_EVENTS_SQLITE: LazyLock<String> = LazyLock::new(insert_usage_events_sqlite);
/// PostgreSQL's `insert_usage_events` for one and two points: plain, then waking.
static INSERT_USAGE_EVENTS_POSTGRES: LazyLock<[[String; 2]; 2]> = LazyLock::new(|| {
    [1, 2].map(|points| [false, true].map(|waking| insert_usage_events(points, waking)))
});

/// A PostgreSQL events statement that also wakes this process's idle relay: `NOTIFY`
/// inside the write's transaction, delivered when it commits. Only while the relay
/// waits, so writes under load never take PostgreSQL's lock that orders notifying
/// commits. Writes of other processes reach the relay when its wait ends (`longest`).
pub(super) fn waking(statement: &str) -> String {
    let woken = statement
        .replacen(
            "with p as materialized (",
            &format!("with wake as materialized (select pg_notify('{RELAY_CHANNEL}', '')), p as materialized ("),
            1,
        )
        .replacen(" from p", " from p, wake", 1);
    debug_assert_eq!(woken.matches("wake").count(), 2, "{statement}");
    woken
}

/// Takes the lease when it is free, expired or already `$1`'s.
const TAKE_LEASE: &str = "\
    insert into event_relay (name, holder, expires_at) values ('notifications', $1, $3) \
    on conflict (name) do update set holder = $1, expires_at = $3 \
     where event_relay.holder = $1 or event_relay.expires_at < $2";

/// How many numbers a row of the outbox takes, the most events one point may record
/// (the step of the sequence both tables share, migration 0028).
pub(crate) const POINT_SIZE: usize = 8;

/// The channel writes notify an idle relay on.
const RELAY_CHANNEL: &str = "cinder_attach_events";

/// The pauses between the idle relay's looks at the outbox before its long wait.
const LINGER: [Duration; 5] = [
    Duration::ZERO,
    Duration::from_millis(20),
    Duration::from_millis(40),
    Duration::from_millis(80),
    Duration::from_millis(160),
];

/// Whether any event waits for the broker, in either table.
const ANY_PENDING: &str = "select seq from outbox where sent_at is null \
     union all select seq from events where sent_at is null limit 1";

const LEASE_HOLDER: &str = "select holder from event_relay where name = 'notifications'";

impl<D: Database> SqlStore<D> {
    /// The relay's wait while `relay_listening` is set. A write whose statement ran before
    /// the flag was set notified nobody, and may commit a moment later: the outbox is
    /// looked at again over the first `LINGER` (a notification cuts each pause short),
    /// then the wait is `longest`.
    async fn wait_listening(&self, longest: Duration) -> Result<(), StoreError> {
        for pause in LINGER {
            if !pause.is_zero() {
                self.db.wait_notified(pause).await?;
            }
            let pending: Option<(i64,)> = self.db.fetch_optional(Sql::new(ANY_PENDING)).await?;
            if pending.is_some() {
                return Ok(());
            }
        }
        self.db.wait_notified(longest).await
    }

    /// `plain`, or `waking` while this process's relay listens.
    fn while_listening(&self, plain: &'static str, waking: &'static str) -> &'static str {
        if self.relay_listening.load(Ordering::Relaxed) {
            waking
        } else {
            plain
        }
    }

    /// Records `kinds` about `volume` (and `attachment`) in `tx`, as the transaction's
    /// writes left them, on behalf of the current task's origin. Nothing when the store
    /// keeps no events.
    pub(super) async fn record_events(
        &self,
        tx: &mut D::Tx,
        kinds: &[EventKind],
        volume: VolumeId,
        attachment: Option<AttachmentId>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let text = match D::KIND {
            StoreKind::Postgres => {
                self.while_listening(&INSERT_EVENTS_POSTGRES, &INSERT_EVENTS_WAKING)
            }
            StoreKind::Sqlite => &INSERT_EVENTS_SQLITE,
        };
        if let Some(sql) = self.events_statement(text, kinds, volume.uuid(), attachment, now) {
            tx.execute(sql).await?;
        }
        Ok(())
    }

    /// The statements recording the events of `points` (each its kinds and the payload
    /// of its moment) about `usage`'s volume and `attachment`, for the writes of a
    /// transaction whose lock read the usage (`lock_volume_with_usage`): one on
    /// PostgreSQL, one a point on SQLite. Points without events record nothing.
    pub(super) fn usage_events_writes(
        &self,
        points: &[(&[EventKind], String)],
        usage: &VolumeUsage,
        attachment: Option<AttachmentId>,
        now: DateTime<Utc>,
    ) -> Vec<Sql> {
        let points: Vec<_> = points
            .iter()
            .filter(|(kinds, _)| !kinds.is_empty())
            .collect();
        if !self.events || points.is_empty() {
            return Vec::new();
        }
        let origin = crate::origin::current();
        let shared = |text: &'static str| {
            Sql::new(text)
                .bind(&origin.publisher_id)
                .bind(usage.id)
                .bind(attachment)
                .bind(&usage.project_id)
                .bind(&origin.user_id)
                .bind(&origin.project_id)
                .bind(&origin.request_id)
                .bind(now)
        };
        match D::KIND {
            StoreKind::Sqlite => points
                .iter()
                .map(|(kinds, payload)| {
                    shared(&INSERT_USAGE_EVENTS_SQLITE)
                        .bind(event_array(kinds))
                        .bind(payload.as_str())
                })
                .collect(),
            StoreKind::Postgres => {
                assert!(points.len() <= 2, "more than two points in one write");
                let [plain, waking] = &INSERT_USAGE_EVENTS_POSTGRES[points.len() - 1];
                let mut sql = shared(self.while_listening(plain, waking));
                for (kinds, payload) in &points {
                    sql = sql.bind(event_array(kinds)).bind(payload.as_str());
                }
                vec![sql]
            }
        }
    }

    /// Records `kinds` about snapshot `snapshot` (Cinder's snapshot payload), in `tx`.
    pub(super) async fn record_snapshot_events(
        &self,
        tx: &mut D::Tx,
        kinds: &[EventKind],
        snapshot: SnapshotId,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let text = match D::KIND {
            StoreKind::Postgres => self.while_listening(
                &INSERT_SNAPSHOT_EVENTS_POSTGRES,
                &INSERT_SNAPSHOT_EVENTS_WAKING,
            ),
            StoreKind::Sqlite => &INSERT_SNAPSHOT_EVENTS_SQLITE,
        };
        if let Some(sql) = self.events_statement(text, kinds, snapshot.uuid(), None, now) {
            tx.execute(sql).await?;
        }
        Ok(())
    }

    /// `text` (`insert_events` or `insert_snapshot_events`) bound for `kinds` about
    /// `subject`, on behalf of the current task's origin.
    fn events_statement(
        &self,
        text: &'static str,
        kinds: &[EventKind],
        subject: Uuid,
        attachment: Option<AttachmentId>,
        now: DateTime<Utc>,
    ) -> Option<Sql> {
        if !self.events || kinds.is_empty() {
            return None;
        }
        let origin = crate::origin::current();
        let sql = Sql::new(text)
            .bind(event_array(kinds))
            .bind(&origin.publisher_id)
            .bind(attachment)
            .bind(&origin.user_id)
            .bind(&origin.project_id)
            .bind(&origin.request_id)
            .bind(now)
            .bind(subject);
        Some(sql)
    }
}

/// A point's events as its row stores them: `[message id, event type, priority]` each,
/// each a new message id.
fn event_array(kinds: &[EventKind]) -> String {
    // A row's events are numbered from its `seq`, which steps by POINT_SIZE.
    assert!(
        kinds.len() <= POINT_SIZE,
        "more than {POINT_SIZE} events at one point"
    );
    let events: Vec<(Uuid, &str, &str)> = kinds
        .iter()
        .map(|kind| (Uuid::new_v4(), kind.event_type(), kind.priority()))
        .collect();
    serde_json::json!(events).to_string()
}

#[async_trait]
impl<D: Database> EventStore for SqlStore<D> {
    #[tracing::instrument(skip_all, err)]
    async fn list_events(&self, filters: &EventFilters) -> Result<Vec<RecordedEvent>, StoreError> {
        self.list_both(filters).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn pending_events(&self, limit: u32) -> Result<Vec<RecordedEvent>, StoreError> {
        self.pending_in_both(limit).await
    }

    async fn event_backlog(&self) -> Result<EventBacklog, StoreError> {
        self.backlog_of_both().await
    }

    #[tracing::instrument(skip_all, err)]
    async fn mark_events_sent(
        &self,
        rows: &[OutboxRow],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.mark_rows_sent(rows, now).await
    }

    async fn wait_for_events(&self, poll: Duration, longest: Duration) -> Result<(), StoreError> {
        if !self.db.listen(RELAY_CHANNEL).await? {
            tokio::time::sleep(poll).await;
            return Ok(());
        }
        self.relay_listening.store(true, Ordering::SeqCst);
        let waited = self.wait_listening(longest).await;
        self.relay_listening.store(false, Ordering::SeqCst);
        waited
    }

    #[tracing::instrument(skip_all, err)]
    async fn take_relay_lease(
        &self,
        holder: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let mut tx = self.db.begin_write().await?;
        tx.execute(Sql::new(TAKE_LEASE).bind(holder).bind(now).bind(until))
            .await?;
        let current: Option<(String,)> = tx.fetch_optional(Sql::new(LEASE_HOLDER)).await?;
        tx.commit().await?;
        Ok(current.is_some_and(|(h,)| h == holder))
    }
}
