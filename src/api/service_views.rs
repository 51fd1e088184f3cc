//! The admin views: `os-services` (list, enable, disable, disable-log-reason, freeze,
//! thaw), `scheduler-stats/get_pools`, `capabilities/{host}` and `os-hosts`, in Cinder's
//! body shapes.

use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::paging::parse_bool;
use super::query::{last, CinderQuery};
use crate::api::AppState;
use crate::domain::placement::PoolFilters;
use crate::domain::service_record::{ServiceRecord, VOLUME_BINARY};
use crate::domain::time::format_timestamp;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/os-services", get(list_services))
        .route("/os-services/{action}", put(update_service))
        .route("/scheduler-stats/get_pools", get(get_pools))
        .route("/capabilities/{host}", get(capabilities))
        .route("/os-hosts", get(list_hosts))
        .route("/os-hosts/{host}", get(show_host).put(update_host))
}

fn service_view(ctx: &Ctx, service: &ServiceRecord, now: DateTime<Utc>) -> Value {
    let updated = service.updated_at.unwrap_or(service.created_at);
    let mut view = json!({
        "binary": service.binary,
        "host": service.host,
        "zone": service.availability_zone,
        "status": if service.disabled { "disabled" } else { "enabled" },
        "state": if service.is_up(now) { "up" } else { "down" },
        "updated_at": format_timestamp(&updated),
        "disabled_reason": service.disabled_reason,
    });
    if ctx.version.at_least(3, 7) {
        view["cluster"] = Value::Null;
    }
    if service.binary == VOLUME_BINARY {
        view["replication_status"] = json!("disabled");
        view["active_backend_id"] = Value::Null;
        view["frozen"] = json!(service.frozen);
        if ctx.version.at_least(3, 49) {
            view["backend_state"] = json!("up");
        }
    }
    view
}

async fn list_services(
    State(state): State<AppState>,
    ctx: Ctx,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::ServiceList)?;
    let host = last(&query, "host");
    let binary = last(&query, "binary");
    let found = state
        .service
        .list_services(&ctx.caller, host, binary)
        .await?;
    let now = state.service.clock.now();
    let items: Vec<Value> = found.iter().map(|s| service_view(&ctx, s, now)).collect();
    Ok(Json(json!({ "services": items })))
}

/// Cinder's `enable_and_disable` schema (and `disable_log_reason`, with a reason).
static ENABLE: LazyLock<Value> = LazyLock::new(|| service_schema(false));
static DISABLE_LOG_REASON: LazyLock<Value> = LazyLock::new(|| service_schema(true));

fn service_schema(reason: bool) -> Value {
    let mut properties = json!({
        "binary": {"type": "string", "minLength": 1, "maxLength": 255},
        "host": {"type": ["string", "null"], "minLength": 1, "maxLength": 255},
        "cluster": {"type": ["string", "null"]},
        "service": {"type": "string", "minLength": 1, "maxLength": 255},
    });
    if reason {
        properties["disabled_reason"] = json!({"type": "string", "minLength": 1, "maxLength": 255});
    }
    json!({
        "type": "object",
        "properties": properties,
        "anyOf": [{"required": ["binary"]}, {"required": ["service"]}],
        "additionalProperties": false
    })
}

static FREEZE: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "cluster": {"type": ["string", "null"]},
            "host": {"type": ["string", "null"], "minLength": 1, "maxLength": 255},
        },
        "additionalProperties": false
    })
});

#[derive(Deserialize)]
struct ActionPath {
    action: String,
}

fn text(body: &Value, key: &str) -> Option<String> {
    body.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn host_of(body: &Value) -> Result<String, ApiError> {
    text(body, "host").ok_or_else(|| {
        ApiError::BadRequest(
            "Invalid input received: Missing required element 'host' in request body.".to_owned(),
        )
    })
}

async fn update_service(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<ActionPath>,
    body: JsonBody,
) -> Result<Response, ApiError> {
    ctx.require(Endpoint::ServiceUpdate)?;
    let body = body.0;
    let caller = &ctx.caller;
    let service = &state.service;
    match path.action.as_str() {
        "enable" | "disable" | "disable-log-reason" => {
            let with_reason = path.action == "disable-log-reason";
            let schema = if with_reason {
                &DISABLE_LOG_REASON
            } else {
                &ENABLE
            };
            super::schema::validate(schema, &body).map_err(ApiError::BadRequest)?;
            let host = host_of(&body)?;
            let named = text(&body, "service").unwrap_or_default();
            let binary = text(&body, "binary").unwrap_or_default();
            let key = if binary.is_empty() { &named } else { &binary };
            let enabled = path.action == "enable";
            let reason = with_reason
                .then(|| text(&body, "disabled_reason"))
                .flatten();
            service
                .set_service_enabled(caller, &host, key, enabled, reason.as_deref())
                .await?;
            let mut answer = json!({
                "host": host,
                "service": named,
                "binary": binary,
                "status": if enabled { "enabled" } else { "disabled" },
                "disabled": !enabled,
            });
            if with_reason {
                answer["disabled_reason"] = json!(reason);
            }
            Ok(Json(answer).into_response())
        }
        "freeze" | "thaw" => {
            super::schema::validate(&FREEZE, &body).map_err(ApiError::BadRequest)?;
            let host = host_of(&body)?;
            service
                .set_frozen(caller, &host, path.action == "freeze")
                .await?;
            Ok(StatusCode::OK.into_response())
        }
        "get-log" | "set-log" | "failover_host" => Err(Endpoint::ServiceUpdate.not_implemented()),
        _ => Err(ApiError::NotFound("Unknown action".to_owned())),
    }
}

async fn get_pools(
    State(state): State<AppState>,
    ctx: Ctx,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::PoolList)?;
    let detail = last(&query, "detail").and_then(parse_bool).unwrap_or(false);
    // Filters from 3.28 (Cinder ignores them before), `volume_type` among them from 3.35.
    let mut filters = PoolFilters::default();
    let mut volume_type = None;
    if ctx.version.at_least(3, 28) {
        for (key, value) in &query {
            match key.as_str() {
                "detail" => {}
                "name" => filters.name = Some(value.clone()),
                "volume_type" if ctx.version.at_least(3, 35) => volume_type = Some(value.as_str()),
                "volume_type" => {}
                _ => {
                    filters.capabilities.insert(key.clone(), value.clone());
                }
            }
        }
    }
    let pools = state
        .service
        .scheduler_pools(&ctx.caller, &filters, volume_type)
        .await?;
    let items: Vec<Value> = pools
        .into_iter()
        .map(|pool| match detail {
            true => json!({"name": pool.name, "capabilities": pool.capabilities}),
            false => json!({"name": pool.name}),
        })
        .collect();
    Ok(Json(json!({ "pools": items })))
}

