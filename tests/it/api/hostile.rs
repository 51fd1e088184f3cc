//! Hostile input: whatever arrives, the answer is a 4xx in Cinder's fault shape (or a
//! plain success), never a 5xx, and nothing is written by a refused request.

use axum::http::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::helpers::str_of;
use crate::support::{TestApp, TestResponse};

/// Not a server error, and every error is a one-key fault object whose `code` matches.
#[track_caller]
fn assert_client_side(response: &TestResponse, what: &str) {
    let status = response.status.as_u16();
    assert!(status < 500, "{what}: {status} {}", response.text);
    if status >= 400 {
        let object = response
            .json
            .as_object()
            .unwrap_or_else(|| panic!("{what}: not a fault body: {}", response.text));
        assert_eq!(object.len(), 1, "{what}: {}", response.text);
        let fault = object.values().next().expect("one key");
        assert_eq!(fault["code"], status, "{what}: {}", response.text);
        assert!(fault["message"].is_string(), "{what}: {}", response.text);
    }
}

/// Rows in the tables a refused request could have written to.
async fn row_counts(app: &TestApp) -> Vec<String> {
    let mut counts = Vec::new();
    for table in [
        "volumes",
        "volume_metadata",
        "volume_attachment",
        "attachment_specs",
        "volume_types",
        "volume_type_extra_specs",
    ] {
        counts.extend(
            app.db
                .column(&format!("select cast(count(*) as text) from {table}"))
                .await,
        );
    }
    counts
}

async fn post(app: &TestApp, path: &str, body: Value) -> TestResponse {
    app.request(Method::POST, path)
        .version("3.54")
        .json(&body)
        .send()
        .await
}

async fn wrong_types_and_sizes_are_refused_without_writes(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let before = row_counts(&app).await;
    let huge = "x".repeat(300_000);
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let volume_bodies = [
        json!({"volume": {"size": "abc"}}),
        json!({"volume": {"size": []}}),
        json!({"volume": {"size": -1}}),
        json!({"volume": {"size": 1.5}}),
        json!({"volume": {"size": 1e300}}),
        json!({"volume": {"size": 1, "name": 5}}),
        json!({"volume": {"size": 1, "name": huge}}),
        json!({"volume": {"size": 1, "description": huge}}),
        json!({"volume": {"size": 1, "metadata": "x"}}),
        json!({"volume": {"size": 1, "metadata": {"k": 5}}}),
        json!({"volume": {"size": 1, "metadata": {huge.clone(): "v"}}}),
        json!({"volume": {"size": 1, "volume_type": {"a": 1}}}),
        json!({"volume": {"size": 1, "availability_zone": ["nova"]}}),
        json!({"volume": {"size": 1, "name": "a\u{0}b"}}),
        json!({"volume": {"size": 1, "metadata": {"k": "a\u{0}b"}}}),
        json!({"volume": "x"}),
        json!([1, 2, 3]),
        json!(null),
    ];
    for body in volume_bodies {
        let what = format!(
            "volume create {}",
            &body.to_string()[..body.to_string().len().min(80)]
        );
        let response = post(&app, "/v3/p1/volumes", body).await;
        assert_client_side(&response, &what);
        assert_eq!(response.status, 400, "{what}: {}", response.text);
    }
    let attachment_bodies = [
        json!({"attachment": {"volume_uuid": 5}}),
        json!({"attachment": {"volume_uuid": "not-a-uuid"}}),
        json!({"attachment": {"volume_uuid": "' or '1'='1"}}),
        json!({"attachment": {"volume_uuid": volume, "instance_uuid": {}}}),
        json!({"attachment": {"volume_uuid": volume, "connector": "x"}}),
        json!({"attachment": {"volume_uuid": volume, "connector": {"host": huge}, "mode": 7}}),
        json!({"attachment": {"volume_uuid": volume, "mode": "rx"}}),
        json!({"attachment": {"volume_uuid": volume, "connector": [1]}}),
    ];
    for body in attachment_bodies {
        let what = format!(
            "attachment create {}",
            &body.to_string()[..body.to_string().len().min(80)]
        );
        let response = post(&app, "/v3/p1/attachments", body).await;
        assert_client_side(&response, &what);
        assert_eq!(response.status, 400, "{what}: {}", response.text);
    }
    for raw in [deep.as_str(), "{\"volume\": {\"size\": 1", "\u{feff}{}"] {
        let response = app
            .request(Method::POST, "/v3/p1/volumes")
            .raw_body("application/json", raw)
            .send()
            .await;
        assert_client_side(&response, "malformed JSON");
        assert_eq!(response.status, 400);
    }
    let response = app
        .request(Method::POST, "/v3/p1/volumes")
        .raw_bytes(
            "application/json",
            b"{\"volume\": {\"name\": \"\xff\xfe\"}}".to_vec(),
        )
        .send()
        .await;
    assert_client_side(&response, "non-UTF-8 body");
    assert_eq!(response.status, 400);
    assert_eq!(
        row_counts(&app).await,
        before,
        "a refused request wrote rows"
    );
}

