//! Request bodies, checked the way Cinder checks them before any handler runs: a body
//! with a `Content-Type` must be JSON of an accepted media type.

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use crate::api::AppState;

const ACCEPTED_MEDIA_TYPES: &[&str] =
    &["application/json", "application/vnd.openstack.volume+json"];

/// The media type of `Content-Type` without parameters, lower-cased; `None` when absent.
fn media_type(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(CONTENT_TYPE)?;
    let text = value.to_str().unwrap_or("");
    Some(
        text.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase(),
    )
}

/// Buffers the body (up to the configured limit), refuses unsupported media types (415),
/// oversized bodies (413) and JSON that does not parse (400), then hands the body on.
pub async fn check_body_layer(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let too_large = || {
        ApiError::PayloadTooLarge(format!(
            "Request body is larger than {} bytes.",
            state.config.max_body_bytes
        ))
        .into_response()
    };
    // A declared length over the limit is refused before a byte of the body is read,
    // so a client cannot hold the connection by sending it slowly.
    let declared = parts
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|length| length > state.config.max_body_bytes as u64) {
        return too_large();
    }
    let bytes = match to_bytes(body, state.config.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(err) if is_length_limit(&err) => return too_large(),
        Err(_) => return ApiError::malformed_body().into_response(),
    };
    if !bytes.is_empty() {
        if let Some(media_type) = media_type(&parts.headers) {
            if !ACCEPTED_MEDIA_TYPES.contains(&media_type.as_str()) {
                return ApiError::UnsupportedMediaType("Unsupported Content-Type".to_owned())
                    .into_response();
            }
            if serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_err() {
                return ApiError::malformed_body().into_response();
            }
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn is_length_limit(err: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(cause) = source {
        if cause.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = cause.source();
    }
    false
}

/// A JSON request body that must be present: empty bodies and bodies without a
/// `Content-Type` are `400 Malformed request body` (Cinder answers 500 there). The
/// syntax and media type were already checked by `check_body_layer`.
pub struct JsonBody(pub serde_json::Value);

impl<S: Send + Sync> axum::extract::FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        if media_type(request.headers()).is_none() {
            return Err(ApiError::malformed_body());
        }
        let bytes = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(|_| ApiError::malformed_body())?;
        if bytes.is_empty() {
            return Err(ApiError::malformed_body());
        }
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|_| ApiError::malformed_body())?;
        if has_nul(&value) {
            return Err(ApiError::BadRequest(NUL_REFUSAL.to_owned()));
        }
        Ok(JsonBody(value))
    }
}

/// A body some operations may go without (Cinder's `body=None`): absent or empty is
/// `None`; anything else must be JSON as for `JsonBody`.
impl<S: Send + Sync> axum::extract::OptionalFromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Option<Self>, ApiError> {
        let (parts, body) = request.into_parts();
        // The size limit is the body layer's, before any handler.
        let bytes = axum::body::to_bytes(body, usize::MAX)
            .await
            .map_err(|_| ApiError::malformed_body())?;
        if bytes.is_empty() {
            return Ok(None);
        }
        let request = Request::from_parts(parts, axum::body::Body::from(bytes));
        <JsonBody as axum::extract::FromRequest<S>>::from_request(request, state)
            .await
            .map(Some)
    }
}

pub const NUL_REFUSAL: &str =
    "Invalid input received: strings may not contain the NUL character (\\u0000).";

/// Whether any key or string in `value` holds a NUL character, which PostgreSQL text
/// cannot store (and no Cinder field needs).
fn has_nul(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::String(s) => s.contains('\0'),
        serde_json::Value::Array(items) => items.iter().any(has_nul),
        serde_json::Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        _ => false,
    }
}

impl JsonBody {
    /// The name of an `.../action` body: its only key. More or fewer keys are
    /// `Malformed request body`, as in Cinder.
    pub fn action_name(&self) -> Result<String, ApiError> {
        match self.0.as_object() {
            Some(object) if object.len() == 1 => {
                Ok(object.keys().next().cloned().unwrap_or_default())
            }
            _ => Err(ApiError::malformed_body()),
        }
    }

    /// Validates against a Cinder-shaped schema, then reads it as `T`.
    pub fn parse<T: serde::de::DeserializeOwned>(
        self,
        schema: &serde_json::Value,
    ) -> Result<T, ApiError> {
        super::schema::validate(schema, &self.0).map_err(ApiError::BadRequest)?;
        serde_json::from_value(self.0)
            .map_err(|e| ApiError::BadRequest(format!("Invalid input received: {e}")))
    }
}
