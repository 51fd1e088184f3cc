//! `GET /healthcheck`, as oslo.middleware's healthcheck answers load balancers: plain
//! `OK` while the process serves; with `?detailed`, the database is asked too and a
//! failure is 503 with the reason.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use crate::api::AppState;

#[derive(Deserialize)]
pub struct HealthQuery {
    detailed: Option<String>,
}

pub async fn healthcheck(
    State(state): State<AppState>,
    Query(query): Query<HealthQuery>,
) -> Response {
    tracing::debug!("healthcheck");
    if query.detailed.is_none() {
        return (StatusCode::OK, "OK").into_response();
    }
    let store = state.service.store.kind();
    match state.service.store.ping().await {
        Ok(()) => Json(
            json!({"status": "OK", "database": "OK", "store": format!("{store:?}").to_lowercase()}),
        )
        .into_response(),
        Err(err) => {
            tracing::warn!(error = %err, "healthcheck: database unavailable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"status": "ERROR", "database": "unavailable", "store": format!("{store:?}").to_lowercase()})),
            )
                .into_response()
        }
    }
}
