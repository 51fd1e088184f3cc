//! `/v3[/{project_id}]/volumes`: create, show, list, delete.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::links::{base_url, next_link};
use super::microversion::ApiVersion;
use super::paging::{parse_bool, parse_listing, wants_count};
use super::query::CinderQuery;
use super::time_filters::parse_time_filter;
use super::views::{volume_detail, volume_summary};
use super::volume_metadata;
use super::volume_path::{volume_id, VolumePath};
use crate::api::AppState;
use crate::domain::volume::{Volume, VolumeFilters, VolumeSortKey};
use crate::domain::DomainError;
use crate::service::volumes::CreateVolume;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/volumes", get(list).post(create))
        .route("/volumes/detail", get(list_detail))
        .route("/volumes/summary", get(summary))
        .route(
            "/volumes/{volume_id}",
            get(show).delete(delete).put(volume_metadata::update),
        )
        .route(
            "/volumes/{volume_id}/action",
            post(super::volume_actions::action),
        )
        .route(
            "/volumes/{volume_id}/metadata",
            get(volume_metadata::list)
                .post(volume_metadata::create)
                .put(volume_metadata::replace),
        )
        .route(
            "/volumes/{volume_id}/metadata/{key}",
            get(volume_metadata::show)
                .put(volume_metadata::update_item)
                .delete(volume_metadata::delete),
        )
}

/// Cinder's create schema (cinder/api/schemas/volumes.py); from 3.53 unknown keys inside
/// `volume` are refused.
fn create_schema(strict: bool) -> Value {
    let optional_uuid = json!({"oneOf": [{"type": "null"}, {"type": "string", "format": "uuid"}]});
    let text = json!({"type": ["string", "null"], "maxLength": 255});
    // As the metadata API's, but `null` is accepted too.
    let mut metadata = volume_metadata::metadata_schema();
    metadata["type"] = json!(["object", "null"]);
    json!({
        "type": "object",
        "properties": {
            "volume": {
                "type": "object",
                "properties": {
                    "name": text, "description": text,
                    "display_name": text, "display_description": text,
                    "volume_type": {"type": ["string", "null"], "minLength": 0, "maxLength": 255},
                    "metadata": metadata,
                    "snapshot_id": optional_uuid, "source_volid": optional_uuid,
                    "consistencygroup_id": optional_uuid, "backup_id": optional_uuid,
                    "group_id": {"type": ["string", "null"], "minLength": 0, "maxLength": 255},
                    "size": {"type": ["integer", "string", "null"], "pattern": "^[0-9]+$", "minimum": 1, "maximum": 2147483647},
                    "availability_zone": {"type": ["string", "null"], "minLength": 1, "maxLength": 255},
                    "multiattach": {"oneOf": [{"type": "null"}, super::schema::boolean()]},
                    "image_id": {"type": ["string", "null"], "minLength": 0, "maxLength": 255},
                    "imageRef": {"type": ["string", "null"], "minLength": 0, "maxLength": 255}
                },
                "additionalProperties": !strict
            },
            "OS-SCH-HNT:scheduler_hints": {"type": ["object", "null"]}
        },
        "required": ["volume"],
        "additionalProperties": false
    })
}

static CREATE: LazyLock<Value> = LazyLock::new(|| create_schema(false));
static CREATE_V353: LazyLock<Value> = LazyLock::new(|| create_schema(true));

#[derive(Debug, Deserialize)]
struct CreateBody {
    volume: CreateFields,
}

#[derive(Debug, Default, Deserialize)]
struct CreateFields {
    name: Option<String>,
    description: Option<String>,
    display_name: Option<String>,
    display_description: Option<String>,
    volume_type: Option<String>,
    metadata: Option<BTreeMap<String, String>>,
    size: Option<Value>,
    availability_zone: Option<String>,
    multiattach: Option<Value>,
    snapshot_id: Option<String>,
    source_volid: Option<String>,
    consistencygroup_id: Option<String>,
    group_id: Option<String>,
    backup_id: Option<String>,
    image_id: Option<String>,
    #[serde(rename = "imageRef")]
    image_ref: Option<String>,
}

const MULTIATTACH_REMOVED: &str = "multiattach parameter has been removed. The default behavior is to use \
multiattach enabled volume types. Contact your administrator to create a multiattach enabled volume type \
and use it to create multiattach volumes.";

fn trimmed(text: Option<String>) -> Option<String> {
    text.map(|t| t.trim().to_owned())
}

