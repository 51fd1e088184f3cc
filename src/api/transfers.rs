//! Volume transfers: `os-volume-transfer` (every version) and `volume-transfers` (3.55+,
//! with `no_snapshots`); 3.57 adds paging, sorting and the transfer's history fields.

use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::body::JsonBody;
use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::links::{base_url, next_link, resource_links};
use super::paging::{parse_bool, parse_listing};
use super::query::CinderQuery;
use crate::api::AppState;
use crate::domain::ids::{TransferId, VolumeId};
use crate::domain::paging::SortDir;
use crate::domain::time::format_timestamp;
use crate::domain::transfer::{Transfer, TransferFilters, TransferSortKey};
use crate::domain::DomainError;

/// Links name the extension's collection, whichever URL was asked (as Cinder's view).
const COLLECTION: &str = "os-volume-transfer";

pub fn router() -> Router<AppState> {
    routes("/os-volume-transfer", Api::Extension).merge(routes("/volume-transfers", Api::V355))
}

/// The same operations under either URL.
fn routes(base: &str, api: Api) -> Router<AppState> {
    Router::new()
        .route(
            base,
            get(move |s, c, h, q| list(s, c, h, q, api, false))
                .post(move |s, c, h, b| create(s, c, h, b, api)),
        )
        .route(
            &format!("{base}/detail"),
            get(move |s, c, h, q| list(s, c, h, q, api, true)),
        )
        .route(
            &format!("{base}/{{id}}"),
            get(move |s, c, h, p| show(s, c, h, p, api))
                .delete(move |s, c, p| delete(s, c, p, api)),
        )
        .route(
            &format!("{base}/{{id}}/accept"),
            post(move |s, c, h, p, b| accept(s, c, h, p, b, api)),
        )
}

/// Which of the two URLs served the request.
#[derive(Clone, Copy)]
enum Api {
    Extension,
    V355,
}

impl Api {
    fn endpoint(self) -> Endpoint {
        match self {
            Api::Extension => Endpoint::Transfers,
            Api::V355 => Endpoint::VolumeTransfers,
        }
    }
}

#[derive(serde::Deserialize)]
struct TransferPath {
    id: String,
}

fn transfer_id(text: &str) -> Result<TransferId, ApiError> {
    TransferId::parse(text).ok_or_else(|| DomainError::TransferNotFound(text.to_owned()).into())
}

/// Cinder's detail (and create) view; `auth_key` only at creation.
fn detail(ctx: &Ctx, base: &str, transfer: &Transfer, auth_key: Option<&str>) -> Value {
    let id = transfer.id.to_string();
    let mut view = json!({
        "id": id,
        "created_at": format_timestamp(&transfer.created_at),
        "name": transfer.name,
        "volume_id": transfer.volume_id,
        "links": resource_links(base, &ctx.caller.project_id, COLLECTION, &id),
    });
    if let Some(key) = auth_key {
        view["auth_key"] = json!(key);
    }
    if ctx.version.at_least(3, 55) {
        view["no_snapshots"] = json!(transfer.no_snapshots);
    }
    if ctx.version.at_least(3, 57) {
        view["destination_project_id"] = json!(transfer.destination_project_id);
        view["source_project_id"] = json!(transfer.source_project_id);
        view["accepted"] = json!(transfer.accepted);
    }
    view
}

fn summary(ctx: &Ctx, base: &str, transfer: &Transfer) -> Value {
    let id = transfer.id.to_string();
    json!({
        "id": id,
        "volume_id": transfer.volume_id,
        "name": transfer.name,
        "links": resource_links(base, &ctx.caller.project_id, COLLECTION, &id),
    })
}

async fn list(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    CinderQuery(query): CinderQuery<Vec<(String, String)>>,
    api: Api,
    is_detail: bool,
) -> Result<Json<Value>, ApiError> {
    ctx.require(api.endpoint())?;
    let mut listing = parse_listing(
        &query,
        TransferSortKey::parse,
        TransferSortKey::CreatedAt,
        |marker| DomainError::MarkerNotFound(marker.to_owned()).into(),
    )?;
    if !ctx.version.at_least(3, 57) {
        // Before 3.57: oldest first, no marker.
        listing.page.sort = vec![
            (TransferSortKey::CreatedAt, SortDir::Asc),
            (TransferSortKey::Id, SortDir::Asc),
        ];
        listing.page.marker = None;
    }
    let mut filters = TransferFilters::default();
    let mut all_tenants = false;
    for (key, value) in &listing.filters {
        match key.as_str() {
            "all_tenants" => all_tenants = parse_bool(value).unwrap_or(true),
            "volume_id" => {
                filters.volume_id =
                    Some(VolumeId::parse(value).unwrap_or(VolumeId::from(uuid::Uuid::nil())))
            }
            "name" | "display_name" => filters.name = Some(value.clone()),
            _ => {}
        }
    }
    let found = state
        .service
        .list_transfers(&ctx.caller, filters, all_tenants, &listing.page)
        .await?;
    let base = base_url(&state, &headers);
    let items: Vec<Value> = found
        .iter()
        .map(|t| match is_detail {
            true => detail(&ctx, &base, t, None),
            false => summary(&ctx, &base, t),
        })
        .collect();
    let mut body = json!({ "transfers": items });
    if let Some(last) = found.last() {
        if found.len() as i64 >= listing.page.limit {
            let path = if is_detail {
                format!("{COLLECTION}/detail")
            } else {
                COLLECTION.to_owned()
            };
            let last = last.id.to_string();
            body["transfers_links"] =
                next_link(&base, &ctx.caller.project_id, &path, &query, &last);
        }
    }
    Ok(Json(body))
}

