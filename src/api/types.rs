//! `/v3[/{project_id}]/types` and their extra specs.

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
use super::paging::is_public_filter;
use super::query::CinderQuery;
use super::views::{managed_volume_type, specs_json, volume_type, TypeViewRights};
use crate::api::AppState;
use crate::domain::volume_type::{ExtraSpecs, VolumeType, VolumeTypeUpdate};
use crate::policy::rules;
use crate::service::types::CreateType;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/types", get(list).post(create))
        .route("/types/{type_id}", get(show).put(update).delete(delete))
        .route(
            "/types/{type_id}/extra_specs",
            get(list_specs).post(create_specs),
        )
        .route(
            "/types/{type_id}/extra_specs/{key}",
            get(show_spec).put(update_spec).delete(delete_spec),
        )
        .route(
            "/types/{type_id}/action",
            axum::routing::post(access_action),
        )
        .route("/types/{type_id}/os-volume-type-access", get(list_access))
}

#[derive(Deserialize)]
struct TypePath {
    type_id: String,
}

#[derive(Deserialize)]
struct SpecPath {
    type_id: String,
    key: String,
}

static CREATE: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "volume_type": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 255, "format": "name"},
                    "description": {"type": ["string", "null"], "minLength": 0, "maxLength": 255},
                    "extra_specs": {
                        "type": "object",
                        "patternProperties": {"^[a-zA-Z0-9-_:. /]{1,255}$": {"type": ["string", "null"], "maxLength": 255}},
                        "additionalProperties": false
                    },
                    "os-volume-type-access:is_public": super::schema::boolean()
                },
                "required": ["name"],
                "additionalProperties": false
            }
        },
        "required": ["volume_type"],
        "additionalProperties": false
    })
});

static UPDATE: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "volume_type": {
                "type": "object",
                "properties": {
                    "name": {"type": ["string", "null"], "minLength": 1, "maxLength": 255},
                    "description": {"type": ["string", "null"], "minLength": 0, "maxLength": 255},
                    "is_public": super::schema::boolean()
                },
                "additionalProperties": false
            }
        },
        "required": ["volume_type"],
        "additionalProperties": false
    })
});

/// `{"addProjectAccess": {"project": ...}}` and its `removeProjectAccess` twin.
fn access_schema(action: &str) -> Value {
    json!({
        "type": "object",
        "properties": {
            action: {
                "type": "object",
                "properties": {"project": {"type": "string", "minLength": 1, "maxLength": 255}},
                "required": ["project"],
                "additionalProperties": false
            }
        },
        "required": [action],
        "additionalProperties": false
    })
}

static ADD_ACCESS: LazyLock<Value> = LazyLock::new(|| access_schema("addProjectAccess"));
static REMOVE_ACCESS: LazyLock<Value> = LazyLock::new(|| access_schema("removeProjectAccess"));

static CREATE_SPECS: LazyLock<Value> = LazyLock::new(|| super::schema::specs_body("extra_specs"));

static UPDATE_SPEC: LazyLock<Value> = LazyLock::new(super::schema::one_spec);

fn rights(state: &AppState, ctx: &Ctx) -> TypeViewRights {
    TypeViewRights {
        specs: state.service.spec_visibility(&ctx.caller),
        qos_specs_id: state.service.may_see_qos_specs_id(&ctx.caller),
    }
}

fn one(state: &AppState, ctx: &Ctx, t: &VolumeType) -> Json<Value> {
    Json(json!({"volume_type": volume_type(t, rights(state, ctx))}))
}

async fn list(
    State(state): State<AppState>,
    ctx: Ctx,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::TypeList)?;
    let is_public = is_public_filter(&query)?;
    let types = state
        .service
        .list_volume_types(&ctx.caller, is_public)
        .await?;
    let rights = rights(&state, &ctx);
    let items: Vec<Value> = types.iter().map(|t| volume_type(t, rights)).collect();
    Ok(Json(json!({"volume_types": items})))
}

async fn show(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<TypePath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::TypeShow)?;
    let found = state
        .service
        .get_volume_type(&ctx.caller, &path.type_id)
        .await?;
    Ok(one(&state, &ctx, &found))
}

#[derive(Deserialize)]
struct CreateBody {
    volume_type: CreateFields,
}

#[derive(Deserialize)]
struct CreateFields {
    name: String,
    description: Option<String>,
    #[serde(default)]
    extra_specs: ExtraSpecs,
    #[serde(rename = "os-volume-type-access:is_public")]
    is_public: Option<Value>,
}

