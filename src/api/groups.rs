//! `/v3[/{project_id}]/groups` (3.13+): generic volume groups, their listings, changes
//! and actions (`delete`, `reset_status` at 3.20).

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
use super::schema::{as_bool, boolean, validate};
use crate::api::AppState;
use crate::domain::error::GroupError;
use crate::domain::group::{Group, GroupFilters, GroupSortKey, GroupStatus};
use crate::domain::time::format_timestamp;
use crate::domain::DomainError;
use crate::service::group_sources::GroupSource;
use crate::service::groups::{CreateGroup, UpdateGroup};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/groups", get(list).post(create))
        .route("/groups/detail", get(list_detail))
        .route("/groups/action", post(create_from_source))
        .route("/groups/{id}", get(show).put(update))
        .route("/groups/{id}/action", post(action))
}

#[derive(Deserialize)]
struct GroupPath {
    id: String,
}

fn name_field() -> Value {
    json!({"type": ["string", "null"], "minLength": 0, "maxLength": 255})
}

static CREATE: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "group": {
                "type": "object",
                "properties": {
                    "description": name_field(),
                    "group_type": {"type": "string", "minLength": 1, "maxLength": 255},
                    "name": name_field(),
                    "volume_types": {
                        "type": "array", "minItems": 1,
                        "items": {"type": "string", "maxLength": 255},
                        "uniqueItems": true
                    },
                    "availability_zone": {"type": ["string", "null"], "maxLength": 255}
                },
                "required": ["group_type", "volume_types"],
                "additionalProperties": false
            }
        },
        "required": ["group"],
        "additionalProperties": false
    })
});

static UPDATE: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "group": {
                "type": "object",
                "properties": {
                    "description": name_field(),
                    "name": name_field(),
                    "add_volumes": name_field(),
                    "remove_volumes": name_field()
                },
                "anyOf": [
                    {"required": ["name"]},
                    {"required": ["description"]},
                    {"required": ["add_volumes"]},
                    {"required": ["remove_volumes"]}
                ],
                "additionalProperties": false
            }
        },
        "required": ["group"],
        "additionalProperties": false
    })
});

static DELETE: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "delete": {
                "type": "object",
                "properties": {"delete-volumes": boolean()},
                "additionalProperties": false
            }
        },
        "required": ["delete"],
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

/// Cinder's `{"group": {"id", "name"}}` of a create.
fn summary(group: &Group) -> Value {
    json!({"id": group.id, "name": group.name})
}

fn detail(state: &AppState, ctx: &Ctx, group: &Group, volumes: Option<Vec<String>>) -> Value {
    let mut view = json!({
        "id": group.id,
        "status": group.status.as_str(),
        "availability_zone": group.availability_zone,
        "created_at": format_timestamp(&group.created_at),
        "name": group.name,
        "description": group.description,
        "group_type": group.group_type_id,
        "volume_types": group.volume_type_ids,
    });
    if ctx.version.at_least(3, 14) {
        view["group_snapshot_id"] = json!(group.group_snapshot_id);
        view["source_group_id"] = json!(group.source_group_id);
    }
    if let Some(volumes) = volumes {
        view["volumes"] = json!(volumes);
    }
    if ctx.version.at_least(3, 38) {
        view["replication_status"] = json!(group.replication_status);
    }
    if ctx.version.at_least(3, 58) && state.service.may_see_group_project(&ctx.caller, group) {
        view["project_id"] = json!(group.project_id);
    }
    view
}

/// The member ids, when the request asks for them (`list_volume`, 3.25+).
async fn members_if_asked(
    state: &AppState,
    ctx: &Ctx,
    query: &[(String, String)],
    group: &Group,
) -> Result<Option<Vec<String>>, ApiError> {
    let asked =
        super::query::last(query, "list_volume").is_some_and(|v| parse_bool(v) == Some(true));
    if !(asked && ctx.version.at_least(3, 25)) {
        return Ok(None);
    }
    let ids = state.service.group_member_ids(group).await?;
    Ok(Some(ids.iter().map(ToString::to_string).collect()))
}

