//! `GET /healthcheck` for load balancers.

use crate::support::TestApp;

async fn healthcheck_answers_without_auth(app: TestApp) {
    let plain = app.get("/healthcheck").without_token().send().await;
    assert_eq!(plain.status, 200);
    assert_eq!(plain.text, "OK");
    let detailed = app
        .get("/healthcheck?detailed=true")
        .without_token()
        .send()
        .await;
    assert_eq!(detailed.status, 200, "{}", detailed.text);
    assert_eq!(detailed.json["database"], "OK");
    app.store.close().await;
    let down = app
        .get("/healthcheck?detailed")
        .without_token()
        .send()
        .await;
    assert_eq!(down.status, 503, "{}", down.text);
    assert_eq!(down.json["status"], "ERROR");
    assert_eq!(
        app.get("/healthcheck").without_token().send().await.status,
        200,
        "liveness needs no database"
    );
}

backend_tests!(healthcheck_answers_without_auth);
