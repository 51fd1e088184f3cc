//! The outbox as a 0.2.0 process leaves it: a row per event in `events`, the events
//! recorded together sharing the payload stored in the last of them. Made here from the
//! rows this version recorded, for the tests of what this version does with such rows
//! (read, relay and purge them beside its own).

use super::db::Backend;
use super::TestApp;

/// Moves every row of `outbox` into `events` as 0.2.0 would have recorded it.
pub async fn recorded_as_by_0_2_0(app: &TestApp) {
    let (elements, message_id, event_type, priority, last) = match app.db.backend {
        Backend::Postgres => (
            "json_array_elements(o.events::json) with ordinality e(value, n)",
            "cast(e.value->>0 as uuid)",
            "e.value->>1",
            "e.value->>2",
            "e.n = json_array_length(o.events::json)",
        ),
        Backend::Sqlite => (
            "json_each(o.events) e",
            "json_extract(e.value, '$[0]')",
            "json_extract(e.value, '$[1]')",
            "json_extract(e.value, '$[2]')",
            "e.key = json_array_length(o.events) - 1",
        ),
    };
    let order = match app.db.backend {
        Backend::Postgres => "o.seq, e.n",
        Backend::Sqlite => "o.seq, e.key",
    };
    let moved = format!(
        "insert into events (message_id, event_type, priority, publisher_id, volume_id, \
                             attachment_id, project_id, caller_user_id, caller_project_id, \
                             request_id, payload, created_at) \
         select {message_id}, {event_type}, {priority}, o.publisher_id, o.volume_id, \
                o.attachment_id, o.project_id, o.caller_user_id, o.caller_project_id, \
                o.request_id, case when {last} then o.payload end, o.created_at \
           from outbox o, {elements} order by {order}"
    );
    app.db
        .execute(&moved)
        .await
        .expect("events recorded as 0.2.0");
    app.db
        .execute("delete from outbox")
        .await
        .expect("outbox emptied");
}