impl CreateFields {
    fn into_request(
        self,
        version: super::microversion::ApiVersion,
    ) -> Result<CreateVolume, ApiError> {
        let backup_id = self.backup_id.filter(|s| !s.is_empty());
        // `backup_id` is a field from 3.47 (Cinder's schema refuses it before).
        if backup_id.is_some() && !version.at_least(3, 47) {
            return Err(ApiError::BadRequest(
                "Invalid input for field/attribute volume. Additional properties are not \
                 allowed ('backup_id' was unexpected)"
                    .to_owned(),
            ));
        }
        // Cinder reads a `consistencygroup_id` as a group's id too; `group_id` wins.
        let group_id = self.group_id.or(self.consistencygroup_id);
        let multiattach = match &self.multiattach {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => parse_bool(s).unwrap_or(false),
            Some(_) => false,
        };
        if multiattach {
            return Err(ApiError::BadRequest(MULTIATTACH_REMOVED.to_owned()));
        }
        let size = match &self.size {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => n.as_i64(),
            Some(Value::String(s)) => s.parse::<i64>().ok(),
            Some(_) => None,
        };
        Ok(CreateVolume {
            size,
            name: trimmed(self.name.or(self.display_name)),
            description: trimmed(self.description.or(self.display_description)),
            volume_type: self.volume_type,
            availability_zone: self.availability_zone,
            metadata: self.metadata.unwrap_or_default(),
            snapshot_id: self.snapshot_id.filter(|s| !s.is_empty()),
            source_volid: self.source_volid.filter(|s| !s.is_empty()),
            // `image_id` is the older name (Cinder moves it to `imageRef`).
            image_ref: self.image_ref.or(self.image_id).filter(|s| !s.is_empty()),
            auth_token: None,
            group_id: group_id.filter(|s| !s.is_empty()),
            backup_id,
        })
    }
}

fn detail_of(state: &AppState, ctx: &Ctx, base: &str, volume: &Volume) -> Value {
    let rights = state.service.volume_view_rights(&ctx.caller, volume);
    volume_detail(&ctx.view(base), volume, rights)
}

async fn create(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    request_id: Option<axum::Extension<super::request_id::RequestId>>,
    body: JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ctx.require(Endpoint::VolumeCreate)?;
    let schema = if ctx.version.at_least(3, 53) {
        &*CREATE_V353
    } else {
        &*CREATE
    };
    let body: CreateBody = body.parse(schema)?;
    // Only the removed multiattach flag is looked at before the type and policy.
    let mut request = body.volume.into_request(ctx.version)?;
    request.auth_token = super::context::auth_token(&headers);
    let request_id = request_id.map(|axum::Extension(id)| id.0);
    let volume = state
        .service
        .create_volume(&ctx.caller, request, request_id)
        .await?;
    let base = base_url(&state, &headers);
    let rights = state
        .service
        .volume_view_rights(&ctx.caller, &volume)
        .without_extension_attributes();
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"volume": volume_detail(&ctx.view(&base), &volume, rights)})),
    ))
}

async fn show(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    Path(path): Path<VolumePath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::VolumeShow)?;
    let volume = state
        .service
        .get_volume(&ctx.caller, volume_id(&path)?)
        .await?;
    let base = base_url(&state, &headers);
    Ok(Json(
        json!({"volume": detail_of(&state, &ctx, &base, &volume)}),
    ))
}

/// Cinder's `VOLUME_TIME_COMPARISON_FILTER`.
const TIME_COMPARISONS: ApiVersion = ApiVersion::new(3, 60);

/// Filters a non-admin may use beside `resource_filters`' for volumes: the ones Cinder's
/// volume listing takes from anyone.
const ALWAYS_TAKEN: &[&str] = &["all_tenants", "project_id", "with_count", "glance_metadata"];

fn user_may_filter(key: &str) -> bool {
    super::resource_filters::filters_of("volume").contains(&key) || ALWAYS_TAKEN.contains(&key)
}

/// Reads the filters of a volume listing. `None` means a filter names something no
/// volume can match (Cinder then answers an empty list).
fn volume_filters(
    ctx: &Ctx,
    pairs: &[(String, String)],
) -> Result<Option<(VolumeFilters, bool)>, ApiError> {
    let mut filters = VolumeFilters::default();
    let mut all_tenants = false;
    let mut invalid = Vec::new();
    for (key, value) in pairs {
        match key.as_str() {
            "all_tenants" => all_tenants = true,
            "project_id" => filters.project_id = Some(value.clone()),
            "name" | "display_name" => filters.name = Some(value.clone()),
            "status" => filters.status = Some(value.clone()),
            "availability_zone" => filters.availability_zone = Some(value.clone()),
            "bootable" => match parse_bool(value) {
                Some(b) => filters.bootable = Some(b),
                None => {
                    return Err(ApiError::BadRequest(format!(
                        "Invalid value '{value}' for bootable."
                    )))
                }
            },
            "size" => match value.parse::<i64>() {
                Ok(size) => filters.size = Some(size),
                Err(_) => return Ok(None),
            },
            "metadata" => filters.metadata = parse_metadata_filter(value)?,
            "with_count" => {}
            "group_id" => filters.group_id = Some(value.clone()),
            "migration_status" => filters.migration_status = Some(value.clone()),
            // Before 3.60 Cinder drops them.
            "created_at" | "updated_at" if ctx.version < TIME_COMPARISONS => {}
            "created_at" => filters.created_at = parse_time_filter(key, value)?,
            "updated_at" => filters.updated_at = parse_time_filter(key, value)?,
            "glance_metadata" => {
                return Err(ApiError::BadRequest(format!(
                    "Filtering volumes by {key} is not supported by cinder-attach."
                )))
            }
            other if !ctx.caller.is_admin && !user_may_filter(other) => {
                invalid.push(other.to_owned())
            }
            _ if ctx.caller.is_admin => return Ok(None),
            _ => {}
        }
    }
    super::paging::reject_invalid_filters(ctx.version, &invalid)?;
    Ok(Some((filters, all_tenants)))
}

