//! `/v3[/{project_id}]/resource_filters` (3.33+): the filters each listing takes from any
//! caller, in Cinder's default `resource_filters.json` order. `consumes_quota` (3.65) is
//! left out of volumes and snapshots: every volume here consumes quota and their
//! listings do not filter on it.

use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::query::CinderQuery;
use crate::api::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/resource_filters", get(list))
}

/// Each resource and the filters its listing takes from any caller.
const RESOURCE_FILTERS: &[(&str, &[&str])] = &[
    (
        "volume",
        &[
            "name",
            "status",
            "metadata",
            "bootable",
            "migration_status",
            "availability_zone",
            "group_id",
            "size",
            "created_at",
            "updated_at",
        ],
    ),
    ("backup", &["name", "status", "volume_id"]),
    (
        "snapshot",
        &[
            "name",
            "status",
            "volume_id",
            "metadata",
            "availability_zone",
        ],
    ),
    ("group", &["name"]),
    ("group_snapshot", &["name", "status", "group_id"]),
    (
        "attachment",
        &["volume_id", "status", "instance_id", "attach_status"],
    ),
    (
        "message",
        &[
            "resource_uuid",
            "resource_type",
            "event_id",
            "request_id",
            "message_level",
        ],
    ),
    ("pool", &["name", "volume_type"]),
    ("volume_type", &["is_public", "extra_specs"]),
];

/// The filters any caller may give a listing of `resource` (none for an unknown one).
pub(super) fn filters_of(resource: &str) -> &'static [&'static str] {
    RESOURCE_FILTERS
        .iter()
        .find(|(name, _)| *name == resource)
        .map_or(&[], |(_, filters)| filters)
}

/// The filters of one resource (`?resource=`), or of all; an unknown resource has none
/// (Cinder's empty list, not an error).
async fn list(
    ctx: Ctx,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::ResourceFilterList)?;
    let wanted = query
        .iter()
        .find(|(k, _)| k == "resource")
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty());
    let items: Vec<Value> = RESOURCE_FILTERS
        .iter()
        .filter(|(resource, _)| wanted.is_none_or(|w| w == *resource))
        .map(|(resource, filters)| json!({"resource": resource, "filters": filters}))
        .collect();
    Ok(Json(json!({"resource_filters": items})))
}
