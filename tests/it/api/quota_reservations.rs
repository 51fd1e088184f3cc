//! Quota held for changes still under way, as Cinder's reservations hold it: the growth
//! of an extend counts from the moment it is accepted until the new size is recorded or
//! the extend fails, so parallel extends cannot together pass a limit; a retype brings
//! the volume (and its snapshots) into the new type's own quotas.

use axum::http::Method;
use cinder_attach::domain::ids::VolumeId;
use cinder_attach::domain::quota::{QuotaDefaults, QuotaOwner};
use cinder_attach::domain::volume::VolumeStatus;
use cinder_attach::domain::Outcome;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::{TestApp, TestResponse};

async fn set_quota(app: &TestApp, project: &str, set: Value) {
    let response = app
        .request(Method::PUT, &format!("/v3/p1/os-quota-sets/{project}"))
        .json(&json!({ "quota_set": set }))
        .send()
        .await;
    assert_eq!(response.status, 200, "{}", response.text);
}

async fn member_volume(app: &TestApp, size: i64) -> String {
    let created = app
        .request(Method::POST, "/v3/p1/volumes")
        .token(MEMBER_P1)
        .json(&json!({"volume": {"size": size}}))
        .send()
        .await;
    assert_eq!(created.status, 202, "{}", created.text);
    str_of(&created.json["volume"], "id")
}

fn extend(
    app: &TestApp,
    id: &str,
    new_size: i64,
) -> impl std::future::Future<Output = TestResponse> {
    app.request(Method::POST, &format!("/v3/p1/volumes/{id}/action"))
        .token(MEMBER_P1)
        .header("OpenStack-API-Version", "volume 3.0")
        .json(&json!({"os-extend": {"new_size": new_size}}))
        .send()
}

/// `gigabytes` of p1 as `os-quota-sets?usage=True` shows it.
async fn gigabytes_usage(app: &TestApp) -> Value {
    let shown = app.get("/v3/p1/os-quota-sets/p1?usage=True").send().await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    shown.json["quota_set"]["gigabytes"].clone()
}

/// What the project's live volumes hold, summed from the rows.
async fn stored_gigabytes(app: &TestApp) -> i64 {
    let sizes = app
        .db
        .column(
            "select cast(size as text) from volumes where project_id = 'p1' and deleted = false",
        )
        .await;
    sizes.iter().map(|s| s.parse::<i64>().unwrap()).sum()
}

