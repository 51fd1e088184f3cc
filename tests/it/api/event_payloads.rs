//! What the outbox records, held to a recorded sample: one scenario touching every kind
//! of payload the store builds (a volume's usage with its attachments and metadata, a
//! snapshot's, a type's, a QoS spec's) and the events of each step, compared with
//! `tests/it/api/event_payloads.json` after ids and times are replaced by placeholders.
//! The relay sends `payload` as serde_json serialises the value (keys sorted), so an
//! equal value is an equal message. A change to how events are stored must leave this
//! file as it is; a change to what Cinder's payloads say rewrites it on purpose:
//! `UPDATE_EVENT_PAYLOADS=1 cargo test --test it event_payloads`.

use std::collections::HashMap;

use axum::http::Method;
use serde_json::{json, Map, Value};

use crate::support::helpers::*;
use crate::support::TestApp;

const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/it/api/event_payloads.json"
);

async fn ok(app: &TestApp, method: Method, path: &str, body: Value) -> Value {
    let body = (!body.is_null()).then_some(body);
    let response = app.send_json(method, path, body).await;
    assert!(
        response.status.is_success(),
        "{path}: {} {}",
        response.status,
        response.text
    );
    response.json
}

/// Every step whose events the sample holds.
async fn scenario(app: &TestApp) {
    let volume = app.multiattach_volume().await;
    ok(
        app,
        Method::POST,
        &format!("/v3/p1/volumes/{volume}/metadata"),
        json!({"metadata": {"purpose": "shared"}}),
    )
    .await;
    let (rw, ro) = super::events::attach_twice(app, &volume).await;
    let taken = ok(
        app,
        Method::POST,
        "/v3/p1/snapshots",
        json!({"snapshot": {"volume_id": volume, "name": "s1", "force": true}}),
    )
    .await;
    let snapshot = str_of(&taken["snapshot"], "id");
    ok(
        app,
        Method::DELETE,
        &format!("/v3/p1/snapshots/{snapshot}"),
        json!(null),
    )
    .await;
    assert_eq!(app.delete_attachment(&rw).await.status, 200);
    assert_eq!(app.delete_attachment(&ro).await.status, 200);
    let offered = ok(
        app,
        Method::POST,
        "/v3/p1/os-volume-transfer",
        json!({"transfer": {"volume_id": volume}}),
    )
    .await;
    let transfer = str_of(&offered["transfer"], "id");
    ok(
        app,
        Method::DELETE,
        &format!("/v3/p1/os-volume-transfer/{transfer}"),
        json!(null),
    )
    .await;
    let extended = app
        .volume_action(&volume, json!({"os-extend": {"new_size": 2}}))
        .await;
    assert_eq!(extended.status, 202, "{}", extended.text);
    ok(
        app,
        Method::DELETE,
        &format!("/v3/p1/volumes/{volume}"),
        json!(null),
    )
    .await;

    let made = ok(
        app,
        Method::POST,
        "/v3/p1/types",
        json!({"volume_type": {"name": "gold", "extra_specs": {"tier": "1"}}}),
    )
    .await;
    let gold = str_of(&made["volume_type"], "id");
    ok(
        app,
        Method::POST,
        &format!("/v3/p1/types/{gold}/extra_specs"),
        json!({"extra_specs": {"tier": "2"}}),
    )
    .await;
    let qos = ok(
        app,
        Method::POST,
        "/v3/p1/qos-specs",
        json!({"qos_specs": {"name": "fast", "consumer": "back-end", "read_iops_sec": "1000"}}),
    )
    .await;
    let qos = str_of(&qos["qos_specs"], "id");
    let associated = app
        .request(
            Method::GET,
            &format!("/v3/p1/qos-specs/{qos}/associate?vol_type_id={gold}"),
        )
        .send()
        .await;
    assert_eq!(associated.status, 202, "{}", associated.text);
}

/// The trail as the sample keeps it: what a listener sees of each event, with every id
/// and time replaced by a placeholder numbered in order of first appearance.
fn comparable(events: &[Value]) -> Value {
    let mut names = Placeholders::default();
    Value::Array(
        events
            .iter()
            .map(|event| {
                let kept: Map<String, Value> = [
                    "event_type",
                    "priority",
                    "publisher_id",
                    "project_id",
                    "volume_id",
                    "attachment_id",
                    "caller_project_id",
                    "payload",
                ]
                .iter()
                .map(|key| ((*key).to_owned(), names.replace(&event[*key])))
                .collect();
                Value::Object(kept)
            })
            .collect(),
    )
}

#[derive(Default)]
struct Placeholders {
    seen: HashMap<String, String>,
}

impl Placeholders {
    fn replace(&mut self, value: &Value) -> Value {
        match value {
            Value::String(text) => Value::String(self.text(text)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.replace(v)).collect()),
            Value::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| {
                        let mut replaced = self.replace(v);
                        // The store lists a volume's attachments in no set order (nor
                        // does Cinder): compared as a set.
                        if let ("volume_attachment", Value::Array(items)) =
                            (k.as_str(), &mut replaced)
                        {
                            items.sort_by_key(|item| item.to_string());
                        }
                        (k.clone(), replaced)
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// UUIDs anywhere in the text (`req-<uuid>` too), and whole timestamps.
    fn text(&mut self, text: &str) -> String {
        if looks_like_time(text) {
            return "<time>".to_owned();
        }
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = uuid_at(rest) {
            out.push_str(&rest[..at]);
            let id = &rest[at..at + 36];
            let next = self.seen.len() + 1;
            let name = self
                .seen
                .entry(id.to_owned())
                .or_insert_with(|| format!("<id-{next}>"));
            out.push_str(name);
            rest = &rest[at + 36..];
        }
        out.push_str(rest);
        out
    }
}

fn uuid_at(text: &str) -> Option<usize> {
    (0..text.len().saturating_sub(35)).find(|&i| {
        text.is_char_boundary(i)
            && text.is_char_boundary(i + 36)
            && uuid::Uuid::try_parse(&text[i..i + 36]).is_ok()
            && text.as_bytes()[i + 8] == b'-'
    })
}

/// `2026-11-29T16:40:01.123456`, with or without a zone, a `T` or a space.
fn looks_like_time(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() >= 19
        && b[4] == b'-'
        && b[7] == b'-'
        && (b[10] == b'T' || b[10] == b' ')
        && b[13] == b':'
        && b[16] == b':'
        && b[..4].iter().all(u8::is_ascii_digit)
}

async fn payloads_match_the_recorded_sample(app: TestApp) {
    scenario(&app).await;
    let listed = app.get("/v3/p1/events?limit=1000").send().await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let trail = comparable(listed.json["events"].as_array().expect("a list"));
    let rendered = serde_json::to_string_pretty(&trail).expect("serialises") + "\n";
    if std::env::var_os("UPDATE_EVENT_PAYLOADS").is_some() {
        std::fs::write(SAMPLE, &rendered).expect("write the sample");
        return;
    }
    let sample = std::fs::read_to_string(SAMPLE).expect("the recorded sample");
    if rendered != sample {
        let expected: Vec<Value> = serde_json::from_str(&sample).expect("the sample is JSON");
        let got = trail.as_array().expect("a list");
        for (i, (want, have)) in expected.iter().zip(got).enumerate() {
            assert_eq!(have, want, "event {i} differs from the recorded sample");
        }
        assert_eq!(
            got.len(),
            expected.len(),
            "the trail has another number of events than the sample"
        );
    }
}

backend_tests!(payloads_match_the_recorded_sample);
