//! `/v3[/{project_id}]/group_snapshots` (3.14+): snapshots of a group's members taken
//! together, their listings, delete, and an admin's `reset_status` (3.19+).

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
use super::links::{base_url, next_link};
use super::paging::{parse_bool, parse_listing};
use super::query::CinderQuery;
use super::schema::validate;
use crate::api::AppState;
use crate::domain::error::GroupError;
use crate::domain::group::GroupSortKey;
use crate::domain::group_snapshot::{GroupSnapshot, GroupSnapshotFilters, GroupSnapshotStatus};
use crate::domain::ids::GroupId;
use crate::domain::time::format_timestamp;
use crate::domain::DomainError;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/group_snapshots", get(list).post(create))
        .route("/group_snapshots/detail", get(list_detail))
        .route("/group_snapshots/{id}", get(show).delete(delete))
        .route("/group_snapshots/{id}/action", post(action))
}

#[derive(Deserialize)]
struct SnapshotPath {
    id: String,
}

static CREATE: LazyLock<Value> = LazyLock::new(|| {
    let text = json!({"type": ["string", "null"], "minLength": 0, "maxLength": 255});
    json!({
        "type": "object",
        "properties": {
            "group_snapshot": {
                "type": "object",
                "properties": {
                    "group_id": {"type": "string", "format": "uuid"},
                    "name": text,
                    "description": text
                },
                "required": ["group_id"],
                "additionalProperties": false
            }
        },
        "required": ["group_snapshot"],
        "additionalProperties": false
    })
});

static RESET_STATUS: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "reset_status": {
                "type": "object",
                "properties": {"status": {"type": "string"}},
                "required": ["status"],
                "additionalProperties": false
            }
        },
        "required": ["reset_status"],
        "additionalProperties": false
    })
});

/// Cinder's summary: id, name, and the group type (kept for migrated CGs).
fn summary(snapshot: &GroupSnapshot) -> Value {
    json!({"id": snapshot.id, "name": snapshot.name, "group_type_id": snapshot.group_type_id})
}

fn detail(ctx: &Ctx, snapshot: &GroupSnapshot, with_project: bool) -> Value {
    let mut view = json!({
        "id": snapshot.id,
        "group_id": snapshot.group_id,
        "group_type_id": snapshot.group_type_id,
        "status": snapshot.status.as_str(),
        "created_at": format_timestamp(&snapshot.created_at),
        "name": snapshot.name,
        "description": snapshot.description,
    });
    if ctx.version.at_least(3, 58) && with_project {
        view["project_id"] = json!(snapshot.project_id);
    }
    view
}

/// Cinder's listing filters: `name`, `status` and `group_id` for everyone, any column for
/// admins; `None` when a filter matches nothing here. Below 3.29 Cinder reads neither
/// filters nor paging.
fn filters(
    ctx: &Ctx,
    query: &[(String, String)],
) -> Result<Option<(GroupSnapshotFilters, bool)>, ApiError> {
    let mut filters = GroupSnapshotFilters::default();
    let mut all_tenants = false;
    let mut invalid = Vec::new();
    for (key, value) in query {
        match key.as_str() {
            "all_tenants" => all_tenants = parse_bool(value).unwrap_or(true),
            "name" => filters.name = Some(value.clone()),
            "status" => match GroupSnapshotStatus::parse(value) {
                Some(status) => filters.status = Some(status),
                None => return Ok(None),
            },
            "group_id" => match GroupId::parse(value) {
                Some(group) => filters.group_id = Some(group),
                None => return Ok(None),
            },
            _ if !ctx.caller.is_admin => invalid.push(key.clone()),
            "project_id" => filters.project_id = Some(value.clone()),
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
    // Filters and paging from 3.29 (Cinder's GROUP_SNAPSHOT_PAGINATION).
    let query: &[(String, String)] = if ctx.version.at_least(3, 29) {
        query
    } else {
        &[]
    };
    let listing = parse_listing(
        query,
        GroupSortKey::parse,
        GroupSortKey::CreatedAt,
        |marker| DomainError::MarkerNotFound(marker.to_owned()).into(),
    )?;
    let found = match filters(ctx, &listing.filters)? {
        Some((filters, all_tenants)) => {
            let service = &state.service;
            service
                .list_group_snapshots(&ctx.caller, filters, all_tenants, &listing.page)
                .await?
        }
        None => Vec::new(),
    };
    let with_project = state.service.may_see_group_snapshot_project(&ctx.caller);
    let items: Vec<Value> = found
        .iter()
        .map(|s| {
            if is_detail {
                detail(ctx, s, with_project)
            } else {
                json!({"id": s.id, "name": s.name})
            }
        })
        .collect();
    let mut body = json!({ "group_snapshots": items });
    if let Some(last) = found.last() {
        if found.len() as i64 >= listing.page.limit {
            let path = if is_detail {
                "group_snapshots/detail"
            } else {
                "group_snapshots"
            };
            let (base, last) = (base_url(state, headers), last.id.to_string());
            let project = &ctx.caller.project_id;
            body["group_snapshot_links"] = next_link(&base, project, path, query, &last);
        }
    }
    Ok(Json(body))
}

async fn list(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::GroupSnapshotList)?;
    listing(&state, &ctx, &headers, &query, false).await
}

async fn list_detail(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::GroupSnapshotListDetail)?;
    listing(&state, &ctx, &headers, &query, true).await
}

