//! The web console (`/console/`): static pages built into the binary that speak only the
//! public `/v3` API with the signed-in user's token, so they obey the same policy and
//! project isolation as any client. The one route of its own is the sign-in, which turns
//! what the strategy understands (a noauth token, a Keystone password) into a token.
//!
//! Every console response carries a strict Content-Security-Policy: scripts and styles
//! only from these files, requests only to this origin, no framing, no inline code.

mod sign_in_limit;

use std::time::Instant;

use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware::{from_fn, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Extension;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::error::ApiError;
use super::AppState;
use crate::auth::{AuthError, PasswordLogin, SignIn};
pub use sign_in_limit::{ClientAddr, SignInLimiter};

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");

/// The microversion the console speaks: attachments with a mode (`ro`/`rw`).
const MICROVERSION: &str = "3.54";

const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/console", get(to_index))
        .route(
            "/console/",
            get(|| asset("text/html; charset=utf-8", INDEX)),
        )
        .route(
            "/console/app.js",
            get(|| asset("text/javascript; charset=utf-8", SCRIPT)),
        )
        .route(
            "/console/app.css",
            get(|| asset("text/css; charset=utf-8", STYLE)),
        )
        .route("/console/config", get(config))
        .route("/console/session", post(sign_in))
        .layer(from_fn(security_headers))
}

async fn to_index() -> Response {
    (
        StatusCode::MOVED_PERMANENTLY,
        [(LOCATION, HeaderValue::from_static("/console/"))],
    )
        .into_response()
}

async fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}

/// What the sign-in page needs to know before anyone signs in.
async fn config(State(state): State<AppState>) -> Response {
    Json(json!({"console": {
        "auth_strategy": state.auth.strategy(),
        "microversion": MICROVERSION,
    }}))
    .into_response()
}

/// The sign-in form: a noauth token, or a Keystone user's password and project.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionRequest {
    token: Option<String>,
    username: Option<String>,
    password: Option<String>,
    project: Option<String>,
    #[serde(default = "default_domain")]
    user_domain: String,
    #[serde(default = "default_domain")]
    project_domain: String,
}

fn default_domain() -> String {
    "Default".to_owned()
}

async fn sign_in(
    State(state): State<AppState>,
    client: Option<Extension<ClientAddr>>,
    body: axum::body::Bytes,
) -> Response {
    let client = client.map(|Extension(ClientAddr(addr))| addr.ip());
    if let Err(seconds) = state.sign_ins.admit(client, Instant::now()) {
        return ApiError::TooManyRequests {
            message: format!(
                "Too many failed sign-ins from this address; try again in {seconds} seconds."
            ),
            retry_after: seconds,
        }
        .into_response();
    }
    let request: SessionRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(err) => {
            return ApiError::BadRequest(format!("Invalid sign-in request: {err}")).into_response()
        }
    };
    let offered = match (&request.token, &request.username, &request.password) {
        (Some(token), None, None) => SignIn::Token(token),
        (None, Some(user), Some(password)) => SignIn::Password(PasswordLogin {
            user,
            user_domain: &request.user_domain,
            password,
            project: request.project.as_deref().unwrap_or_default(),
            project_domain: &request.project_domain,
        }),
        _ => {
            return ApiError::BadRequest(
                "Sign in with either a token or a user name and password.".to_owned(),
            )
            .into_response()
        }
    };
    match state.auth.sign_in(offered).await {
        Ok(signed_in) => {
            state.sign_ins.succeeded(client);
            let c = &signed_in.context;
            let mut response = Json(json!({"session": {
                "token": signed_in.token,
                "user_id": c.user_id,
                "project_id": c.project_id,
                "roles": c.roles,
                "is_admin": c.is_admin,
                "expires_at": signed_in.expires_at,
            }}))
            .into_response();
            response
                .headers_mut()
                .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(AuthError::Unavailable(message)) => {
            ApiError::ServiceUnavailable(message).into_response()
        }
        Err(err) => {
            state.sign_ins.failed(client, Instant::now());
            ApiError::Unauthorized(err.to_string()).into_response()
        }
    }
}

async fn security_headers(request: axum::extract::Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        ("content-security-policy", CONTENT_SECURITY_POLICY),
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
    ] {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    response
}
