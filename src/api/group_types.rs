//! `/v3[/{project_id}]/group_types` and their `group_specs` (3.11+).

use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::links::{base_url, next_link};
use super::paging::{is_public_filter, parse_listing};
use super::query::CinderQuery;
use super::schema::{as_bool, boolean};
use crate::api::AppState;
use crate::domain::group_type::{GroupSpecs, GroupType, GroupTypeSortKey, GroupTypeUpdate};
use crate::domain::DomainError;
use crate::policy::rules;
use crate::service::group_types::CreateGroupType;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/group_types", get(list).post(create))
        .route("/group_types/{id}", get(show).put(update).delete(delete))
        .route(
            "/group_types/{id}/group_specs",
            get(list_specs).post(create_specs),
        )
        .route(
            "/group_types/{id}/group_specs/{key}",
            get(show_spec).put(update_spec).delete(delete_spec),
        )
}

#[derive(Deserialize)]
struct TypePath {
    id: String,
}

#[derive(Deserialize)]
struct SpecPath {
    id: String,
    key: String,
}

static CREATE: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "group_type": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 255, "format": "name"},
                    "description": {"type": ["string", "null"], "minLength": 0, "maxLength": 255},
                    "is_public": boolean(),
                    "group_specs": {
                        "type": ["object", "null"],
                        "patternProperties": {"^[a-zA-Z0-9-_:. /]{1,255}$": {"type": "string", "maxLength": 255}},
                        "additionalProperties": false
                    }
                },
                "required": ["name"],
                "additionalProperties": false
            }
        },
        "required": ["group_type"],
        "additionalProperties": false
    })
});

static UPDATE: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "group_type": {
                "type": "object",
                "properties": {
                    "name": {"type": ["string", "null"], "minLength": 0, "maxLength": 255},
                    "description": {"type": ["string", "null"], "minLength": 0, "maxLength": 255},
                    "is_public": boolean()
                },
                "additionalProperties": false
            }
        },
        "required": ["group_type"],
        "additionalProperties": false
    })
});

static CREATE_SPECS: LazyLock<Value> = LazyLock::new(|| super::schema::specs_body("group_specs"));

static UPDATE_SPEC: LazyLock<Value> = LazyLock::new(super::schema::one_spec);

/// Cinder's view: specs only for those who may see them.
fn view(group_type: &GroupType, with_specs: bool) -> Value {
    let mut view = json!({
        "id": group_type.id,
        "name": group_type.name,
        "description": group_type.description,
        "is_public": group_type.is_public,
    });
    if with_specs {
        view["group_specs"] = json!(group_type.group_specs);
    }
    view
}

fn one(state: &AppState, ctx: &Ctx, group_type: &GroupType) -> Json<Value> {
    let with_specs = state.service.may_see_group_specs(&ctx.caller);
    Json(json!({"group_type": view(group_type, with_specs)}))
}

async fn list(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::GroupTypeList)?;
    let listing = parse_listing(
        &query,
        GroupTypeSortKey::parse,
        GroupTypeSortKey::CreatedAt,
        |marker| DomainError::MarkerNotFound(marker.to_owned()).into(),
    )?;
    let is_public = is_public_filter(&query)?;
    let found = state
        .service
        .list_group_types(&ctx.caller, is_public, &listing.page)
        .await?;
    let with_specs = state.service.may_see_group_specs(&ctx.caller);
    let items: Vec<Value> = found.iter().map(|t| view(t, with_specs)).collect();
    let mut body = json!({ "group_types": items });
    if let Some(last) = found.last() {
        if found.len() as i64 >= listing.page.limit {
            let base = base_url(&state, &headers);
            let (project, last) = (&ctx.caller.project_id, last.id.to_string());
            body["group_type_links"] = next_link(&base, project, "group_types", &query, &last);
        }
    }
    Ok(Json(body))
}

async fn show(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(TypePath { id }): Path<TypePath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::GroupTypeShow)?;
    let found = state.service.get_group_type(&ctx.caller, &id).await?;
    Ok(one(&state, &ctx, &found))
}

#[derive(Deserialize)]
struct CreateBody {
    group_type: CreateFields,
}

#[derive(Deserialize)]
struct CreateFields {
    name: String,
    description: Option<String>,
    is_public: Option<Value>,
    group_specs: Option<GroupSpecs>,
}

/// 202, as Cinder answers, with the new type.
async fn create(
    State(state): State<AppState>,
    ctx: Ctx,
    body: JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ctx.require(Endpoint::GroupTypeCreate)?;
    let fields = body.parse::<CreateBody>(&CREATE)?.group_type;
    let new = CreateGroupType {
        name: fields.name,
        description: fields.description,
        is_public: fields.is_public.as_ref().and_then(as_bool).unwrap_or(true),
        group_specs: fields.group_specs.unwrap_or_default(),
    };
    let created = state.service.create_group_type(&ctx.caller, new).await?;
    Ok((StatusCode::ACCEPTED, one(&state, &ctx, &created)))
}

#[derive(Deserialize)]
struct UpdateBody {
    group_type: UpdateFields,
}

#[derive(Deserialize)]
struct UpdateFields {
    name: Option<String>,
    description: Option<String>,
    is_public: Option<Value>,
}

async fn update(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(TypePath { id }): Path<TypePath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::GroupTypeUpdate)?;
    let fields = body.parse::<UpdateBody>(&UPDATE)?.group_type;
    let update = GroupTypeUpdate {
        name: fields.name,
        description: fields.description,
        is_public: fields.is_public.as_ref().and_then(as_bool),
    };
    let updated = state
        .service
        .update_group_type(&ctx.caller, &id, update)
        .await?;
    Ok(one(&state, &ctx, &updated))
}

async fn delete(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(TypePath { id }): Path<TypePath>,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::GroupTypeDelete)?;
    state.service.delete_group_type(&ctx.caller, &id).await?;
    Ok(StatusCode::ACCEPTED)
}

async fn list_specs(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(TypePath { id }): Path<TypePath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::GroupSpecsList)?;
    let specs = state.service.list_group_specs(&ctx.caller, &id).await?;
    Ok(Json(json!({ "group_specs": specs })))
}

async fn show_spec(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<SpecPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::GroupSpecShow)?;
    let value = state
        .service
        .show_group_spec(&ctx.caller, &path.id, &path.key)
        .await?;
    Ok(Json(json!({ path.key: value })))
}

#[derive(Deserialize)]
struct SpecsBody {
    group_specs: GroupSpecs,
}

/// 202 with the body sent, as Cinder answers.
async fn create_specs(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(TypePath { id }): Path<TypePath>,
    body: JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ctx.require(Endpoint::GroupSpecsCreate)?;
    let body: SpecsBody = body.parse(&CREATE_SPECS)?;
    let rule = rules::GROUP_SPECS_CREATE;
    let specs = &body.group_specs;
    state
        .service
        .set_group_specs(&ctx.caller, &id, specs, rule, None)
        .await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "group_specs": specs }))))
}

async fn update_spec(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<SpecPath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::GroupSpecUpdate)?;
    let specs: GroupSpecs = body.parse(&UPDATE_SPEC)?;
    let rule = rules::GROUP_SPECS_UPDATE;
    let named = Some(path.key.as_str());
    state
        .service
        .set_group_specs(&ctx.caller, &path.id, &specs, rule, named)
        .await?;
    Ok(Json(json!(specs)))
}

async fn delete_spec(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<SpecPath>,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::GroupSpecDelete)?;
    state
        .service
        .delete_group_spec(&ctx.caller, &path.id, &path.key)
        .await?;
    Ok(StatusCode::ACCEPTED)
}
