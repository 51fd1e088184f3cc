//! Volume writes racing each other, and backend failures on the way out.

use axum::http::Method;
use serde_json::json;

use crate::support::helpers::*;
use crate::support::TestApp;

/// Delete and retype of one volume, fired together many times: whichever order they
/// land in, the volume ends either deleted (data gone) or alive, available, of a real
/// type, with its data; never stuck in `deleting`/`retyping`.
async fn delete_and_retype_race(app: TestApp) {
    app.create_multiattach_type("ma").await;
    for _ in 0..10 {
        let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
        let delete = app
            .request(Method::DELETE, &format!("/v3/p1/volumes/{id}"))
            .send();
        let retype = app.volume_action(&id, json!({"os-retype": {"new_type": "ma"}}));
        let (deleted, retyped) = tokio::join!(delete, retype);
        assert!(
            [202, 400].contains(&deleted.status.as_u16()),
            "{}",
            deleted.text
        );
        assert!(
            [202, 400, 404].contains(&retyped.status.as_u16()),
            "{}",
            retyped.text
        );
        let stored = app.stored_status(&id).await;
        if deleted.status == 202 {
            assert_eq!(stored, ["deleted"]);
            assert!(!app.volume_file(&id).exists());
        } else {
            assert_eq!(retyped.status, 202, "one of them must win");
            assert_eq!(stored, ["available"]);
            assert!(app.volume_file(&id).exists());
        }
        let volume = app.show_volume(&id, "3.71").await;
        if volume.status == 200 {
            let multiattach = volume.json["volume"]["multiattach"].as_bool().unwrap();
            let type_name = volume.json["volume"]["volume_type"].as_str().unwrap();
            assert_eq!(multiattach, type_name == "ma", "flag and type agree");
        }
    }
}

/// Many deletes of one volume at once: exactly one is accepted.
async fn concurrent_deletes_accept_one(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let requests = (0..8).map(|_| {
        app.request(Method::DELETE, &format!("/v3/p1/volumes/{id}"))
            .send()
    });
    let responses = futures_join_all(requests).await;
    let accepted = responses.iter().filter(|r| r.status == 202).count();
    assert_eq!(
        accepted,
        1,
        "{:?}",
        responses.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    for refused in responses.iter().filter(|r| r.status != 202) {
        assert!(
            [400, 404].contains(&refused.status.as_u16()),
            "{}",
            refused.text
        );
    }
    assert_eq!(app.stored_status(&id).await, ["deleted"]);
}

async fn backend_delete_failure_leaves_error_deleting(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    // A directory where the volume file was: the backend cannot remove it.
    let file = app.volume_file(&id);
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(&file).unwrap();
    std::fs::write(file.join("keep"), b"x").unwrap();
    let response = app
        .request(Method::DELETE, &format!("/v3/p1/volumes/{id}"))
        .send()
        .await;
    assert_eq!(response.status, 202, "{}", response.text);
    assert_eq!(
        app.show_volume(&id, "3.71").await.json["volume"]["status"],
        "error_deleting"
    );
    assert_eq!(
        app.db
            .column(&format!(
                "select cast(deleted as text) from volumes where id = '{id}'"
            ))
            .await
            .len(),
        1
    );
    // Fixed by hand, a second delete (from error_deleting, with force) finishes the job.
    std::fs::remove_dir_all(&file).unwrap();
    let again = app
        .request(Method::DELETE, &format!("/v3/p1/volumes/{id}?force=true"))
        .version("3.23")
        .send()
        .await;
    assert_eq!(again.status, 202, "{}", again.text);
    assert_eq!(app.stored_status(&id).await, ["deleted"]);
}

/// Runs all futures concurrently on the test runtime.
async fn futures_join_all<F: std::future::Future + Send + 'static>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for handle in handles {
        out.push(handle.await.expect("task"));
    }
    out
}

backend_tests!(
    delete_and_retype_race,
    concurrent_deletes_accept_one,
    backend_delete_failure_leaves_error_deleting,
);
