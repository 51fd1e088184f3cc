//! The Cinder v3 wire protocol: routing, extractors, faults and views. Handlers only
//! translate between HTTP and the service layer.

pub mod attachments;
mod backups;
pub mod body;
pub mod console;
pub mod context;
mod default_types;
mod encryption;
pub mod endpoint;
pub mod error;
pub mod events;
mod faults;
mod group_snapshots;
mod group_types;
mod groups;
pub mod health;
mod image_metadata;
mod image_upload;
mod layers;
pub mod links;
pub mod messages;
pub mod microversion;
pub mod paging;
pub mod qos_specs;
pub mod query;
pub mod quotas;
pub mod request_id;
mod resource_filters;
pub mod schema;
pub mod service_info;
pub mod service_views;
mod snapshot_manage;
pub mod snapshots;
mod state;
mod time_filters;
pub mod transfers;
pub mod types;
pub mod unimplemented;
pub mod versions;
pub mod views;
pub mod volume_actions;
mod volume_manage;
pub mod volume_metadata;
mod volume_moves;
pub mod volume_path;
pub mod volumes;
mod workers;

use axum::http::{Method, Uri};
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use error::ApiError;
pub use layers::{metrics_router, with_process_layers};
pub use state::{AppState, ServiceConfig};

/// The whole service as one router: the routes and every layer.
pub fn build_app(state: AppState) -> Router {
    with_process_layers(routes(state.clone()), state)
}

/// Resources under `/v3`, mounted both with and without a `{project_id}` segment.
fn resources() -> Router<AppState> {
    Router::new()
        .merge(attachments::router())
        .merge(volumes::router())
        .merge(types::router())
        .merge(default_types::router())
        .merge(resource_filters::router())
        .merge(workers::router())
        .merge(group_types::router())
        .merge(groups::router())
        .merge(group_snapshots::router())
        .merge(backups::router())
        .merge(volume_manage::router())
        .merge(snapshot_manage::router())
        .merge(encryption::router())
        .merge(quotas::router())
        .merge(qos_specs::router())
        .merge(snapshots::router())
        .merge(messages::router())
        .merge(service_info::router())
        .merge(service_views::router())
        .merge(events::router())
        .merge(transfers::router())
        .merge(unimplemented::router())
}

/// Every route of the service, with the `/v3` protocol layers (auth, body checks,
/// microversions) but not the process-wide ones (`build_app` adds those).
pub fn routes(state: AppState) -> Router<AppState> {
    let v3 = Router::new()
        .route("/v3", get(versions::show_v3))
        .route("/v3/", get(versions::show_v3))
        .nest("/v3", resources())
        .nest("/v3/{project_id}", resources());
    Router::new()
        .route("/", get(versions::list_versions))
        .route("/healthcheck", get(health::healthcheck))
        .merge(v3)
        .merge(console::router())
        .fallback(unknown_path)
        .method_not_allowed_fallback(wrong_method)
        .layer(from_fn_with_state(state.clone(), body::check_body_layer))
        .layer(from_fn(microversion::negotiate_layer))
        .layer(from_fn_with_state(state, context::authenticate_layer))
}

/// Whether a path belongs to the versioned API (microversions apply).
pub(crate) fn is_v3_path(path: &str) -> bool {
    path == "/v3" || path.starts_with("/v3/")
}

/// Whether a path needs credentials: everything under `/v3/` but the version document.
pub(crate) fn needs_auth(path: &str) -> bool {
    path.starts_with("/v3/") && path != "/v3/"
}

async fn unknown_path() -> impl IntoResponse {
    ApiError::not_found()
}

async fn wrong_method(method: Method, uri: Uri) -> impl IntoResponse {
    ApiError::MethodNotAllowed(format!(
        "The method {method} is not allowed for {}.",
        uri.path()
    ))
}
