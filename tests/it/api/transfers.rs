//! Volume transfers (`os-volume-transfer`, `volume-transfers` 3.55+): offer, list, show,
//! withdraw and accept; exactly one winner when accepts race each other or a delete.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::http::RequestBuilder;
use crate::support::{TestApp, TestResponse};

async fn offer(app: &TestApp, volume_id: &str, version: &str) -> TestResponse {
    app.request(Method::POST, "/v3/p1/os-volume-transfer")
        .token(MEMBER_P1)
        .version(version)
        .json(&json!({"transfer": {"volume_id": volume_id, "name": " moving "}}))
        .send()
        .await
}

/// Project p2's accept of the transfer, to send.
fn accept_request(app: &TestApp, transfer_id: &str, key: &str) -> RequestBuilder {
    app.request(
        Method::POST,
        &format!("/v3/p2/os-volume-transfer/{transfer_id}/accept"),
    )
    .token(MEMBER_P2)
    .json(&json!({"accept": {"auth_key": key}}))
}

async fn accept(app: &TestApp, transfer_id: &str, key: &str) -> TestResponse {
    accept_request(app, transfer_id, key).send().await
}

/// Offers a new volume of p1: `(volume, transfer, key)`.
async fn offered_volume(app: &TestApp) -> (String, String, String) {
    let volume = member_volume(app).await;
    let created = offer(app, &volume, "3.0").await;
    let transfer = &created.json["transfer"];
    (volume, str_of(transfer, "id"), str_of(transfer, "auth_key"))
}

async fn owner_and_status(app: &TestApp, volume: &str) -> Vec<String> {
    app.db
        .column(&format!(
            "select project_id || ' ' || status from volumes where id = '{volume}' \
             and deleted = false"
        ))
        .await
}

async fn member_volume(app: &TestApp) -> String {
    let created = app
        .request(Method::POST, "/v3/p1/volumes")
        .token(MEMBER_P1)
        .json(&json!({"volume": {"size": 2}}))
        .send()
        .await;
    assert_eq!(created.status, 202, "{}", created.text);
    str_of(&created.json["volume"], "id")
}

