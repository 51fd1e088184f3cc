//! `POST /volumes/{id}/action`: one action per body, named by its only key.

use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::volume_path::{volume_id, VolumePath};
use crate::api::AppState;
use crate::domain::attachment::{AttachMode, AttachStatus, Connector};
use crate::domain::ids::AttachmentId;
use crate::domain::legacy_attach::LegacyAction;
use crate::domain::volume::{MigrationStatus, StatusReset, VolumeStatus};
use crate::service::legacy_attachments::{AttachVolume, DetachTarget};

fn action_schema(name: &str, inner: Value) -> Value {
    json!({
        "type": "object",
        "properties": {name: inner},
        "required": [name],
        "additionalProperties": false
    })
}

fn flag_schema(action: &str, field: &str) -> Value {
    action_schema(
        action,
        json!({
            "type": "object",
            "properties": {field: super::schema::boolean()},
            "required": [field],
            "additionalProperties": false
        }),
    )
}

/// cinder/api/schemas/volume_actions.py `extend` (`volume_size`).
static EXTEND: LazyLock<Value> = LazyLock::new(|| {
    action_schema(
        "os-extend",
        json!({
            "type": "object",
            "properties": {"new_size": {"type": ["integer", "string"], "pattern": "^[0-9]+$",
                                        "minimum": 1, "maximum": 2147483647}},
            "required": ["new_size"],
            "additionalProperties": false
        }),
    )
});

static SET_BOOTABLE: LazyLock<Value> = LazyLock::new(|| flag_schema("os-set_bootable", "bootable"));
static READONLY: LazyLock<Value> =
    LazyLock::new(|| flag_schema("os-update_readonly_flag", "readonly"));
static RETYPE: LazyLock<Value> = LazyLock::new(|| {
    action_schema(
        "os-retype",
        json!({
            "type": "object",
            "properties": {
                "new_type": {"type": "string"},
                "migration_policy": {"type": ["string", "null"], "enum": ["on-demand", "never", null]}
            },
            "required": ["new_type"],
            "additionalProperties": false
        }),
    )
});
static RESET_STATUS: LazyLock<Value> = LazyLock::new(|| {
    action_schema(
        "os-reset_status",
        json!({
            "type": "object",
            "properties": {
                "status": {"type": ["string", "null"]},
                "attach_status": {"type": ["string", "null"]},
                "migration_status": {"type": ["string", "null"]}
            },
            "additionalProperties": false
        }),
    )
});
static FORCE_DELETE: LazyLock<Value> =
    LazyLock::new(|| action_schema("os-force_delete", json!({})));

/// cinder/api/schemas/volume_actions.py `attach`.
static ATTACH: LazyLock<Value> = LazyLock::new(|| {
    action_schema(
        "os-attach",
        json!({
            "type": "object",
            "properties": {
                "instance_uuid": {"type": "string", "format": "uuid"},
                "mountpoint": {"type": "string", "minLength": 1, "maxLength": 255},
                "host_name": {"type": "string", "maxLength": 255},
                "mode": {"type": "string", "enum": ["rw", "ro"]}
            },
            "required": ["mountpoint"],
            "anyOf": [{"required": ["instance_uuid"]}, {"required": ["host_name"]}],
            "additionalProperties": false
        }),
    )
});
/// `detach`: the body may be null; `attachment_id` a UUID or null.
static DETACH: LazyLock<Value> = LazyLock::new(|| {
    action_schema(
        "os-detach",
        json!({
            "type": ["object", "null"],
            "properties": {
                "attachment_id": {"oneOf": [{"type": "string", "format": "uuid"}, {"type": "null"}]}
            },
            "additionalProperties": false
        }),
    )
});
static INITIALIZE: LazyLock<Value> = LazyLock::new(|| {
    action_schema(
        "os-initialize_connection",
        json!({
            "type": "object",
            "properties": {"connector": {"type": ["object", "string"]}},
            "required": ["connector"],
            "additionalProperties": false
        }),
    )
});
static TERMINATE: LazyLock<Value> = LazyLock::new(|| {
    action_schema(
        "os-terminate_connection",
        json!({
            "type": "object",
            "properties": {"connector": {"type": ["string", "object", "null"]}},
            "required": ["connector"],
            "additionalProperties": false
        }),
    )
});
/// cinder/api/schemas/admin_actions.py `force_detach`.
static FORCE_DETACH: LazyLock<Value> = LazyLock::new(|| {
    action_schema(
        "os-force_detach",
        json!({
            "type": "object",
            "properties": {
                "connector": {"type": ["string", "object", "null"]},
                "attachment_id": {"type": ["string", "null"]}
            },
            "additionalProperties": false
        }),
    )
});

