//! `import-cinder` against a database the real Cinder 29 made: `tests/cinder_import/
//! cinder29.sql` is `cinder-manage db sync` plus types, QoS, quotas, volumes, a snapshot
//! and attachments made through Cinder's own API (`make-fixture.sh`). The dump is loaded
//! into a fresh PostgreSQL database; the import runs dry, for real, and again; then every
//! row Cinder holds is compared with what this service shows through its API, and the
//! imported attachments are ended here.

use std::collections::{BTreeMap, BTreeSet};

use axum::http::Method;
use cinder_attach::commands::check::{self, CheckedBackend};
use cinder_attach::commands::import_cinder::{self, ImportReport, Source};
use serde_json::{json, Value};
use sqlx::Connection;
use uuid::Uuid;

use crate::support::TestApp;

mod cinder_db;

pub(crate) use cinder_db::CinderDb;
use cinder_db::Dialect;

pub(crate) const P1: &str = "3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60";
const P2: &str = "0b1c2d3e4f5061728394a5b6c7d8e9f0";

async fn import(app: &TestApp, cinder: &CinderDb, dry_run: bool) -> ImportReport {
    import_onto(app, cinder, "file", dry_run).await
}

/// Runs the import with Cinder's backend `fake` taken onto `backend`.
pub(crate) async fn import_onto(
    app: &TestApp,
    cinder: &CinderDb,
    backend: &str,
    dry_run: bool,
) -> ImportReport {
    let mapping = BTreeMap::from([("fake".to_owned(), backend.to_owned())]);
    let source = Source {
        url: &cinder.url,
        mapping: &mapping,
    };
    let backends = app.backends();
    import_cinder::run(&app.store, &backends, &source, dry_run, chrono::Utc::now())
        .await
        .expect("the import runs")
}

pub(crate) async fn get(app: &TestApp, project: &str, path: &str) -> Value {
    let shown = app
        .request(Method::GET, &format!("/v3/{project}{path}"))
        .token(&format!("admin:{project}"))
        .version("3.54")
        .send()
        .await;
    assert_eq!(shown.status, 200, "{path}: {}", shown.text);
    shown.json
}

pub(crate) fn text(row: &BTreeMap<String, Value>, column: &str) -> String {
    row[column].as_str().unwrap_or_default().to_owned()
}

async fn imports_a_database_made_by_cinder_29(app: TestApp) {
    imports_cinders_database(app, Dialect::Postgres).await;
}

/// The same Cinder (the same script through Cinder's API), deployed on MariaDB.
async fn imports_a_mysql_database_made_by_cinder_29(app: TestApp) {
    imports_cinders_database(app, Dialect::MySql).await;
}