async fn offer_show_list_accept(app: TestApp) {
    let volume = member_volume(&app).await;
    let created = offer(&app, &volume, "3.57").await;
    assert_eq!(created.status, 202, "{}", created.text);
    let transfer = created.json["transfer"].clone();
    let id = str_of(&transfer, "id");
    let key = str_of(&transfer, "auth_key");
    assert_eq!(key.len(), 16);
    assert_eq!(transfer["name"], "moving", "names are trimmed");
    assert_eq!(transfer["volume_id"], json!(volume));
    assert_eq!(transfer["no_snapshots"], false);
    assert_eq!(transfer["source_project_id"], "p1");
    assert_eq!(transfer["destination_project_id"], Value::Null);
    assert_eq!(transfer["accepted"], false);
    assert_eq!(app.volume_status(&volume).await, "awaiting-transfer");
    let stored = app
        .db
        .column(&format!(
            "select crypt_hash from transfers where id = '{id}'"
        ))
        .await;
    assert_eq!(stored[0].len(), 40, "only the key's hash is kept");
    assert_ne!(stored[0], key);
    // Show and list: the owner's project sees it; no key again.
    let shown = app
        .get(&format!("/v3/p1/os-volume-transfer/{id}"))
        .token(MEMBER_P1)
        .send()
        .await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    assert!(shown.json["transfer"].get("auth_key").is_none());
    assert!(
        shown.json["transfer"].get("no_snapshots").is_none(),
        "3.55+"
    );
    let listed = app
        .get("/v3/p1/os-volume-transfer")
        .token(MEMBER_P1)
        .send()
        .await;
    let items = listed.json["transfers"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(
        items[0].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["id", "links", "name", "volume_id"]
    );
    let detail = app
        .get("/v3/p1/volume-transfers/detail")
        .version("3.57")
        .token(MEMBER_P1)
        .send()
        .await;
    assert_eq!(detail.json["transfers"][0]["source_project_id"], "p1");
    // The other project does not see it, and cannot take it without the key.
    app.get(&format!("/v3/p2/os-volume-transfer/{id}"))
        .token(MEMBER_P2)
        .send()
        .await
        .assert_fault(404, "itemNotFound", "could not be found");
    accept(&app, &id, "0000000000000000").await.assert_fault(
        400,
        "badRequest",
        &format!("Invalid auth key: Attempt to transfer {id} with invalid auth key."),
    );
    assert_eq!(app.volume_status(&volume).await, "awaiting-transfer");
    // With it, the volume is theirs.
    let accepted = accept(&app, &id, &key).await;
    assert_eq!(accepted.status, 202, "{}", accepted.text);
    assert_eq!(accepted.json["transfer"]["id"], json!(id));
    assert_eq!(accepted.json["transfer"]["volume_id"], json!(volume));
    let theirs = app
        .get(&format!("/v3/p2/volumes/{volume}"))
        .token(MEMBER_P2)
        .send()
        .await;
    assert_eq!(theirs.status, 200, "{}", theirs.text);
    assert_eq!(theirs.json["volume"]["status"], "available");
    assert_eq!(theirs.json["volume"]["user_id"], "eve");
    app.get(&format!("/v3/p1/volumes/{volume}"))
        .token(MEMBER_P1)
        .send()
        .await
        .assert_fault(404, "itemNotFound", "could not be found");
    // The offer is closed, and recorded as accepted.
    accept(&app, &id, &key)
        .await
        .assert_fault(404, "itemNotFound", "could not be found");
    let row = app
        .db
        .column(&format!(
            "select destination_project_id from transfers where id = '{id}' \
             and accepted = true and deleted = true"
        ))
        .await;
    assert_eq!(row, ["p2"]);
}

async fn offers_need_an_available_volume(app: TestApp) {
    let volume = member_volume(&app).await;
    app.attach_fully(&volume, I1, conn()).await;
    offer(&app, &volume, "3.0").await.assert_fault(
        400,
        "badRequest",
        "Invalid volume: status must be available",
    );
    offer(&app, "8c4a7f38-0000-4000-8000-000000000000", "3.0")
        .await
        .assert_fault(404, "itemNotFound", "could not be found");
    offer(&app, "not-a-uuid", "3.0")
        .await
        .assert_fault(400, "badRequest", "");
    // A second offer of the same volume is refused: it is no longer available.
    let other = member_volume(&app).await;
    assert_eq!(offer(&app, &other, "3.0").await.status, 202);
    offer(&app, &other, "3.0")
        .await
        .assert_fault(400, "badRequest", "status must be available");
    // `no_snapshots` belongs to the 3.55 URL.
    let body = json!({"transfer": {"volume_id": volume, "no_snapshots": true}});
    let old_url = app
        .request(Method::POST, "/v3/p1/os-volume-transfer")
        .version("3.55")
        .json(&body)
        .send()
        .await;
    assert_eq!(old_url.status, 400, "{}", old_url.text);
    let too_early = app
        .request(Method::POST, "/v3/p1/volume-transfers")
        .version("3.54")
        .json(&body)
        .send()
        .await;
    assert_eq!(too_early.status, 404, "{}", too_early.text);
}

async fn withdrawing_returns_the_volume(app: TestApp) {
    let volume = member_volume(&app).await;
    let created = offer(&app, &volume, "3.0").await;
    let id = str_of(&created.json["transfer"], "id");
    // An awaiting volume is not deleted.
    let delete = app
        .request(Method::DELETE, &format!("/v3/p1/volumes/{volume}"))
        .token(MEMBER_P1)
        .send()
        .await;
    assert_eq!(delete.status, 400, "{}", delete.text);
    let withdrawn = app
        .request(Method::DELETE, &format!("/v3/p1/os-volume-transfer/{id}"))
        .token(MEMBER_P1)
        .send()
        .await;
    assert_eq!(withdrawn.status, 202, "{}", withdrawn.text);
    assert_eq!(app.volume_status(&volume).await, "available");
    let again = app
        .request(Method::DELETE, &format!("/v3/p1/os-volume-transfer/{id}"))
        .token(MEMBER_P1)
        .send()
        .await;
    again.assert_fault(404, "itemNotFound", "could not be found");
}

/// A member's snapshot of `volume`: its id.
async fn snapshot_of(app: &TestApp, volume: &str) -> String {
    let snapshot = app
        .request(Method::POST, "/v3/p1/snapshots")
        .token(MEMBER_P1)
        .json(&json!({"snapshot": {"volume_id": volume}}))
        .send()
        .await;
    assert_eq!(snapshot.status, 202, "{}", snapshot.text);
    str_of(&snapshot.json["snapshot"], "id")
}

/// Accepts the transfer `created` answered with, then says whose `snapshot` is.
async fn accept_then_owner_of(
    app: &TestApp,
    created: &TestResponse,
    snapshot: &str,
) -> Vec<String> {
    assert_eq!(created.status, 202, "{}", created.text);
    let transfer = &created.json["transfer"];
    let accepted = accept(app, &str_of(transfer, "id"), &str_of(transfer, "auth_key")).await;
    assert_eq!(accepted.status, 202, "{}", accepted.text);
    app.db
        .column(&format!(
            "select project_id from snapshots where id = '{snapshot}'"
        ))
        .await
}

async fn snapshots_move_with_the_volume(app: TestApp) {
    let volume = member_volume(&app).await;
    let snapshot = snapshot_of(&app, &volume).await;
    let created = offer(&app, &volume, "3.0").await;
    assert_eq!(
        accept_then_owner_of(&app, &created, &snapshot).await,
        ["p2"]
    );
    // Without them (3.55 no_snapshots), they stay.
    let other = member_volume(&app).await;
    let kept = snapshot_of(&app, &other).await;
    let created = app
        .request(Method::POST, "/v3/p1/volume-transfers")
        .token(MEMBER_P1)
        .version("3.55")
        .json(&json!({"transfer": {"volume_id": other, "no_snapshots": true}}))
        .send()
        .await;
    assert_eq!(created.json["transfer"]["no_snapshots"], true);
    assert_eq!(accept_then_owner_of(&app, &created, &kept).await, ["p1"]);
}

async fn accepting_counts_against_the_recipients_quota(app: TestApp) {
    let volume = member_volume(&app).await;
    let created = offer(&app, &volume, "3.0").await;
    let transfer = &created.json["transfer"];
    let limited = app
        .request(Method::PUT, "/v3/p1/os-quota-sets/p2")
        .json(&json!({"quota_set": {"gigabytes": 1}}))
        .send()
        .await;
    assert_eq!(limited.status, 200, "{}", limited.text);
    let refused = accept(&app, &str_of(transfer, "id"), &str_of(transfer, "auth_key")).await;
    assert_eq!(refused.status, 413, "{}", refused.text);
    assert_eq!(app.volume_status(&volume).await, "awaiting-transfer");
    let owner = app
        .db
        .column(&format!(
            "select project_id from volumes where id = '{volume}'"
        ))
        .await;
    assert_eq!(owner, ["p1"], "nothing moved");
}

/// Six accepts with the right key at once: one takes the volume, the others find the
/// offer gone.
async fn racing_accepts_have_one_winner(app: TestApp) {
    let (volume, id, key) = offered_volume(&app).await;
    let requests: Vec<_> = (0..6)
        .map(|_| accept_request(&app, &id, &key).send())
        .collect();
    let responses = all_at_once(requests).await;
    let won = responses.iter().filter(|r| r.status == 202).count();
    let lost = responses.iter().filter(|r| r.status == 404).count();
    assert_eq!(
        (won, lost),
        (1, 5),
        "{:?}",
        responses.iter().map(|r| &r.text).collect::<Vec<_>>()
    );
    assert_eq!(owner_and_status(&app, &volume).await, ["p2 available"]);
}

/// An accept against a withdrawal and an admin's force-delete, at once: the volume ends
/// either given (and not deleted) or not given, never both.
async fn accept_races_withdrawal_and_delete(app: TestApp) {
    for _ in 0..3 {
        let (volume, id, key) = offered_volume(&app).await;
        let requests = vec![
            accept_request(&app, &id, &key).send(),
            app.request(Method::DELETE, &format!("/v3/p1/os-volume-transfer/{id}"))
                .token(MEMBER_P1)
                .send(),
        ];
        let responses = all_at_once(requests).await;
        let (accepted, withdrawn) = (responses[0].status.as_u16(), responses[1].status.as_u16());
        assert!(
            matches!((accepted, withdrawn), (202, 404) | (404, 202)),
            "{accepted} {withdrawn}: {} / {}",
            responses[0].text,
            responses[1].text
        );
        let expected = if accepted == 202 {
            "p2 available"
        } else {
            "p1 available"
        };
        assert_eq!(owner_and_status(&app, &volume).await, [expected]);
    }
    let (volume, id, key) = offered_volume(&app).await;
    let requests = vec![
        accept_request(&app, &id, &key).send(),
        app.request(Method::POST, &format!("/v3/p1/volumes/{volume}/action"))
            .json(&json!({"os-force_delete": {}}))
            .send(),
    ];
    let responses = all_at_once(requests).await;
    let accepted = responses[0].status == 202;
    let deleted = responses[1].status == 202;
    assert!(
        accepted || deleted,
        "{} / {}",
        responses[0].text,
        responses[1].text
    );
    let live = owner_and_status(&app, &volume).await;
    if accepted && deleted {
        // The delete came second, on the given volume.
        assert!(live.is_empty() || live[0].starts_with("p2"), "{live:?}");
    } else if accepted {
        assert_eq!(live, ["p2 available"]);
    } else {
        assert!(live.is_empty() || live[0] == "p1 deleting", "{live:?}");
    }
}

/// An admin's reset of an offered volume ends the offer: the volume can be offered
/// again (a 500 from the leftover row before), and the old key accepts nothing.
async fn a_reset_volume_can_be_offered_again(app: TestApp) {
    let (volume, transfer, key) = offered_volume(&app).await;
    let reset = app
        .volume_action(&volume, json!({"os-reset_status": {"status": "available"}}))
        .await;
    assert_eq!(reset.status, 202, "{}", reset.text);
    app.get(&format!("/v3/p1/os-volume-transfer/{transfer}"))
        .send()
        .await
        .assert_fault(404, "itemNotFound", "could not be found");
    let again = offer(&app, &volume, "3.0").await;
    assert_eq!(again.status, 202, "{}", again.text);
    assert_eq!(
        owner_and_status(&app, &volume).await,
        ["p1 awaiting-transfer"]
    );
    accept(&app, &transfer, &key)
        .await
        .assert_fault(404, "itemNotFound", "could not be found");
    let fresh = &again.json["transfer"];
    let taken = accept(&app, &str_of(fresh, "id"), &str_of(fresh, "auth_key")).await;
    assert_eq!(taken.status, 202, "{}", taken.text);
    assert_eq!(owner_and_status(&app, &volume).await, ["p2 available"]);
    // A reset that keeps the offer's status keeps the offer.
    let kept = member_volume(&app).await;
    let offered = offer(&app, &kept, "3.0").await;
    let reset = app
        .volume_action(
            &kept,
            json!({"os-reset_status": {"status": "awaiting-transfer"}}),
        )
        .await;
    assert_eq!(reset.status, 202, "{}", reset.text);
    let id = str_of(&offered.json["transfer"], "id");
    let shown = app
        .get(&format!("/v3/p1/os-volume-transfer/{id}"))
        .send()
        .await;
    assert_eq!(shown.status, 200, "{}", shown.text);
}

/// A unique constraint that a request still meets answers 409 in Cinder's fault shape,
/// never a 500, and writes nothing.
async fn a_constraint_violation_is_a_conflict(app: TestApp) {
    let volume = member_volume(&app).await;
    // A leftover offer row the API did not write (as a reset by an older version left).
    app.db
        .execute(&format!(
            "insert into transfers (id, volume_id, display_name, salt, crypt_hash, \
                                    no_snapshots, source_project_id, accepted, created_at, \
                                    deleted) \
             values ('{}', '{volume}', 'old', 's', 'h', false, 'p1', false, \
                     '2026-01-01 00:00:00', false)",
            uuid::Uuid::new_v4()
        ))
        .await
        .unwrap();
    offer(&app, &volume, "3.0")
        .await
        .assert_fault(409, "conflictingRequest", "Resource conflict");
    assert_eq!(owner_and_status(&app, &volume).await, ["p1 available"]);
}

backend_tests!(
    a_reset_volume_can_be_offered_again,
    a_constraint_violation_is_a_conflict,
    offer_show_list_accept,
    offers_need_an_available_volume,
    withdrawing_returns_the_volume,
    snapshots_move_with_the_volume,
    accepting_counts_against_the_recipients_quota,
    racing_accepts_have_one_winner,
    accept_races_withdrawal_and_delete,
);
