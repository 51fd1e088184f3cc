//! `/v3[/{project_id}]/qos-specs` (Cinder's qos_specs_manage extension, admin only).

use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::links::{base_url, next_link, resource_links};
use super::paging::{parse_bool, parse_listing};
use super::query::CinderQuery;
use crate::api::AppState;
use crate::domain::qos::{QosItems, QosSortKey, QosSpecs};
use crate::domain::DomainError;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/qos-specs", get(list).post(create))
        .route("/qos-specs/{id}", get(show).put(update).delete(delete))
        .route("/qos-specs/{id}/delete_keys", put(delete_keys))
        .route("/qos-specs/{id}/associations", get(associations))
        .route("/qos-specs/{id}/associate", get(associate))
        .route("/qos-specs/{id}/disassociate", get(disassociate))
        .route("/qos-specs/{id}/disassociate_all", get(disassociate_all))
}

#[derive(Deserialize)]
struct QosPath {
    id: String,
}

/// Cinder's schema: a name, and any other keys (checked by `spec_item`).
static CREATE: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "qos_specs": {
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 255}},
                "required": ["name"],
                "additionalProperties": true
            }
        },
        "required": ["qos_specs"],
        "additionalProperties": false
    })
});

/// `extra_specs_with_null`: keys of Cinder's spec pattern, text or null values.
static SET: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "qos_specs": {
                "type": "object",
                "patternProperties": {
                    "^[a-zA-Z0-9-_:. /]{1,255}$": {"type": ["string", "null"], "maxLength": 255}
                },
                "additionalProperties": false
            }
        },
        "required": ["qos_specs"],
        "additionalProperties": false
    })
});

static UNSET: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "keys": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": 255},
                "uniqueItems": true
            }
        },
        "required": ["keys"],
        "additionalProperties": false
    })
});

/// Cinder's `validate_dictionary_string_length` (with oslo's messages): a key of 1 to
/// 255 characters, a text value of at most 255.
fn spec_item(key: &str, value: Value) -> Result<String, ApiError> {
    let invalid = |why: String| ApiError::BadRequest(format!("Invalid input received: {why}"));
    let key_length = key.chars().count();
    if key_length == 0 {
        return Err(invalid(format!(
            "Key \"{key}\" has 0 characters, less than 1."
        )));
    }
    if key_length > MAX_SPEC_LENGTH {
        return Err(invalid(format!(
            "Key \"{key}\" has {key_length} characters, more than {MAX_SPEC_LENGTH}."
        )));
    }
    let Value::String(text) = value else {
        return Err(invalid(format!(
            "Value for key \"{key}\" is not a string or unicode"
        )));
    };
    let length = text.chars().count();
    if length > MAX_SPEC_LENGTH {
        return Err(invalid(format!(
            "Value for key \"{key}\" has {length} characters, more than {MAX_SPEC_LENGTH}."
        )));
    }
    Ok(text)
}

/// The longest QoS spec key or value Cinder takes.
const MAX_SPEC_LENGTH: usize = 255;

fn view(q: &QosSpecs) -> Value {
    json!({
        "id": q.id,
        "name": q.name,
        "consumer": q.consumer.as_str(),
        "specs": q.specs,
    })
}

fn detail(state: &AppState, ctx: &Ctx, headers: &HeaderMap, q: &QosSpecs) -> Json<Value> {
    let base = base_url(state, headers);
    let id = q.id.to_string();
    Json(json!({
        "qos_specs": view(q),
        "links": resource_links(&base, &ctx.caller.project_id, "qos-specs", &id),
    }))
}

/// Pages as Cinder's do: `limit`, `marker`, `offset`, `sort` (or `sort_key`/`sort_dir`)
/// by id, name, consumer or created_at; `qos_specs_links` when a page is full.
async fn list(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::QosList)?;
    let listing = parse_listing(&query, QosSortKey::parse, QosSortKey::CreatedAt, |marker| {
        DomainError::MarkerNotFound(marker.to_owned()).into()
    })?;
    let found = state
        .service
        .list_qos_specs(&ctx.caller, &listing.page)
        .await?;
    let items: Vec<Value> = found.iter().map(view).collect();
    let mut body = json!({ "qos_specs": items });
    if let Some(last) = found.last() {
        if found.len() as i64 >= listing.page.limit {
            let base = base_url(&state, &headers);
            let last = last.id.to_string();
            let project = &ctx.caller.project_id;
            body["qos_specs_links"] = next_link(&base, project, "qos-specs", &query, &last);
        }
    }
    Ok(Json(body))
}

