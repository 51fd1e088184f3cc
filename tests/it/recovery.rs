//! Start-up recovery: volumes a previous run left `creating` or `deleting` (a crash in
//! the middle of backend work) are finished once they are older than the grace period;
//! younger ones, possibly another live process's work, are left alone.

use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::support::process::ServerProcess;
use crate::support::{Backend, TestDb};

fn insert(id: Uuid, status: &str, created_at: &str) -> String {
    format!(
        "insert into volumes (id, project_id, user_id, host, size, availability_zone, status, attach_status,
                              volume_type_id, created_at, deleted)
         values ('{id}', 'p1', 'admin', 'test-host@file#file', 1, 'nova', '{status}', 'detached',
                 (select id from volume_types where name = '__DEFAULT__'), '{created_at}', false);"
    )
}

async fn interrupted_work_is_finished(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    db.store().await.close().await;
    let volumes = std::env::temp_dir().join(format!("cinder-attach-recovery-{}", Uuid::new_v4()));
    std::fs::create_dir_all(&volumes).expect("dir");
    let (creating, deleting, young) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    db.execute(&format!(
        "{}{}{}",
        insert(creating, "creating", "2020-01-01T00:00:00+00:00"),
        insert(deleting, "deleting", "2020-01-01T00:00:00+00:00"),
        insert(young, "creating", "2999-01-01T00:00:00+00:00"),
    ))
    .await
    .expect("fixture");
    let leftover = volumes.join(format!("volume-{deleting}"));
    std::fs::write(&leftover, b"").expect("file");

    let server = ServerProcess::start_with(&db.url, &volumes, &["--request-timeout", "1"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (created, shown) = server.send("GET", &format!("/v3/p1/volumes/{creating}"), None);
        let (gone, _) = server.send("GET", &format!("/v3/p1/volumes/{deleting}"), None);
        if created == 200 && shown["volume"]["status"] == "error" && gone == 404 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "recovery did not happen: {shown}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !leftover.exists(),
        "the interrupted delete removed the data"
    );
    let (_, young_shown) = server.send("GET", &format!("/v3/p1/volumes/{young}"), None);
    assert_eq!(
        young_shown["volume"]["status"], "creating",
        "recent work is left alone"
    );
    let (_, messages) = server.send("GET", "/v3/p1/messages", None);
    assert!(
        messages.to_string().contains(&creating.to_string()),
        "the user is told why: {messages}"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&volumes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupted_work_is_finished_sqlite() {
    tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(interrupted_work_is_finished(Backend::Sqlite))
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupted_work_is_finished_postgres() {
    tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(interrupted_work_is_finished(Backend::Postgres))
    });
}
