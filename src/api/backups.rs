//! `/v3[/{project_id}]/backups`: backups of volumes and snapshots, full or incremental;
//! their listings, update (3.9+), delete, restore, export and import of their records,
//! and an admin's `os-reset_status` and `os-force_delete`.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::links::{base_url, next_link, resource_links};
use super::paging::{parse_bool, parse_listing, wants_count};
use super::query::CinderQuery;
use super::schema::{boolean, validate};
use super::volume_metadata::metadata_schema;
use crate::api::AppState;
use crate::domain::backup::{self, Backup, BackupFilters, BackupSortKey, BackupStatus};
use crate::domain::error::BackupError;
use crate::domain::ids::{BackupId, VolumeId};
use crate::domain::time::format_timestamp;
use crate::domain::DomainError;
use crate::service::backups::CreateBackup;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/backups", get(list).post(create))
        .route("/backups/detail", get(list_detail))
        .route("/backups/import_record", post(import_record))
        .route("/backups/{id}", get(show).put(update).delete(delete))
        .route("/backups/{id}/restore", post(restore))
        .route("/backups/{id}/export_record", get(export_record))
        .route("/backups/{id}/action", post(action))
}

#[derive(Deserialize)]
struct BackupPath {
    id: String,
}

fn text() -> Value {
    json!({"type": ["string", "null"], "minLength": 0, "maxLength": 255})
}

/// Cinder's `create` schema, with `metadata` from 3.43 and `availability_zone` from 3.51.
fn create_schema(metadata: bool, zone: bool) -> Value {
    let mut properties = json!({
        "volume_id": {"type": "string", "format": "uuid"},
        "container": text(),
        "description": text(),
        "incremental": boolean(),
        "force": boolean(),
        "name": text(),
        "snapshot_id": {"type": ["string", "null"], "format": "uuid"}
    });
    if metadata {
        let mut nullable = metadata_schema();
        nullable["type"] = json!(["object", "null"]);
        properties["metadata"] = nullable;
    }
    if zone {
        properties["availability_zone"] = json!({"type": ["string", "null"]});
    }
    json!({
        "type": "object",
        "properties": {
            "backup": {
                "type": "object",
                "properties": properties,
                "required": ["volume_id"],
                "additionalProperties": false
            }
        },
        "required": ["backup"],
        "additionalProperties": false
    })
}

static CREATE: LazyLock<[Value; 3]> = LazyLock::new(|| {
    [
        create_schema(false, false),
        create_schema(true, false),
        create_schema(true, true),
    ]
});

fn update_schema(metadata: bool) -> Value {
    let mut properties = json!({"name": text(), "description": text()});
    if metadata {
        properties["metadata"] = metadata_schema();
    }
    json!({
        "type": "object",
        "properties": {
            "backup": {
                "type": ["object", "null"],
                "properties": properties,
                "additionalProperties": false
            }
        },
        "required": ["backup"],
        "additionalProperties": false
    })
}

static UPDATE: LazyLock<[Value; 2]> = LazyLock::new(|| [update_schema(false), update_schema(true)]);

static RESTORE: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "restore": {
                "type": ["object", "null"],
                "properties": {
                    "name": text(),
                    "volume_id": {"type": ["string", "null"], "format": "uuid"}
                },
                "additionalProperties": false
            }
        },
        "required": ["restore"],
        "additionalProperties": false
    })
});

static IMPORT: LazyLock<Value> = LazyLock::new(|| {
    let text = json!({"type": "string", "minLength": 1, "maxLength": 255});
    json!({
        "type": "object",
        "properties": {
            "backup-record": {
                "type": "object",
                "properties": {
                    "backup_service": text,
                    "backup_url": {"type": "string", "minLength": 1}
                },
                "required": ["backup_service", "backup_url"],
                "additionalProperties": false
            }
        },
        "required": ["backup-record"],
        "additionalProperties": false
    })
});

