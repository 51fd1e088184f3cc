//! The web console's own routes: its pages with a strict Content-Security-Policy, its
//! configuration, and its sign-in, which hands back a token the volume API takes (the
//! browser tests in tests/clients/test_console.py drive the screens themselves).

use axum::http::Method;
use serde_json::json;

use crate::support::http::AuthMode;
use crate::support::TestApp;

async fn pages_carry_a_strict_policy(app: TestApp) {
    for (path, kind) in [
        ("/console/", "text/html"),
        ("/console/app.js", "text/javascript"),
        ("/console/app.css", "text/css"),
    ] {
        let page = app.get(path).send().await;
        assert_eq!(page.status, 200, "{path}");
        assert!(page.header("content-type").unwrap().starts_with(kind));
        let policy = page.header("content-security-policy").unwrap();
        assert!(policy.contains("default-src 'none'") && policy.contains("script-src 'self'"));
        assert!(!policy.contains("unsafe"), "{policy}");
        assert_eq!(page.header("x-frame-options"), Some("DENY"));
        assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    }
    let bare = app.get("/console").send().await;
    assert_eq!(bare.status, 301);
    assert_eq!(bare.header("location"), Some("/console/"));
    let config = app.get("/console/config").send().await;
    assert_eq!(
        config.json,
        json!({"console": {"auth_strategy": "noauth", "microversion": "3.54"}})
    );
}

async fn noauth_sign_in_gives_a_usable_token(app: TestApp) {
    let signed_in = app
        .request(Method::POST, "/console/session")
        .json(&json!({"token": " reader:p7:reader "}))
        .send()
        .await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.text);
    assert_eq!(signed_in.header("cache-control"), Some("no-store"));
    assert_eq!(
        signed_in.json,
        json!({"session": {"token": "reader:p7:reader", "user_id": "reader",
               "project_id": "p7", "roles": ["reader"], "is_admin": false, "expires_at": null}})
    );
    let listed = app
        .get("/v3/p7/volumes")
        .token("reader:p7:reader")
        .send()
        .await;
    assert_eq!(listed.status, 200);

    for (body, fault, message) in [
        (json!({"token": ""}), "unauthorized", "sign in with a token"),
        (
            json!({"username": "u", "password": "p", "project": "x"}),
            "unauthorized",
            "uses noauth",
        ),
        (json!({}), "badRequest", "either a token or a user name"),
        (
            json!({"token": "a", "password": "p"}),
            "badRequest",
            "either a token",
        ),
        (json!({"token": 5}), "badRequest", "Invalid sign-in request"),
        (json!({"tokens": "a"}), "badRequest", "unknown field"),
    ] {
        let status = if fault == "unauthorized" { 401 } else { 400 };
        app.request(Method::POST, "/console/session")
            .json(&body)
            .send()
            .await
            .assert_fault(status, fault, message);
    }
}

async fn trusted_headers_sign_in_is_refused(app: TestApp) {
    let app = app.with_auth(AuthMode::TrustedHeaders);
    let config = app.get("/console/config").send().await;
    assert_eq!(config.json["console"]["auth_strategy"], "trusted-headers");
    app.request(Method::POST, "/console/session")
        .json(&json!({"token": "admin:p1"}))
        .send()
        .await
        .assert_fault(401, "unauthorized", "proxy");
}

/// Five failed sign-ins from one client and the sixth attempt, right or wrong, is
/// refused (429, Cinder's overLimit fault, Retry-After) before it is tried.
async fn failed_sign_ins_are_limited(app: TestApp) {
    for _ in 0..5 {
        app.request(Method::POST, "/console/session")
            .json(&json!({"token": " "}))
            .send()
            .await
            .assert_fault(401, "unauthorized", "sign in with a token");
    }
    let held = app
        .request(Method::POST, "/console/session")
        .json(&json!({"token": "admin:p1"}))
        .send()
        .await;
    held.assert_fault(429, "overLimit", "Too many failed sign-ins");
    let wait: u64 = held.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert_eq!(held.json["overLimit"]["retryAfter"], wait.to_string());
    // The API itself is not limited.
    assert_eq!(app.get("/v3/p1/volumes").send().await.status, 200);
}

backend_tests!(
    failed_sign_ins_are_limited,
    pages_carry_a_strict_policy,
    noauth_sign_in_gives_a_usable_token,
    trusted_headers_sign_in_is_refused
);
