//! `POST /v3[/{project_id}]/workers/cleanup` (3.24, admin): finish the work that stopped
//! half-way on some services; 202 with the services cleaned for and those nobody can
//! clean for (`service::workers`).

use std::sync::LazyLock;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::schema::{as_bool, boolean};
use crate::api::AppState;
use crate::domain::cleanup::{title_case, CleanableType, ServiceSelection};
use crate::domain::service_record::ServiceRecord;
use crate::service::workers::CleanupRequest;

pub fn router() -> Router<AppState> {
    Router::new().route("/workers/cleanup", post(cleanup))
}

/// Cinder's `workers.cleanup` schema.
static CLEANUP: LazyLock<Value> = LazyLock::new(|| {
    let hostname = json!({"type": ["string", "null"], "minLength": 1, "maxLength": 255,
                          "pattern": "^[a-zA-Z0-9-._#@:/+]*$"});
    json!({
        "type": "object",
        "properties": {
            "cluster_name": hostname,
            "disabled": boolean(),
            "host": hostname,
            "is_up": boolean(),
            "binary": {"enum": ["cinder-volume", "cinder-scheduler"]},
            "resource_id": {"oneOf": [{"type": "null"}, {"type": "string", "format": "uuid"}]},
            "resource_type": {"type": ["string", "null"], "minLength": 0, "maxLength": 40},
            "service_id": {"type": ["integer", "string", "null"], "pattern": "^[0-9]*$", "maxLength": 11}
        },
        "additionalProperties": false
    })
});

#[derive(Deserialize, Default)]
struct CleanupBody {
    cluster_name: Option<String>,
    disabled: Option<Value>,
    host: Option<String>,
    is_up: Option<Value>,
    binary: Option<String>,
    resource_id: Option<uuid::Uuid>,
    resource_type: Option<String>,
    service_id: Option<Value>,
}

fn service_view(service: &ServiceRecord) -> Value {
    json!({"id": service.uuid, "host": service.host, "binary": service.binary,
           "cluster_name": Value::Null})
}

async fn cleanup(
    State(state): State<AppState>,
    ctx: Ctx,
    body: Option<JsonBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ctx.require(Endpoint::WorkersCleanup)?;
    let fields: CleanupBody = match body {
        Some(body) => body.parse(&CLEANUP)?,
        None => CleanupBody::default(),
    };
    let resource_type = match fields.resource_type.as_deref().filter(|t| !t.is_empty()) {
        Some(text) => Some(CleanableType::parse(text).ok_or_else(|| {
            let valid: Vec<&str> = CleanableType::ALL.iter().map(|t| t.name()).collect();
            ApiError::BadRequest(format!(
                "Invalid input received: Resource type {} not valid, must be {}",
                title_case(text),
                valid.join(" or ")
            ))
        })?),
        None => None,
    };
    let request = CleanupRequest {
        services: ServiceSelection {
            host: fields.host,
            binary: fields.binary,
            cluster_name: fields.cluster_name,
            service_id: fields.service_id.filter(|v| !v.is_null()).map(|v| match v {
                Value::String(s) => s,
                other => other.to_string(),
            }),
            is_up: fields.is_up.as_ref().and_then(as_bool).unwrap_or(false),
            disabled: fields.disabled.as_ref().and_then(as_bool),
        },
        resource_type,
        resource_id: fields.resource_id,
    };
    let answer = state.service.cleanup_workers(&ctx.caller, request).await?;
    let cleaning: Vec<Value> = answer.cleaning.iter().map(service_view).collect();
    let unavailable: Vec<Value> = answer.unavailable.iter().map(service_view).collect();
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"cleaning": cleaning, "unavailable": unavailable})),
    ))
}
