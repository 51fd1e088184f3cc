//! Reading the outbox: the audit trail (`list_events`) and the relay's pending events,
//! one sequence in `seq` order from both tables: today's rows, one per transaction
//! point and expanded here into its events, and the one-event rows of `events` that a
//! 0.2.0 process recorded. Both tables draw their numbers from one sequence (migration
//! 0028), so the two never share a number.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{EventBacklog, POINT_SIZE};
use crate::domain::event::{EventFilters, OutboxRow, RecordedEvent};
use crate::domain::ids::{AttachmentId, VolumeId};
use crate::store::db::error::StoreError;
use crate::store::db::row::{Columns, FromRow};
use crate::store::db::sql::Sql;
use crate::store::db::Database;
use crate::store::{SqlStore, StoreKind};

/// The rows of `outbox`.
const POINT_COLUMNS: &str = "select seq, events, publisher_id, volume_id, attachment_id, \
     project_id, caller_user_id, caller_project_id, request_id, payload, created_at, \
     sent_at from outbox";

/// The rows of `events`. One without a payload of its own shares the one of the next
/// event recorded with it (the same volume and time, the next `seq` that has one).
const EVENT_COLUMNS: &str = "select seq, message_id, event_type, priority, publisher_id, \
     volume_id, attachment_id, project_id, caller_user_id, caller_project_id, request_id, \
     coalesce(payload, (select h.payload from events h \
                         where h.volume_id = events.volume_id \
                           and h.created_at = events.created_at and h.seq > events.seq \
                           and h.payload is not null order by h.seq limit 1)), \
     created_at, sent_at from events";

/// How many events wait in `outbox`, and since when.
const POINT_BACKLOG_POSTGRES: &str = "select coalesce(sum(json_array_length(events::json)), 0), \
     min(created_at) from outbox where sent_at is null";
const POINT_BACKLOG_SQLITE: &str = "select coalesce(sum(json_array_length(events)), 0), \
     min(created_at) from outbox where sent_at is null";
const EVENT_BACKLOG: &str = "select count(*), min(created_at) from events where sent_at is null";

/// A row of `outbox`: the events of one transaction point and what they share.
struct PointRow {
    seq: i64,
    events: String,
    publisher_id: String,
    volume_id: Option<VolumeId>,
    attachment_id: Option<AttachmentId>,
    project_id: String,
    caller_user_id: Option<String>,
    caller_project_id: Option<String>,
    request_id: Option<String>,
    payload: serde_json::Value,
    created_at: DateTime<Utc>,
    sent_at: Option<DateTime<Utc>>,
}

impl FromRow for PointRow {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(PointRow {
            seq: c.get()?,
            events: c.get()?,
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

impl PointRow {
    /// Its events, numbered from its `seq`, each with the row's payload.
    fn into_events(self) -> Result<Vec<RecordedEvent>, StoreError> {
        let listed: Vec<(Uuid, String, String)> = serde_json::from_str(&self.events)
            .map_err(|err| StoreError::corrupt(format!("outbox row {}: {err}", self.seq)))?;
        if listed.is_empty() || listed.len() > POINT_SIZE {
            return Err(StoreError::corrupt(format!(
                "outbox row {} holds {} events",
                self.seq,
                listed.len()
            )));
        }
        let events = listed
            .into_iter()
            .zip(self.seq..)
            .map(|((message_id, event_type, priority), seq)| RecordedEvent {
                seq,
                message_id,
                event_type,
                priority,
                publisher_id: self.publisher_id.clone(),
                volume_id: self.volume_id,
                attachment_id: self.attachment_id,
                project_id: self.project_id.clone(),
                caller_user_id: self.caller_user_id.clone(),
                caller_project_id: self.caller_project_id.clone(),
                request_id: self.request_id.clone(),
                payload: self.payload.clone(),
                created_at: self.created_at,
                sent_at: self.sent_at,
                row: OutboxRow::Point(self.seq),
            })
            .collect();
        Ok(events)
    }
}

impl FromRow for RecordedEvent {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        let seq = c.get()?;
        Ok(RecordedEvent {
            seq,
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
            row: OutboxRow::Event(seq),
        })
    }
}

/// The table a query reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Table {
    Outbox,
    Events,
}

/// Appends `filters`' conditions for `table`. On `outbox` the event type and the
/// sequence number narrow to the rows that may hold a match (`matches` says which of
/// their events do): a row whose events' types include the type, one whose numbers
/// reach past `after_seq`.
fn push_filters(sql: &mut Sql, filters: &EventFilters, table: Table) {
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
        match table {
            Table::Events => sql.push(" and event_type = ").push_bind(event_type),
            Table::Outbox => sql
                .push(" and events like ")
                .push_bind(type_pattern(event_type))
                .push(" escape '\\'"),
        };
    }
    if let Some(since) = filters.since {
        sql.push(" and created_at >= ").push_bind(since);
    }
    if let Some(until) = filters.until {
        sql.push(" and created_at < ").push_bind(until);
    }
    if let Some(after) = filters.after_seq {
        let reach = match table {
            Table::Events => 0,
            Table::Outbox => POINT_SIZE as i64 - 1,
        };
        sql.push(" and seq > ")
            .push_bind(after.saturating_sub(reach));
    }
}

