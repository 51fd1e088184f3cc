//! Version discovery: `GET /` (300, public) and `GET /v3/` (200) return one document.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};

use super::links::base_url;
use super::microversion::ApiVersion;
use crate::api::AppState;

/// The date Cinder gives for the 3.71 API.
const UPDATED: &str = "2023-08-31T00:00:00Z";

pub fn document(base: &str) -> Value {
    json!({
        "versions": [{
            "id": "v3.0",
            "status": "CURRENT",
            "version": ApiVersion::MAX.to_string(),
            "min_version": ApiVersion::MIN.to_string(),
            "updated": UPDATED,
            "links": [
                {"rel": "describedby", "type": "text/html", "href": "https://docs.openstack.org/"},
                {"rel": "self", "href": format!("{base}/v3/")}
            ],
            "media-types": [{
                "base": "application/json",
                "type": "application/vnd.openstack.volume+json;version=3"
            }]
        }]
    })
}

/// `GET /`: 300 Multiple Choices, no authentication.
pub async fn list_versions(State(state): State<AppState>, headers: HeaderMap) -> impl IntoResponse {
    (
        StatusCode::MULTIPLE_CHOICES,
        Json(document(&base_url(&state, &headers))),
    )
}

/// `GET /v3/` (and `/v3`): 200, no authentication; the microversion header still applies.
pub async fn show_v3(State(state): State<AppState>, headers: HeaderMap) -> impl IntoResponse {
    tracing::Span::current().record("endpoint", super::endpoint::Endpoint::VersionShow.name());
    Json(document(&base_url(&state, &headers)))
}
