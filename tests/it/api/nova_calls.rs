//! Calls owed to Nova, recorded with the change that owes them. Here Nova does not answer
//! (its Keystone and its endpoint are closed ports): the call is tried again after a wait,
//! then given up with Cinder's user message, and the volume is never held by it. A real
//! Nova takes the same calls in tests/clients/test_nova.py and tempest's compute tests.

use std::sync::Arc;
use std::time::Duration;

use cinder_attach::auth::catalog::CatalogEntry;
use cinder_attach::auth::keystone::{KeystoneAuth, KeystoneConfig};
use cinder_attach::auth::keystone_tls::KeystoneTls;
use cinder_attach::compute::{Nova, NovaConfig};
use cinder_attach::policy::{Policy, PolicyEngine};
use cinder_attach::service::Settings;
use serde_json::json;

use crate::support::helpers::str_of;
use crate::support::TestApp;

/// A port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

pub(crate) fn silent_nova() -> Arc<Nova> {
    let keystone = KeystoneConfig {
        url: format!("http://127.0.0.1:{}/v3", closed_port()),
        username: "nova".into(),
        password: "x".into(),
        project_name: "service".into(),
        user_domain: "Default".into(),
        project_domain: "Default".into(),
        cache_seconds: 0,
        cache_size: 0,
        negative_cache_seconds: 0,
        timeout: Duration::from_secs(2),
        tls: KeystoneTls::default(),
    };
    let policy = Arc::new(PolicyEngine::new(Policy::with_defaults()));
    let login = Arc::new(KeystoneAuth::new(keystone, policy).unwrap());
    Arc::new(Nova::new(NovaConfig {
        login,
        endpoint: Some(format!("http://127.0.0.1:{}/v2.1", closed_port())),
        catalog: CatalogEntry::parse("compute::publicURL", None).unwrap(),
        service_token: None,
        timeout: Duration::from_secs(2),
        tls: Default::default(),
    }))
}

/// Each call recorded for `volume`: kind, servers, status, attempts.
async fn calls_of(app: &TestApp, volume: &str) -> Vec<Vec<String>> {
    let rows = app
        .db
        .column(&format!(
            "select kind || '|' || servers || '|' || status || '|' || cast(attempts as text) \
             from compute_calls where cast(volume_id as text) = '{volume}' order by created_at"
        ))
        .await;
    rows.iter()
        .map(|row| row.split('|').map(str::to_owned).collect())
        .collect()
}

async fn an_attached_extend_owes_nova_an_event_until_given_up(app: TestApp) {
    let nova = silent_nova();
    let settings = Settings {
        nova: Some(nova.clone()),
        nova_retry_for: chrono::Duration::seconds(3),
        ..Settings::default()
    };
    let app = app.with_settings(settings);
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let server = "5c3a4a52-1b7e-4d58-9d1a-7f3c8f5b6a11";
    app.attach_directly(&volume, "a5b6c7d8-1111-4222-8333-944455556666", server)
        .await;
    // An extend of an available volume owes nothing; of an in-use one, an event.
    let other = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let extended = app
        .volume_action(&other, json!({"os-extend": {"new_size": 2}}))
        .await;
    assert_eq!(extended.status, 202, "{}", extended.text);
    assert!(calls_of(&app, &other).await.is_empty());
    let extended = app
        .volume_action(&volume, json!({"os-extend": {"new_size": 2}}))
        .await;
    assert_eq!(extended.status, 202, "{}", extended.text);
    assert_eq!(app.volume_status(&volume).await, "in-use");
    let recorded = calls_of(&app, &volume).await;
    assert_eq!(
        recorded,
        [vec![
            "volume-extended".to_owned(),
            format!("[\"{server}\"]"),
            "pending".into(),
            "0".into()
        ]]
    );
    let service = &app.state.service;
    // Nova does not answer: tried again after a wait, the volume untouched.
    assert_eq!(service.call_nova_once(&nova).await.unwrap(), 1);
    assert_eq!(calls_of(&app, &volume).await[0][2..], ["pending", "1"]);
    assert_eq!(
        service.call_nova_once(&nova).await.unwrap(),
        0,
        "not due before its wait"
    );
    assert_eq!(app.volume_status(&volume).await, "in-use");
    // Past the time it may be tried: given up, with Cinder's user message.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while calls_of(&app, &volume).await[0][2] == "pending" {
        assert!(std::time::Instant::now() < deadline, "never given up");
        service.call_nova_once(&nova).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(calls_of(&app, &volume).await[0][2], "failed");
    let message = app.message_about(&volume).await;
    assert_eq!(message["event_id"], "VOLUME_VOLUME_007_009");
    assert_eq!(
        message["user_message"],
        "extend volume: Compute service failed to extend volume."
    );
    let shown = app.show_volume(&volume, "3.71").await;
    assert_eq!(shown.json["volume"]["size"], 2);
    assert_eq!(shown.json["volume"]["status"], "in-use");
}

/// Without Nova configured, an attached extend owes nothing (Cinder without Nova).
async fn without_nova_nothing_is_owed(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let server = "6d4b5b63-2c8f-4e69-8e2b-8a4d9a6c7b22";
    app.attach_directly(&volume, "b6c7d8e9-2222-4333-8444-a55566667777", server)
        .await;
    let extended = app
        .volume_action(&volume, json!({"os-extend": {"new_size": 3}}))
        .await;
    assert_eq!(extended.status, 202, "{}", extended.text);
    assert!(calls_of(&app, &volume).await.is_empty());
}

backend_tests!(
    an_attached_extend_owes_nova_an_event_until_given_up,
    without_nova_nothing_is_owed,
);
