//! `/v3[/{project_id}]/messages` (3.3+): why an accepted request failed later.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::links::base_url;
use super::query::CinderQuery;
use super::views::message;
use crate::api::AppState;
use crate::domain::ids::MessageId;
use crate::domain::DomainError;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/messages", get(list))
        .route("/messages/{message_id}", get(show).delete(delete))
}

#[derive(Deserialize)]
struct MessagePath {
    message_id: String,
}

fn message_id(path: &MessagePath) -> Result<MessageId, ApiError> {
    MessageId::parse(&path.message_id)
        .ok_or_else(|| DomainError::MessageNotFound(path.message_id.clone()).into())
}

async fn list(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::MessageList)?;
    let all_tenants = query.iter().any(|(k, _)| k == "all_tenants");
    let found = state
        .service
        .list_messages(&ctx.caller, all_tenants)
        .await?;
    let base = base_url(&state, &headers);
    let view = ctx.view(&base);
    let items: Vec<Value> = found.iter().map(|m| message(&view, m)).collect();
    Ok(Json(json!({"messages": items})))
}

async fn show(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    Path(path): Path<MessagePath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::MessageShow)?;
    let found = state
        .service
        .get_message(&ctx.caller, message_id(&path)?)
        .await?;
    let base = base_url(&state, &headers);
    let view = ctx.view(&base);
    Ok(Json(json!({"message": message(&view, &found)})))
}

async fn delete(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<MessagePath>,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::MessageDelete)?;
    state
        .service
        .delete_message(&ctx.caller, message_id(&path)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
