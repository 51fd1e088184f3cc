//! The outbox of notifications (`domain::event`). A write that Cinder would notify about
//! records its events with `record_events`, inside its own transaction, so an event
//! exists exactly when its change committed. The payload (Cinder's volume usage info) is
//! built by the database from the rows as the transaction left them: one statement for
//! the events a transaction records at one point, the payload built once for them and
//! stored once, in the last of them (the others' `payload` is null and reads as that
//! one's), no read back into the service. The relay reads the pending events in `seq`
//! order and marks them sent once the broker confirmed them; one process relays at a
//! time, the holder of a lease row.

mod qos_events;
mod type_events;

use std::sync::LazyLock;

use async_trait::async_trait;
use std::sync::atomic::Ordering;
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::{SqlStore, StoreKind};
use crate::domain::event::{EventFilters, EventKind, RecordedEvent};
use crate::domain::ids::{AttachmentId, SnapshotId, VolumeId};
pub(crate) use type_events::SpecsChange;

#[async_trait]
pub trait EventStore: Send + Sync {
    /// Recorded events matching `filters`, oldest first.
    async fn list_events(&self, filters: &EventFilters) -> Result<Vec<RecordedEvent>, StoreError>;

    /// Up to `limit` events the broker has not confirmed yet, in `seq` order.
    async fn pending_events(&self, limit: u32) -> Result<Vec<RecordedEvent>, StoreError>;

    /// How many events wait for the broker, and when the oldest of them was recorded.
    async fn event_backlog(&self) -> Result<EventBacklog, StoreError>;

    /// The broker confirmed these events.
    async fn mark_events_sent(&self, seqs: &[i64], now: DateTime<Utc>) -> Result<(), StoreError>;

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
    /// The rows of the events' JSON array as `k` (its place in `k.n`), and the message
    /// id and event type of the current one.
    each_event: &'static str,
    message_id: &'static str,
    event_type: &'static str,
    priority: &'static str,
    /// Whether the current one is the last (`$9` events in all), which keeps the payload.
    last_event: &'static str,
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
    each_event: "json_array_elements($1::json) with ordinality k(e, n)",
    message_id: "(k.e->>0)::uuid",
    event_type: "k.e->>1",
    priority: "k.e->>2",
    last_event: "k.n = $9",
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
    each_event: "(select value as e, key as n from json_each($1)) k",
    message_id: "json_extract(k.e, '$[0]')",
    event_type: "json_extract(k.e, '$[1]')",
    priority: "json_extract(k.e, '$[2]')",
    last_event: "k.n = $9 - 1",
};

/// Records a transaction's events about one volume in one statement, the payload built
/// once for all of them: `$1` the events as a JSON array of `[message id, event type,
/// priority]`, in order, `$2` publisher, `$3` attachment (or null), `$4` caller user, `$5`
/// caller project, `$6` request id, `$7` time, `$8` the volume, `$9` how many events. The
/// payload has the fields of Cinder's `_usage_from_volume` (no replication, no glance
/// metadata), plus the attachment the events are about, if any; only the last event
/// stores it (on a volume shared by 64 hosts it is about 16 KB, and storing it in every
/// event cost SQLite a third of its attach cycles, BENCHMARKS.md).
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

/// The insert of `insert_events` and `insert_snapshot_events`, from `p` (the volume's
/// id, the project and the payload).
fn insert_from_payload(d: &JsonDialect) -> String {
    let JsonDialect {
        each_event,
        message_id,
        event_type,
        priority,
        last_event,
        ..
    } = d;
    format!(
        "insert into events (message_id, event_type, priority, publisher_id, volume_id, \
                             attachment_id, project_id, caller_user_id, caller_project_id, \
                             request_id, created_at, payload) \
         select {message_id}, {event_type}, {priority}, $2, p.id, $3, p.project_id, $4, $5, \
                $6, $7, case when {last_event} then p.payload end \
           from p, {each_event} order by k.n"
    )
}

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
        .replacen("from p, ", "from p, wake, ", 1);
    debug_assert_eq!(woken.matches("wake").count(), 2, "{statement}");
    woken
}

/// An event without a payload of its own shares the one of the next event recorded with
/// it (the same volume and time, the next `seq` that has one; `purge` keeps that one as
/// long as it is shared).
const EVENT_COLUMNS: &str = "select seq, message_id, event_type, priority, publisher_id, \
     volume_id, attachment_id, project_id, caller_user_id, caller_project_id, request_id, \
     coalesce(payload, (select h.payload from events h \
                         where h.volume_id = events.volume_id \
                           and h.created_at = events.created_at and h.seq > events.seq \
                           and h.payload is not null order by h.seq limit 1)), \
     created_at, sent_at from events";

const MARK_SENT: &str = "update events set sent_at = $1 where sent_at is null and seq in (";