/// A connector as the legacy actions take it: an object; null (or, for
/// `os-initialize_connection`, a string Cinder's schema lets through) is none.
fn connector_of(body: &Value, action: &str) -> Option<Connector> {
    Connector::from_json(Some(body[action]["connector"].clone()))
}

/// The connector an action names: an object, as os-brick builds it, or null (none: the
/// volume's only host). Cinder's schema lets a string through, which names no host and
/// would end nothing: refused.
fn connector_object(body: &Value, action: &str) -> Result<Option<Connector>, ApiError> {
    match &body[action]["connector"] {
        Value::Object(_) => Ok(connector_of(body, action)),
        Value::Null => Ok(None),
        _ => Err(ApiError::BadRequest(format!(
            "Invalid input received: the connector of {action} must be an object describing \
             the host (as os-brick's get_connector_properties gives it)."
        ))),
    }
}

fn attachment_text<'a>(body: &'a Value, action: &str) -> Option<&'a str> {
    body[action]["attachment_id"].as_str()
}

fn flag(body: &Value, action: &str, field: &str) -> bool {
    super::schema::as_bool(&body[action][field]).unwrap_or(false)
}

#[derive(Deserialize)]
struct RetypeBody {
    #[serde(rename = "os-retype")]
    retype: RetypeFields,
}

#[derive(Deserialize)]
struct RetypeFields {
    new_type: String,
    #[serde(default)]
    migration_policy: Option<String>,
}

#[derive(Deserialize)]
struct ResetBody {
    #[serde(rename = "os-reset_status")]
    reset: ResetFields,
}

#[derive(Deserialize)]
struct ResetFields {
    status: Option<String>,
    attach_status: Option<String>,
    migration_status: Option<String>,
}

fn parse_reset(fields: ResetFields) -> Result<StatusReset, ApiError> {
    let lower = |v: Option<String>| v.filter(|s| !s.is_empty()).map(|s| s.to_lowercase());
    let (status, attach_status, migration_status) = (
        lower(fields.status),
        lower(fields.attach_status),
        lower(fields.migration_status),
    );
    if status.is_none() && attach_status.is_none() && migration_status.is_none() {
        return Err(ApiError::BadRequest(
            "Invalid input received: Must specify 'status', 'attach_status' or 'migration_status' for update."
                .to_owned(),
        ));
    }
    let invalid = |what: &str, value: &str, valid: Vec<&str>| {
        ApiError::BadRequest(format!(
            "Invalid input received: Volume {what}: {value} is invalid, valid statuses are: {valid:?}."
        ))
    };
    let status = status
        .map(|s| {
            VolumeStatus::parse(&s).ok_or_else(|| {
                invalid(
                    "status",
                    &s,
                    VolumeStatus::ALL.iter().map(|v| v.as_str()).collect(),
                )
            })
        })
        .transpose()?;
    let attach_status = attach_status
        .map(|s| match s.as_str() {
            "attached" => Ok(AttachStatus::Attached),
            "detached" => Ok(AttachStatus::Detached),
            _ => Err(invalid("attach status", &s, vec!["attached", "detached"])),
        })
        .transpose()?;
    let migration_status = migration_status
        .map(|m| {
            MigrationStatus::parse(&m).ok_or_else(|| {
                invalid(
                    "migration status",
                    &m,
                    MigrationStatus::ALL.iter().map(|v| v.as_str()).collect(),
                )
            })
        })
        .transpose()?;
    Ok(StatusReset {
        status,
        attach_status,
        migration_status,
    })
}