#[derive(Deserialize)]
struct CreateBody {
    qos_specs: Map<String, Value>,
}

async fn create(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::QosCreate)?;
    let mut body: CreateBody = body.parse(&CREATE)?;
    let name = match body.qos_specs.remove("name") {
        Some(Value::String(name)) => name,
        _ => String::new(),
    };
    let mut specs = QosItems::new();
    for (key, value) in body.qos_specs {
        let text = spec_item(&key, value)?;
        specs.insert(key, Some(text));
    }
    let created = state
        .service
        .create_qos_specs(&ctx.caller, &name, specs)
        .await?;
    Ok(detail(&state, &ctx, &headers, &created))
}

async fn show(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    Path(path): Path<QosPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::QosShow)?;
    let found = state.service.get_qos_specs(&ctx.caller, &path.id).await?;
    Ok(detail(&state, &ctx, &headers, &found))
}

#[derive(Deserialize)]
struct SetBody {
    qos_specs: QosItems,
}

/// Answers with the body it was sent, as Cinder does.
async fn update(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<QosPath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::QosUpdate)?;
    let echo = body.0.clone();
    let body: SetBody = body.parse(&SET)?;
    state
        .service
        .update_qos_specs(&ctx.caller, &path.id, body.qos_specs)
        .await?;
    Ok(Json(echo))
}

async fn delete(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<QosPath>,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::QosDelete)?;
    let force = match super::query::last(&query, "force") {
        None => false,
        Some(v) => (v.trim() == v)
            .then(|| parse_bool(v))
            .flatten()
            .ok_or_else(|| {
                ApiError::BadRequest(format!("Value '{v}' for 'force' is not a boolean."))
            })?,
    };
    state
        .service
        .delete_qos_specs(&ctx.caller, &path.id, force)
        .await?;
    Ok(StatusCode::ACCEPTED)
}

#[derive(Deserialize)]
struct UnsetBody {
    keys: Vec<String>,
}

async fn delete_keys(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<QosPath>,
    body: JsonBody,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::QosDeleteKeys)?;
    let body: UnsetBody = body.parse(&UNSET)?;
    state
        .service
        .delete_qos_keys(&ctx.caller, &path.id, &body.keys)
        .await?;
    Ok(StatusCode::ACCEPTED)
}

async fn associations(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<QosPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::QosAssociations)?;
    let found = state
        .service
        .qos_associations(&ctx.caller, &path.id)
        .await?;
    let items: Vec<Value> = found
        .iter()
        .map(|a| json!({"association_type": "volume_type", "name": a.type_name, "id": a.type_id}))
        .collect();
    Ok(Json(json!({"qos_associations": items})))
}

/// `vol_type_id` of an associate or disassociate request.
fn type_param(query: &[(String, String)]) -> Result<&str, ApiError> {
    super::query::last(query, "vol_type_id")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ApiError::BadRequest("Volume Type id must not be None.".to_owned()))
}

async fn associate(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<QosPath>,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::QosAssociate)?;
    let type_id = type_param(&query)?;
    state
        .service
        .change_qos_association(&ctx.caller, &path.id, Some(type_id), true)
        .await?;
    Ok(StatusCode::ACCEPTED)
}

async fn disassociate(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<QosPath>,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::QosDisassociate)?;
    let type_id = type_param(&query)?;
    state
        .service
        .change_qos_association(&ctx.caller, &path.id, Some(type_id), false)
        .await?;
    Ok(StatusCode::ACCEPTED)
}

async fn disassociate_all(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<QosPath>,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::QosDisassociateAll)?;
    state
        .service
        .change_qos_association(&ctx.caller, &path.id, None, false)
        .await?;
    Ok(StatusCode::ACCEPTED)
}