async fn create(
    State(state): State<AppState>,
    ctx: Ctx,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::TypeCreate)?;
    let body: CreateBody = body.parse(&CREATE)?;
    let fields = body.volume_type;
    let new = CreateType {
        name: fields.name,
        description: fields.description,
        is_public: fields
            .is_public
            .as_ref()
            .and_then(super::schema::as_bool)
            .unwrap_or(true),
        extra_specs: fields.extra_specs,
    };
    let created = state.service.create_volume_type(&ctx.caller, new).await?;
    Ok(Json(
        json!({"volume_type": managed_volume_type(&created, true)}),
    ))
}

#[derive(Deserialize)]
struct UpdateBody {
    volume_type: UpdateFields,
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
    Path(path): Path<TypePath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::TypeUpdate)?;
    let body: UpdateBody = body.parse(&UPDATE)?;
    let fields = body.volume_type;
    let update = VolumeTypeUpdate {
        name: fields.name,
        description: fields.description,
        is_public: fields.is_public.as_ref().and_then(super::schema::as_bool),
    };
    let updated = state
        .service
        .update_volume_type(&ctx.caller, &path.type_id, update)
        .await?;
    Ok(Json(
        json!({"volume_type": managed_volume_type(&updated, false)}),
    ))
}

async fn delete(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<TypePath>,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::TypeDelete)?;
    state
        .service
        .delete_volume_type(&ctx.caller, &path.type_id)
        .await?;
    Ok(StatusCode::ACCEPTED)
}

async fn list_specs(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<TypePath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::ExtraSpecsList)?;
    let specs = state
        .service
        .list_extra_specs(&ctx.caller, &path.type_id)
        .await?;
    Ok(Json(json!({"extra_specs": specs_json(&specs)})))
}

async fn show_spec(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<SpecPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::ExtraSpecShow)?;
    let value = state
        .service
        .show_extra_spec(&ctx.caller, &path.type_id, &path.key)
        .await?;
    Ok(Json(json!({ path.key: value })))
}

#[derive(Deserialize)]
struct SpecsBody {
    extra_specs: ExtraSpecs,
}

async fn create_specs(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<TypePath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::ExtraSpecsCreate)?;
    let body: SpecsBody = body.parse(&CREATE_SPECS)?;
    let specs = state
        .service
        .set_extra_specs(
            &ctx.caller,
            &path.type_id,
            body.extra_specs,
            None,
            rules::EXTRA_SPECS_CREATE,
        )
        .await?;
    Ok(Json(json!({"extra_specs": specs_json(&specs)})))
}

async fn update_spec(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<SpecPath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::ExtraSpecUpdate)?;
    let specs: ExtraSpecs = body.parse(&UPDATE_SPEC)?;
    if !specs.contains_key(&path.key) {
        return Err(ApiError::BadRequest(
            "Request body and URI mismatch".to_owned(),
        ));
    }
    let specs = state
        .service
        .set_extra_specs(
            &ctx.caller,
            &path.type_id,
            specs,
            Some(&path.key),
            rules::EXTRA_SPECS_UPDATE,
        )
        .await?;
    Ok(Json(specs_json(&specs)))
}

async fn delete_spec(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<SpecPath>,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::ExtraSpecDelete)?;
    state
        .service
        .delete_extra_spec(&ctx.caller, &path.type_id, &path.key)
        .await?;
    Ok(StatusCode::ACCEPTED)
}

async fn list_access(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<TypePath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::TypeAccessList)?;
    let found = state
        .service
        .list_type_access(&ctx.caller, &path.type_id)
        .await?;
    let items: Vec<Value> = found
        .projects
        .iter()
        .map(|project| json!({"volume_type_id": found.id, "project_id": project}))
        .collect();
    Ok(Json(json!({"volume_type_access": items})))
}

#[derive(Deserialize)]
struct AccessFields {
    project: String,
}

/// `addProjectAccess` / `removeProjectAccess`: 202 without a body.
async fn access_action(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<TypePath>,
    body: JsonBody,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::TypeAction)?;
    let name = body.action_name()?;
    let (schema, grant) = match name.as_str() {
        "addProjectAccess" => (&*ADD_ACCESS, true),
        "removeProjectAccess" => (&*REMOVE_ACCESS, false),
        other => return Err(ApiError::no_such_action(other)),
    };
    let mut fields: std::collections::HashMap<String, AccessFields> = body.parse(schema)?;
    let project = fields.remove(&name).map(|f| f.project).unwrap_or_default();
    state
        .service
        .change_type_access(&ctx.caller, &path.type_id, &project, grant)
        .await?;
    Ok(StatusCode::ACCEPTED)
}