/// An attachment id the schema let through (`os-detach` takes any string).
fn parse_attachment(text: &str) -> Result<AttachmentId, ApiError> {
    text.parse()
        .map_err(|_| ApiError::BadRequest(format!("Invalid input received: {text} is not a UUID")))
}

/// Dispatches on the body's single key.
pub async fn action(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<VolumePath>,
    headers: axum::http::HeaderMap,
    request_id: Option<axum::Extension<super::request_id::RequestId>>,
    body: JsonBody,
) -> Result<Response, ApiError> {
    ctx.require(Endpoint::VolumeAction)?;
    let name = body.action_name()?;
    let service = &state.service;
    let caller = &ctx.caller;
    match name.as_str() {
        "os-set_bootable" => {
            super::schema::validate(&SET_BOOTABLE, &body.0).map_err(ApiError::BadRequest)?;
            let bootable = flag(&body.0, "os-set_bootable", "bootable");
            service
                .set_bootable(caller, volume_id(&path)?, bootable)
                .await?;
            Ok(StatusCode::OK.into_response())
        }
        "os-volume_upload_image" => {
            let token = super::context::auth_token(&headers);
            let request_id = request_id.map(|axum::Extension(id)| id.0);
            let id = volume_id(&path)?;
            super::image_upload::action(service, &ctx, id, &body.0, token, request_id).await
        }
        "os-set_image_metadata" | "os-unset_image_metadata" | "os-show_image_metadata" => {
            super::image_metadata::action(service, caller, volume_id(&path)?, &name, &body.0).await
        }
        "os-update_readonly_flag" => {
            super::schema::validate(&READONLY, &body.0).map_err(ApiError::BadRequest)?;
            let readonly = flag(&body.0, "os-update_readonly_flag", "readonly");
            service
                .update_readonly_flag(caller, volume_id(&path)?, readonly)
                .await?;
            Ok(StatusCode::ACCEPTED.into_response())
        }
        "os-retype" => {
            let parsed: RetypeBody = body.parse(&RETYPE)?;
            service
                .retype_volume(
                    caller,
                    volume_id(&path)?,
                    &parsed.retype.new_type,
                    parsed.retype.migration_policy.as_deref() == Some("on-demand"),
                )
                .await?;
            Ok(StatusCode::ACCEPTED.into_response())
        }
        "os-reset_status" => {
            let parsed: ResetBody = body.parse(&RESET_STATUS)?;
            let reset = parse_reset(parsed.reset)?;
            service
                .reset_status(caller, volume_id(&path)?, reset)
                .await?;
            Ok(StatusCode::ACCEPTED.into_response())
        }
        "os-unmanage" => {
            let schema = json!({"type": "object", "properties": {"os-unmanage": {}},
                                "required": ["os-unmanage"], "additionalProperties": false});
            super::schema::validate(&schema, &body.0).map_err(ApiError::BadRequest)?;
            service.unmanage_volume(caller, volume_id(&path)?).await?;
            Ok(StatusCode::ACCEPTED.into_response())
        }
        "os-force_delete" => {
            super::schema::validate(&FORCE_DELETE, &body.0).map_err(ApiError::BadRequest)?;
            service
                .force_delete_volume(caller, volume_id(&path)?)
                .await?;
            Ok(StatusCode::ACCEPTED.into_response())
        }
        "os-extend" => {
            super::schema::validate(&EXTEND, &body.0).map_err(ApiError::BadRequest)?;
            let new_size = match &body.0["os-extend"]["new_size"] {
                Value::Number(n) => n.as_i64(),
                Value::String(s) => s.parse().ok(),
                _ => None,
            }
            .ok_or_else(|| ApiError::BadRequest("Invalid new_size.".to_owned()))?;
            service
                .extend_volume(
                    caller,
                    volume_id(&path)?,
                    new_size,
                    ctx.version.at_least(3, 42),
                )
                .await?;
            Ok(StatusCode::ACCEPTED.into_response())
        }
        "os-initialize_connection" => {
            super::schema::validate(&INITIALIZE, &body.0).map_err(ApiError::BadRequest)?;
            let id = volume_id(&path)?;
            // Cinder lets a string through its schema and then fails on it; here it is a
            // connector without the keys the backend needs.
            let connector = connector_of(&body.0, &name).unwrap_or_default();
            let info = service.initialize_connection(caller, id, connector).await?;
            Ok(Json(json!({"connection_info": info})).into_response())
        }
        "os-attach" => {
            super::schema::validate(&ATTACH, &body.0).map_err(ApiError::BadRequest)?;
            let fields = &body.0["os-attach"];
            let text = |key: &str| fields[key].as_str().map(str::to_owned);
            let request = AttachVolume {
                instance_uuid: text("instance_uuid"),
                host_name: text("host_name"),
                mountpoint: text("mountpoint").unwrap_or_default(),
                mode: text("mode")
                    .as_deref()
                    .and_then(AttachMode::requested)
                    .unwrap_or(AttachMode::ReadWrite),
            };
            service
                .attach_volume(caller, volume_id(&path)?, request)
                .await?;
            Ok(StatusCode::ACCEPTED.into_response())
        }
        "os-detach" => {
            super::schema::validate(&DETACH, &body.0).map_err(ApiError::BadRequest)?;
            let target = match attachment_text(&body.0, &name) {
                Some(text) => DetachTarget::Id(parse_attachment(text)?),
                None => DetachTarget::Only,
            };
            service
                .detach_volume(caller, volume_id(&path)?, target)
                .await?;
            Ok(StatusCode::ACCEPTED.into_response())
        }
        "os-terminate_connection" => {
            super::schema::validate(&TERMINATE, &body.0).map_err(ApiError::BadRequest)?;
            let connector = connector_object(&body.0, &name)?;
            service
                .terminate_connection(caller, volume_id(&path)?, connector)
                .await?;
            Ok(StatusCode::ACCEPTED.into_response())
        }
        "os-force_detach" => {
            super::schema::validate(&FORCE_DETACH, &body.0).map_err(ApiError::BadRequest)?;
            let target = match attachment_text(&body.0, &name) {
                // Not an id names no attachment: Cinder's answer for one not found.
                Some(text) => DetachTarget::Id(text.parse().map_err(|_| {
                    ApiError::from(crate::domain::DomainError::ForceDetachNotFound(
                        text.to_owned(),
                    ))
                })?),
                None => DetachTarget::Only,
            };
            let connector = connector_object(&body.0, &name)?;
            service
                .force_detach(caller, volume_id(&path)?, target, connector)
                .await?;
            Ok(StatusCode::ACCEPTED.into_response())
        }
        "os-reserve" | "os-unreserve" | "os-begin_detaching" | "os-roll_detaching" => {
            let action = match name.as_str() {
                "os-reserve" => LegacyAction::Reserve,
                "os-unreserve" => LegacyAction::Unreserve,
                "os-begin_detaching" => LegacyAction::BeginDetaching,
                _ => LegacyAction::RollDetaching,
            };
            service
                .legacy_attach(caller, volume_id(&path)?, action)
                .await?;
            Ok(StatusCode::ACCEPTED.into_response())
        }
        moved if super::volume_moves::ACTIONS.contains(&moved) => {
            super::volume_moves::action(service, &ctx, volume_id(&path)?, moved, &body).await
        }
        // Cinder 29 has no `os-update_volume_admin_metadata` action either: it is one of
        // these, whether or not the volume exists.
        other => Err(ApiError::no_such_action(other)),
    }
}