/// A LIKE pattern for the rows whose events array names `event_type` (as a JSON string,
/// quotes included, so no longer type matches).
fn type_pattern(event_type: &str) -> String {
    let quoted = serde_json::Value::from(event_type).to_string();
    let mut pattern = String::from("%");
    for c in quoted.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// Whether `event` of a row `push_filters` let through is one `filters` want.
fn matches(filters: &EventFilters, event: &RecordedEvent) -> bool {
    filters.after_seq.is_none_or(|after| event.seq > after)
        && filters
            .event_type
            .as_ref()
            .is_none_or(|wanted| &event.event_type == wanted)
}

/// The events of the rows that hold the first `limit` of `events` (in `seq` order).
fn whole_rows(mut events: Vec<RecordedEvent>, limit: usize) -> Vec<RecordedEvent> {
    let mut keep = events.len().min(limit);
    while keep > 0 && keep < events.len() && events[keep].row == events[keep - 1].row {
        keep += 1;
    }
    events.truncate(keep);
    events
}

impl<D: Database> SqlStore<D> {
    /// The events of `filters` in both tables, `rows` rows of each at most, in `seq`
    /// order.
    async fn read_both(
        &self,
        filters: &EventFilters,
        pending: bool,
        rows: i64,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        let read = |text: &'static str, table: Table| {
            let mut sql = Sql::new(text);
            push_filters(&mut sql, filters, table);
            if pending {
                sql.push(" and sent_at is null");
            }
            sql.push(" order by seq limit ").push_bind(rows);
            sql
        };
        let old = read(EVENT_COLUMNS, Table::Events);
        let points = read(POINT_COLUMNS, Table::Outbox);
        let mut events: Vec<RecordedEvent> = self.db.fetch_all(old).await?;
        for point in self.db.fetch_all::<PointRow>(points).await? {
            let expanded = point.into_events()?;
            events.extend(expanded.into_iter().filter(|e| matches(filters, e)));
        }
        events.sort_by_key(|e| e.seq);
        Ok(events)
    }
}

/// `EventStore`'s reads and marks (outbox.rs), for both tables.
impl<D: Database> SqlStore<D> {
    pub(super) async fn list_both(
        &self,
        filters: &EventFilters,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        // One more row than events wanted: the first row may hold only numbers up to
        // `after_seq`.
        let limit = i64::from(filters.limit);
        let mut events = self.read_both(filters, false, limit + 1).await?;
        events.truncate(filters.limit as usize);
        Ok(events)
    }

    pub(super) async fn pending_in_both(
        &self,
        limit: u32,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        let filters = EventFilters::default();
        let events = self.read_both(&filters, true, i64::from(limit)).await?;
        Ok(whole_rows(events, limit as usize))
    }

    pub(super) async fn backlog_of_both(&self) -> Result<EventBacklog, StoreError> {
        let points = match D::KIND {
            StoreKind::Postgres => POINT_BACKLOG_POSTGRES,
            StoreKind::Sqlite => POINT_BACKLOG_SQLITE,
        };
        let mut backlog = EventBacklog::default();
        for text in [points, EVENT_BACKLOG] {
            let row: Option<(i64, Option<DateTime<Utc>>)> =
                self.db.fetch_optional(Sql::new(text)).await?;
            let (pending, oldest) = row.unwrap_or((0, None));
            backlog.pending += pending;
            backlog.oldest = match (backlog.oldest, oldest) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        Ok(backlog)
    }

    pub(super) async fn mark_rows_sent(
        &self,
        rows: &[OutboxRow],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let (mut points, mut events) = (Vec::new(), Vec::new());
        for row in rows {
            match *row {
                OutboxRow::Point(seq) => points.push(seq),
                OutboxRow::Event(seq) => events.push(seq),
            }
        }
        for (text, seqs) in [(MARK_POINTS_SENT, points), (MARK_EVENTS_SENT, events)] {
            if seqs.is_empty() {
                continue;
            }
            let mut sql = Sql::new(text).bind(now);
            sql.push_list(seqs).push(")");
            self.db.execute(sql).await?;
        }
        Ok(())
    }
}

const MARK_POINTS_SENT: &str = "update outbox set sent_at = $1 where sent_at is null and seq in (";
const MARK_EVENTS_SENT: &str = "update events set sent_at = $1 where sent_at is null and seq in (";

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: i64, row: OutboxRow) -> RecordedEvent {
        RecordedEvent::numbered(seq, row)
    }

    #[test]
    fn a_batch_never_cuts_a_row_in_two() {
        let events = vec![
            event(1, OutboxRow::Event(1)),
            event(8, OutboxRow::Point(8)),
            event(9, OutboxRow::Point(8)),
            event(16, OutboxRow::Point(16)),
        ];
        let seqs = |kept: Vec<RecordedEvent>| kept.iter().map(|e| e.seq).collect::<Vec<_>>();
        assert_eq!(seqs(whole_rows(events.clone(), 1)), [1]);
        assert_eq!(seqs(whole_rows(events.clone(), 2)), [1, 8, 9]);
        assert_eq!(seqs(whole_rows(events.clone(), 3)), [1, 8, 9]);
        assert_eq!(seqs(whole_rows(events.clone(), 9)), [1, 8, 9, 16]);
        assert!(whole_rows(events, 0).is_empty());
    }

    #[test]
    fn the_type_pattern_matches_the_type_as_a_json_string_only() {
        assert_eq!(
            type_pattern("volume_type.create"),
            "%\"volume\\_type.create\"%"
        );
        assert_eq!(type_pattern("50%"), "%\"50\\%\"%");
    }
}