#[derive(Deserialize)]
struct HostPath {
    host: String,
}

async fn capabilities(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<HostPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::CapabilitiesShow)?;
    let (backend, reported) = state
        .service
        .backend_capabilities(&ctx.caller, &path.host)
        .await?;
    let get = |key: &str| reported.get(key).cloned().unwrap_or(Value::Null);
    Ok(Json(json!({
        "namespace": format!("OS::Storage::Capabilities::{backend}"),
        "vendor_name": get("vendor_name"),
        "volume_backend_name": get("volume_backend_name"),
        "pool_name": get("pool_name"),
        "driver_version": get("driver_version"),
        "storage_protocol": get("storage_protocol"),
        "display_name": Value::Null,
        "description": Value::Null,
        "visibility": Value::Null,
        "replication_targets": [],
        "properties": {},
    })))
}

async fn list_hosts(
    State(state): State<AppState>,
    ctx: Ctx,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::HostList)?;
    let zone = last(&query, "zone").filter(|z| !z.is_empty());
    let found = state.service.list_hosts(&ctx.caller, zone).await?;
    let now = state.service.clock.now();
    let items: Vec<Value> = found
        .iter()
        .map(|s| {
            json!({
                "host_name": s.host,
                "service": s.binary,
                "zone": s.availability_zone,
                "service-status": if s.is_up(now) { "available" } else { "unavailable" },
                "service-state": if s.disabled { "disabled" } else { "enabled" },
                "last-update": s.updated_at.as_ref().map(format_timestamp),
            })
        })
        .collect();
    Ok(Json(json!({ "hosts": items })))
}

/// `PUT /os-hosts/{host}`, as Cinder reads its body: top-level keys, only `status`, with
/// `enable` or `disable` (case and spaces aside); `{}` changes nothing.
async fn update_host(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<HostPath>,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::HostUpdate)?;
    let fields = match body.0 {
        Value::Object(fields) => fields,
        _ => {
            return Err(ApiError::BadRequest(
                "The request body must be an object.".to_owned(),
            ))
        }
    };
    let mut enabled = None;
    for (raw_key, raw_value) in &fields {
        if raw_key.trim().to_lowercase() != "status" {
            return Err(ApiError::BadRequest(format!(
                "Invalid update setting: '{raw_key}'"
            )));
        }
        let text = raw_value.as_str().map(|v| v.trim().to_lowercase());
        enabled = Some(match text.as_deref() {
            Some("enable") => true,
            Some("disable") => false,
            _ => {
                let shown = raw_value
                    .as_str()
                    .map_or_else(|| raw_value.to_string(), str::to_owned);
                return Err(ApiError::BadRequest(format!("Invalid status: '{shown}'")));
            }
        });
    }
    let Some(enabled) = enabled else {
        return Ok(Json(json!({})));
    };
    let service = state
        .service
        .set_host_enabled(&ctx.caller, &path.host, enabled)
        .await?;
    let status = if service.disabled {
        "disabled"
    } else {
        "enabled"
    };
    Ok(Json(json!({"host": path.host, "status": status})))
}

async fn show_host(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<HostPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::HostShow)?;
    let usage = state.service.host_usage(&ctx.caller, &path.host).await?;
    let resource = |project: &str, volumes: i64, volume_gb: i64, snaps: i64, snap_gb: i64| {
        json!({"resource": {
            "host": path.host,
            "project": project,
            "volume_count": volumes.to_string(),
            "total_volume_gb": volume_gb.to_string(),
            "snapshot_count": snaps.to_string(),
            "total_snapshot_gb": snap_gb.to_string(),
        }})
    };
    let mut items = vec![resource(
        "(total)",
        usage.iter().map(|u| u.volume_count).sum(),
        usage.iter().map(|u| u.volume_gb).sum(),
        usage.iter().map(|u| u.snapshot_count).sum(),
        usage.iter().map(|u| u.snapshot_gb).sum(),
    )];
    items.extend(usage.iter().map(|u| {
        resource(
            &u.project_id,
            u.volume_count,
            u.volume_gb,
            u.snapshot_count,
            u.snapshot_gb,
        )
    }));
    Ok(Json(json!({ "host": items })))
}
