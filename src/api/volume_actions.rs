//! `POST /volumes/{id}/action`: one action per body, named by its only key.

use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::volumes::{volume_id, VolumePath};
use crate::api::AppState;
use crate::domain::attachment::AttachStatus;
use crate::domain::legacy_attach::LegacyAction;
use crate::domain::volume::{MigrationStatus, StatusReset, VolumeStatus};

/// Actions Cinder has that this service does not build yet.
const NOT_BUILT: &[&str] = &[
    "os-attach",
    "os-detach",
    "os-initialize_connection",
    "os-terminate_connection",
    "os-force_detach",
    "os-extend_volume_completion",
    "os-volume_upload_image",
    "os-migrate_volume",
    "os-migrate_volume_completion",
    "os-update_volume_admin_metadata",
    "os-reimage",
    "revert",
    "os-set_image_metadata",
    "os-unset_image_metadata",
    "os-show_image_metadata",
    "os-unmanage",
];

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

/// Dispatches on the body's single key.
pub async fn action(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<VolumePath>,
    body: JsonBody,
) -> Result<StatusCode, ApiError> {
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
            Ok(StatusCode::OK)
        }
        "os-update_readonly_flag" => {
            super::schema::validate(&READONLY, &body.0).map_err(ApiError::BadRequest)?;
            let readonly = flag(&body.0, "os-update_readonly_flag", "readonly");
            service
                .update_readonly_flag(caller, volume_id(&path)?, readonly)
                .await?;
            Ok(StatusCode::ACCEPTED)
        }
        "os-retype" => {
            let parsed: RetypeBody = body.parse(&RETYPE)?;
            service
                .retype_volume(caller, volume_id(&path)?, &parsed.retype.new_type)
                .await?;
            Ok(StatusCode::ACCEPTED)
        }
        "os-reset_status" => {
            let parsed: ResetBody = body.parse(&RESET_STATUS)?;
            let reset = parse_reset(parsed.reset)?;
            service
                .reset_status(caller, volume_id(&path)?, reset)
                .await?;
            Ok(StatusCode::ACCEPTED)
        }
        "os-force_delete" => {
            super::schema::validate(&FORCE_DELETE, &body.0).map_err(ApiError::BadRequest)?;
            service
                .force_delete_volume(caller, volume_id(&path)?)
                .await?;
            Ok(StatusCode::ACCEPTED)
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
                .extend_volume(caller, volume_id(&path)?, new_size)
                .await?;
            Ok(StatusCode::ACCEPTED)
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
            Ok(StatusCode::ACCEPTED)
        }
        other => match NOT_BUILT.iter().find(|known| **known == other) {
            // A volume that does not exist is 404 first, as in Cinder.
            Some(known) => {
                service.get_volume_brief(caller, volume_id(&path)?).await?;
                Err(Endpoint::Unimplemented(known).not_implemented())
            }
            None => Err(ApiError::no_such_action(other)),
        },
    }
}
