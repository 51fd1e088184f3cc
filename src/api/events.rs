//! `GET /v3/{project_id}/events`: the audit trail of notification events (an extension
//! of cinder-attach, admin only), oldest first, paged by `marker` (the last `seq` seen).

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use uuid::Uuid;

use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::query::{last, CinderQuery};
use crate::api::AppState;
use crate::domain::event::{EventFilters, RecordedEvent};
use crate::domain::time::format_timestamp;

/// The most events one page holds.
const MAX_PAGE: u32 = 1000;

pub fn router() -> Router<AppState> {
    Router::new().route("/events", get(list_events))
}

fn uuid_param(query: &[(String, String)], name: &str) -> Result<Option<Uuid>, ApiError> {
    last(query, name)
        .map(|text| {
            Uuid::parse_str(text).map_err(|_| {
                ApiError::BadRequest(format!("Invalid {name}: '{text}' is not a UUID."))
            })
        })
        .transpose()
}

fn time_param(query: &[(String, String)], name: &str) -> Result<Option<DateTime<Utc>>, ApiError> {
    last(query, name)
        .map(|text| {
            crate::domain::time::parse_timestamp(text).ok_or_else(|| {
                ApiError::BadRequest(format!(
                    "Invalid {name}: '{text}' is not a time (ISO 8601, e.g. 2026-11-25T10:00:00Z)."
                ))
            })
        })
        .transpose()
}

/// A non-negative integer; one too large for 64 bits means "more than there can be"
/// (a `limit` clamps to the page size, a `marker` finds nothing after it).
fn number_param(query: &[(String, String)], name: &str) -> Result<Option<i64>, ApiError> {
    let saturating = |text: &str| match text.parse::<i64>() {
        Ok(n) => Some(n),
        Err(_) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => Some(i64::MAX),
        Err(_) => None,
    };
    last(query, name)
        .map(|text| {
            saturating(text).filter(|n| *n >= 0).ok_or_else(|| {
                ApiError::BadRequest(format!(
                    "Invalid {name}: '{text}' is not a non-negative integer."
                ))
            })
        })
        .transpose()
}

fn event_view(event: &RecordedEvent) -> Value {
    json!({
        "seq": event.seq,
        "message_id": event.message_id,
        "event_type": event.event_type,
        "priority": event.priority,
        "publisher_id": event.publisher_id,
        "volume_id": event.volume_id,
        "attachment_id": event.attachment_id,
        "project_id": event.project_id,
        "caller_user_id": event.caller_user_id,
        "caller_project_id": event.caller_project_id,
        "request_id": event.request_id,
        "payload": event.payload,
        "created_at": format_timestamp(&event.created_at),
        "sent_at": event.sent_at.as_ref().map(format_timestamp),
    })
}

async fn list_events(
    State(state): State<AppState>,
    ctx: Ctx,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::EventList)?;
    let limit =
        number_param(&query, "limit")?.map_or(MAX_PAGE, |n| n.clamp(0, i64::from(MAX_PAGE)) as u32);
    let filters = EventFilters {
        volume_id: uuid_param(&query, "volume_id")?.map(Into::into),
        attachment_id: uuid_param(&query, "attachment_id")?.map(Into::into),
        project_id: last(&query, "project_id").map(str::to_owned),
        event_type: last(&query, "event_type").map(str::to_owned),
        since: time_param(&query, "since")?,
        until: time_param(&query, "until")?,
        after_seq: number_param(&query, "marker")?,
        limit,
    };
    let events = state.service.list_events(&ctx.caller, &filters).await?;
    let items: Vec<Value> = events.iter().map(event_view).collect();
    Ok(Json(json!({ "events": items })))
}
