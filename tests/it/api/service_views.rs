//! The admin views: `os-services`, `scheduler-stats/get_pools`, `capabilities/{host}`,
//! `os-hosts`, in Cinder's shapes and under its admin-only policies.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::TestApp;

fn backend_host(app: &TestApp) -> String {
    app.backends().iter().next().unwrap().host.clone()
}

async fn services_list_and_filter(app: TestApp) {
    let volume_host = backend_host(&app);
    let node = volume_host.split('@').next().unwrap().to_owned();
    let listed = app.get("/v3/p1/os-services").send().await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let services = listed.json["services"].as_array().unwrap().clone();
    let volume = services
        .iter()
        .find(|s| s["binary"] == "cinder-volume")
        .expect("the backend's service");
    assert_eq!(volume["host"], json!(volume_host));
    assert_eq!(volume["zone"], "nova");
    assert_eq!(volume["status"], "enabled");
    assert_eq!(volume["state"], "up");
    assert_eq!(volume["disabled_reason"], Value::Null);
    assert_eq!(volume["frozen"], false);
    assert_eq!(volume["replication_status"], "disabled");
    assert!(volume["updated_at"].is_string());
    let scheduler = services
        .iter()
        .find(|s| s["binary"] == "cinder-scheduler")
        .expect("the scheduler");
    assert_eq!(scheduler["host"], json!(node));
    assert!(scheduler.get("frozen").is_none());
    // The process keeps the backups too, under the same host name as Cinder's
    // cinder-backup.
    let backup = services
        .iter()
        .find(|s| s["binary"] == "cinder-backup")
        .expect("the backup service");
    assert_eq!(backup["host"], json!(node));
    assert_eq!(backup["state"], "up");
    assert_eq!(backup["status"], "enabled");
    assert!(backup.get("frozen").is_none());
    // `host` matches the host and its backends, `binary` the binary.
    let on_node = app
        .get(&format!("/v3/p1/os-services?host={node}"))
        .send()
        .await;
    let binaries: Vec<&str> = on_node.json["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["binary"].as_str().unwrap())
        .collect();
    assert_eq!(
        binaries,
        ["cinder-volume", "cinder-scheduler", "cinder-backup"]
    );
    let volumes_only = app
        .get(&format!(
            "/v3/p1/os-services?host={node}&binary=cinder-volume"
        ))
        .send()
        .await;
    assert_eq!(volumes_only.json["services"].as_array().unwrap().len(), 1);
    let nothing = app.get("/v3/p1/os-services?host=elsewhere").send().await;
    assert_eq!(nothing.json, json!({"services": []}));
    // Cluster names appear from 3.7.
    let v37 = app.get("/v3/p1/os-services").version("3.7").send().await;
    assert_eq!(v37.json["services"][0]["cluster"], Value::Null);
    // Admin only.
    app.get("/v3/p1/os-services")
        .token(MEMBER_P1)
        .send()
        .await
        .assert_fault(403, "forbidden", "volume_extension:services:index");
}

async fn enable_disable_freeze(app: TestApp) {
    let host = backend_host(&app);
    let put = |action: &str, body: Value| {
        app.request(Method::PUT, &format!("/v3/p1/os-services/{action}"))
            .json(&body)
            .send()
    };
    let disabled = put(
        "disable-log-reason",
        json!({"host": host, "binary": "cinder-volume", "disabled_reason": "maintenance"}),
    )
    .await;
    assert_eq!(disabled.status, 200, "{}", disabled.text);
    assert_eq!(
        disabled.json,
        json!({"host": host, "service": "", "binary": "cinder-volume", "status": "disabled",
               "disabled": true, "disabled_reason": "maintenance"})
    );
    let listed = app
        .get("/v3/p1/os-services?binary=cinder-volume")
        .send()
        .await;
    assert_eq!(listed.json["services"][0]["status"], "disabled");
    assert_eq!(listed.json["services"][0]["disabled_reason"], "maintenance");
    let enabled = put("enable", json!({"host": host, "binary": "cinder-volume"})).await;
    assert_eq!(
        enabled.json,
        json!({"host": host, "service": "", "binary": "cinder-volume", "status": "enabled",
               "disabled": false})
    );
    let listed = app
        .get("/v3/p1/os-services?binary=cinder-volume")
        .send()
        .await;
    assert_eq!(listed.json["services"][0]["disabled_reason"], Value::Null);
    // Cinder's negative cases.
    put(
        "enable",
        json!({"host": "invalid_host", "binary": "cinder-volume"}),
    )
    .await
    .assert_fault(
        404,
        "itemNotFound",
        "Could not find binary cinder-volume on host invalid_host.",
    );
    put("disable", json!({"host": host, "binary": "invalid_binary"}))
        .await
        .assert_fault(404, "itemNotFound", "Could not find binary invalid_binary");
    put(
        "disable-log-reason",
        json!({"host": host, "binary": "cinder-volume", "disabled_reason": null}),
    )
    .await
    .assert_fault(400, "badRequest", "disabled_reason");
    put("disable", json!({"host": host}))
        .await
        .assert_fault(400, "badRequest", "");
    put("freeze", json!({"host": "invalid_host"}))
        .await
        .assert_fault(400, "badRequest", "invalid_host");
    put("thaw", json!({"host": "invalid_host"}))
        .await
        .assert_fault(400, "badRequest", "invalid_host");
    assert_eq!(put("freeze", json!({"host": host})).await.status, 200);
    let frozen = app
        .get("/v3/p1/os-services?binary=cinder-volume")
        .send()
        .await;
    assert_eq!(frozen.json["services"][0]["frozen"], true);
    // A frozen backend's volumes are neither deleted nor snapshotted; creates go on.
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let frozen_fault = "Invalid input received: Modification operations are not allowed on \
                        frozen storage backends.";
    app.request(Method::DELETE, &format!("/v3/p1/volumes/{volume}"))
        .send()
        .await
        .assert_fault(400, "badRequest", frozen_fault);
    app.request(Method::POST, "/v3/p1/snapshots")
        .json(&json!({"snapshot": {"volume_id": volume}}))
        .send()
        .await
        .assert_fault(400, "badRequest", frozen_fault);
    assert_eq!(app.volume_status(&volume).await, "available");
    assert_eq!(put("thaw", json!({"host": host})).await.status, 200);
    let deleted = app
        .request(Method::DELETE, &format!("/v3/p1/volumes/{volume}"))
        .send()
        .await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    put("unknown", json!({}))
        .await
        .assert_fault(404, "itemNotFound", "Unknown action");
    app.request(Method::PUT, "/v3/p1/os-services/disable")
        .token(MEMBER_P1)
        .json(&json!({"host": host, "binary": "cinder-volume"}))
        .send()
        .await
        .assert_fault(403, "forbidden", "volume_extension:services:update");
}

async fn pools_and_capabilities_agree(app: TestApp) {
    let dir = app.volumes_dir.join("sized");
    let spec = format!(
        "sized=file,dir={},capacity_gb=10,vendor_name=Acme,capabilities.tier=gold",
        dir.display()
    );
    let app = app.with_backends(&[spec.as_str()]).await;
    app.create_volume(json!({"size": 3})).await;
    let host = backend_host(&app);
    let brief = app.get("/v3/p1/scheduler-stats/get_pools").send().await;
    assert_eq!(brief.status, 200, "{}", brief.text);
    assert_eq!(
        brief.json,
        json!({"pools": [{"name": format!("{host}#sized")}]})
    );
    let detail = app
        .get("/v3/p1/scheduler-stats/get_pools?detail=True")
        .send()
        .await;
    let capabilities = &detail.json["pools"][0]["capabilities"];
    for (key, value) in [
        ("volume_backend_name", json!("sized")),
        ("vendor_name", json!("Acme")),
        ("storage_protocol", json!("local")),
        ("pool_name", json!("sized")),
        ("total_capacity_gb", json!(10.0)),
        ("free_capacity_gb", json!(7.0)),
        ("allocated_capacity_gb", json!(3)),
        ("reserved_percentage", json!(0)),
        ("QoS_support", json!(true)),
        ("multiattach", json!(true)),
        ("thin_provisioning_support", json!(true)),
        ("tier", json!("gold")),
    ] {
        assert_eq!(capabilities[key], value, "{key}");
    }
    let shown = app.get(&format!("/v3/p1/capabilities/{host}")).send().await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    assert_eq!(
        shown.json,
        json!({
            "namespace": format!("OS::Storage::Capabilities::{host}"),
            "vendor_name": "Acme", "volume_backend_name": "sized", "pool_name": "sized",
            "driver_version": env!("CARGO_PKG_VERSION"), "storage_protocol": "local",
            "display_name": null, "description": null, "visibility": null,
            "replication_targets": [], "properties": {},
        })
    );
    // The pool's name finds it too; an unknown host does not.
    let by_pool = app
        .get(&format!("/v3/p1/capabilities/{host}%23sized"))
        .send()
        .await;
    assert_eq!(by_pool.status, 200, "{}", by_pool.text);
    app.get("/v3/p1/capabilities/nowhere")
        .send()
        .await
        .assert_fault(404, "itemNotFound", "Can't find service: nowhere");
    for path in ["scheduler-stats/get_pools", &format!("capabilities/{host}")] {
        let refused = app
            .get(&format!("/v3/p1/{path}"))
            .token(MEMBER_P1)
            .send()
            .await;
        assert_eq!(refused.status, 403, "{path}");
    }
}

async fn hosts_list_and_usage(app: TestApp) {
    let host = backend_host(&app);
    let volume = app.create_volume(json!({"size": 2})).await;
    let id = str_of(&volume, "id");
    let snapshot = app
        .request(Method::POST, "/v3/p1/snapshots")
        .json(&json!({"snapshot": {"volume_id": id}}))
        .send()
        .await;
    assert_eq!(snapshot.status, 202, "{}", snapshot.text);
    app.request(Method::POST, "/v3/p2/volumes")
        .token(MEMBER_P2)
        .json(&json!({"volume": {"size": 1}}))
        .send()
        .await;
    let listed = app.get("/v3/p1/os-hosts").send().await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let hosts = listed.json["hosts"].as_array().unwrap();
    let services: Vec<&str> = hosts
        .iter()
        .map(|h| h["service"].as_str().unwrap())
        .collect();
    assert_eq!(
        services,
        ["cinder-volume", "cinder-scheduler", "cinder-backup"],
        "the backend, the scheduler and the backup service"
    );
    let backend = hosts
        .iter()
        .find(|h| h["host_name"] == json!(host))
        .unwrap();
    assert_eq!(backend["service"], "cinder-volume");
    assert_eq!(backend["service-status"], "available");
    assert_eq!(backend["service-state"], "enabled");
    assert_eq!(backend["zone"], "nova");
    let in_east = app.get("/v3/p1/os-hosts?zone=east").send().await;
    assert_eq!(in_east.json, json!({"hosts": []}));
    let shown = app.get(&format!("/v3/p1/os-hosts/{host}")).send().await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    let resource = |project: &str, volumes: &str, gb: &str, snaps: &str, snap_gb: &str| {
        json!({"resource": {"host": host, "project": project, "volume_count": volumes,
                            "total_volume_gb": gb, "snapshot_count": snaps,
                            "total_snapshot_gb": snap_gb}})
    };
    assert_eq!(
        shown.json,
        json!({"host": [
            resource("(total)", "2", "3", "1", "2"),
            resource("p1", "1", "2", "1", "2"),
            resource("p2", "1", "1", "0", "0"),
        ]})
    );
    app.get("/v3/p1/os-hosts/nowhere")
        .send()
        .await
        .assert_fault(404, "itemNotFound", "Host nowhere could not be found.");
    app.get("/v3/p1/os-hosts")
        .token(MEMBER_P1)
        .send()
        .await
        .assert_fault(403, "forbidden", "volume_extension:hosts");
}

/// `get_pools` filters as Cinder's: from 3.28 by name and by any capability (booleans as
/// booleans, a missing capability matches nothing), from 3.35 by a volume type's extra
/// specs; before, the filters are ignored.
async fn pools_filter(app: TestApp) {
    let spec = |name: &str| {
        let dir = app.volumes_dir.join(name);
        format!("{name}=file,dir={},capabilities.tier={name}", dir.display())
    };
    let (gold, silver) = (spec("gold"), spec("silver"));
    let app = app.with_backends(&[gold.as_str(), silver.as_str()]).await;
    let node = backend_host(&app).split('@').next().unwrap().to_owned();
    let names = |query: &'static str, version: &'static str| {
        let app = &app;
        async move {
            let listed = app
                .get(&format!("/v3/p1/scheduler-stats/get_pools{query}"))
                .version(version)
                .send()
                .await;
            assert_eq!(listed.status, 200, "{query}: {}", listed.text);
            let mut names: Vec<String> = listed.json["pools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| str_of(p, "name").rsplit('#').next().unwrap().to_owned())
                .collect();
            names.sort();
            names
        }
    };
    assert_eq!(names("?tier=gold", "3.27").await, ["gold", "silver"]);
    assert_eq!(names("?tier=gold", "3.28").await, ["gold"]);
    assert_eq!(names("?tier=gold&detail=true", "3.28").await, ["gold"]);
    assert_eq!(names("?multiattach=True", "3.28").await, ["gold", "silver"]);
    assert!(names("?multiattach=false", "3.28").await.is_empty());
    assert!(names("?no_such_capability=1", "3.28").await.is_empty());
    let by_name = app
        .get(&format!(
            "/v3/p1/scheduler-stats/get_pools?name={node}@silver%23silver"
        ))
        .version("3.28")
        .send()
        .await;
    assert_eq!(
        by_name.json["pools"],
        json!([{"name": format!("{node}@silver#silver")}])
    );
    app.create_type("silvery", json!({"tier": "silver"})).await;
    assert_eq!(names("?volume_type=silvery", "3.35").await, ["silver"]);
    assert_eq!(
        names("?volume_type=silvery", "3.34").await,
        ["gold", "silver"]
    );
    app.get("/v3/p1/scheduler-stats/get_pools?volume_type=nope")
        .version("3.35")
        .send()
        .await
        .assert_fault(404, "itemNotFound", "nope");
}

/// `PUT /os-hosts/{host}`: `disable` keeps new volumes off the host's backend (a create
/// ends in `error`), `enable` lets them back; Cinder's 400s for other keys and values.
async fn hosts_update_enables_and_disables(app: TestApp) {
    let host = backend_host(&app);
    let put = |body: Value| {
        let app = &app;
        let path = format!("/v3/p1/os-hosts/{host}");
        async move { app.request(Method::PUT, &path).json(&body).send().await }
    };
    let disabled = put(json!({"status": " Disable "})).await;
    assert_eq!(disabled.status, 200, "{}", disabled.text);
    assert_eq!(disabled.json, json!({"host": host, "status": "disabled"}));
    // As os-services sees it; os-hosts lists only enabled services, as Cinder's.
    let services = app
        .get(&format!(
            "/v3/p1/os-services?host={host}&binary=cinder-volume"
        ))
        .send()
        .await;
    assert_eq!(
        services.json["services"][0]["status"], "disabled",
        "{}",
        services.text
    );
    let listed = app.get("/v3/p1/os-hosts").send().await;
    let hosts = listed.json["hosts"].as_array().unwrap();
    assert!(
        hosts.iter().all(|h| h["host_name"] != json!(host)),
        "{hosts:?}"
    );
    assert_eq!(
        app.create_volume(json!({"size": 1})).await["status"],
        "error"
    );
    let enabled = put(json!({"status": "enable"})).await;
    assert_eq!(enabled.json, json!({"host": host, "status": "enabled"}));
    assert_eq!(
        app.create_volume(json!({"size": 1})).await["status"],
        "available"
    );
    assert_eq!(put(json!({})).await.json, json!({}));
    put(json!({"maintenance_mode": "enable"}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Invalid update setting: 'maintenance_mode'",
        );
    put(json!({"status": "off"}))
        .await
        .assert_fault(400, "badRequest", "Invalid status: 'off'");
    app.request(Method::PUT, "/v3/p1/os-hosts/nowhere")
        .json(&json!({"status": "enable"}))
        .send()
        .await
        .assert_fault(404, "itemNotFound", "Host nowhere could not be found.");
    app.request(Method::PUT, &format!("/v3/p1/os-hosts/{host}"))
        .token(MEMBER_P1)
        .json(&json!({"status": "disable"}))
        .send()
        .await
        .assert_fault(403, "forbidden", "volume_extension:hosts");
}

backend_tests!(
    hosts_update_enables_and_disables,
    pools_filter,
    services_list_and_filter,
    enable_disable_freeze,
    pools_and_capabilities_agree,
    hosts_list_and_usage,
);
