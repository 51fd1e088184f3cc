//! `/v3[/{project_id}]/attachments`.

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;

use super::context::Ctx;
use super::endpoint::{not_built, Endpoint};
use super::error::ApiError;
use super::query::CinderQuery;
use super::views::{AttachmentDetail, AttachmentList, AttachmentSummary};
use crate::app::AppState;
use crate::service::attachments::ListAttachments;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/attachments",
            get(list).post(not_built(Endpoint::AttachmentCreate)),
        )
        .route("/attachments/detail", get(list_detail))
        // Cinder routes `summary` but has no handler for it: 404, not an attachment id.
        .route("/attachments/summary", get(summary_is_not_served))
        .route(
            "/attachments/{attachment_id}",
            get(not_built(Endpoint::AttachmentShow))
                .put(not_built(Endpoint::AttachmentUpdate))
                .delete(not_built(Endpoint::AttachmentDelete)),
        )
        .route(
            "/attachments/{attachment_id}/action",
            post(not_built(Endpoint::AttachmentComplete)),
        )
}

#[derive(Debug, Deserialize)]
struct ListQuery {
    all_tenants: Option<String>,
    project_id: Option<String>,
}

impl From<ListQuery> for ListAttachments {
    fn from(query: ListQuery) -> Self {
        ListAttachments {
            all_tenants: query.all_tenants.is_some(),
            project_id: query.project_id,
        }
    }
}

async fn list(
    State(state): State<AppState>,
    ctx: Ctx,
    CinderQuery(query): CinderQuery<ListQuery>,
) -> Result<Json<AttachmentList<AttachmentSummary>>, ApiError> {
    ctx.require(Endpoint::AttachmentList)?;
    let found = state
        .service
        .list_attachments(&ctx.caller, &query.into())
        .await?;
    Ok(Json(AttachmentList {
        attachments: found.iter().map(AttachmentSummary::from).collect(),
    }))
}

async fn list_detail(
    State(state): State<AppState>,
    ctx: Ctx,
    CinderQuery(query): CinderQuery<ListQuery>,
) -> Result<Json<AttachmentList<AttachmentDetail>>, ApiError> {
    ctx.require(Endpoint::AttachmentListDetail)?;
    let found = state
        .service
        .list_attachments(&ctx.caller, &query.into())
        .await?;
    Ok(Json(AttachmentList {
        attachments: found.iter().map(AttachmentDetail::from).collect(),
    }))
}

async fn summary_is_not_served() -> ApiError {
    ApiError::not_found()
}
