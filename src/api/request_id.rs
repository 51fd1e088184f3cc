//! Request ids in oslo's format (`req-<uuid>`), on every response and in every log line.

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use uuid::Uuid;

/// The id of the request being served, for handlers and spans.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

pub async fn request_id_layer(mut request: Request, next: Next) -> Response {
    let id = format!("req-{}", Uuid::new_v4());
    request.extensions_mut().insert(RequestId(id.clone()));
    let mut response = next.run(request).await;
    let value = HeaderValue::try_from(id).expect("a uuid is a valid header value");
    let headers = response.headers_mut();
    headers.insert("x-openstack-request-id", value.clone());
    headers.insert("x-compute-request-id", value);
    response
}