/// Cinder's `create` schema; the 3.55 URL also takes `no_snapshots`.
static CREATE: LazyLock<Value> = LazyLock::new(|| create_schema(false));
static CREATE_V355: LazyLock<Value> = LazyLock::new(|| create_schema(true));

fn create_schema(no_snapshots: bool) -> Value {
    let mut properties = json!({
        "volume_id": {"type": "string", "format": "uuid"},
        "name": {"oneOf": [{"type": "string", "maxLength": 255}, {"type": "null"}]},
    });
    if no_snapshots {
        properties["no_snapshots"] = json!({
            "type": ["boolean", "string"],
            "enum": [true, "True", "true", "1", "yes", "y", "on", "t",
                     false, "False", "false", "0", "no", "n", "off", "f"]
        });
    }
    json!({
        "type": "object",
        "properties": {
            "transfer": {
                "type": "object",
                "properties": properties,
                "required": ["volume_id"],
                "additionalProperties": false
            }
        },
        "required": ["transfer"],
        "additionalProperties": false
    })
}

async fn create(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    body: JsonBody,
    api: Api,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ctx.require(api.endpoint())?;
    let schema = match api {
        Api::Extension => &CREATE,
        Api::V355 => &CREATE_V355,
    };
    super::schema::validate(schema, &body.0).map_err(ApiError::BadRequest)?;
    let fields = &body.0["transfer"];
    let raw_id = fields["volume_id"].as_str().unwrap_or_default();
    let volume_id =
        VolumeId::parse(raw_id).ok_or_else(|| DomainError::VolumeNotFound(raw_id.to_owned()))?;
    let name = fields["name"].as_str().map(|n| n.trim().to_owned());
    let no_snapshots = super::schema::as_bool(&fields["no_snapshots"]).unwrap_or(false);
    let offer = state
        .service
        .create_transfer(
            &ctx.caller,
            volume_id,
            name,
            no_snapshots,
            ctx.version.at_least(3, 70),
        )
        .await?;
    let base = base_url(&state, &headers);
    let view = detail(&ctx, &base, &offer.transfer, Some(&offer.auth_key));
    Ok((StatusCode::ACCEPTED, Json(json!({ "transfer": view }))))
}

async fn show(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    Path(path): Path<TransferPath>,
    api: Api,
) -> Result<Json<Value>, ApiError> {
    ctx.require(api.endpoint())?;
    let found = state
        .service
        .get_transfer(&ctx.caller, transfer_id(&path.id)?)
        .await?;
    let base = base_url(&state, &headers);
    Ok(Json(json!({"transfer": detail(&ctx, &base, &found, None)})))
}

async fn delete(
    State(state): State<AppState>,
    ctx: Ctx,
    Path(path): Path<TransferPath>,
    api: Api,
) -> Result<StatusCode, ApiError> {
    ctx.require(api.endpoint())?;
    state
        .service
        .delete_transfer(&ctx.caller, transfer_id(&path.id)?)
        .await?;
    Ok(StatusCode::ACCEPTED)
}

static ACCEPT: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "accept": {
                "type": "object",
                "properties": {"auth_key": {"type": ["string", "integer"]}},
                "required": ["auth_key"],
                "additionalProperties": false
            }
        },
        "required": ["accept"],
        "additionalProperties": false
    })
});

async fn accept(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    Path(path): Path<TransferPath>,
    body: JsonBody,
    api: Api,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ctx.require(api.endpoint())?;
    super::schema::validate(&ACCEPT, &body.0).map_err(ApiError::BadRequest)?;
    let key = match &body.0["accept"]["auth_key"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let accepted = state
        .service
        .accept_transfer(&ctx.caller, transfer_id(&path.id)?, &key)
        .await?;
    let base = base_url(&state, &headers);
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"transfer": summary(&ctx, &base, &accepted)})),
    ))
}