async fn imports_cinders_database(app: TestApp, dialect: Dialect) {
    let Some(cinder) = CinderDb::load_into(dialect).await else {
        return;
    };
    let volumes = cinder
        .rows(
            "select id, display_name, display_description, size, status, bootable, \
                    multiattach, user_id, project_id, volume_type_id, snapshot_id, created_at \
               from volumes where not deleted",
        )
        .await;
    // The storage is where this backend looks for it, except for one volume.
    for v in &volumes {
        if text(v, "display_name") != "no-storage" {
            let path = app.volumes_dir.join(format!("volume-{}", text(v, "id")));
            std::fs::create_dir_all(&app.volumes_dir).unwrap();
            let file = std::fs::File::create(path).unwrap();
            file.set_len(text(v, "size").parse::<u64>().unwrap() << 30)
                .unwrap();
        }
    }
    let snapshots = cinder
        .rows(
            "select id, volume_id, display_name, display_description, volume_size, status, \
                    created_at from snapshots where not deleted",
        )
        .await;
    for s in &snapshots {
        let path = app.volumes_dir.join(format!("snapshot-{}", text(s, "id")));
        std::fs::File::create(path).unwrap();
    }

    // A dry run says everything and writes nothing.
    let dry = import(&app, &cinder, true).await;
    assert!(dry.dry_run);
    let listed = get(&app, P1, "/volumes?all_tenants=1").await;
    assert_eq!(listed["volumes"], json!([]), "a dry run wrote volumes");

    let first = import(&app, &cinder, false).await;
    assert_eq!(first.tally.inserted, dry.tally.inserted);
    assert_eq!(first.refused, dry.refused);
    let counts = |pairs: &[(&'static str, usize)]| pairs.iter().copied().collect();
    assert_eq!(
        first.tally.inserted,
        counts(&[
            ("attachments", 3),
            ("qos_specs", 1),
            ("quota_classes", 7),
            ("quotas", 4),
            ("snapshots", 1),
            ("volume_types", 3),
            ("volumes", 6),
        ])
    );
    let refused: BTreeMap<String, (String, String)> = first
        .refused
        .iter()
        .map(|r| {
            let name = r.name.clone().unwrap_or_default();
            (name, (r.kind.to_owned(), r.reason.clone()))
        })
        .collect();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused["no-storage"].1.contains("holds no volume-"));
    assert!(refused["broken"].1.starts_with("its status is error"));
    assert_eq!(first.mapped_types.len(), 1, "Cinder's __DEFAULT__");
    assert_eq!(first.mapped_types[0].0, "__DEFAULT__");

    // A second run finds everything there and writes nothing.
    let second = import(&app, &cinder, false).await;
    assert_eq!(second.tally.inserted, BTreeMap::new());
    assert_eq!(second.tally.already_here, first.tally.inserted);
    assert!(second.tally.kept_here.is_empty());

    compare_volumes(&app, &cinder, &volumes).await;
    compare_types_and_qos(&app, &cinder).await;
    compare_quotas(&app, &cinder).await;
    for s in &snapshots {
        let shown = &get(&app, P1, &format!("/snapshots/{}", text(s, "id"))).await["snapshot"];
        assert_eq!(shown["name"], s["display_name"]);
        assert_eq!(shown["description"], s["display_description"]);
        assert_eq!(shown["volume_id"], s["volume_id"]);
        assert_eq!(shown["size"].to_string(), text(s, "volume_size"));
        assert_eq!(shown["status"], s["status"]);
        assert_eq!(shown["metadata"], json!({"kind": "nightly"}));
        assert_eq!(shown["created_at"], json!(text(s, "created_at")));
    }
    let broken = volumes
        .iter()
        .find(|v| v["display_name"] == "broken")
        .unwrap();
    compare_and_end_attachments(&app, &cinder, &text(broken, "id")).await;
    cinder.drop().await;
}

async fn compare_volumes(app: &TestApp, cinder: &CinderDb, volumes: &[BTreeMap<String, Value>]) {
    let types: BTreeMap<String, String> = cinder
        .rows("select id, name from volume_types")
        .await
        .iter()
        .map(|t| (text(t, "id"), text(t, "name")))
        .collect();
    let metadata = cinder
        .rows("select m.volume_id, m.key, m.value from volume_metadata m where not deleted")
        .await;
    for v in volumes {
        let name = text(v, "display_name");
        if name == "no-storage" || name == "broken" {
            continue;
        }
        let project = text(v, "project_id");
        let id = text(v, "id");
        let shown = &get(app, &project, &format!("/volumes/{id}")).await["volume"];
        assert_eq!(shown["name"], v["display_name"], "{id}");
        assert_eq!(shown["description"], v["display_description"], "{id}");
        assert_eq!(shown["size"].to_string(), text(v, "size"), "{id}");
        assert_eq!(shown["status"], v["status"], "{id}");
        assert_eq!(shown["bootable"], v["bootable"], "{id}");
        assert_eq!(shown["multiattach"].to_string(), text(v, "multiattach"));
        assert_eq!(shown["user_id"], v["user_id"], "{id}");
        assert_eq!(shown["os-vol-tenant-attr:tenant_id"], v["project_id"]);
        assert_eq!(shown["snapshot_id"], v["snapshot_id"], "{id}");
        assert_eq!(shown["created_at"], json!(text(v, "created_at")));
        assert_eq!(shown["os-vol-host-attr:host"], "test-host@file#file");
        assert_eq!(
            shown["volume_type"],
            json!(types[&text(v, "volume_type_id")])
        );
        let wanted: BTreeMap<String, Value> = metadata
            .iter()
            .filter(|m| m["volume_id"] == v["id"])
            .map(|m| (text(m, "key"), m["value"].clone()))
            .collect();
        assert_eq!(shown["metadata"], json!(wanted), "{id}");
    }
}

async fn compare_types_and_qos(app: &TestApp, cinder: &CinderDb) {
    let types = cinder
        .rows(
            "select id, name, description, is_public, qos_specs_id from volume_types \
              where not deleted and name <> '__DEFAULT__'",
        )
        .await;
    let specs = cinder
        .rows(
            "select s.volume_type_id, s.key, s.value from volume_type_extra_specs s \
              where not deleted",
        )
        .await;
    for t in &types {
        let id = text(t, "id");
        let shown = &get(app, P1, &format!("/types/{id}")).await["volume_type"];
        assert_eq!(shown["name"], t["name"]);
        assert_eq!(shown["description"], t["description"]);
        assert_eq!(shown["is_public"].to_string(), text(t, "is_public"));
        assert_eq!(shown["qos_specs_id"], t["qos_specs_id"]);
        let wanted: BTreeMap<String, Value> = specs
            .iter()
            .filter(|s| s["volume_type_id"] == t["id"])
            .map(|s| (text(s, "key"), s["value"].clone()))
            .collect();
        assert_eq!(shown["extra_specs"], json!(wanted), "{}", t["name"]);
    }
    let access = cinder
        .rows("select volume_type_id, project_id from volume_type_projects where deleted = 0")
        .await;
    assert_eq!(access.len(), 1);
    let path = format!(
        "/types/{}/os-volume-type-access",
        text(&access[0], "volume_type_id")
    );
    let shown = get(app, P1, &path).await;
    assert_eq!(
        shown["volume_type_access"][0]["project_id"],
        access[0]["project_id"]
    );
    let qos = cinder
        .rows(
            "select coalesce(q.specs_id, q.id) as id, q.key, q.value \
               from quality_of_service_specs q where not deleted",
        )
        .await;
    let head = qos.iter().find(|q| q["key"] == "QoS_Specs_Name").unwrap();
    let shown = &get(app, P1, &format!("/qos-specs/{}", text(head, "id"))).await["qos_specs"];
    assert_eq!(shown["name"], head["value"]);
    let mut wanted: BTreeMap<String, Value> = qos
        .iter()
        .filter(|q| q["key"] != "QoS_Specs_Name")
        .map(|q| (text(q, "key"), q["value"].clone()))
        .collect();
    assert_eq!(shown["consumer"], wanted.remove("consumer").unwrap());
    assert_eq!(shown["specs"], json!(wanted));
}

async fn compare_quotas(app: &TestApp, cinder: &CinderDb) {
    let quotas = cinder
        .rows("select project_id, resource, hard_limit from quotas where not deleted")
        .await;
    let shown = &get(app, P1, &format!("/os-quota-sets/{P1}")).await["quota_set"];
    for q in &quotas {
        assert_eq!(
            shown[text(q, "resource")].to_string(),
            text(q, "hard_limit")
        );
    }
    let classes = cinder
        .rows("select resource, hard_limit from quota_classes where not deleted")
        .await;
    let path = "/os-quota-class-sets/default";
    let shown = &get(app, P1, path).await["quota_class_set"];
    for c in &classes {
        assert_eq!(
            shown[text(c, "resource")].to_string(),
            text(c, "hard_limit")
        );
    }
}

async fn compare_and_end_attachments(app: &TestApp, cinder: &CinderDb, broken: &str) {
    let sql = "select id, volume_id, instance_uuid, attach_status, attach_mode, \
                      connection_info, attach_time from volume_attachment where not deleted";
    let attachments = cinder.rows(sql).await;
    let mut volumes = BTreeSet::new();
    for a in &attachments {
        let id = text(a, "id");
        let shown = &get(app, P1, &format!("/attachments/{id}")).await["attachment"];
        assert_eq!(shown["status"], a["attach_status"], "{id}");
        assert_eq!(shown["instance"], a["instance_uuid"], "{id}");
        assert_eq!(shown["volume_id"], a["volume_id"], "{id}");
        assert_eq!(shown["attach_mode"], a["attach_mode"], "{id}");
        let info: Value = serde_json::from_str(&text(a, "connection_info")).unwrap();
        for (key, value) in info.as_object().unwrap() {
            assert_eq!(&shown["connection_info"][key], value, "{id}: {key}");
        }
        if a["attach_time"].is_string() {
            assert_eq!(shown["attached_at"], json!(text(a, "attach_time")));
        }
        volumes.insert(text(a, "volume_id"));
    }
    // The imported rows keep every invariant; the one finding is the storage of the
    // volume the import refused (in `error` in Cinder), which no volume here owns.
    let report = check::run(app.store.as_ref(), &checked(app)).await.unwrap();
    let findings: Vec<Value> = report
        .findings
        .iter()
        .map(|f| serde_json::to_value(f).unwrap())
        .collect();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0]["kind"], "backend_object_without_volume");
    assert_eq!(findings[0]["volume_id"], json!(broken));
    // Nova's detaches, here: each volume is available once its last attachment ends.
    for a in &attachments {
        let ended = app
            .request(
                Method::DELETE,
                &format!("/v3/{P1}/attachments/{}", text(a, "id")),
            )
            .token(&format!("admin:{P1}"))
            .version("3.54")
            .send()
            .await;
        assert_eq!(ended.status, 200, "{}", ended.text);
    }
    for volume in volumes {
        let shown = get(app, P1, &format!("/volumes/{volume}")).await;
        assert_eq!(shown["volume"]["status"], "available", "{volume}");
    }
    // A volume of the other project, of its private type, is there too.
    let listed = get(app, P2, "/volumes/detail").await;
    assert_eq!(listed["volumes"][0]["volume_type"], "private");
}

