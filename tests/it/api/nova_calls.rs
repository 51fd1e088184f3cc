//! Calls owed to Nova, recorded with the change that owes them. Here Nova does not answer
//! (its Keystone and its endpoint are closed ports): the call is tried again after a wait,
//! then given up with Cinder's user message, and the volume is never held by it. A real
//! Nova takes the same calls in tests/clients/test_nova.py and tempest's compute tests.

use std::sync::Arc;
use std::time::Duration;

use axum::http::Method;
use cinder_attach::auth::catalog::CatalogEntry;
use cinder_attach::auth::keystone::{KeystoneAuth, KeystoneConfig};
use cinder_attach::auth::keystone_tls::KeystoneTls;
use cinder_attach::compute::{Nova, NovaConfig};
use cinder_attach::policy::{Policy, PolicyEngine};
use cinder_attach::service::Settings;
use serde_json::json;

use crate::support::helpers::{conn, str_of, I1, I2};
use crate::support::TestApp;

/// A port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

pub(crate) fn silent_nova() -> Arc<Nova> {
    nova_at(closed_port(), closed_port(), Duration::from_secs(2))
}

/// A Nova whose Keystone and endpoint are the given ports on loopback.
fn nova_at(keystone_port: u16, nova_port: u16, timeout: Duration) -> Arc<Nova> {
    let keystone = KeystoneConfig {
        url: format!("http://127.0.0.1:{keystone_port}/v3"),
        username: "nova".into(),
        password: "x".into(),
        project_name: "service".into(),
        user_domain: "Default".into(),
        project_domain: "Default".into(),
        cache_seconds: 0,
        cache_size: 0,
        negative_cache_seconds: 0,
        timeout,
        tls: KeystoneTls::default(),
    };
    let policy = Arc::new(PolicyEngine::new(Policy::with_defaults()));
    let login = Arc::new(KeystoneAuth::new(keystone, policy).unwrap());
    Arc::new(Nova::new(NovaConfig {
        login,
        endpoint: Some(format!("http://127.0.0.1:{nova_port}/v2.1")),
        catalog: CatalogEntry::parse("compute::publicURL", None).unwrap(),
        service_token: None,
        timeout,
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

/// A port that takes connections and never answers on them.
fn hanging_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().collect();
        drop(held);
    });
    port
}

/// A process killed while it sends a call leaves the call leased; the lease covers one
/// try ([nova] timeout for the token, then for the call) and the settling, so a process
/// started again sends it soon after, not minutes later.
async fn a_call_whose_sender_died_is_sent_again_once_its_try_is_over(app: TestApp) {
    let hanging = hanging_port();
    let nova = nova_at(hanging, hanging, Duration::from_secs(1));
    assert_eq!(nova.try_limit(), Duration::from_secs(2));
    let app = app.with_settings(Settings {
        nova: Some(nova.clone()),
        ..Settings::default()
    });
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let server = "6d4b5b63-2c8f-4e69-8e2b-8a4d9f6c7b22";
    app.attach_directly(&volume, "b6c7d8e9-2222-4333-8444-a55566667777", server)
        .await;
    let extended = app
        .volume_action(&volume, json!({"os-extend": {"new_size": 2}}))
        .await;
    assert_eq!(extended.status, 202, "{}", extended.text);

    // The first relay takes the call and is killed while Nova keeps it waiting.
    let service = app.state.service.clone();
    let first = {
        let nova = nova.clone();
        tokio::spawn(async move { service.call_nova_once(&nova).await })
    };
    let taken_at = std::time::Instant::now();
    tokio::time::sleep(Duration::from_millis(500)).await;
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled());
    assert_eq!(calls_of(&app, &volume).await[0][2..], ["pending", "0"]);

    // Another relay finds it leased, then takes it once the lease has run out (2 s of
    // try and 10 of settling; it was 120 s).
    let service = &app.state.service;
    while service.call_nova_once(&nova).await.unwrap() == 0 {
        assert!(
            taken_at.elapsed() < Duration::from_secs(25),
            "the dead relay's lease still holds the call"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let waited = taken_at.elapsed();
    assert!(
        waited >= Duration::from_secs(11),
        "taken while leased: {waited:?}"
    );
    // The try against a Nova that never answers ends within its limit, to be tried again.
    assert_eq!(calls_of(&app, &volume).await[0][2..], ["pending", "1"]);
    assert!(taken_at.elapsed() - waited < Duration::from_secs(3));
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

/// Cinder's guard (bug #2004555), with a Nova that does not answer: a user's delete of
/// an attachment connected to a server waits for Nova's word, so it is refused (503) and
/// nothing changes; a request with a service token's service role, and an attachment no
/// server was connected through, go ahead without asking.
async fn a_users_detach_of_a_servers_attachment_waits_for_novas_word(app: TestApp) {
    let app = app.with_settings(Settings {
        nova: Some(silent_nova()),
        ..Settings::default()
    });
    let multiattach = app.create_multiattach_type("shared").await;
    let volume = str_of(
        &app.create_volume(json!({"size": 1, "volume_type": multiattach}))
            .await,
        "id",
    );
    let used = app.attach_fully(&volume, I1, conn()).await;
    let user_delete = |id: String| {
        app.request(Method::DELETE, &format!("/v3/p1/attachments/{id}"))
            .version("3.44")
    };
    let refused = user_delete(used.clone()).send().await;
    assert_eq!(refused.status, 503, "{}", refused.text);
    assert!(
        refused.text.contains(&format!("instance {I1} still uses")),
        "{}",
        refused.text
    );
    assert_eq!(app.live_attachments(&volume).await, 1);
    assert_eq!(app.volume_status(&volume).await, "in-use");
    // A reservation was never connected: nothing to ask Nova.
    let reserved = app.attach(&volume, Some(I2), None).await;
    let unconnected = user_delete(reserved).send().await;
    assert_eq!(unconnected.status, 200, "{}", unconnected.text);
    // Without an attachment named, a volume with two is refused outright (409).
    let second = app.attach_fully(&volume, I2, conn()).await;
    let terminate = app
        .volume_action(
            &volume,
            json!({"os-terminate_connection": {"connector": conn()}}),
        )
        .await;
    assert_eq!(terminate.status, 409, "{}", terminate.text);
    assert_eq!(
        terminate.json["conflictingRequest"]["message"],
        "Detach volume from instance  using the Compute API"
    );
    let detach = app
        .volume_action(&volume, json!({"os-detach": {"attachment_id": second}}))
        .await;
    assert_eq!(detach.status, 503, "{}", detach.text);
    assert_eq!(app.live_attachments(&volume).await, 2);
    // With a service token's service role (noauth takes X-Service-Roles as a trusted
    // front would set it), the deletes go ahead.
    for id in [used, second] {
        let by_nova = user_delete(id)
            .header("x-service-roles", "service")
            .send()
            .await;
        assert_eq!(by_nova.status, 200, "{}", by_nova.text);
    }
    assert_eq!(app.volume_status(&volume).await, "available");
}

backend_tests!(
    an_attached_extend_owes_nova_an_event_until_given_up,
    without_nova_nothing_is_owed,
    a_users_detach_of_a_servers_attachment_waits_for_novas_word,
    a_call_whose_sender_died_is_sent_again_once_its_try_is_over,
);
