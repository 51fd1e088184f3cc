//! `/v3[/{project_id}]/snapshots`, their metadata and admin actions.

use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::links::{base_url, next_link};
use super::paging::{parse_bool, parse_listing, wants_count};
use super::query::CinderQuery;
use super::volume_metadata::{metadata_schema, MetaItemBody, MetadataBody, METADATA, META_ITEM};
use crate::api::AppState;
use crate::domain::ids::VolumeId;
use crate::domain::snapshot::SnapshotFilters;
use crate::domain::snapshot::{Snapshot, SnapshotSortKey, SnapshotStatus};
use crate::domain::time::format_timestamp;
use crate::domain::volume::MetadataChange;
use crate::domain::DomainError;
use crate::service::snapshots::CreateSnapshot;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/snapshots", get(list).post(create))
        .route("/snapshots/detail", get(list_detail))
        .route("/snapshots/{id}", get(show).put(update).delete(delete))
        .route("/snapshots/{id}/action", post(action))
        .route(
            "/snapshots/{id}/metadata",
            get(metadata).post(write_metadata).put(write_metadata),
        )
        .route(
            "/snapshots/{id}/metadata/{key}",
            get(metadata_item)
                .put(update_metadata_item)
                .delete(delete_metadata_item),
        )
}

#[derive(Deserialize)]
struct SnapshotPath {
    id: String,
}

#[derive(Deserialize)]
struct KeyPath {
    id: String,
    key: String,
}

/// The schemas of a new snapshot's name or description and of its metadata, as a create
/// and a manage take them (either may be null).
pub(super) fn text_and_metadata_schemas() -> (Value, Value) {
    let text = json!({"type": ["string", "null"], "maxLength": 255});
    let mut metadata = metadata_schema();
    metadata["type"] = json!(["object", "null"]);
    (text, metadata)
}

static CREATE: LazyLock<Value> = LazyLock::new(|| {
    let (text, metadata) = text_and_metadata_schemas();
    json!({
        "type": "object",
        "properties": {
            "snapshot": {
                "type": "object",
                "properties": {
                    "name": text, "display_name": text,
                    "description": text, "display_description": text,
                    "volume_id": {"oneOf": [{"type": "null"}, {"type": "string", "format": "uuid"}]},
                    "force": super::schema::boolean(),
                    "metadata": metadata
                },
                "required": ["volume_id"],
                "additionalProperties": false
            }
        },
        "required": ["snapshot"],
        "additionalProperties": false
    })
});

static UPDATE: LazyLock<Value> = LazyLock::new(|| {
    let text = json!({"type": ["string", "null"], "maxLength": 255});
    json!({
        "type": "object",
        "properties": {
            "snapshot": {
                "type": "object",
                "properties": {
                    "name": text, "display_name": text,
                    "description": text, "display_description": text
                },
                "additionalProperties": false,
                "anyOf": [
                    {"required": ["name"]}, {"required": ["description"]},
                    {"required": ["display_name"]}, {"required": ["display_description"]}
                ]
            }
        },
        "required": ["snapshot"],
        "additionalProperties": false
    })
});

static RESET_STATUS: LazyLock<Value> = LazyLock::new(|| {
    let statuses: Vec<&str> = SnapshotStatus::ALL.iter().map(|s| s.as_str()).collect();
    json!({
        "type": "object",
        "properties": {
            "os-reset_status": {
                "type": "object",
                "properties": {"status": {"type": "string", "enum": statuses}},
                "required": ["status"],
                "additionalProperties": false
            }
        },
        "required": ["os-reset_status"],
        "additionalProperties": false
    })
});

/// A progress is a percentage: `0%` to `100%`.
static UPDATE_STATUS: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "os-update_snapshot_status": {
                "type": "object",
                "properties": {
                    "status": {"type": "string"},
                    "progress": {"type": "string", "pattern": "^(100|[1-9]?[0-9])%$"}
                },
                "required": ["status"],
                "additionalProperties": false
            }
        },
        "required": ["os-update_snapshot_status"],
        "additionalProperties": false
    })
});

/// Cinder's snapshot view; with `extended`, the extended attributes (show and detail).
fn view(ctx: &Ctx, snapshot: &Snapshot, extended: bool) -> Value {
    let mut view = json!({
        "id": snapshot.id,
        "created_at": format_timestamp(&snapshot.created_at),
        "updated_at": snapshot.updated_at.as_ref().map(format_timestamp),
        "name": snapshot.name,
        "description": snapshot.description,
        "volume_id": snapshot.volume_id,
        "status": snapshot.status.as_str(),
        "size": snapshot.volume_size,
        "metadata": snapshot.metadata,
    });
    if ctx.version.at_least(3, 14) {
        view["group_snapshot_id"] = json!(snapshot.group_snapshot_id);
    }
    if ctx.version.at_least(3, 41) {
        view["user_id"] = json!(snapshot.user_id);
    }
    if ctx.version.at_least(3, 65) {
        view["consumes_quota"] = json!(true);
    }
    if extended {
        view["os-extended-snapshot-attributes:progress"] = json!(snapshot.progress);
        view["os-extended-snapshot-attributes:project_id"] = json!(snapshot.project_id);
    }
    view
}

