//! `/types/{type_id}/encryption[/{key or id}]` (Cinder's volume_type_encryption
//! extension, admin only) and `/volumes/{volume_id}/encryption[/{key}]` (its
//! volume_encryption_metadata extension, what a host reads before it attaches).

use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::volume_path::{volume_id, VolumePath};
use crate::api::AppState;
use crate::domain::encryption::{
    ControlLocation, EncryptionChange, EncryptionSpecs, EncryptionType,
};
use crate::domain::time::format_timestamp;
use crate::domain::DomainError;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/types/{type_id}/encryption", get(index).post(create))
        .route(
            "/types/{type_id}/encryption/{id}",
            get(show).put(update).delete(delete),
        )
        .route("/volumes/{volume_id}/encryption", get(volume_index))
        .route("/volumes/{volume_id}/encryption/{key}", get(volume_show))
}

#[derive(Deserialize)]
struct TypePath {
    type_id: String,
}

#[derive(Deserialize)]
struct ItemPath {
    type_id: String,
    id: String,
}

#[derive(Deserialize)]
struct VolumeKeyPath {
    volume_id: String,
    key: String,
}

/// Cinder's schema: `provider` and `control_location` required (not on update), any
/// other key taken as it is.
fn schema(required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": {
            "encryption": {
                "type": "object",
                "properties": {
                    "key_size": {"type": ["string", "integer", "null"], "minimum": 0,
                                 "maximum": i32::MAX},
                    "provider": {"type": "string", "minLength": 0, "maxLength": 255},
                    "control_location": {"enum": ["front-end", "back-end"]},
                    "cipher": {"type": ["string", "null"], "minLength": 0, "maxLength": 255}
                },
                "required": required,
                "additionalProperties": true
            }
        },
        "required": ["encryption"],
        "additionalProperties": false
    })
}

static CREATE: LazyLock<Value> = LazyLock::new(|| schema(&["provider", "control_location"]));
static UPDATE: LazyLock<Value> = LazyLock::new(|| schema(&[]));

/// `key_size` as Cinder's `key_size` format takes it (the schema bounds a number): an
/// integer, or text that reads as exactly one (oslo's `is_int_like`); null stays null.
/// The body echoed back carries the integer, as Cinder converts it.
fn key_size(given: &mut Map<String, Value>) -> Result<Option<Option<i64>>, ApiError> {
    let Some(value) = given.get("key_size") else {
        return Ok(None);
    };
    let size = match value {
        Value::Null => return Ok(Some(None)),
        Value::Number(n) => n.as_i64(),
        Value::String(text) => text.parse::<i64>().ok().filter(|n| n.to_string() == *text),
        _ => None,
    };
    let size = size.ok_or_else(|| {
        ApiError::BadRequest("Invalid input received: key_size must be an integer.".into())
    })?;
    given.insert("key_size".into(), json!(size));
    Ok(Some(Some(size)))
}

/// The fields of a validated `encryption` body, and the body as Cinder echoes it.
fn read_change(body: JsonBody, schema: &Value) -> Result<(EncryptionChange, Value), ApiError> {
    let mut echo = body.0.clone();
    body.parse::<Value>(schema)?;
    let given = echo["encryption"]
        .as_object_mut()
        .ok_or_else(|| ApiError::BadRequest("encryption must be an object".into()))?;
    let key_size = key_size(given)?;
    let text = |key: &str| given.get(key).and_then(Value::as_str).map(str::to_owned);
    let change = EncryptionChange {
        provider: text("provider"),
        control_location: text("control_location")
            .as_deref()
            .and_then(ControlLocation::parse),
        cipher: given.get("cipher").map(|c| c.as_str().map(str::to_owned)),
        key_size,
    };
    Ok((change, echo))
}