/// Cinder's listing filters: `name` for everyone, any column for admins (`all_tenants`
/// admins only); `None` when a filter matches nothing here.
fn filters(
    ctx: &Ctx,
    query: &[(String, String)],
) -> Result<Option<(GroupFilters, bool)>, ApiError> {
    let mut filters = GroupFilters::default();
    let mut all_tenants = false;
    let mut invalid = Vec::new();
    for (key, value) in query {
        match key.as_str() {
            "all_tenants" => all_tenants = parse_bool(value).unwrap_or(true),
            "list_volume" => {}
            "name" => filters.name = Some(value.clone()),
            _ if !ctx.caller.is_admin => invalid.push(key.clone()),
            "project_id" => filters.project_id = Some(value.clone()),
            "status" => match GroupStatus::parse(value) {
                Some(status) => filters.status = Some(status),
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
        GroupSortKey::parse,
        GroupSortKey::CreatedAt,
        |marker| DomainError::MarkerNotFound(marker.to_owned()).into(),
    )?;
    let found = match filters(ctx, &listing.filters)? {
        Some((filters, all_tenants)) => {
            let service = &state.service;
            service
                .list_groups(&ctx.caller, filters, all_tenants, &listing.page)
                .await?
        }
        None => Vec::new(),
    };
    let mut items = Vec::with_capacity(found.len());
    for group in &found {
        items.push(if is_detail {
            let volumes = members_if_asked(state, ctx, query, group).await?;
            detail(state, ctx, group, volumes)
        } else {
            summary(group)
        });
    }
    let mut body = json!({ "groups": items });
    if let Some(last) = found.last() {
        if found.len() as i64 >= listing.page.limit {
            let path = if is_detail { "groups/detail" } else { "groups" };
            let base = base_url(state, headers);
            let last = last.id.to_string();
            body["group_links"] = next_link(&base, &ctx.caller.project_id, path, query, &last);
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
    ctx.require(Endpoint::GroupList)?;
    listing(&state, &ctx, &headers, &query, false).await
}

async fn list_detail(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::GroupListDetail)?;
    listing(&state, &ctx, &headers, &query, true).await
}

async fn show(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(GroupPath { id }): Path<GroupPath>,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::GroupShow)?;
    let group = state.service.get_group(&ctx.caller, &id).await?;
    let volumes = members_if_asked(&state, &ctx, &query, &group).await?;
    Ok(Json(
        json!({"group": detail(&state, &ctx, &group, volumes)}),
    ))
}

#[derive(Deserialize)]
struct CreateBody {
    group: CreateFields,
}

#[derive(Deserialize)]
struct CreateFields {
    name: Option<String>,
    description: Option<String>,
    group_type: String,
    volume_types: Vec<String>,
    availability_zone: Option<String>,
}

fn trimmed(text: Option<String>) -> Option<String> {
    text.map(|t| t.trim().to_owned())
}

/// 202 with the new group's id and name.
async fn create(
    State(state): State<AppState>,
    ctx: Ctx,
    body: JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ctx.require(Endpoint::GroupCreate)?;
    let fields = body.parse::<CreateBody>(&CREATE)?.group;
    let group_type = fields.group_type.trim().to_owned();
    if group_type.is_empty() {
        return Err(ApiError::BadRequest(
            "Invalid input received: group_type can not be empty.".to_owned(),
        ));
    }
    let request = CreateGroup {
        name: trimmed(fields.name),
        description: trimmed(fields.description),
        group_type,
        volume_types: fields.volume_types,
        availability_zone: fields.availability_zone,
    };
    let group = state.service.create_group(&ctx.caller, request).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"group": summary(&group)})),
    ))
}

#[derive(Deserialize)]
struct UpdateBody {
    group: UpdateFields,
}

#[derive(Deserialize)]
struct UpdateFields {
    name: Option<String>,
    description: Option<String>,
    add_volumes: Option<String>,
    remove_volumes: Option<String>,
}

async fn update(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(GroupPath { id }): Path<GroupPath>,
    body: JsonBody,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::GroupUpdate)?;
    let fields = body.parse::<UpdateBody>(&UPDATE)?.group;
    let request = UpdateGroup {
        name: trimmed(fields.name),
        description: trimmed(fields.description),
        add_volumes: fields.add_volumes,
        remove_volumes: fields.remove_volumes,
    };
    state
        .service
        .update_group(&ctx.caller, &id, request)
        .await?;
    Ok(StatusCode::ACCEPTED)
}

