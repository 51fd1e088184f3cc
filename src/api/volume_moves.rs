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
use crate::service::Service;

/// The actions this module answers.
pub const ACTIONS: &[&str] = &["revert"];

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
        other => Err(ApiError::no_such_action(other)),
    }
}
