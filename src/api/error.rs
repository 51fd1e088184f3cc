//! The one place where failures become Cinder fault bodies:
//! `{"<faultName>": {"code": <status>, "message": "<text>"}}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// WebOb's default explanations, which Cinder sends when it has nothing more specific.
pub const GENERIC_BAD_REQUEST: &str =
    "The server could not comply with the request since\r\nit is either malformed or otherwise incorrect.\r\n";
pub const GENERIC_NOT_FOUND: &str = "The resource could not be found.";
pub const GENERIC_SERVER_ERROR: &str =
    "The server has either erred or is incapable of performing\r\nthe requested operation.\r\n";
/// A change that may or may not have been stored (504).
pub const IN_DOUBT: &str = "The request was cut off while its change was being stored: the \
     change may or may not have been made. Check the resource before trying again.";

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    /// A microversion outside the supported range (Cinder answers 406 `computeFault`).
    #[error("{0}")]
    NotAcceptable(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    /// Over quota: 413 `overLimit` with Cinder's `Retry-After: 0`.
    #[error("{0}")]
    OverLimit(String),
    /// Too many attempts from one client (the console's sign-in): 429 with
    /// `Retry-After`.
    #[error("{message}")]
    TooManyRequests { message: String, retry_after: u64 },
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("{0}")]
    NotImplemented(String),
    #[error("{0}")]
    ServiceUnavailable(String),
    /// The request may or may not have changed what it set out to: 504, which HTTP
    /// clients know as "no answer from upstream in time" (Cinder has no such answer, so
    /// its fault name is `computeFault`).
    #[error("{0}")]
    OutcomeUnknown(String),
    /// A 500 whose message is safe to show (Cinder's "Unable to ..." answers).
    #[error("{0}")]
    Failed(String),
    /// Anything unexpected: the detail is logged, the client sees a generic message.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge(_) | ApiError::OverLimit(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::NotImplemented(_) => StatusCode::NOT_IMPLEMENTED,
            ApiError::ServiceUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::OutcomeUnknown(_) => StatusCode::GATEWAY_TIMEOUT,
            ApiError::Failed(_) | ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn message(&self) -> String {
        match self {
            ApiError::Internal(_) => GENERIC_SERVER_ERROR.to_owned(),
            other => other.to_string(),
        }
    }

    pub fn not_found() -> Self {
        ApiError::NotFound(GENERIC_NOT_FOUND.to_owned())
    }

    /// An action body whose key names no action of this resource.
    pub fn no_such_action(name: &str) -> Self {
        ApiError::BadRequest(format!(
            "There is no such action: {name}. Verify the request body and Content-Type header and try again."
        ))
    }

    pub fn malformed_body() -> Self {
        ApiError::BadRequest("Malformed request body".to_owned())
    }
}

/// Cinder's fault key for a status (`cinder/api/openstack/wsgi.py` `Fault._fault_names`).
pub fn fault_name(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "badRequest",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "itemNotFound",
        405 => "badMethod",
        409 => "conflictingRequest",
        413 | 429 => "overLimit",
        415 => "badMediaType",
        501 => "notImplemented",
        503 => "serviceUnavailable",
        _ => "computeFault",
    }
}

/// A fault response for any status and message.
pub fn fault_response(status: StatusCode, message: &str) -> Response {
    let body = json!({ fault_name(status): { "code": status.as_u16(), "message": message } });
    (status, Json(body)).into_response()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        match &self {
            ApiError::Internal(_) | ApiError::Failed(_) => {
                tracing::error!(error = %self, "request failed")
            }
            ApiError::ServiceUnavailable(_) | ApiError::OutcomeUnknown(_) => {
                tracing::warn!(error = %self, "request failed")
            }
            _ => tracing::info!(error = %self, status = status.as_u16(), "request refused"),
        }
        if let ApiError::OverLimit(message) = &self {
            // Cinder's QuotaError carries `Retry-After: 0`, which its fault body repeats.
            let fault = json!({"code": 413, "message": message, "retryAfter": "0"});
            let body = json!({ fault_name(status): fault });
            return (status, [(axum::http::header::RETRY_AFTER, "0")], Json(body)).into_response();
        }
        if let ApiError::TooManyRequests {
            message,
            retry_after,
        } = &self
        {
            let fault =
                json!({"code": 429, "message": message, "retryAfter": retry_after.to_string()});
            let body = json!({ fault_name(status): fault });
            let wait = retry_after.to_string();
            return (
                status,
                [(axum::http::header::RETRY_AFTER, wait)],
                Json(body),
            )
                .into_response();
        }
        fault_response(status, &self.message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_names_follow_cinder() {
        let cases = [
            (400, "badRequest"),
            (401, "unauthorized"),
            (403, "forbidden"),
            (404, "itemNotFound"),
            (405, "badMethod"),
            (406, "computeFault"),
            (409, "conflictingRequest"),
            (413, "overLimit"),
            (415, "badMediaType"),
            (429, "overLimit"),
            (500, "computeFault"),
            (501, "notImplemented"),
            (503, "serviceUnavailable"),
            (504, "computeFault"),
        ];
        for (code, name) in cases {
            assert_eq!(
                fault_name(StatusCode::from_u16(code).unwrap()),
                name,
                "{code}"
            );
        }
    }

    #[test]
    fn internal_details_stay_in_the_log() {
        let err = ApiError::Internal("secret table name".into());
        assert_eq!(err.message(), GENERIC_SERVER_ERROR);
    }
}