/// Takes the lease when it is free, expired or already `$1`'s.
const TAKE_LEASE: &str = "\
    insert into event_relay (name, holder, expires_at) values ('notifications', $1, $3) \
    on conflict (name) do update set holder = $1, expires_at = $3 \
     where event_relay.holder = $1 or event_relay.expires_at < $2";

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

/// Whether any event waits for the broker.
const ANY_PENDING: &str = "select seq from events where sent_at is null limit 1";

const LEASE_HOLDER: &str = "select holder from event_relay where name = 'notifications'";

impl FromRow for RecordedEvent {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(RecordedEvent {
            seq: c.get()?,
            message_id: c.get()?,
            event_type: c.get()?,
            priority: c.get()?,
            publisher_id: c.get()?,
            volume_id: c.get()?,
            attachment_id: c.get()?,
            project_id: c.get()?,
            caller_user_id: c.get()?,
            caller_project_id: c.get()?,
            request_id: c.get()?,
            payload: c.get()?,
            created_at: c.get()?,
            sent_at: c.get()?,
        })
    }
}

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
        if let Some(sql) = self.events_write(kinds, volume, attachment, now) {
            tx.execute(sql).await?;
        }
        Ok(())
    }

    /// The statement of `record_events`, for a group of writes (`Writes`): first in the
    /// group, it records the rows as they were before the group's changes. `None` when
    /// there is nothing to record.
    pub(super) fn events_write(
        &self,
        kinds: &[EventKind],
        volume: VolumeId,
        attachment: Option<AttachmentId>,
        now: DateTime<Utc>,
    ) -> Option<Sql> {
        let text = match D::KIND {
            StoreKind::Postgres => {
                self.while_listening(&INSERT_EVENTS_POSTGRES, &INSERT_EVENTS_WAKING)
            }
            StoreKind::Sqlite => &INSERT_EVENTS_SQLITE,
        };
        self.events_statement(text, kinds, volume.uuid(), attachment, now)
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
        let events: Vec<(Uuid, &str, &str)> = kinds
            .iter()
            .map(|kind| (Uuid::new_v4(), kind.event_type(), kind.priority()))
            .collect();
        let sql = Sql::new(text)
            .bind(serde_json::json!(events).to_string())
            .bind(&origin.publisher_id)
            .bind(attachment)
            .bind(&origin.user_id)
            .bind(&origin.project_id)
            .bind(&origin.request_id)
            .bind(now)
            .bind(subject)
            .bind(events.len() as i64);
        Some(sql)
    }
}

#[async_trait]
impl<D: Database> EventStore for SqlStore<D> {
    #[tracing::instrument(skip_all, err)]
    async fn list_events(&self, filters: &EventFilters) -> Result<Vec<RecordedEvent>, StoreError> {
        let mut sql = Sql::new(EVENT_COLUMNS);
        sql.push(" where 1 = 1");
        if let Some(volume) = filters.volume_id {
            sql.push(" and volume_id = ").push_bind(volume);
        }
        if let Some(attachment) = filters.attachment_id {
            sql.push(" and attachment_id = ").push_bind(attachment);
        }
        if let Some(project) = &filters.project_id {
            sql.push(" and project_id = ").push_bind(project);
        }
        if let Some(event_type) = &filters.event_type {
            sql.push(" and event_type = ").push_bind(event_type);
        }
        if let Some(since) = filters.since {
            sql.push(" and created_at >= ").push_bind(since);
        }
        if let Some(until) = filters.until {
            sql.push(" and created_at < ").push_bind(until);
        }
        if let Some(after) = filters.after_seq {
            sql.push(" and seq > ").push_bind(after);
        }
        sql.push(" order by seq limit ")
            .push_bind(i64::from(filters.limit));
        self.db.fetch_all(sql).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn pending_events(&self, limit: u32) -> Result<Vec<RecordedEvent>, StoreError> {
        let mut sql = Sql::new(EVENT_COLUMNS);
        sql.push(" where sent_at is null order by seq limit ")
            .push_bind(i64::from(limit));
        self.db.fetch_all(sql).await
    }

    async fn event_backlog(&self) -> Result<EventBacklog, StoreError> {
        let sql = Sql::new("select count(*), min(created_at) from events where sent_at is null");
        let row: Option<(i64, Option<DateTime<Utc>>)> = self.db.fetch_optional(sql).await?;
        let (pending, oldest) = row.unwrap_or((0, None));
        Ok(EventBacklog { pending, oldest })
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
    async fn mark_events_sent(&self, seqs: &[i64], now: DateTime<Utc>) -> Result<(), StoreError> {
        if seqs.is_empty() {
            return Ok(());
        }
        let mut sql = Sql::new(MARK_SENT).bind(now);
        sql.push_list(seqs.iter().copied()).push(")");
        self.db.execute(sql).await?;
        Ok(())
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