static RESET_STATUS: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "os-reset_status": {
                "type": "object",
                "properties": {"status": {"type": "string"}},
                "required": ["status"],
                "additionalProperties": false
            }
        },
        "required": ["os-reset_status"],
        "additionalProperties": false
    })
});

static FORCE_DELETE: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {"os-force_delete": {}},
        "required": ["os-force_delete"],
        "additionalProperties": false
    })
});

fn summary(state: &AppState, ctx: &Ctx, headers: &HeaderMap, backup: &Backup) -> Value {
    let base = base_url(state, headers);
    let id = backup.id.to_string();
    json!({
        "id": backup.id,
        "name": backup.name,
        "links": resource_links(&base, &ctx.caller.project_id, "backups", &id),
    })
}

fn detail(
    state: &AppState,
    ctx: &Ctx,
    headers: &HeaderMap,
    backup: &Backup,
    with_project: bool,
) -> Value {
    let time = |t: &Option<chrono::DateTime<chrono::Utc>>| t.as_ref().map(format_timestamp);
    let mut view = summary(state, ctx, headers, backup);
    let more = json!({
        "status": backup.status.as_str(),
        "size": backup.size,
        "object_count": backup.object_count,
        "availability_zone": backup.availability_zone,
        "container": backup.container,
        "created_at": format_timestamp(&backup.created_at),
        "updated_at": time(&backup.updated_at),
        "description": backup.description,
        "fail_reason": backup.fail_reason,
        "volume_id": backup.volume_id,
        "is_incremental": backup.is_incremental(),
        "has_dependent_backups": backup.has_dependent_backups(),
        "snapshot_id": backup.snapshot_id,
        "data_timestamp": time(&backup.data_timestamp),
    });
    if let (Some(view), Value::Object(more)) = (view.as_object_mut(), more) {
        view.extend(more);
    }
    if ctx.version.at_least(3, 18) && with_project {
        view["os-backup-project-attr:project_id"] = json!(backup.project_id);
    }
    if ctx.version.at_least(3, 43) {
        view["metadata"] = json!(backup.metadata);
    }
    if ctx.version.at_least(3, 56) && with_project {
        view["user_id"] = json!(backup.user_id);
    }
    let key = crate::keys::shown_key_id(backup.encryption_key_id.as_deref());
    if let (true, Some(key)) = (ctx.version.at_least(3, 64), key) {
        view["encryption_key_id"] = json!(key);
    }
    view
}

/// Cinder's listing filters: `name`, `status` and `volume_id` for everyone, any column
/// for admins; `None` when a filter matches nothing here.
fn filters(
    ctx: &Ctx,
    query: &[(String, String)],
) -> Result<Option<(BackupFilters, bool)>, ApiError> {
    let mut filters = BackupFilters::default();
    let mut all_tenants = false;
    let mut invalid = Vec::new();
    for (key, value) in query {
        match key.as_str() {
            "all_tenants" => all_tenants = parse_bool(value).unwrap_or(true),
            "with_count" => {}
            "name" | "display_name" => filters.name = Some(value.clone()),
            "status" => match BackupStatus::parse(value) {
                Some(status) => filters.status = Some(status),
                None => return Ok(None),
            },
            "volume_id" => match VolumeId::parse(value) {
                Some(volume) => filters.volume_id = Some(volume),
                None => return Ok(None),
            },
            _ if !ctx.caller.is_admin => invalid.push(key.clone()),
            "project_id" => filters.project_id = Some(value.clone()),
            "parent_id" => match BackupId::parse(value) {
                Some(parent) => filters.parent_id = Some(parent),
                None => return Ok(None),
            },
            _ => return Ok(None),
        }
    }
    super::paging::reject_invalid_filters(ctx.version, &invalid)?;
    Ok(Some((filters, all_tenants)))
}

