//! `/v3[/{project_id}]/default-types` (3.62+): an admin sets, reads, lists and unsets a
//! project's own default volume type. The `{id}` in the path is the project's id.

use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use crate::api::AppState;
use crate::domain::volume_type::ProjectDefaultType;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/default-types", get(list))
        .route("/default-types/{id}", get(show).put(set).delete(unset))
}

#[derive(Deserialize)]
struct ProjectPath {
    id: String,
}

/// Cinder's `default_types.create_or_update`, with `default_type` required: without it
/// Cinder fails on a missing key, where a clear 400 is what a caller needs.
static SET: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "default_type": {
                "type": "object",
                "properties": {
                    "volume_type": {"type": "string", "minLength": 1, "maxLength": 255, "format": "name"}
                },
                "required": ["volume_type"],
                "additionalProperties": false
            }
        },
        "required": ["default_type"]
    })
});

#[derive(Deserialize)]
struct SetBody {
    default_type: SetFields,
}

#[derive(Deserialize)]
struct SetFields {
    volume_type: String,
}

fn view(default: &ProjectDefaultType) -> Value {
    json!({"project_id": default.project_id, "volume_type_id": default.volume_type_id})
}

/// 200 with the project's default, new or replaced.
async fn set(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(ProjectPath { id }): Path<ProjectPath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::DefaultTypeSet)?;
    let fields = body.parse::<SetBody>(&SET)?.default_type;
    let set = state
        .service
        .set_project_default_type(&ctx.caller, &id, &fields.volume_type)
        .await?;
    Ok(Json(json!({"default_type": view(&set)})))
}

async fn show(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(ProjectPath { id }): Path<ProjectPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::DefaultTypeShow)?;
    let found = state
        .service
        .get_project_default_type(&ctx.caller, &id)
        .await?;
    Ok(Json(json!({"default_type": view(&found)})))
}

async fn list(State(state): State<AppState>, ctx: Ctx) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::DefaultTypeList)?;
    let found = state
        .service
        .list_project_default_types(&ctx.caller)
        .await?;
    let items: Vec<Value> = found.iter().map(view).collect();
    Ok(Json(json!({"default_types": items})))
}

async fn unset(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(ProjectPath { id }): Path<ProjectPath>,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::DefaultTypeUnset)?;
    state
        .service
        .unset_project_default_type(&ctx.caller, &id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
