//! Adoption of existing storage: `POST /os-volume-manage` (and `POST
//! /manageable_volumes`, 3.8+) takes a backend's storage object as a new volume;
//! `GET /manageable_volumes[/detail]` (3.8+) lists what a backend holds that could be
//! taken. `os-unmanage` is a volume action (`volume_actions`).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::links::base_url;
use super::paging::parse_bool;
use super::query::CinderQuery;
use super::schema::boolean;
use super::views::volume_detail;
use super::volume_metadata::metadata_schema;
use crate::api::AppState;
use crate::service::volume_manage::ManageVolume;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/os-volume-manage", post(manage))
        .route("/manageable_volumes", get(list).post(manage_v38))
        .route("/manageable_volumes/detail", get(list_detail))
}

static MANAGE: LazyLock<Value> = LazyLock::new(|| {
    let text = json!({"type": ["string", "null"], "minLength": 0, "maxLength": 255});
    let mut metadata = metadata_schema();
    metadata["type"] = json!(["object", "null"]);
    json!({
        "type": "object",
        "properties": {
            "volume": {
                "type": "object",
                "properties": {
                    "description": text, "availability_zone": text, "volume_type": text,
                    "name": text, "bootable": boolean(),
                    "host": {"type": ["string", "null"], "maxLength": 255},
                    "ref": {"type": ["object", "string"]},
                    "metadata": metadata
                },
                "required": ["ref"],
                "additionalProperties": false
            }
        },
        "required": ["volume"],
        "additionalProperties": false
    })
});

#[derive(Deserialize)]
struct ManageBody {
    volume: ManageFields,
}

#[derive(Deserialize)]
struct ManageFields {
    host: Option<String>,
    #[serde(rename = "ref")]
    reference: Value,
    name: Option<String>,
    description: Option<String>,
    volume_type: Option<String>,
    metadata: Option<BTreeMap<String, String>>,
    availability_zone: Option<String>,
    bootable: Option<Value>,
}

pub(super) fn bad(text: &str) -> ApiError {
    ApiError::BadRequest(text.to_owned())
}

async fn manage_v38(
    state: State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    body: JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ctx.require(Endpoint::ManageableVolumeCreate)?;
    manage_volume(state, ctx, headers, body).await
}

async fn manage(
    state: State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    body: JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ctx.require(Endpoint::VolumeManage)?;
    manage_volume(state, ctx, headers, body).await
}

/// 202 with the new volume, as a volume create answers.
async fn manage_volume(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    body: JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let fields = body.parse::<ManageBody>(&MANAGE)?.volume;
    let host = fields
        .host
        .filter(|h| !h.is_empty())
        .ok_or_else(|| bad("Host field is missing."))?;
    let source_name = match &fields.reference {
        Value::Object(reference) => reference.get("source-name").and_then(Value::as_str),
        _ => None,
    };
    let Some(source_name) = source_name else {
        return Err(bad(
            "Invalid input received: Manage existing volume failed due to invalid backend \
             reference: Reference must contain source-name element.",
        ));
    };
    let bootable = match &fields.bootable {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => parse_bool(s) == Some(true),
        _ => false,
    };
    let request = ManageVolume {
        host,
        source_name: source_name.to_owned(),
        name: fields
            .name
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty()),
        description: fields.description.map(|d| d.trim().to_owned()),
        volume_type: fields.volume_type,
        metadata: fields.metadata.unwrap_or_default(),
        availability_zone: fields.availability_zone,
        bootable,
    };
    let volume = state.service.manage_volume(&ctx.caller, request).await?;
    let base = base_url(&state, &headers);
    let rights = state.service.volume_view_rights(&ctx.caller, &volume);
    let view = volume_detail(&ctx.view(&base), &volume, rights);
    Ok((StatusCode::ACCEPTED, Json(json!({ "volume": view }))))
}

/// Cinder's sort keys for these listings (of volumes or snapshots: their reference
/// name and size), checked as it checks them; then `offset` and `limit`.
pub(super) fn sorted<T>(
    mut found: Vec<T>,
    query: &[(String, String)],
    reference: fn(&T) -> &str,
    size: fn(&T) -> u64,
) -> Result<Vec<T>, ApiError> {
    let get = |name: &str| super::query::last(query, name);
    let key = get("sort_key")
        .or_else(|| get("sort").map(|s| s.split(':').next().unwrap_or_default()))
        .unwrap_or("reference");
    let dir = get("sort_dir")
        .or_else(|| get("sort").and_then(|s| s.split(':').nth(1)))
        .unwrap_or("desc");
    match key {
        "reference" => found.sort_by(|a, b| reference(a).cmp(reference(b))),
        "size" => found.sort_by_key(size),
        other => return Err(bad(&format!("Invalid sort keys passed: {other}"))),
    }
    match dir {
        "asc" => {}
        "desc" => found.reverse(),
        other => return Err(bad(&format!("Invalid sort dirs passed: {other}"))),
    }
    let number = |name: &str| -> Result<usize, ApiError> {
        match get(name) {
            None => Ok(usize::MAX),
            Some(text) => text
                .trim()
                .parse()
                .map_err(|_| bad(&format!("{name} param must be an integer"))),
        }
    };
    let (limit, offset) = (number("limit")?, number("offset")?);
    let offset = if offset == usize::MAX { 0 } else { offset };
    Ok(found.into_iter().skip(offset).take(limit).collect())
}

/// The `host` a manageable listing must name.
pub(super) fn listed_host(query: &[(String, String)]) -> Result<&str, ApiError> {
    super::query::last(query, "host")
        .filter(|h| !h.is_empty())
        .ok_or_else(|| bad("Host field is missing."))
}

/// One entry of a manageable listing, as Cinder's views build it (detail: also why it is
/// not safe, the id it already has, and no extra info).
pub(super) fn manageable_item(
    reference: &str,
    size_gib: u64,
    cinder_id: Option<String>,
    is_detail: bool,
) -> Value {
    let mut item = json!({
        "reference": {"source-name": reference},
        "size": size_gib,
        "safe_to_manage": cinder_id.is_none(),
    });
    if is_detail {
        item["reason_not_safe"] = match cinder_id {
            Some(_) => json!("already managed"),
            None => Value::Null,
        };
        item["cinder_id"] = json!(cinder_id);
        item["extra_info"] = Value::Null;
    }
    item
}

async fn listing(
    state: &AppState,
    ctx: &Ctx,
    query: &[(String, String)],
    is_detail: bool,
) -> Result<Json<Value>, ApiError> {
    let host = listed_host(query)?;
    let found = state.service.manageable_volumes(&ctx.caller, host).await?;
    let items: Vec<Value> = sorted(found, query, |m| m.source_name.as_str(), |m| m.size_gib)?
        .iter()
        .map(|m| {
            let id = m.cinder_id.map(|id| id.to_string());
            manageable_item(&m.source_name, m.size_gib, id, is_detail)
        })
        .collect();
    Ok(Json(json!({ "manageable-volumes": items })))
}

async fn list(
    State(state): State<AppState>,
    ctx: Ctx,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::ManageableVolumeList)?;
    listing(&state, &ctx, &query, false).await
}

async fn list_detail(
    State(state): State<AppState>,
    ctx: Ctx,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::ManageableVolumeList)?;
    listing(&state, &ctx, &query, true).await
}
