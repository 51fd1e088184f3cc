//! Query strings, with malformed ones answered as Cinder faults.

use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::error::ApiError;

pub struct CinderQuery<T>(pub T);

/// The value of parameter `name`; when it is given more than once, the last one (as
/// WebOb's `req.params` answers Cinder).
pub fn last<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for CinderQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        // `%00` is the only way a NUL reaches a decoded value; no filter needs one and
        // PostgreSQL text cannot hold one.
        if parts.uri.query().is_some_and(|q| q.contains("%00")) {
            return Err(ApiError::BadRequest(
                "Invalid query string: values may not contain the NUL character (%00).".to_owned(),
            ));
        }
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(value)| CinderQuery(value))
            .map_err(|rejection| {
                ApiError::BadRequest(format!("Invalid query string: {}", rejection.body_text()))
            })
    }
}
