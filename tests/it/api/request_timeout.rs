//! A request that runs out of time (`--request-timeout`) is answered for what it did:
//! cut off before committing, it changed nothing and says 503; cut off while its commit
//! was on the way, the change may be stored and it says 504, never "nothing changed".

use std::time::Duration;

use cinder_attach::api::ServiceConfig;
use serde_json::json;
use sqlx::Connection;

use crate::support::{Backend, TestApp};

fn impatient(app: TestApp) -> TestApp {
    app.reconfigure(ServiceConfig {
        request_timeout: Duration::from_secs(1),
        ..Default::default()
    })
}

/// Another session holds the lock the write needs for longer than the request may take.
async fn cut_off_waiting_for_a_lock_is_503_and_changes_nothing(app: TestApp) {
    let app = impatient(app);
    let volume = app.create_volume(json!({"size": 1})).await;
    let volume_id = volume["id"].as_str().unwrap().to_owned();

    let attempt = async {
        let response = app
            .post_attachment(
                json!({"volume_uuid": volume_id, "instance_uuid": crate::support::helpers::I1}),
                "3.44",
            )
            .await;
        response.assert_fault(
            503,
            "serviceUnavailable",
            "did not complete within 1 seconds",
        );
    };
    match app.db.backend {
        Backend::Postgres => {
            let mut other = sqlx::PgConnection::connect(&app.db.url).await.unwrap();
            let mut held = other.begin().await.unwrap();
            sqlx::query("select id from volumes where id = cast($1 as uuid) for update")
                .bind(&volume_id)
                .execute(&mut *held)
                .await
                .unwrap();
            attempt.await;
            held.rollback().await.unwrap();
        }
        Backend::Sqlite => {
            let mut other = sqlx::SqliteConnection::connect(&app.db.url).await.unwrap();
            sqlx::raw_sql("begin immediate")
                .execute(&mut other)
                .await
                .unwrap();
            attempt.await;
            sqlx::raw_sql("rollback").execute(&mut other).await.unwrap();
        }
    }

    assert_eq!(app.live_attachments(&volume_id).await, 0);
    assert_eq!(app.volume_status(&volume_id).await, "available");
    app.assert_consistent(&volume_id).await;
}

/// A deferred trigger makes PostgreSQL take two seconds over the `COMMIT` of an
/// attachment delete; the request may take one.
async fn cut_off_while_committing_is_504_and_the_change_is_stored(app: TestApp) {
    let app = impatient(app);
    let volume = app.create_volume(json!({"size": 1})).await;
    let volume_id = volume["id"].as_str().unwrap().to_owned();
    let attachment = app
        .attach(&volume_id, Some(crate::support::helpers::I1), None)
        .await;
    app.db
        .execute(
            "create function slow_commit() returns trigger language plpgsql as \
             $$ begin perform pg_sleep(2); return null; end $$; \
             create constraint trigger slow_commit after update on volume_attachment \
             deferrable initially deferred for each row execute function slow_commit();",
        )
        .await
        .unwrap();

    let started = std::time::Instant::now();
    let response = app.delete_attachment(&attachment).await;
    response.assert_fault(504, "computeFault", "may or may not have been made");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "answered at the timeout"
    );

    // The commit the request was cut off from goes on and stores the delete.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while app.live_attachments(&volume_id).await > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the delete was not stored"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(app.show_attachment(&attachment).await.status, 404);
    assert_eq!(app.volume_status(&volume_id).await, "available");
}

backend_tests!(cut_off_waiting_for_a_lock_is_503_and_changes_nothing);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_off_while_committing_is_504_and_the_change_is_stored_postgres() {
    crate::support::run_case(
        Backend::Postgres,
        cut_off_while_committing_is_504_and_the_change_is_stored,
    )
    .await;
}