/// Quota 5 GiB, three 1 GiB volumes, three extends to 3 GiB at once: exactly one fits
/// (3 + 2 = 5), every round, and the project never holds more than its limit.
async fn parallel_extends_never_pass_the_gigabytes_quota(app: TestApp) {
    set_quota(&app, "p1", json!({"gigabytes": 5})).await;
    for round in 0..20 {
        let mut ids = Vec::new();
        for _ in 0..3 {
            ids.push(member_volume(&app, 1).await);
        }
        let responses = all_at_once(ids.iter().map(|id| extend(&app, id, 3)).collect()).await;
        let statuses: Vec<u16> = responses.iter().map(|r| r.status.as_u16()).collect();
        assert_eq!(
            statuses.iter().filter(|s| **s == 202).count(),
            1,
            "round {round}: {statuses:?}"
        );
        for refused in responses.iter().filter(|r| r.status != 202) {
            assert_eq!(refused.status, 413, "round {round}: {}", refused.text);
            assert!(
                refused.json["overLimit"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("exceeds allowed gigabytes quota"),
                "{}",
                refused.text
            );
        }
        assert_eq!(stored_gigabytes(&app).await, 5, "round {round}");
        assert_eq!(
            gigabytes_usage(&app).await,
            json!({"limit": 5, "in_use": 5, "reserved": 0})
        );
        for id in &ids {
            let deleted = app
                .request(Method::DELETE, &format!("/v3/p1/volumes/{id}"))
                .send()
                .await;
            assert_eq!(deleted.status, 202, "{}", deleted.text);
        }
    }
}

fn p1_owner() -> QuotaOwner {
    QuotaOwner {
        project_id: "p1".into(),
        type_name: "__DEFAULT__".into(),
        defaults: QuotaDefaults::default(),
    }
}

/// An extend the backend has not finished (as on a slow backend) holds its growth: the
/// usage shows it reserved, the next extend or create that would pass the limit is
/// refused, and an extend that fails gives it back.
async fn growth_in_flight_is_reserved_until_it_lands_or_fails(app: TestApp) {
    set_quota(&app, "p1", json!({"gigabytes": 5})).await;
    let slow = member_volume(&app, 1).await;
    let other = member_volume(&app, 1).await;
    let slow_id: VolumeId = slow.parse().unwrap();
    // The first half of an extend, as the service does it before the backend's work.
    let begun = app
        .store
        .begin_extend(slow_id, 3, false, &p1_owner(), chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(begun, Outcome::Done(()));
    assert_eq!(
        gigabytes_usage(&app).await,
        json!({"limit": 5, "in_use": 2, "reserved": 2})
    );
    extend(&app, &other, 3).await.assert_fault(
        413,
        "overLimit",
        "Requested volume or snapshot exceeds allowed gigabytes quota. Requested 2G, quota is \
         5G and 4G has been consumed.",
    );
    let create = app
        .request(Method::POST, "/v3/p1/volumes")
        .token(MEMBER_P1)
        .json(&json!({"volume": {"size": 2}}))
        .send()
        .await;
    assert_eq!(create.status, 413, "{}", create.text);
    // A limit below what is used and reserved is refused as well.
    let lowered = app
        .request(Method::PUT, "/v3/p1/os-quota-sets/p1")
        .json(&json!({"quota_set": {"gigabytes": 3}}))
        .send()
        .await;
    assert_eq!(lowered.status, 400, "{}", lowered.text);

    // The backend fails: the volume is `error_extending` and the growth is released.
    let failed = app
        .store
        .transition_volume(
            slow_id,
            VolumeStatus::Extending,
            VolumeStatus::ErrorExtending,
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    assert_eq!(failed, Outcome::Done(()));
    assert_eq!(
        gigabytes_usage(&app).await,
        json!({"limit": 5, "in_use": 2, "reserved": 0})
    );
    assert_eq!(extend(&app, &other, 3).await.status, 202);
    assert_eq!(stored_gigabytes(&app).await, 4);
    let reserved = app
        .db
        .column("select cast(reserved_growth as text) from volumes where deleted = false")
        .await;
    assert_eq!(reserved, ["0", "0"]);
}

/// An admin's reset of a volume stuck `extending` releases what it reserved.
async fn reset_status_releases_a_stuck_reservation(app: TestApp) {
    set_quota(&app, "p1", json!({"gigabytes": 4})).await;
    let stuck = member_volume(&app, 1).await;
    let stuck_id: VolumeId = stuck.parse().unwrap();
    let begun = app
        .store
        .begin_extend(stuck_id, 4, false, &p1_owner(), chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(begun, Outcome::Done(()));
    // 1 GiB used and 3 reserved: no room for one more.
    let create = || {
        app.request(Method::POST, "/v3/p1/volumes")
            .token(MEMBER_P1)
            .json(&json!({"volume": {"size": 1}}))
            .send()
    };
    assert_eq!(create().await.status, 413);
    let reset = app
        .volume_action(&stuck, json!({"os-reset_status": {"status": "available"}}))
        .await;
    assert_eq!(reset.status, 202, "{}", reset.text);
    assert_eq!(
        gigabytes_usage(&app).await,
        json!({"limit": 4, "in_use": 1, "reserved": 0})
    );
    assert_eq!(create().await.status, 202);
}

/// Retype reserves the new type's own quotas for the volume and its snapshots, as
/// Cinder's retype does; a type without limits of its own takes anything.
async fn retype_checks_the_new_types_quotas(app: TestApp) {
    app.create_type("gold", json!({})).await;
    set_quota(
        &app,
        "p1",
        json!({"volumes_gold": 1, "gigabytes_gold": 3, "snapshots_gold": 1}),
    )
    .await;
    let big = member_volume(&app, 4).await;
    let small = member_volume(&app, 1).await;
    let retype = |id: &str| {
        app.request(Method::POST, &format!("/v3/p1/volumes/{id}/action"))
            .token(MEMBER_P1)
            .json(&json!({"os-retype": {"new_type": "gold"}}))
            .send()
    };
    retype(&big).await.assert_fault(
        413,
        "overLimit",
        "Requested volume or snapshot exceeds allowed gigabytes_gold quota. Requested 4G, \
         quota is 3G and 0G has been consumed.",
    );
    // With a 1 GiB snapshot the small volume brings 2 GiB: it fits.
    let snapshot = app
        .request(Method::POST, "/v3/p1/snapshots")
        .token(MEMBER_P1)
        .json(&json!({"snapshot": {"volume_id": small}}))
        .send()
        .await;
    assert_eq!(snapshot.status, 202, "{}", snapshot.text);
    assert_eq!(retype(&small).await.status, 202);
    let shown = app.get("/v3/p1/os-quota-sets/p1?usage=True").send().await;
    let set = &shown.json["quota_set"];
    assert_eq!(set["volumes_gold"]["in_use"], 1);
    assert_eq!(set["gigabytes_gold"]["in_use"], 2);
    assert_eq!(set["snapshots_gold"]["in_use"], 1);
    // The type's one volume is taken now.
    let third = member_volume(&app, 1).await;
    retype(&third).await.assert_fault(
        413,
        "overLimit",
        "Maximum number of volumes allowed (1) exceeded for quota 'volumes_gold'.",
    );
    assert_eq!(
        app.db
            .column(&format!(
                "select t.name from volumes v join volume_types t on t.id = v.volume_type_id \
                  where v.id = '{third}'"
            ))
            .await,
        ["__DEFAULT__"]
    );
}

backend_tests!(
    parallel_extends_never_pass_the_gigabytes_quota,
    growth_in_flight_is_reserved_until_it_lands_or_fails,
    reset_status_releases_a_stuck_reservation,
    retype_checks_the_new_types_quotas,
);