fn filters(query: &[(String, String)]) -> Result<(SnapshotFilters, bool), ApiError> {
    let mut filters = SnapshotFilters::default();
    let mut all_tenants = false;
    for (key, value) in query {
        match key.as_str() {
            "all_tenants" => all_tenants = parse_bool(value).unwrap_or(true),
            "project_id" => filters.project_id = Some(value.clone()),
            "volume_id" => {
                // No snapshot belongs to what is not a volume id.
                filters.volume_id =
                    Some(VolumeId::parse(value).unwrap_or(VolumeId::from(uuid::Uuid::nil())));
            }
            "status" => {
                filters.status = Some(SnapshotStatus::parse(value).ok_or_else(|| {
                    ApiError::BadRequest(format!("Invalid status filter [{value}]"))
                })?)
            }
            "name" | "display_name" => filters.name = Some(value.clone()),
            _ => {}
        }
    }
    Ok((filters, all_tenants))
}

async fn listing(
    state: &AppState,
    ctx: &Ctx,
    headers: &HeaderMap,
    query: &[(String, String)],
    detail: bool,
) -> Result<Json<Value>, ApiError> {
    let listing = parse_listing(
        query,
        SnapshotSortKey::parse,
        SnapshotSortKey::CreatedAt,
        |marker| DomainError::MarkerNotFound(marker.to_owned()).into(),
    )?;
    let (filters, all_tenants) = filters(&listing.filters)?;
    let found = state
        .service
        .list_snapshots(&ctx.caller, filters.clone(), all_tenants, &listing.page)
        .await?;
    let count = if wants_count(ctx.version, query) {
        let service = &state.service;
        Some(
            service
                .count_snapshots(&ctx.caller, filters, all_tenants)
                .await?,
        )
    } else {
        None
    };
    let extended = detail && state.service.may_see_snapshot_project(&ctx.caller);
    let items: Vec<Value> = found.iter().map(|s| view(ctx, s, extended)).collect();
    let mut body = json!({ "snapshots": items });
    if let Some(last) = found.last() {
        if found.len() as i64 >= listing.page.limit {
            let path = if detail {
                "snapshots/detail"
            } else {
                "snapshots"
            };
            let base = base_url(state, headers);
            let last = last.id.to_string();
            body["snapshots_links"] = next_link(&base, &ctx.caller.project_id, path, query, &last);
        }
    }
    if let Some(count) = count {
        body["count"] = json!(count);
    }
    Ok(Json(body))
}

async fn list(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::SnapshotList)?;
    listing(&state, &ctx, &headers, &query, false).await
}

async fn list_detail(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::SnapshotList)?;
    listing(&state, &ctx, &headers, &query, true).await
}

/// Show answers with the extended attributes (when policy allows); create and update,
/// as in Cinder, without.
pub(super) fn one(state: &AppState, ctx: &Ctx, snapshot: &Snapshot, show: bool) -> Json<Value> {
    let extended = show && state.service.may_see_snapshot_project(&ctx.caller);
    Json(json!({"snapshot": view(ctx, snapshot, extended)}))
}

#[derive(Deserialize)]
struct CreateBody {
    snapshot: CreateFields,
}

#[derive(Deserialize)]
struct CreateFields {
    volume_id: Option<String>,
    name: Option<String>,
    display_name: Option<String>,
    description: Option<String>,
    display_description: Option<String>,
    force: Option<Value>,
    metadata: Option<std::collections::BTreeMap<String, String>>,
}

async fn create(
    State(state): State<AppState>,
    ctx: Ctx,
    body: JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ctx.require(Endpoint::SnapshotCreate)?;
    let body: CreateBody = body.parse(&CREATE)?;
    let fields = body.snapshot;
    let force = fields.force.as_ref().and_then(super::schema::as_bool);
    // From 3.66 in-use volumes need no force; force=false is refused there.
    let in_use_allowed = if ctx.version.at_least(3, 66) {
        if force == Some(false) {
            return Err(DomainError::SnapshotForceFlag.into());
        }
        true
    } else {
        force == Some(true)
    };
    let volume_id = fields.volume_id.unwrap_or_default();
    let request = CreateSnapshot {
        volume_id,
        name: fields
            .name
            .or(fields.display_name)
            .map(|n| n.trim().to_owned()),
        description: fields
            .description
            .or(fields.display_description)
            .map(|d| d.trim().to_owned()),
        metadata: fields.metadata.unwrap_or_default(),
        in_use_allowed,
    };
    let created = state.service.create_snapshot(&ctx.caller, request).await?;
    Ok((StatusCode::ACCEPTED, one(&state, &ctx, &created, false)))
}

async fn show(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<SnapshotPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::SnapshotShow)?;
    let found = state.service.get_snapshot(&ctx.caller, &path.id).await?;
    Ok(one(&state, &ctx, &found, true))
}

