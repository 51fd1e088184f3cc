//! `/v3[/{project_id}]/attachments` (3.27+; `os-complete` 3.44+, `mode` 3.54+).

use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::paging::parse_listing;
use super::query::CinderQuery;
use super::views::{AttachmentDetail, AttachmentList, AttachmentSummary};
use crate::api::AppState;
use crate::domain::attachment::{AttachMode, AttachmentSortKey, Connector};
use crate::domain::ids::{AttachmentId, VolumeId};
use crate::domain::DomainError;
use crate::service::attachments::{CreateAttachment, ListAttachments};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/attachments", get(list).post(create))
        .route("/attachments/detail", get(list_detail))
        // Cinder routes `summary` but has no handler for it: 404, not an attachment id.
        .route("/attachments/summary", get(summary_is_not_served))
        .route(
            "/attachments/{attachment_id}",
            get(show).put(update).delete(delete),
        )
        .route("/attachments/{attachment_id}/action", post(action))
}

async fn summary_is_not_served() -> ApiError {
    ApiError::not_found()
}

#[derive(Deserialize)]
struct AttachmentPath {
    attachment_id: String,
}

fn attachment_not_found(id: impl std::fmt::Display) -> ApiError {
    DomainError::AttachmentNotFound(id.to_string()).into()
}

fn attachment_id(path: &AttachmentPath) -> Result<AttachmentId, ApiError> {
    AttachmentId::parse(&path.attachment_id)
        .ok_or_else(|| attachment_not_found(&path.attachment_id))
}

/// cinder/api/schemas/attachments.py `create` (and `create_v354` with `mode`).
pub fn create_schema(with_mode: bool) -> Value {
    let mut properties = json!({
        "volume_uuid": {"type": "string", "format": "uuid"},
        "instance_uuid": {"type": "string", "format": "uuid"},
        "connector": {"type": ["object", "null"]}
    });
    if with_mode {
        properties["mode"] = json!({"type": "string", "enum": ["rw", "ro"]});
    }
    json!({
        "type": "object",
        "properties": {
            "attachment": {
                "type": "object",
                "properties": properties,
                "required": ["volume_uuid"],
                "additionalProperties": false
            }
        },
        "required": ["attachment"],
        "additionalProperties": false
    })
}

static CREATE: LazyLock<Value> = LazyLock::new(|| create_schema(false));
static CREATE_V354: LazyLock<Value> = LazyLock::new(|| create_schema(true));
static UPDATE: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "attachment": {
                "type": "object",
                "properties": {"connector": {"type": "object", "minProperties": 1}},
                "required": ["connector"],
                "additionalProperties": false
            }
        },
        "required": ["attachment"],
        "additionalProperties": false
    })
});
static COMPLETE: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {"os-complete": {}},
        "required": ["os-complete"],
        "additionalProperties": false
    })
});

#[derive(Deserialize)]
struct CreateBody {
    attachment: CreateFields,
}

#[derive(Deserialize)]
struct CreateFields {
    volume_uuid: String,
    instance_uuid: Option<String>,
    connector: Option<Value>,
    mode: Option<String>,
}

#[derive(Deserialize)]
struct UpdateBody {
    attachment: UpdateFields,
}

#[derive(Deserialize)]
struct UpdateFields {
    connector: Value,
}

fn one(attachment: &crate::domain::attachment::Attachment) -> Json<Value> {
    Json(json!({"attachment": AttachmentDetail::from(attachment)}))
}

async fn create(
    State(state): State<AppState>,
    ctx: Ctx,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::AttachmentCreate)?;
    let schema = if ctx.version.at_least(3, 54) {
        &*CREATE_V354
    } else {
        &*CREATE
    };
    let body: CreateBody = body.parse(schema)?;
    let fields = body.attachment;
    let volume_id = VolumeId::parse(&fields.volume_uuid).ok_or_else(ApiError::not_found)?;
    let request = CreateAttachment {
        volume_id,
        instance_uuid: fields.instance_uuid,
        connector: Connector::from_json(fields.connector),
        // The schema allows only `rw` and `ro`.
        mode: fields.mode.as_deref().and_then(AttachMode::requested),
    };
    let attachment = state
        .service
        .create_attachment(&ctx.caller, request)
        .await?;
    Ok(one(&attachment))
}