/// A type's encryption as Cinder shows the row.
fn view(e: &EncryptionType) -> Value {
    json!({
        "volume_type_id": e.volume_type_id,
        "encryption_id": e.encryption_id,
        "provider": e.specs.provider,
        "control_location": e.specs.control_location.as_str(),
        "cipher": e.specs.cipher,
        "key_size": e.specs.key_size,
        "created_at": format_timestamp(&e.created_at),
        "updated_at": e.updated_at.as_ref().map(format_timestamp),
        "deleted": false,
        "deleted_at": null,
    })
}

async fn index(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<TypePath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::EncryptionTypeShow)?;
    let found = state
        .service
        .type_encryption(&ctx.caller, &path.type_id)
        .await?;
    Ok(Json(found.as_ref().map_or_else(|| json!({}), view)))
}

/// Answers with the body it was sent (`key_size` made an integer, the type's and the
/// encryption's ids added), as Cinder does.
async fn create(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<TypePath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::EncryptionTypeCreate)?;
    let (change, echo) = read_change(body, &CREATE)?;
    let (Some(provider), Some(control_location)) = (change.provider, change.control_location)
    else {
        return Err(ApiError::BadRequest(
            "provider and control_location are required".into(),
        ));
    };
    let specs = EncryptionSpecs {
        provider,
        control_location,
        cipher: change.cipher.flatten(),
        key_size: change.key_size.flatten(),
    };
    let created = state
        .service
        .create_type_encryption(&ctx.caller, &path.type_id, &specs)
        .await?;
    // Cinder's database call adds the two ids to the very body it answers with.
    let mut echo = echo;
    echo["encryption"]["volume_type_id"] = json!(created.volume_type_id);
    echo["encryption"]["encryption_id"] = json!(created.encryption_id);
    Ok(Json(echo))
}

async fn update(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<ItemPath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::EncryptionTypeUpdate)?;
    let (change, echo) = read_change(body, &UPDATE)?;
    state
        .service
        .update_type_encryption(&ctx.caller, &path.type_id, &change)
        .await?;
    Ok(Json(echo))
}

/// One field of the type's encryption, `{key: value}`.
async fn show(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<ItemPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::EncryptionTypeShow)?;
    let found = state
        .service
        .type_encryption(&ctx.caller, &path.type_id)
        .await?;
    let value = found
        .as_ref()
        .map(view)
        .and_then(|v| v.get(&path.id).cloned())
        .ok_or_else(|| DomainError::EncryptionNotFound(path.type_id.clone()))?;
    Ok(Json(json!({ path.id: value })))
}

async fn delete(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<ItemPath>,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::EncryptionTypeDelete)?;
    state
        .service
        .delete_type_encryption(&ctx.caller, &path.type_id)
        .await?;
    Ok(StatusCode::ACCEPTED)
}

async fn volume_metadata(state: &AppState, ctx: &Ctx, raw_id: &str) -> Result<Value, ApiError> {
    ctx.require(Endpoint::VolumeEncryptionShow)?;
    let id = volume_id(&VolumePath {
        volume_id: raw_id.to_owned(),
    })?;
    let found = state.service.volume_encryption(&ctx.caller, id).await?;
    let mut body = json!({"encryption_key_id": found.encryption_key_id});
    if let Some(specs) = found.specs {
        body["control_location"] = json!(specs.control_location.as_str());
        body["cipher"] = json!(specs.cipher);
        body["key_size"] = json!(specs.key_size);
        body["provider"] = json!(specs.provider);
    }
    Ok(body)
}

async fn volume_index(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<VolumePath>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(volume_metadata(&state, &ctx, &path.volume_id).await?))
}

/// One item of the volume's encryption metadata, the value alone (as Cinder answers it).
async fn volume_show(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<VolumeKeyPath>,
) -> Result<Json<Value>, ApiError> {
    let body = volume_metadata(&state, &ctx, &path.volume_id).await?;
    body.get(&path.key).cloned().map(Json).ok_or_else(|| {
        ApiError::NotFound(format!(
            "Volume {} has no encryption metadata item {}.",
            path.volume_id, path.key
        ))
    })
}