/// Cinder's `group_status` format check (it checks against the group snapshot
/// statuses, so `in-use` is refused, and names the group statuses in its message).
fn group_status(text: &str) -> Result<GroupStatus, ApiError> {
    let invalid = |reason: String| -> ApiError {
        DomainError::from(GroupError::InvalidStatus(reason)).into()
    };
    if text.trim().is_empty() {
        return Err(invalid("The 'status' can not be empty.".to_owned()));
    }
    let lower = text.to_lowercase();
    match GroupStatus::parse(&lower).filter(|s| *s != GroupStatus::InUse) {
        Some(status) => Ok(status),
        None => {
            let valid: Vec<String> = GroupStatus::ALL.iter().map(|s| format!("'{s}'")).collect();
            Err(invalid(format!(
                "Group status: {text} is invalid, valid status are: ({}).",
                valid.join(", ")
            )))
        }
    }
}

/// `delete` (with `delete-volumes`) and, at 3.20+, an admin's `reset_status`.
async fn action(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(GroupPath { id }): Path<GroupPath>,
    body: JsonBody,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::GroupAction)?;
    let name = body.action_name()?;
    let service = &state.service;
    match name.as_str() {
        "delete" => {
            validate(&DELETE, &body.0).map_err(ApiError::BadRequest)?;
            let flag = &body.0["delete"]["delete-volumes"];
            let delete_volumes = as_bool(flag).unwrap_or(false);
            service
                .delete_group(&ctx.caller, &id, delete_volumes)
                .await?;
        }
        "reset_status" if ctx.version.at_least(3, 20) => {
            validate(&RESET_STATUS, &body.0).map_err(ApiError::BadRequest)?;
            let text = body.0["reset_status"]["status"]
                .as_str()
                .unwrap_or_default();
            let status = group_status(text)?;
            service.reset_group_status(&ctx.caller, &id, status).await?;
        }
        "enable_replication"
        | "disable_replication"
        | "failover_replication"
        | "list_replication_targets"
            if ctx.version.at_least(3, 38) =>
        {
            service.get_group(&ctx.caller, &id).await?;
            return Err(Endpoint::Unimplemented("group replication").not_implemented());
        }
        "reset_status"
        | "enable_replication"
        | "disable_replication"
        | "failover_replication"
        | "list_replication_targets" => return Err(ApiError::not_found()),
        other => return Err(ApiError::no_such_action(other)),
    }
    Ok(StatusCode::ACCEPTED)
}

static CREATE_FROM_SOURCE: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "create-from-src": {
                "type": "object",
                "properties": {
                    "description": name_field(),
                    "name": name_field(),
                    "source_group_id": {"type": "string", "format": "uuid"},
                    "group_snapshot_id": {"type": "string", "format": "uuid"}
                },
                "oneOf": [
                    {"required": ["group_snapshot_id"]},
                    {"required": ["source_group_id"]}
                ],
                "additionalProperties": false
            }
        },
        "required": ["create-from-src"],
        "additionalProperties": false
    })
});

#[derive(Deserialize)]
struct FromSourceBody {
    #[serde(rename = "create-from-src")]
    source: FromSourceFields,
}

#[derive(Deserialize)]
struct FromSourceFields {
    name: Option<String>,
    description: Option<String>,
    source_group_id: Option<String>,
    group_snapshot_id: Option<String>,
}

/// `create-from-src` (3.14+): a group made from another group or from a group
/// snapshot, 202 with its id and name.
async fn create_from_source(
    State(state): State<AppState>,
    ctx: Ctx,
    body: JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ctx.require(Endpoint::GroupCreateFromSource)?;
    let name = body.action_name()?;
    if name != "create-from-src" {
        return Err(ApiError::no_such_action(&name));
    }
    let fields = body.parse::<FromSourceBody>(&CREATE_FROM_SOURCE)?.source;
    let source = match (fields.source_group_id, fields.group_snapshot_id) {
        (Some(group), _) => GroupSource::Group(group),
        (None, Some(snapshot)) => GroupSource::Snapshot(snapshot),
        (None, None) => return Err(ApiError::malformed_body()),
    };
    let (name, description) = (trimmed(fields.name), trimmed(fields.description));
    let group = state
        .service
        .create_group_from_source(&ctx.caller, name, description, source)
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"group": summary(&group)})),
    ))
}