async fn listing(
    state: &AppState,
    ctx: &Ctx,
    headers: &HeaderMap,
    query: &[(String, String)],
    is_detail: bool,
) -> Result<Json<Value>, ApiError> {
    let listing = parse_listing(
        query,
        BackupSortKey::parse,
        BackupSortKey::CreatedAt,
        |marker| DomainError::MarkerNotFound(marker.to_owned()).into(),
    )?;
    let with_count = wants_count(ctx.version, query);
    let (found, count) = match filters(ctx, &listing.filters)? {
        Some((filters, all_tenants)) => {
            let service = &state.service;
            service
                .list_backups(&ctx.caller, filters, all_tenants, &listing.page, with_count)
                .await?
        }
        None => (Vec::new(), with_count.then_some(0)),
    };
    let with_project = state.service.may_see_backup_project(&ctx.caller);
    let items: Vec<Value> = found
        .iter()
        .map(|b| match is_detail {
            true => detail(state, ctx, headers, b, with_project),
            false => summary(state, ctx, headers, b),
        })
        .collect();
    let mut body = json!({ "backups": items });
    if let Some(last) = found.last() {
        if found.len() as i64 >= listing.page.limit {
            let path = if is_detail {
                "backups/detail"
            } else {
                "backups"
            };
            let (base, last) = (base_url(state, headers), last.id.to_string());
            let project = &ctx.caller.project_id;
            body["backups_links"] = next_link(&base, project, path, query, &last);
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
    ctx.require(Endpoint::BackupList)?;
    listing(&state, &ctx, &headers, &query, false).await
}

async fn list_detail(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::BackupListDetail)?;
    listing(&state, &ctx, &headers, &query, true).await
}

async fn show(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    Path(BackupPath { id }): Path<BackupPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::BackupShow)?;
    let found = state.service.get_backup(&ctx.caller, &id).await?;
    let with_project = state.service.may_see_backup_project(&ctx.caller);
    let view = detail(&state, &ctx, &headers, &found, with_project);
    Ok(Json(json!({ "backup": view })))
}

#[derive(Deserialize)]
struct CreateBody {
    backup: CreateFields,
}

#[derive(Deserialize)]
struct CreateFields {
    volume_id: String,
    snapshot_id: Option<String>,
    name: Option<String>,
    description: Option<String>,
    container: Option<String>,
    incremental: Option<Value>,
    force: Option<Value>,
    metadata: Option<BTreeMap<String, String>>,
    availability_zone: Option<String>,
}

/// A boolean the schema let through (`true`, `"yes"`, ...).
fn truthy(value: Option<&Value>) -> bool {
    match value {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => parse_bool(s) == Some(true),
        _ => false,
    }
}

/// 202 with the new backup's summary; its data is written in the background.
async fn create(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    body: JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ctx.require(Endpoint::BackupCreate)?;
    let schema = match (ctx.version.at_least(3, 43), ctx.version.at_least(3, 51)) {
        (_, true) => &CREATE[2],
        (true, false) => &CREATE[1],
        _ => &CREATE[0],
    };
    let fields = body.parse::<CreateBody>(schema)?.backup;
    let request = CreateBackup {
        volume_id: fields.volume_id,
        snapshot_id: fields.snapshot_id,
        name: fields.name.map(|n| n.trim().to_owned()),
        description: fields.description.map(|d| d.trim().to_owned()),
        container: fields.container,
        incremental: truthy(fields.incremental.as_ref()),
        force: truthy(fields.force.as_ref()),
        metadata: fields.metadata.unwrap_or_default(),
        availability_zone: fields.availability_zone,
    };
    let made = state.service.create_backup(&ctx.caller, request).await?;
    let view = summary(&state, &ctx, &headers, &made);
    Ok((StatusCode::ACCEPTED, Json(json!({ "backup": view }))))
}