/// Percent-encodes what a URI may not carry raw (existing escapes are kept).
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'%' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn hostile_paths_and_queries_never_reach_the_database_as_code(app: TestApp) {
    let volume = str_of(
        &app.create_volume(json!({"size": 1, "name": "v1"})).await,
        "id",
    );
    let before = row_counts(&app).await;
    let injections = [
        "'",
        "' OR '1'='1",
        "1; drop table volumes; --",
        "\"",
        "%27",
        "\\",
        "%00",
        "%E2%80%AE",
    ];
    let mut paths = vec![
        "/v3/p1/volumes/not-a-uuid".to_owned(),
        "/v3/p1/volumes/..%2F..%2Fetc%2Fpasswd".to_owned(),
        "/v3/p1/attachments/%FF%FE".to_owned(),
        "/v3/..%2F/volumes".to_owned(),
        "/v3/p1/volumes?limit=-1".to_owned(),
        "/v3/p1/volumes?limit=99999999999999999999999".to_owned(),
        "/v3/p1/volumes?offset=-5".to_owned(),
        "/v3/p1/volumes/detail?sort=status:sideways".to_owned(),
        "/v3/p1/volumes?no_such_filter=1".to_owned(),
        "/v3/p1/attachments?no_such_filter=1".to_owned(),
        format!("/v3/p1/volumes?marker={}", Uuid::new_v4()),
    ];
    for bad in injections {
        for query in [
            "volumes?name=",
            "volumes/detail?status=",
            "volumes?sort_key=",
            "volumes?sort=",
            "volumes?sort_dir=",
            "volumes?marker=",
            "volumes?limit=",
            "volumes?metadata=",
            "attachments?volume_id=",
            "attachments?instance_id=",
            "attachments?status=",
            "attachments/detail?sort=",
            "attachments?marker=",
            "types?name=",
        ] {
            paths.push(format!("/v3/p1/{query}{}", encode(bad)));
        }
        paths.push(format!("/v3/p1/volumes/{}", encode(bad)));
    }
    for path in &paths {
        let response = app.get(path).version("3.60").send().await;
        assert_client_side(&response, path);
    }
    for version in [
        "volume 3.99999999999999999999",
        "volume 3.-1",
        "volume ' or 1=1",
        "volume latest latest",
    ] {
        let response = app
            .get("/v3/p1/volumes")
            .header("OpenStack-API-Version", version)
            .send()
            .await;
        assert_client_side(&response, version);
        assert!(response.status.is_client_error(), "{version}");
    }
    assert_eq!(row_counts(&app).await, before);
    // The volume is still there and the table intact.
    assert_eq!(app.show_volume(&volume, "3.44").await.status, 200);
}

/// Names never steer where the file backend writes: the file is named by the uuid.
async fn names_never_become_paths(app: TestApp) {
    let created = app
        .create_volume(json!({"size": 1, "name": "../../../../tmp/escaped",
                               "metadata": {"../x": "../../y"}}))
        .await;
    let id = str_of(&created, "id");
    assert_eq!(created["name"], "../../../../tmp/escaped");
    assert!(app.volume_file(&id).exists());
    let entries: Vec<String> = std::fs::read_dir(&app.volumes_dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries, [format!("volume-{id}")]);
}

backend_tests!(
    wrong_types_and_sizes_are_refused_without_writes,
    hostile_paths_and_queries_never_reach_the_database_as_code,
    names_never_become_paths
);
