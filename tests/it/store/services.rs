//! Backend registration: one stable uuid per host, however often a process starts.

use chrono::Utc;
use cinder_attach::domain::ids::ServiceId;
use cinder_attach::store::ServiceRegistration;
use serde_json::json;

use crate::support::TestApp;

fn registration(host: &str) -> ServiceRegistration {
    ServiceRegistration {
        new_uuid: ServiceId::generate(),
        host: host.to_owned(),
        binary: "cinder-volume",
        backend_name: "b".to_owned(),
        driver: "file".to_owned(),
        availability_zone: "nova".to_owned(),
        capabilities: json!({"multiattach": true}),
        now: Utc::now(),
    }
}

async fn service_uuid_is_stable(app: TestApp) {
    let first = app
        .store
        .register_service(&registration("h@b"))
        .await
        .unwrap();
    let again = app
        .store
        .register_service(&registration("h@b"))
        .await
        .unwrap();
    assert_eq!(first, again, "a restart keeps the uuid");
    let other = app
        .store
        .register_service(&registration("h@c"))
        .await
        .unwrap();
    assert_ne!(first, other);
}

async fn concurrent_registrations_agree(app: TestApp) {
    let store = app.store.clone();
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.register_service(&registration("h@race")).await })
        })
        .collect();
    let mut uuids = Vec::new();
    for task in tasks {
        uuids.push(task.await.unwrap().unwrap());
    }
    uuids.dedup();
    assert_eq!(uuids.len(), 1, "every process sees the same uuid");
    let rows = app
        .db
        .column("select host from services where host = 'h@race' and deleted = false")
        .await;
    assert_eq!(rows.len(), 1);
}

backend_tests!(service_uuid_is_stable, concurrent_registrations_agree);