#[derive(Deserialize)]
struct UpdateBody {
    snapshot: UpdateFields,
}

#[derive(Deserialize)]
struct UpdateFields {
    name: Option<String>,
    display_name: Option<String>,
    description: Option<String>,
    display_description: Option<String>,
}

async fn update(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<SnapshotPath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::SnapshotUpdate)?;
    let fields = body.parse::<UpdateBody>(&UPDATE)?.snapshot;
    let name = fields
        .name
        .or(fields.display_name)
        .map(|n| n.trim().to_owned());
    let description = fields
        .description
        .or(fields.display_description)
        .map(|d| d.trim().to_owned());
    let updated = state
        .service
        .update_snapshot(&ctx.caller, &path.id, name, description)
        .await?;
    Ok(one(&state, &ctx, &updated, false))
}

async fn delete(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<SnapshotPath>,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::SnapshotDelete)?;
    state
        .service
        .delete_snapshot(&ctx.caller, &path.id, false)
        .await?;
    Ok(StatusCode::ACCEPTED)
}

/// `os-reset_status`, `os-force_delete`, `os-unmanage` (admins) and
/// `os-update_snapshot_status`.
async fn action(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<SnapshotPath>,
    body: JsonBody,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::SnapshotAction)?;
    let name = body.action_name()?;
    let service = &state.service;
    match name.as_str() {
        "os-reset_status" => {
            super::schema::validate(&RESET_STATUS, &body.0).map_err(ApiError::BadRequest)?;
            let status = body.0["os-reset_status"]["status"]
                .as_str()
                .and_then(SnapshotStatus::parse)
                .ok_or_else(ApiError::malformed_body)?;
            service
                .reset_snapshot_status(&ctx.caller, &path.id, status)
                .await?;
        }
        "os-force_delete" => {
            service.delete_snapshot(&ctx.caller, &path.id, true).await?;
        }
        "os-update_snapshot_status" => {
            super::schema::validate(&UPDATE_STATUS, &body.0).map_err(ApiError::BadRequest)?;
            let fields = &body.0["os-update_snapshot_status"];
            let status = fields["status"].as_str().unwrap_or_default();
            // Cinder checks the status against its transitions; an unknown word is one
            // no transition allows.
            let status = SnapshotStatus::parse(status).ok_or_else(|| {
                ApiError::BadRequest(format!(
                    "Provided snapshot status {status} not allowed for snapshot."
                ))
            })?;
            let progress = fields["progress"].as_str().map(str::to_owned);
            service
                .update_snapshot_status(&ctx.caller, &path.id, status, progress)
                .await?;
        }
        "os-unmanage" => {
            service.unmanage_snapshot(&ctx.caller, &path.id).await?;
        }
        other => return Err(ApiError::no_such_action(other)),
    }
    Ok(StatusCode::ACCEPTED)
}

async fn metadata(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<SnapshotPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::SnapshotMetadata)?;
    let found = state
        .service
        .snapshot_metadata(&ctx.caller, &path.id)
        .await?;
    Ok(Json(json!({ "metadata": found })))
}

async fn change(
    state: &AppState,
    ctx: &Ctx,
    id: &str,
    change: MetadataChange,
) -> Result<std::collections::BTreeMap<String, String>, ApiError> {
    Ok(state
        .service
        .change_snapshot_metadata(&ctx.caller, id, change)
        .await?)
}

/// `POST` merges the body's items, `PUT` makes the metadata exactly them; both answer
/// with all metadata.
async fn write_metadata(
    method: Method,
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<SnapshotPath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::SnapshotMetadata)?;
    let items = body.parse::<MetadataBody>(&METADATA)?.metadata;
    let how = if method == Method::PUT {
        MetadataChange::Replace(items)
    } else {
        MetadataChange::Merge(items)
    };
    let all = change(&state, &ctx, &path.id, how).await?;
    Ok(Json(json!({ "metadata": all })))
}

async fn metadata_item(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<KeyPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::SnapshotMetadata)?;
    let value = state
        .service
        .snapshot_metadata_item(&ctx.caller, &path.id, &path.key)
        .await?;
    Ok(Json(json!({"meta": {path.key: value}})))
}

async fn update_metadata_item(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<KeyPath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::SnapshotMetadata)?;
    let meta = body.parse::<MetaItemBody>(&META_ITEM)?.meta;
    if !meta.contains_key(&path.key) {
        return Err(ApiError::BadRequest(
            "Request body and URI mismatch".to_owned(),
        ));
    }
    change(&state, &ctx, &path.id, MetadataChange::Merge(meta.clone())).await?;
    Ok(Json(json!({ "meta": meta })))
}

async fn delete_metadata_item(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<KeyPath>,
) -> Result<(), ApiError> {
    ctx.require(Endpoint::SnapshotMetadata)?;
    change(
        &state,
        &ctx,
        &path.id,
        MetadataChange::Remove(path.key.clone()),
    )
    .await?;
    Ok(())
}