async fn update(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<AttachmentPath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::AttachmentUpdate)?;
    let body: UpdateBody = body.parse(&UPDATE)?;
    let connector = Connector::from_json(Some(body.attachment.connector)).unwrap_or_default();
    let attachment = state
        .service
        .update_attachment(&ctx.caller, attachment_id(&path)?, connector)
        .await?;
    Ok(one(&attachment))
}

async fn show(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<AttachmentPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::AttachmentShow)?;
    let attachment = state
        .service
        .show_attachment(&ctx.caller, attachment_id(&path)?)
        .await?;
    Ok(one(&attachment))
}

async fn delete(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<AttachmentPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::AttachmentDelete)?;
    let remaining = state
        .service
        .delete_attachment(&ctx.caller, attachment_id(&path)?)
        .await?;
    Ok(Json(json!(AttachmentList {
        attachments: remaining
            .iter()
            .map(AttachmentSummary::from)
            .collect::<Vec<_>>(),
    })))
}

/// `POST /attachments/{id}/action`: only `os-complete` exists.
async fn action(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<AttachmentPath>,
    body: JsonBody,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::AttachmentComplete)?;
    let name = body.action_name()?;
    if name != "os-complete" {
        return Err(ApiError::no_such_action(&name));
    }
    super::schema::validate(&COMPLETE, &body.0).map_err(ApiError::BadRequest)?;
    state
        .service
        .complete_attachment(&ctx.caller, attachment_id(&path)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Reads the filter part of a listing's query string.
fn attachment_filters(ctx: &Ctx, pairs: &[(String, String)]) -> Result<ListAttachments, ApiError> {
    let mut request = ListAttachments::default();
    let mut invalid = Vec::new();
    for (key, value) in pairs {
        if !key.is_ascii() {
            return Err(ApiError::BadRequest(
                "Filter keys can only contain ASCII characters.".to_owned(),
            ));
        }
        let admin = ctx.caller.is_admin;
        match key.as_str() {
            // Presence counts; non-admins' all_tenants is dropped.
            "all_tenants" => request.all_tenants = true,
            "volume_id" => match VolumeId::parse(value) {
                Some(id) => request.filters.volume_id = Some(id),
                None => request.matches_nothing = true,
            },
            "instance_id" | "instance_uuid" if key == "instance_id" || admin => {
                request.filters.instance_uuid = Some(value.clone())
            }
            // `status` is the attachment's status (Cinder matches nothing; api-ref D23).
            "attach_status" | "status" => request.filters.attach_status = Some(value.clone()),
            "project_id" if admin => request.filters.project_id = Some(value.clone()),
            _ if admin => request.matches_nothing = true,
            _ if !super::resource_filters::filters_of("attachment").contains(&key.as_str()) => {
                invalid.push(key.clone())
            }
            _ => {}
        }
    }
    super::paging::reject_invalid_filters(ctx.version, &invalid)?;
    Ok(request)
}

fn parse_query(
    ctx: &Ctx,
    query: &[(String, String)],
) -> Result<
    (
        ListAttachments,
        crate::domain::paging::Page<AttachmentSortKey>,
    ),
    ApiError,
> {
    let listing = parse_listing(
        query,
        AttachmentSortKey::parse,
        AttachmentSortKey::CreatedAt,
        |marker| attachment_not_found(marker),
    )?;
    Ok((attachment_filters(ctx, &listing.filters)?, listing.page))
}

async fn list(
    State(state): State<AppState>,
    ctx: Ctx,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<AttachmentList<AttachmentSummary>>, ApiError> {
    ctx.require(Endpoint::AttachmentList)?;
    let (request, page) = parse_query(&ctx, &query)?;
    let found = state
        .service
        .list_attachments(&ctx.caller, &request, &page)
        .await?;
    Ok(Json(AttachmentList {
        attachments: found.iter().map(AttachmentSummary::from).collect(),
    }))
}

async fn list_detail(
    State(state): State<AppState>,
    ctx: Ctx,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<AttachmentList<AttachmentDetail>>, ApiError> {
    ctx.require(Endpoint::AttachmentListDetail)?;
    let (request, page) = parse_query(&ctx, &query)?;
    let found = state
        .service
        .list_attachments(&ctx.caller, &request, &page)
        .await?;
    Ok(Json(AttachmentList {
        attachments: found.iter().map(AttachmentDetail::from).collect(),
    }))
}