fn checked(app: &TestApp) -> Vec<CheckedBackend> {
    let spec = format!("file=file,dir={}", app.volumes_dir.display());
    check::backends_from_specs(&[spec.parse().unwrap()], "test-host", &app.store).unwrap()
}

backend_tests!(
    imports_a_database_made_by_cinder_29,
    imports_a_mysql_database_made_by_cinder_29
);

/// The subcommand as an operator runs it, from either database: a dry run over an empty
/// backend refuses every volume (exit 1) and reports as JSON; a SQLite URL cannot run
/// (exit 2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_subcommand_reports_and_exits_by_what_it_took() {
    let dir = std::env::temp_dir().join(format!("cinder-attach-import-{}", Uuid::new_v4()));
    std::fs::create_dir_all(dir.join("volumes")).unwrap();
    let database = format!("sqlite://{}", dir.join("here.db").display());
    let backend = format!("file=file,dir={}", dir.join("volumes").display());
    let run = |from: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_cinder-attach"))
            .args(["import-cinder", "--from", from, "--dry-run", "--json"])
            .args(["--database-url", &database, "--backend", &backend])
            .args(["--map-backend", "fake=file", "--host", "here"])
            .output()
            .unwrap()
    };
    let mut ran = false;
    for dialect in [Dialect::Postgres, Dialect::MySql] {
        let Some(cinder) = CinderDb::load_into(dialect).await else {
            continue;
        };
        ran = true;
        let dry = run(&cinder.url);
        assert_eq!(dry.status.code(), Some(1), "{dialect:?}: {dry:?}");
        let report: Value = serde_json::from_slice(&dry.stdout).unwrap();
        assert_eq!(report["dry_run"], true);
        assert_eq!(report["inserted"]["volume_types"], 3);
        let refused = report["refused"].as_array().unwrap();
        let kinds = |kind: &str| refused.iter().filter(|r| r["kind"] == kind).count();
        assert_eq!(
            (kinds("volume"), kinds("attachment"), kinds("snapshot")),
            (8, 3, 1),
            "{dialect:?}"
        );
        cinder.drop().await;
    }
    // Not a row written, not even the services a real run registers.
    if ran {
        let mut here = sqlx::SqliteConnection::connect(&database).await.unwrap();
        for table in ["services", "volumes", "volume_types", "quotas"] {
            let sql = format!("select count(*) from {table}");
            let (count,): (i64,) = sqlx::query_as(&sql).fetch_one(&mut here).await.unwrap();
            let seeded = i64::from(table == "volume_types"); // the migration's __DEFAULT__
            assert_eq!(count, seeded, "{table}");
        }
        let _ = here.close().await;
    }
    let sqlite = run("sqlite:///var/lib/cinder/cinder.sqlite");
    assert_eq!(sqlite.status.code(), Some(2));
    let said = String::from_utf8_lossy(&sqlite.stderr);
    assert!(
        said.contains("give a postgresql:// or mysql:// URL"),
        "{said}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
