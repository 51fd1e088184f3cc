//! A volume's image metadata (Cinder's volume_image_metadata extension): the
//! `os-show_image_metadata`, `os-set_image_metadata` and `os-unset_image_metadata`
//! actions. The volume views show it as `volume_image_metadata` (`views.rs`).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::error::ApiError;
use crate::domain::ids::VolumeId;
use crate::domain::volume::MetadataChange;
use crate::domain::RequestContext;
use crate::service::Service;

static SHOW: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {"os-show_image_metadata": {}},
        "required": ["os-show_image_metadata"],
        "additionalProperties": false
    })
});

/// Cinder's `image_metadata` parameter type: keys of the metadata pattern, text values.
static SET: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "os-set_image_metadata": {
                "type": "object",
                "properties": {
                    "metadata": {
                        "type": "object",
                        "patternProperties": {"^[a-zA-Z0-9-_:. /]{1,255}$": {"type": "string"}},
                        "additionalProperties": false
                    }
                },
                "required": ["metadata"],
                "additionalProperties": false
            }
        },
        "required": ["os-set_image_metadata"],
        "additionalProperties": false
    })
});

static UNSET: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "os-unset_image_metadata": {
                "type": "object",
                "properties": {"key": {"type": "string", "minLength": 1, "maxLength": 255}},
                "required": ["key"],
                "additionalProperties": false
            }
        },
        "required": ["os-unset_image_metadata"],
        "additionalProperties": false
    })
});

/// The longest value Cinder's `mysql_text` format takes, in bytes.
const MYSQL_TEXT_BYTES: usize = 65_535;

pub(super) async fn action(
    service: &Service,
    caller: &RequestContext,
    id: VolumeId,
    name: &str,
    body: &Value,
) -> Result<Response, ApiError> {
    let validate =
        |schema: &Value| super::schema::validate(schema, body).map_err(ApiError::BadRequest);
    match name {
        "os-show_image_metadata" => {
            validate(&SHOW)?;
            let metadata = service.image_metadata(caller, id).await?;
            Ok(Json(json!({ "metadata": metadata })).into_response())
        }
        "os-set_image_metadata" => {
            validate(&SET)?;
            let given = &body["os-set_image_metadata"]["metadata"];
            let mut metadata = BTreeMap::new();
            for (key, value) in given.as_object().into_iter().flatten() {
                let text = value.as_str().unwrap_or_default();
                if text.len() > MYSQL_TEXT_BYTES {
                    return Err(ApiError::BadRequest(format!(
                        "Invalid input for field/attribute {key}. Value: {text}. \
                         '{text}' is not a 'mysql_text'"
                    )));
                }
                metadata.insert(key.clone(), text.to_owned());
            }
            let after = service
                .change_image_metadata(caller, id, MetadataChange::Merge(metadata))
                .await?;
            Ok(Json(json!({ "metadata": after })).into_response())
        }
        _ => {
            validate(&UNSET)?;
            let key = body["os-unset_image_metadata"]["key"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            service
                .change_image_metadata(caller, id, MetadataChange::Remove(key))
                .await?;
            Ok(StatusCode::OK.into_response())
        }
    }
}
