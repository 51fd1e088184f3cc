//! `os-volume_upload_image`: the body checked against Cinder's schema (visibility and
//! protected from 3.1), the answer shaped as Cinder's (`volume_type` as the type's record).

use std::sync::LazyLock;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::context::Ctx;
use super::error::ApiError;
use crate::domain::ids::VolumeId;
use crate::domain::time::format_timestamp;
use crate::service::image_upload::UploadImage;
use crate::service::Service;

const DISK_FORMATS: [&str; 7] = ["raw", "vmdk", "vdi", "qcow2", "vhd", "vhdx", "ploop"];

fn schema(with_visibility: bool) -> Value {
    let mut fields = json!({
        "image_name": {"type": "string", "minLength": 1, "maxLength": 255},
        "force": super::schema::boolean(),
        "disk_format": {"type": "string", "enum": DISK_FORMATS},
        "container_format": {"type": ["string", "null"], "minLength": 0, "maxLength": 255}
    });
    if with_visibility {
        fields["visibility"] =
            json!({"type": "string", "enum": ["community", "public", "private", "shared"]});
        fields["protected"] = super::schema::boolean();
    }
    json!({
        "type": "object",
        "properties": {"os-volume_upload_image": {
            "type": "object",
            "properties": fields,
            "required": ["image_name"],
            "additionalProperties": false
        }},
        "required": ["os-volume_upload_image"],
        "additionalProperties": false
    })
}

static UPLOAD: LazyLock<Value> = LazyLock::new(|| schema(false));
static UPLOAD_V31: LazyLock<Value> = LazyLock::new(|| schema(true));

pub async fn action(
    service: &Service,
    ctx: &Ctx,
    id: VolumeId,
    body: &Value,
    auth_token: Option<String>,
    request_id: Option<String>,
) -> Result<Response, ApiError> {
    let with_visibility = ctx.version.at_least(3, 1);
    let schema = if with_visibility {
        &*UPLOAD_V31
    } else {
        &*UPLOAD
    };
    super::schema::validate(schema, body).map_err(ApiError::BadRequest)?;
    let fields = &body["os-volume_upload_image"];
    let flag = |key: &str| super::schema::as_bool(&fields[key]);
    let text = |key: &str, default: &str| {
        fields[key]
            .as_str()
            .map_or_else(|| default.to_owned(), str::to_owned)
    };
    let request = UploadImage {
        image_name: text("image_name", ""),
        force: flag("force").unwrap_or(false),
        disk_format: text("disk_format", "raw"),
        container_format: text("container_format", "bare"),
        visibility: with_visibility.then(|| text("visibility", "private")),
        protected: with_visibility.then(|| flag("protected").unwrap_or(false)),
        auth_token,
    };
    let started = service
        .upload_volume_to_image(&ctx.caller, id, request, request_id)
        .await?;
    let volume = &started.volume;
    let volume_type = service
        .store
        .get_volume_type(volume.volume_type_id)
        .await
        .ok()
        .flatten()
        .map(|t| {
            json!({
                "id": t.id.to_string(),
                "name": t.name,
                "description": t.description,
                "is_public": t.is_public,
                "qos_specs_id": t.qos_specs_id.map(|q| q.to_string()),
                "extra_specs": t.extra_specs.iter()
                    .filter_map(|(k, v)| v.as_ref().map(|v| (k.clone(), Value::from(v.clone()))))
                    .collect::<serde_json::Map<_, _>>(),
                "created_at": format_timestamp(&t.created_at),
                "updated_at": t.updated_at.as_ref().map(format_timestamp),
                "deleted": false,
                "deleted_at": null,
            })
        });
    let image = &started.image;
    let mut answer = json!({
        "id": volume.id.to_string(),
        "updated_at": volume.updated_at.as_ref().map(format_timestamp),
        "status": "uploading",
        "display_description": volume.description,
        "size": volume.size,
        "volume_type": volume_type,
        "image_id": image["id"],
        "container_format": image["container_format"],
        "disk_format": image["disk_format"],
        "image_name": image["name"],
    });
    for key in ["protected", "visibility"] {
        if let Some(value) = image.get(key) {
            answer[key] = value.clone();
        }
    }
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"os-volume_upload_image": answer})),
    )
        .into_response())
}