/// `PUT /backups/{id}` (3.9+): name and description; metadata from 3.43.
async fn update(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    Path(BackupPath { id }): Path<BackupPath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::BackupUpdate)?;
    let with_metadata = ctx.version.at_least(3, 43);
    validate(&UPDATE[usize::from(with_metadata)], &body.0).map_err(ApiError::BadRequest)?;
    let fields = body.0["backup"].as_object().cloned().unwrap_or_default();
    let text = |key: &str| {
        fields
            .get(key)
            .map(|v| v.as_str().map(|s| s.trim().to_owned()))
    };
    let metadata = match fields.get("metadata") {
        Some(Value::Object(items)) if with_metadata => Some(
            items
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect(),
        ),
        _ => None,
    };
    let service = &state.service;
    let updated = service
        .update_backup(
            &ctx.caller,
            &id,
            text("name"),
            text("description"),
            metadata,
        )
        .await?;
    let mut view = summary(&state, &ctx, &headers, &updated);
    if with_metadata {
        view["metadata"] = json!(updated.metadata);
    }
    Ok(Json(json!({ "backup": view })))
}

async fn delete(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(BackupPath { id }): Path<BackupPath>,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::BackupDelete)?;
    state.service.delete_backup(&ctx.caller, &id, false).await?;
    Ok(StatusCode::ACCEPTED)
}

/// 202 with the backup, the volume restored to and its name.
async fn restore(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(BackupPath { id }): Path<BackupPath>,
    request_id: Option<axum::Extension<super::request_id::RequestId>>,
    body: JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ctx.require(Endpoint::BackupRestore)?;
    validate(&RESTORE, &body.0).map_err(ApiError::BadRequest)?;
    let fields = &body.0["restore"];
    let volume_id = fields["volume_id"].as_str().map(str::to_owned);
    let name = fields["name"].as_str().map(str::to_owned);
    let request_id = request_id.map(|axum::Extension(id)| id.0);
    let started = state
        .service
        .restore_backup(&ctx.caller, &id, volume_id, name, request_id)
        .await?;
    let view = json!({
        "backup_id": started.backup_id,
        "volume_id": started.volume_id,
        "volume_name": started.volume_name.unwrap_or_default(),
    });
    Ok((StatusCode::ACCEPTED, Json(json!({ "restore": view }))))
}

async fn export_record(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(BackupPath { id }): Path<BackupPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::BackupExport)?;
    let (service, url) = state.service.export_backup(&ctx.caller, &id).await?;
    let view = json!({"backup_service": service, "backup_url": url});
    Ok(Json(json!({ "backup-record": view })))
}

/// 201 with the imported backup's summary.
async fn import_record(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    body: JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ctx.require(Endpoint::BackupImport)?;
    validate(&IMPORT, &body.0).map_err(ApiError::BadRequest)?;
    let record = &body.0["backup-record"];
    let service_name = record["backup_service"].as_str().unwrap_or_default();
    let url = record["backup_url"].as_str().unwrap_or_default();
    let made = state
        .service
        .import_backup(&ctx.caller, service_name, url)
        .await?;
    let view = summary(&state, &ctx, &headers, &made);
    Ok((StatusCode::CREATED, Json(json!({ "backup": view }))))
}

/// `os-reset_status` and `os-force_delete` (admins).
async fn action(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(BackupPath { id }): Path<BackupPath>,
    body: JsonBody,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::BackupAction)?;
    match body.action_name()?.as_str() {
        "os-reset_status" => {
            validate(&RESET_STATUS, &body.0).map_err(ApiError::BadRequest)?;
            let text = body.0["os-reset_status"]["status"]
                .as_str()
                .unwrap_or_default();
            let status = backup::reset_status_of(text)
                .map_err(|e| ApiError::from(DomainError::from(BackupError::InvalidParameter(e))))?;
            state
                .service
                .reset_backup_status(&ctx.caller, &id, status)
                .await?;
            Ok(StatusCode::ACCEPTED)
        }
        "os-force_delete" => {
            validate(&FORCE_DELETE, &body.0).map_err(ApiError::BadRequest)?;
            state.service.delete_backup(&ctx.caller, &id, true).await?;
            Ok(StatusCode::ACCEPTED)
        }
        other => Err(ApiError::no_such_action(other)),
    }
}
