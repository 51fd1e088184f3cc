//! The volume actions that move a volume's data or its place, and the completions Nova
//! calls: `revert` (3.40), `os-migrate_volume`, `os-migrate_volume_completion`,
//! `os-reimage` (3.68), `os-extend_volume_completion` (3.71). Each is below its
//! microversion what Cinder answers for an action not there yet: a 404.

use std::sync::LazyLock;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::error::ApiError;
use crate::domain::ids::VolumeId;
use crate::service::volume_migrations::MigrateVolume;
use crate::service::Service;

/// The actions this module answers.
pub const ACTIONS: &[&str] = &[
    "revert",
    "os-migrate_volume",
    "os-migrate_volume_completion",
    "os-reimage",
    "os-extend_volume_completion",
];

/// cinder/api/schemas/volume_actions.py `reimage`.
static REIMAGE: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {"os-reimage": {
            "type": "object",
            "properties": {
                "image_id": {"type": "string", "format": "uuid"},
                "reimage_reserved": super::schema::boolean()
            },
            "required": ["image_id"],
            "additionalProperties": false
        }},
        "required": ["os-reimage"],
        "additionalProperties": false
    })
});

/// cinder/api/schemas/admin_actions.py `extend_volume_completion`.
static EXTEND_COMPLETION: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {"os-extend_volume_completion": {
            "type": "object",
            "properties": {"error": {"type": ["string", "null", "boolean"]}},
            "additionalProperties": false
        }},
        "required": ["os-extend_volume_completion"],
        "additionalProperties": false
    })
});

/// cinder/api/schemas/volumes.py `revert`.
static REVERT: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {"revert": {
            "type": "object",
            "properties": {"snapshot_id": {"type": ["string", "null"]}},
            "additionalProperties": true
        }},
        "required": ["revert"],
        "additionalProperties": false
    })
});

/// cinder/api/schemas/admin_actions.py `migrate_volume` (host required before 3.16).
static MIGRATE: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {"os-migrate_volume": {
            "type": "object",
            "properties": {
                "host": {"type": ["string", "null"], "maxLength": 255},
                "force_host_copy": super::schema::boolean(),
                "lock_volume": super::schema::boolean(),
                "cluster": {"type": ["string", "null"], "maxLength": 255}
            },
            "additionalProperties": false
        }},
        "required": ["os-migrate_volume"],
        "additionalProperties": false
    })
});

/// cinder/api/schemas/admin_actions.py `migrate_volume_completion`.
static MIGRATE_COMPLETION: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {"os-migrate_volume_completion": {
            "type": "object",
            "properties": {
                "new_volume": {"type": "string", "format": "uuid"},
                "error": {"type": ["string", "null", "boolean"]}
            },
            "required": ["new_volume"],
            "additionalProperties": false
        }},
        "required": ["os-migrate_volume_completion"],
        "additionalProperties": false
    })
});

/// oslo's `bool_from_string(strict=True)` of a value the schema let through.
fn flag(value: &Value) -> bool {
    match value {
        Value::Bool(b) => *b,
        Value::String(s) => matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "1" | "yes" | "on" | "y" | "t"
        ),
        _ => false,
    }
}

fn at_least(ctx: &Ctx, major: u32, minor: u32) -> Result<(), ApiError> {
    if ctx.version.at_least(major, minor) {
        Ok(())
    } else {
        Err(ApiError::not_found())
    }
}

/// Runs action `name` on volume `id`.
pub async fn action(
    service: &Service,
    ctx: &Ctx,
    id: VolumeId,
    name: &str,
    body: &JsonBody,
) -> Result<Response, ApiError> {
    match name {
        "revert" => {
            at_least(ctx, 3, 40)?;
            super::schema::validate(&REVERT, &body.0).map_err(ApiError::BadRequest)?;
            let snapshot = body.0["revert"]["snapshot_id"].as_str();
            service.revert_volume(&ctx.caller, id, snapshot).await?;
            Ok(StatusCode::ACCEPTED.into_response())
        }
        "os-migrate_volume" => {
            super::schema::validate(&MIGRATE, &body.0).map_err(ApiError::BadRequest)?;
            let fields = &body.0["os-migrate_volume"];
            let host = fields["host"].as_str().or_else(|| {
                ctx.version
                    .at_least(3, 16)
                    .then(|| fields["cluster"].as_str())
                    .flatten()
            });
            let Some(host) = host.filter(|h| !h.is_empty()) else {
                return Err(ApiError::BadRequest(
                    "Invalid input received: One of host or cluster must be provided.".into(),
                ));
            };
            let request = MigrateVolume {
                host: host.to_owned(),
                force_host_copy: flag(&fields["force_host_copy"]),
                lock_volume: flag(&fields["lock_volume"]),
            };
            service.migrate_volume(&ctx.caller, id, request).await?;
            Ok(StatusCode::ACCEPTED.into_response())
        }
        "os-migrate_volume_completion" => {
            super::schema::validate(&MIGRATE_COMPLETION, &body.0).map_err(ApiError::BadRequest)?;
            let fields = &body.0["os-migrate_volume_completion"];
            let new = fields["new_volume"].as_str().unwrap_or_default();
            let error = flag(&fields["error"]);
            let saved = service
                .complete_volume_migration(&ctx.caller, id, new, error)
                .await?;
            Ok(axum::Json(json!({"save_volume_id": saved})).into_response())
        }
        "os-reimage" => {
            at_least(ctx, 3, 68)?;
            super::schema::validate(&REIMAGE, &body.0).map_err(ApiError::BadRequest)?;
            let fields = &body.0["os-reimage"];
            let image = fields["image_id"].as_str().unwrap_or_default();
            let reserved = flag(&fields["reimage_reserved"]);
            service
                .reimage_volume(&ctx.caller, id, image, reserved)
                .await?;
            Ok(StatusCode::ACCEPTED.into_response())
        }
        "os-extend_volume_completion" => {
            at_least(ctx, 3, 71)?;
            super::schema::validate(&EXTEND_COMPLETION, &body.0).map_err(ApiError::BadRequest)?;
            service.complete_volume_extend(&ctx.caller, id).await?;
            Ok(StatusCode::ACCEPTED.into_response())
        }
        other => Err(ApiError::no_such_action(other)),
    }
}
