//! `GET /healthcheck`, as oslo.middleware's healthcheck answers load balancers: plain
//! `OK` while the process serves; with `?detailed`, the database is asked too and a
//! failure is 503 with the reason. The detail also shows the notification relay: a relay
//! that cannot deliver leaves the API serving (200), so it shows as `"status":
//! "DEGRADED"` with the backlog's size and age; the broker's error text only to admins.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::Utc;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::api::AppState;
use crate::notify::RelayState;

#[derive(Deserialize)]
pub struct HealthQuery {
    detailed: Option<String>,
}

pub async fn healthcheck(
    State(state): State<AppState>,
    Query(query): Query<HealthQuery>,
    headers: HeaderMap,
) -> Response {
    tracing::debug!("healthcheck");
    if query.detailed.is_none() {
        return (StatusCode::OK, "OK").into_response();
    }
    let store = format!("{:?}", state.service.store.kind()).to_lowercase();
    if let Err(err) = state.service.store.ping().await {
        tracing::warn!(error = %err, "healthcheck: database unavailable");
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "ERROR", "database": "unavailable", "store": store})),
        )
            .into_response();
    }
    let mut body = json!({"status": "OK", "database": "OK", "store": store});
    if let Some(relay) = &state.config.relay {
        let admin = is_admin(&state, &headers).await;
        let notifications = relay_detail(&state, relay.state(), admin).await;
        if notifications["relay"] == "failing" {
            body["status"] = json!("DEGRADED");
        }
        body["notifications"] = notifications;
    }
    Json(body).into_response()
}

/// The relay's state, and the backlog it has to deliver.
async fn relay_detail(state: &AppState, relay: RelayState, admin: bool) -> Value {
    let mut detail = match relay {
        RelayState::Starting => json!({"relay": "starting"}),
        RelayState::Standby => json!({"relay": "standby"}),
        RelayState::Delivering => json!({"relay": "delivering"}),
        RelayState::Failing { error, since } => {
            let mut failing = json!({"relay": "failing", "failing_since": since.to_rfc3339()});
            if admin {
                failing["error"] = json!(error);
            }
            failing
        }
    };
    match state.service.event_backlog().await {
        Ok(backlog) => {
            detail["pending"] = json!(backlog.pending);
            detail["oldest_pending_age_seconds"] = json!(backlog
                .oldest
                .map(|oldest| (Utc::now() - oldest).num_seconds().max(0)));
        }
        Err(err) => tracing::warn!(error = %err, "healthcheck: cannot read the event backlog"),
    }
    detail
}

/// Whether the request carries an admin's credentials (the check itself needs none).
async fn is_admin(state: &AppState, headers: &HeaderMap) -> bool {
    matches!(state.auth.authenticate(headers).await, Ok(caller) if caller.is_admin)
}
