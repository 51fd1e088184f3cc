//! `os-quota-sets`, `os-quota-class-sets` and `/limits`.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::microversion::ApiVersion;
use super::paging::parse_bool;
use super::query::CinderQuery;
use crate::api::AppState;
use crate::service::quotas::ProjectQuotas;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/os-quota-sets/{project}",
            get(show).put(update).delete(delete),
        )
        .route("/os-quota-sets/{project}/defaults", get(defaults))
        .route(
            "/os-quota-class-sets/{project}",
            get(show_class).put(update_class),
        )
        .route("/limits", get(limits))
}

#[derive(Deserialize)]
struct QuotaPath {
    /// A project id, or a quota class name.
    project: String,
}

/// `{"quota_set": {...}}` with at least one item; its keys and values are checked like
/// Cinder's `quota_set` format (service::quotas).
static UPDATE: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {"quota_set": {"type": "object", "minProperties": 1}},
        "required": ["quota_set"],
        "additionalProperties": false
    })
});

static UPDATE_CLASS: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {"quota_class_set": {"type": "object"}},
        "required": ["quota_class_set"],
        "additionalProperties": false
    })
});

fn with_id(id: &str, limits: BTreeMap<String, i64>) -> Map<String, Value> {
    let mut set: Map<String, Value> = limits.into_iter().map(|(k, v)| (k, json!(v))).collect();
    set.insert("id".to_owned(), json!(id));
    set
}

fn limits_only(quotas: &ProjectQuotas) -> Map<String, Value> {
    quotas
        .limits()
        .into_iter()
        .map(|(k, v)| (k, json!(v)))
        .collect()
}

async fn show(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<QuotaPath>,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::QuotaShow)?;
    let usage = match super::query::last(&query, "usage") {
        None => false,
        // Cinder's `is_valid_boolstr`: the spelling exactly, in any case, no spaces.
        Some(v) => (v.trim() == v)
            .then(|| parse_bool(v))
            .flatten()
            .ok_or_else(|| {
                ApiError::BadRequest(format!("Value '{v}' for 'usage' is not a boolean."))
            })?,
    };
    let quotas = state
        .service
        .project_quotas(&ctx.caller, &path.project)
        .await?;
    let mut set = if usage {
        quotas
            .resources
            .iter()
            .map(|(name, figure)| {
                let item = json!({
                    "limit": figure.limit,
                    "in_use": figure.in_use,
                    "reserved": figure.reserved,
                });
                (name.clone(), item)
            })
            .collect()
    } else {
        limits_only(&quotas)
    };
    set.insert("id".to_owned(), json!(path.project));
    Ok(Json(json!({ "quota_set": set })))
}

async fn defaults(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<QuotaPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::QuotaDefaults)?;
    let limits = state
        .service
        .default_quotas(&ctx.caller, &path.project)
        .await?;
    Ok(Json(json!({"quota_set": with_id(&path.project, limits)})))
}

#[derive(Deserialize)]
struct UpdateBody {
    quota_set: Map<String, Value>,
}

async fn update(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<QuotaPath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::QuotaUpdate)?;
    let body: UpdateBody = body.parse(&UPDATE)?;
    if path.project.chars().count() > 255 {
        return Err(ApiError::BadRequest(
            "quota_set_name has more than 255 characters.".to_owned(),
        ));
    }
    let quotas = state
        .service
        .update_project_quotas(&ctx.caller, &path.project, &body.quota_set)
        .await?;
    Ok(Json(json!({"quota_set": limits_only(&quotas)})))
}

async fn delete(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<QuotaPath>,
) -> Result<(), ApiError> {
    ctx.require(Endpoint::QuotaDelete)?;
    state
        .service
        .delete_project_quotas(&ctx.caller, &path.project)
        .await?;
    Ok(())
}

async fn show_class(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<QuotaPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::QuotaClassShow)?;
    let limits = state
        .service
        .class_quotas(&ctx.caller, &path.project)
        .await?;
    Ok(Json(
        json!({"quota_class_set": with_id(&path.project, limits)}),
    ))
}

#[derive(Deserialize)]
struct UpdateClassBody {
    quota_class_set: Map<String, Value>,
}

async fn update_class(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<QuotaPath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::QuotaClassUpdate)?;
    let body: UpdateClassBody = body.parse(&UPDATE_CLASS)?;
    if path.project.chars().count() > 255 {
        return Err(ApiError::BadRequest(
            "quota_class_name has more than 255 characters.".to_owned(),
        ));
    }
    let limits = state
        .service
        .update_class_quotas(&ctx.caller, &path.project, &body.quota_class_set)
        .await?;
    let set: Map<String, Value> = limits.into_iter().map(|(k, v)| (k, json!(v))).collect();
    Ok(Json(json!({ "quota_class_set": set })))
}

/// Cinder's names for the absolute limits and the usage it adds to them.
const ABSOLUTE: &[(&str, &str)] = &[
    ("gigabytes", "maxTotalVolumeGigabytes"),
    ("backup_gigabytes", "maxTotalBackupGigabytes"),
    ("volumes", "maxTotalVolumes"),
    ("snapshots", "maxTotalSnapshots"),
    ("backups", "maxTotalBackups"),
];
const USED: &[(&str, &str)] = &[
    ("volumes", "totalVolumesUsed"),
    ("gigabytes", "totalGigabytesUsed"),
    ("snapshots", "totalSnapshotsUsed"),
    ("backups", "totalBackupsUsed"),
    ("backup_gigabytes", "totalBackupGigabytesUsed"),
];

async fn limits(
    State(state): State<AppState>,
    ctx: Ctx,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::LimitsShow)?;
    // An admin may name another project from 3.39 (`tenant_id` is the older spelling).
    let named = |key: &str| super::query::last(&query, key);
    let project = if ctx.version >= ApiVersion::new(3, 39) {
        named("project_id").or_else(|| named("tenant_id"))
    } else {
        None
    };
    let (quotas, with_usage) = state.service.limits(&ctx.caller, project).await?;
    let mut absolute = Map::new();
    for (resource, name) in ABSOLUTE {
        if let Some(figure) = quotas.figure(resource) {
            absolute.insert((*name).to_owned(), json!(figure.limit));
        }
    }
    if with_usage {
        for (resource, name) in USED {
            if let Some(figure) = quotas.figure(resource) {
                absolute.insert((*name).to_owned(), json!(figure.in_use));
            }
        }
    }
    Ok(Json(json!({"limits": {"rate": [], "absolute": absolute}})))
}
