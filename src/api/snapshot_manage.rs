//! Adoption of snapshots: `POST /os-snapshot-manage` (and `POST /manageable_snapshots`,
//! 3.8+) takes a snapshot object of a volume's backend as a new snapshot of it;
//! `GET /manageable_snapshots[/detail]` (3.8+) lists what a backend holds. The snapshot's
//! `os-unmanage` is a snapshot action (`snapshots`).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::query::CinderQuery;
use super::volume_manage::{bad, listed_host, manageable_item, sorted};
use crate::api::AppState;
use crate::service::snapshot_manage::ManageSnapshot;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/os-snapshot-manage", post(manage))
        .route("/manageable_snapshots", get(list).post(manage_v38))
        .route("/manageable_snapshots/detail", get(list_detail))
}

/// Cinder's `snapshot_manage.create` schema.
static MANAGE: LazyLock<Value> = LazyLock::new(|| {
    let (text, metadata) = super::snapshots::text_and_metadata_schemas();
    json!({
        "type": "object",
        "properties": {
            "snapshot": {
                "type": "object",
                "properties": {
                    "description": text, "name": text, "metadata": metadata,
                    "volume_id": {"type": "string", "format": "uuid"},
                    "ref": {"type": ["object", "null", "string"]}
                },
                "required": ["ref", "volume_id"],
                "additionalProperties": false
            }
        },
        "required": ["snapshot"],
        "additionalProperties": false
    })
});

#[derive(Deserialize)]
struct ManageBody {
    snapshot: ManageFields,
}

#[derive(Deserialize)]
struct ManageFields {
    volume_id: String,
    #[serde(rename = "ref")]
    reference: Value,
    name: Option<String>,
    description: Option<String>,
    metadata: Option<BTreeMap<String, String>>,
}

async fn manage_v38(
    state: State<AppState>,
    ctx: Ctx,
    body: JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ctx.require(Endpoint::ManageableSnapshotCreate)?;
    manage_snapshot(state, ctx, body).await
}

async fn manage(
    state: State<AppState>,
    ctx: Ctx,
    body: JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ctx.require(Endpoint::SnapshotManage)?;
    manage_snapshot(state, ctx, body).await
}

/// 202 with the new snapshot, as a snapshot create answers.
async fn manage_snapshot(
    State(state): State<AppState>,
    ctx: Ctx,
    body: JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let fields = body.parse::<ManageBody>(&MANAGE)?.snapshot;
    let source_name = match &fields.reference {
        Value::Object(reference) => reference.get("source-name").and_then(Value::as_str),
        _ => None,
    };
    let Some(source_name) = source_name else {
        return Err(bad(
            "Invalid input received: Manage existing snapshot failed due to invalid backend \
             reference: Reference must contain source-name element.",
        ));
    };
    let request = ManageSnapshot {
        volume_id: fields.volume_id,
        source_name: source_name.to_owned(),
        name: fields.name.map(|n| n.trim().to_owned()),
        description: fields.description.map(|d| d.trim().to_owned()),
        metadata: fields.metadata.unwrap_or_default(),
    };
    let made = state.service.manage_snapshot(&ctx.caller, request).await?;
    let view = super::snapshots::one(&state, &ctx, &made, false);
    Ok((StatusCode::ACCEPTED, view))
}

async fn listing(
    state: &AppState,
    ctx: &Ctx,
    query: &[(String, String)],
    is_detail: bool,
) -> Result<Json<Value>, ApiError> {
    let host = listed_host(query)?;
    let found = state
        .service
        .manageable_snapshots(&ctx.caller, host)
        .await?;
    let items: Vec<Value> = sorted(found, query, |m| m.source_name.as_str(), |m| m.size_gib)?
        .iter()
        .map(|m| {
            let id = m.cinder_id.map(|id| id.to_string());
            let mut item = manageable_item(&m.source_name, m.size_gib, id, is_detail);
            item["source_reference"] = json!({"source-name": m.volume_name});
            item
        })
        .collect();
    Ok(Json(json!({ "manageable-snapshots": items })))
}

async fn list(
    State(state): State<AppState>,
    ctx: Ctx,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::ManageableSnapshotList)?;
    listing(&state, &ctx, &query, false).await
}

async fn list_detail(
    State(state): State<AppState>,
    ctx: Ctx,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::ManageableSnapshotList)?;
    listing(&state, &ctx, &query, true).await
}