/// `metadata={'k': 'v'}` (a Python dict literal) or JSON.
fn parse_metadata_filter(text: &str) -> Result<BTreeMap<String, String>, ApiError> {
    let as_json = text.replace('\'', "\"");
    serde_json::from_str::<BTreeMap<String, String>>(&as_json)
        .map_err(|_| ApiError::BadRequest(format!("Invalid metadata filter {text}.")))
}

async fn list_volumes(
    state: &AppState,
    ctx: &Ctx,
    headers: &HeaderMap,
    query: &[(String, String)],
    detail: bool,
) -> Result<Json<Value>, ApiError> {
    let listing = parse_listing(
        query,
        VolumeSortKey::parse,
        VolumeSortKey::CreatedAt,
        |marker| DomainError::MarkerNotFound(marker.to_owned()).into(),
    )?;
    let base = base_url(state, headers);
    let (volumes, count) = match volume_filters(ctx, &listing.filters)? {
        Some((filters, all_tenants)) => {
            let found = state
                .service
                .list_volumes(&ctx.caller, filters.clone(), all_tenants, &listing.page)
                .await?;
            let count = if wants_count(ctx.version, query) {
                Some(
                    state
                        .service
                        .count_volumes(&ctx.caller, filters, all_tenants)
                        .await?,
                )
            } else {
                None
            };
            (found, count)
        }
        None => (Vec::new(), None),
    };
    let view = ctx.view(&base);
    let items: Vec<Value> = volumes
        .iter()
        .map(|v| {
            if detail {
                detail_of(state, ctx, &base, v)
            } else {
                volume_summary(&view, v)
            }
        })
        .collect();
    let mut body = json!({"volumes": items});
    let fields = body.as_object_mut().expect("an object");
    if let Some(last) = volumes.last() {
        if volumes.len() as i64 >= listing.page.limit {
            let path = if detail { "volumes/detail" } else { "volumes" };
            fields.insert(
                "volumes_links".into(),
                next_link(
                    &base,
                    &ctx.caller.project_id,
                    path,
                    query,
                    &last.id.to_string(),
                ),
            );
        }
    }
    if let Some(count) = count {
        fields.insert("count".into(), json!(count));
    }
    Ok(Json(body))
}

async fn list(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::VolumeList)?;
    list_volumes(&state, &ctx, &headers, &query, false).await
}

async fn list_detail(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::VolumeListDetail)?;
    list_volumes(&state, &ctx, &headers, &query, true).await
}

/// `GET /volumes/summary` (3.12+; per-key metadata values from 3.36).
async fn summary(
    State(state): State<AppState>,
    ctx: Ctx,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::VolumeSummary)?;
    let summary = match volume_filters(&ctx, &query)? {
        Some((filters, all_tenants)) => {
            state
                .service
                .summarize_volumes(&ctx.caller, filters, all_tenants)
                .await?
        }
        None => Default::default(),
    };
    let mut body = json!({"total_count": summary.count, "total_size": summary.total_size});
    if ctx.version.at_least(3, 36) {
        body["metadata"] = json!(summary.metadata);
    }
    Ok(Json(json!({ "volume-summary": body })))
}

/// A boolean query flag: absent is `false`; a value that is not a boolean is refused.
fn bool_flag(query: &[(String, String)], name: &str) -> Result<bool, ApiError> {
    match super::query::last(query, name) {
        None => Ok(false),
        Some(value) => parse_bool(value).ok_or_else(|| {
            ApiError::BadRequest(format!("Value '{value}' for '{name}' is not a boolean."))
        }),
    }
}

async fn delete(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<VolumePath>,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<StatusCode, ApiError> {
    ctx.require(Endpoint::VolumeDelete)?;
    // Flags are read before the volume is looked up; `force` exists from 3.23.
    let cascade = bool_flag(&query, "cascade")?;
    let force = if ctx.version.at_least(3, 23) {
        bool_flag(&query, "force")?
    } else {
        false
    };
    state
        .service
        .delete_volume(&ctx.caller, volume_id(&path)?, force, cascade)
        .await?;
    Ok(StatusCode::ACCEPTED)
}