async fn show(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(SnapshotPath { id }): Path<SnapshotPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::GroupSnapshotShow)?;
    let found = state.service.get_group_snapshot(&ctx.caller, &id).await?;
    let with_project = state.service.may_see_group_snapshot_project(&ctx.caller);
    Ok(Json(
        json!({"group_snapshot": detail(&ctx, &found, with_project)}),
    ))
}

#[derive(Deserialize)]
struct CreateBody {
    group_snapshot: CreateFields,
}

#[derive(Deserialize)]
struct CreateFields {
    group_id: String,
    name: Option<String>,
    description: Option<String>,
}

/// 202 with the new group snapshot's summary.
async fn create(
    State(state): State<AppState>,
    ctx: Ctx,
    body: JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ctx.require(Endpoint::GroupSnapshotCreate)?;
    let fields = body.parse::<CreateBody>(&CREATE)?.group_snapshot;
    let made = state
        .service
        .create_group_snapshot(
            &ctx.caller,
            &fields.group_id,
            fields.name,
            fields.description,
        )
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"group_snapshot": summary(&made)})),
    ))
}

async fn delete(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(SnapshotPath { id }): Path<SnapshotPath>,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::GroupSnapshotDelete)?;
    state
        .service
        .delete_group_snapshot(&ctx.caller, &id)
        .await?;
    Ok(StatusCode::ACCEPTED)
}

/// Cinder's `group_snapshot_status` format check.
fn status_of(text: &str) -> Result<GroupSnapshotStatus, ApiError> {
    let invalid = |reason: String| -> ApiError {
        DomainError::from(GroupError::InvalidSnapshotStatus(reason)).into()
    };
    if text.trim().is_empty() {
        return Err(invalid("The 'status' can not be empty.".to_owned()));
    }
    GroupSnapshotStatus::parse(&text.to_lowercase()).ok_or_else(|| {
        let valid: Vec<String> = GroupSnapshotStatus::ALL
            .iter()
            .map(|s| format!("'{s}'"))
            .collect();
        invalid(format!(
            "Group snapshot status: {text} is invalid, valid statuses are: ({}).",
            valid.join(", ")
        ))
    })
}

/// `reset_status` (admins, 3.19+).
async fn action(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(SnapshotPath { id }): Path<SnapshotPath>,
    body: JsonBody,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::GroupSnapshotAction)?;
    match body.action_name()?.as_str() {
        "reset_status" => {
            validate(&RESET_STATUS, &body.0).map_err(ApiError::BadRequest)?;
            let text = body.0["reset_status"]["status"]
                .as_str()
                .unwrap_or_default();
            let status = status_of(text)?;
            state
                .service
                .reset_group_snapshot_status(&ctx.caller, &id, status)
                .await?;
            Ok(StatusCode::ACCEPTED)
        }
        other => Err(ApiError::no_such_action(other)),
    }
}
