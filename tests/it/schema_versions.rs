//! Which schema a binary serves: `migrate --check` and its exit status, a newer version's
//! expand steps served as they are, and a newer contract step refused at start with a
//! clear message and nothing written.

use std::process::{Command, Output};

use serde_json::json;
use uuid::Uuid;

use crate::support::process::ServerProcess;
use crate::support::{Backend, TestDb};

fn cinder_attach(args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cinder-attach"));
    for (key, _) in std::env::vars() {
        if key.starts_with("CINDER_ATTACH_") {
            command.env_remove(key);
        }
    }
    command.args(args).output().expect("binary runs")
}

fn check(url: &str) -> (i32, String) {
    let out = cinder_attach(&["migrate", "--check", "--database-url", url]);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().expect("exit status"), text)
}

/// Records a migration as a newer version's migrator would have.
async fn apply_newer(db: &TestDb, version: i64, description: &str) {
    let checksum = match db.backend {
        Backend::Sqlite => "x'00'",
        Backend::Postgres => "'\\x00'::bytea",
    };
    db.execute(&format!(
        "insert into _sqlx_migrations (version, description, success, checksum, execution_time) \
         values ({version}, '{description}', true, {checksum}, 1)"
    ))
    .await
    .expect("record a newer migration");
}

async fn schema_versions(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let known = std::fs::read_dir(format!("{}/migrations/sqlite", env!("CARGO_MANIFEST_DIR")))
        .expect("migrations")
        .count();

    // A database nothing made yet lacks every migration: exit 1, each listed.
    let (code, text) = check(&db.url);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(&format!("0 of this version's {known} migrations applied")),
        "{text}"
    );
    assert!(text.contains("pending: 0001 initial schema"), "{text}");
    if backend == Backend::Sqlite {
        let path = db.url.trim_start_matches("sqlite://");
        assert!(
            !std::path::Path::new(path).exists(),
            "a check makes no database"
        );
    }
    // `serve --migrate skip` refuses it and says what to do.
    let out = cinder_attach(&[
        "serve",
        "--migrate",
        "skip",
        "--listen",
        "127.0.0.1:0",
        "--database-url",
        &db.url,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("cinder-attach migrate"), "{stderr}");

    // Migrated: exit 0.
    let out = cinder_attach(&["migrate", "--database-url", &db.url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, text) = check(&db.url);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(&format!(
            "{known} of this version's {known} migrations applied"
        )),
        "{text}"
    );

    // A newer version's expand step: checked 0, served (with --migrate auto too), and
    // `migrate` has nothing to do.
    apply_newer(&db, 9001, "expand outbox events").await;
    let (code, text) = check(&db.url);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("applied by a newer version (served as it is): 9001 expand outbox events"),
        "{text}"
    );
    let out = cinder_attach(&["migrate", "--database-url", &db.url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let volumes = std::env::temp_dir().join(format!("cinder-attach-sv-{}", Uuid::new_v4()));
    let server = ServerProcess::start(&db.url, &volumes);
    let (status, created) = server.send(
        "POST",
        "/v3/p1/volumes",
        Some(&json!({"volume": {"size": 1}})),
    );
    assert_eq!(status, 202, "{created}");
    drop(server);

    // A newer contract step: checked 3; neither serve nor migrate starts, and the
    // database keeps what it had.
    apply_newer(&db, 9002, "contract drop event rows").await;
    let (code, text) = check(&db.url);
    assert_eq!(code, 3, "{text}");
    assert!(
        text.contains("refused: 9002 contract drop event rows"),
        "{text}"
    );
    for args in [
        vec![
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--database-url",
            &db.url,
        ],
        vec!["migrate", "--database-url", &db.url],
    ] {
        let out = cinder_attach(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} started");
        assert!(
            stderr.contains(&format!(
                "this version ({}) cannot serve this database: 9002 contract drop event rows",
                env!("CARGO_PKG_VERSION")
            )),
            "{stderr}"
        );
    }
    assert_eq!(
        db.column("select cast(count(*) as text) from volumes")
            .await,
        vec!["1".to_owned()]
    );
    assert_eq!(
        db.column("select cast(count(*) as text) from _sqlx_migrations")
            .await,
        vec![(known + 2).to_string()]
    );

    // An unreachable database: exit 2.
    let (code, text) = check("postgres://nobody@127.0.0.1:1/none");
    assert_eq!(code, 2, "{text}");
    let _ = std::fs::remove_dir_all(volumes);
}

process_tests!(schema_versions);
