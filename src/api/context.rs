//! Who is calling and at which microversion: authentication middleware and the `Ctx`
//! extractor every `/v3` handler takes.

use axum::extract::{FromRequestParts, RawPathParams, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::endpoint::Endpoint;
use super::error::ApiError;
use super::microversion::ApiVersion;
use super::request_id::RequestId;
use crate::api::AppState;
use crate::auth::AuthError;
use crate::domain::event::Origin;
use crate::domain::ids::is_valid_project_segment;
use crate::domain::RequestContext;

/// Authenticates every `/v3` request except the version document and stores the
/// resulting `RequestContext` for the handlers.
pub async fn authenticate_layer(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    if !super::needs_auth(request.uri().path()) {
        return next.run(request).await;
    }
    match state.auth.authenticate(request.headers()).await {
        Ok(mut context) => {
            context.auth_token = auth_token(request.headers());
            let span = tracing::Span::current();
            span.record("project_id", context.project_id.as_str());
            span.record("user_id", context.user_id.as_str());
            // The events this request's writes record name it and its caller.
            let origin = Origin {
                request_id: request
                    .extensions()
                    .get::<RequestId>()
                    .map(|id| id.0.clone()),
                user_id: Some(context.user_id.clone()),
                project_id: Some(context.project_id.clone()),
                publisher_id: crate::origin::publisher(),
            };
            request.extensions_mut().insert(context);
            crate::origin::scope(origin, next.run(request)).await
        }
        Err(AuthError::Unavailable(message)) => {
            ApiError::ServiceUnavailable(message).into_response()
        }
        Err(err) => unauthorized(err),
    }
}

fn unauthorized(err: AuthError) -> Response {
    let mut response = ApiError::Unauthorized(err.to_string()).into_response();
    debug_assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    response.headers_mut().insert(
        "www-authenticate",
        HeaderValue::from_static("Keystone uri=\"\""),
    );
    response
}

/// The caller and negotiated microversion of a `/v3` request. Extracting it also checks
/// that a project id in the URL is the caller's own (`400 Malformed request url`).
#[derive(Debug, Clone)]
pub struct Ctx {
    pub caller: RequestContext,
    pub version: ApiVersion,
}

impl Ctx {
    /// Where this caller's links point, for the views.
    pub fn view<'a>(&'a self, base: &'a str) -> super::views::ViewContext<'a> {
        super::views::ViewContext {
            base,
            project_id: &self.caller.project_id,
            version: self.version,
        }
    }

    /// Names the operation for the logs and refuses it (404) below its microversion.
    pub fn require(&self, endpoint: Endpoint) -> Result<(), ApiError> {
        tracing::Span::current().record("endpoint", endpoint.name());
        if self.version < endpoint.min_version() {
            return Err(ApiError::not_found());
        }
        Ok(())
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Ctx {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let caller = parts
            .extensions
            .get::<RequestContext>()
            .cloned()
            .ok_or_else(|| ApiError::Unauthorized(AuthError::MissingCredentials.to_string()))?;
        let version = parts
            .extensions
            .get::<ApiVersion>()
            .copied()
            .unwrap_or(ApiVersion::MIN);
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::not_found())?;
        if let Some((_, project)) = params.iter().find(|(name, _)| *name == "project_id") {
            if !is_valid_project_segment(project) {
                return Err(ApiError::not_found());
            }
            if project != caller.project_id {
                return Err(ApiError::BadRequest("Malformed request url".to_owned()));
            }
        }
        Ok(Ctx { caller, version })
    }
}

/// The caller's token, passed on to Glance as Cinder does.
pub(super) fn auth_token(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get("x-auth-token")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}
