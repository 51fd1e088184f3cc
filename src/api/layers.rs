//! The layers every response passes through, outermost first: request id, trace span,
//! metrics, timeout, panic catcher. Each of them answers in Cinder's fault shape.

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::StatusCode;
use axum::middleware::{from_fn, from_fn_with_state, Next};
use axum::response::Response;
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;

use super::error::{fault_response, GENERIC_SERVER_ERROR, IN_DOUBT};
use super::request_id::{request_id_layer, RequestId};
use super::state::AppState;
use crate::commit_watch::CommitWatch;

/// Adds the process-wide layers to the routes.
pub fn with_process_layers(routes: Router<AppState>, state: AppState) -> Router {
    routes
        .layer(CatchPanicLayer::custom(
            |_panic: Box<dyn std::any::Any + Send>| {
                tracing::error!("handler panicked");
                fault_response(StatusCode::INTERNAL_SERVER_ERROR, GENERIC_SERVER_ERROR)
            },
        ))
        .layer(from_fn_with_state(state.clone(), timeout_layer))
        .layer(from_fn_with_state(state.clone(), metrics_layer))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(request_span)
                // Failures are logged once, where the fault is built.
                .on_failure(()),
        )
        .layer(from_fn(request_id_layer))
        .with_state(state)
}

fn request_span(request: &Request<Body>) -> tracing::Span {
    let request_id = request
        .extensions()
        .get::<RequestId>()
        .map(|id| id.0.as_str())
        .unwrap_or("-");
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str)
        .unwrap_or("unmatched");
    tracing::info_span!(
        "request",
        request_id,
        method = %request.method(),
        route,
        endpoint = tracing::field::Empty,
        project_id = tracing::field::Empty,
        user_id = tracing::field::Empty,
    )
}

/// Counts and times every answered request by its route template.
async fn metrics_layer(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = std::time::Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let response = next.run(request).await;
    state.metrics.record_request(
        method.as_str(),
        &route,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// The metrics listener's only route: `GET /metrics`.
pub fn metrics_router(state: AppState) -> Router {
    Router::new()
        .route(
            "/metrics",
            axum::routing::get(|State(state): State<AppState>| async move {
                let body = state.metrics.render(state.service.store.as_ref()).await;
                (
                    [(
                        axum::http::header::CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    body,
                )
            }),
        )
        .with_state(state)
}

/// Answers a request that ran out of time: 503 when it had not started a commit (its
/// transactions are rolled back as it is dropped, so nothing changed and it may be tried
/// again), 504 when it had, because then its change may be stored.
async fn timeout_layer(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let limit = state.config.request_timeout;
    let watch = CommitWatch::default();
    match tokio::time::timeout(limit, watch.scope(next.run(request))).await {
        Ok(response) => response,
        Err(_) if watch.commit_started() => {
            tracing::warn!(
                seconds = limit.as_secs_f64(),
                "request timed out while committing"
            );
            fault_response(StatusCode::GATEWAY_TIMEOUT, IN_DOUBT)
        }
        Err(_) => {
            tracing::warn!(seconds = limit.as_secs_f64(), "request timed out");
            fault_response(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!(
                    "The request did not complete within {} seconds.",
                    limit.as_secs_f64()
                ),
            )
        }
    }
}
