//! `PUT /volumes/{id}` and `/volumes/{id}/metadata[/{key}]` (Cinder's volume update and
//! volume_metadata controllers).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::links::base_url;
use super::views::volume_detail;
use super::volume_path::{volume_id, VolumePath};
use crate::api::AppState;
use crate::domain::volume::{MetadataChange, VolumeUpdate};

/// Cinder's `extra_specs` parameter type, which volume metadata uses.
pub(super) fn metadata_schema() -> Value {
    json!({
        "type": "object",
        "patternProperties": {"^[a-zA-Z0-9-_:. /]{1,255}$": {"type": "string", "maxLength": 255}},
        "additionalProperties": false
    })
}

static UPDATE: LazyLock<Value> = LazyLock::new(|| {
    let text = json!({"type": ["string", "null"], "maxLength": 255});
    json!({
        "type": "object",
        "properties": {
            "volume": {
                "type": "object",
                "properties": {
                    "name": text, "description": text,
                    "display_name": text, "display_description": text,
                    "metadata": metadata_schema()
                },
                "additionalProperties": false
            }
        },
        "required": ["volume"],
        "additionalProperties": false
    })
});

pub(super) static METADATA: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {"metadata": metadata_schema()},
        "required": ["metadata"],
        "additionalProperties": false
    })
});

pub(super) static META_ITEM: LazyLock<Value> = LazyLock::new(|| {
    let mut one = metadata_schema();
    one["minProperties"] = json!(1);
    one["maxProperties"] = json!(1);
    json!({
        "type": "object",
        "properties": {"meta": one},
        "required": ["meta"],
        "additionalProperties": false
    })
});

#[derive(Deserialize)]
struct UpdateBody {
    volume: UpdateFields,
}

/// `null` and absent differ: `Some(None)` clears a field.
#[derive(Deserialize, Default)]
struct UpdateFields {
    #[serde(default, with = "present")]
    name: Option<Option<String>>,
    #[serde(default, with = "present")]
    description: Option<Option<String>>,
    #[serde(default, with = "present")]
    display_name: Option<Option<String>>,
    #[serde(default, with = "present")]
    display_description: Option<Option<String>>,
    metadata: Option<BTreeMap<String, String>>,
}

/// Deserialises a field that may be absent (`None`), `null` (`Some(None)`) or a value.
mod present {
    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Option<String>>, D::Error> {
        Option::<String>::deserialize(deserializer).map(Some)
    }
}

/// Names and descriptions lose surrounding white space, as Cinder's schema formats do.
fn trimmed(field: Option<Option<String>>) -> Option<Option<String>> {
    field.map(|value| value.map(|text| text.trim().to_owned()))
}

pub async fn update(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    Path(path): Path<VolumePath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::VolumeUpdate)?;
    let id = volume_id(&path)?;
    let fields = body.parse::<UpdateBody>(&UPDATE)?.volume;
    let update = VolumeUpdate {
        name: trimmed(fields.name.or(fields.display_name)),
        description: trimmed(fields.description.or(fields.display_description)),
        metadata: fields.metadata,
    };
    let volume = state.service.update_volume(&ctx.caller, id, update).await?;
    let base = base_url(&state, &headers);
    let rights = state
        .service
        .volume_view_rights(&ctx.caller, &volume)
        .without_extension_attributes();
    Ok(Json(
        json!({"volume": volume_detail(&ctx.view(&base), &volume, rights)}),
    ))
}

#[derive(Deserialize)]
pub(super) struct MetadataBody {
    pub metadata: BTreeMap<String, String>,
}

#[derive(Deserialize)]
pub(super) struct MetaItemBody {
    pub meta: BTreeMap<String, String>,
}

#[derive(Deserialize)]
pub struct MetadataKeyPath {
    volume_id: String,
    key: String,
}

impl MetadataKeyPath {
    fn volume(&self) -> VolumePath {
        VolumePath {
            volume_id: self.volume_id.clone(),
        }
    }
}

pub async fn list(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<VolumePath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::VolumeMetadataList)?;
    let metadata = state
        .service
        .volume_metadata(&ctx.caller, volume_id(&path)?)
        .await?;
    Ok(Json(json!({"metadata": metadata})))
}

/// `POST`: adds keys (existing ones are overwritten); answers with all metadata.
pub async fn create(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<VolumePath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::VolumeMetadataCreate)?;
    let id = volume_id(&path)?;
    let metadata = body.parse::<MetadataBody>(&METADATA)?.metadata;
    let all = state
        .service
        .change_volume_metadata(&ctx.caller, id, MetadataChange::Merge(metadata))
        .await?;
    Ok(Json(json!({"metadata": all})))
}

/// `PUT`: the metadata becomes exactly the body's.
pub async fn replace(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<VolumePath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::VolumeMetadataReplace)?;
    let id = volume_id(&path)?;
    let metadata = body.parse::<MetadataBody>(&METADATA)?.metadata;
    let all = state
        .service
        .change_volume_metadata(&ctx.caller, id, MetadataChange::Replace(metadata))
        .await?;
    Ok(Json(json!({"metadata": all})))
}

pub async fn show(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<MetadataKeyPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::VolumeMetadataShow)?;
    let id = volume_id(&path.volume())?;
    let value = state
        .service
        .volume_metadata_item(&ctx.caller, id, &path.key)
        .await?;
    Ok(Json(json!({"meta": {path.key: value}})))
}

/// `PUT /metadata/{key}` with `{"meta": {key: value}}`: the key in the URL and the body
/// must agree.
pub async fn update_item(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<MetadataKeyPath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::VolumeMetadataUpdate)?;
    let id = volume_id(&path.volume())?;
    let meta = body.parse::<MetaItemBody>(&META_ITEM)?.meta;
    if !meta.contains_key(&path.key) {
        return Err(ApiError::BadRequest(
            "Request body and URI mismatch".to_owned(),
        ));
    }
    state
        .service
        .change_volume_metadata(&ctx.caller, id, MetadataChange::Merge(meta.clone()))
        .await?;
    Ok(Json(json!({"meta": meta})))
}

/// `DELETE /metadata/{key}`: 200 with an empty body, as Cinder answers.
pub async fn delete(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<MetadataKeyPath>,
) -> Result<(), ApiError> {
    ctx.require(Endpoint::VolumeMetadataDelete)?;
    let id = volume_id(&path.volume())?;
    state
        .service
        .change_volume_metadata(&ctx.caller, id, MetadataChange::Remove(path.key.clone()))
        .await?;
    Ok(())
}
