//! The attachment writes build their payload in the service (`domain::volume_usage`);
//! the outbox's SQL (`insert_events`) builds the same payload from the rows. Each write
//! of an attach cycle here is held to what that SQL gives for the rows before it (the
//! events before the change) and after it (the events after), to the byte of every
//! time, on both stores: two attachments, metadata, and times whose fractions end in
//! zeros, have none, or are one microsecond.

use std::sync::LazyLock;

use chrono::{DateTime, TimeZone, Utc};
use serde_json::{json, Value};

use super::*;
use crate::domain::attachment::{
    AttachMode, Connecting, Connector, DriverConnection, NewAttachment, NewConnection,
};
use crate::store::attachments::AttachmentStore;
use crate::store::test_databases;

/// `insert_events`' payload alone: its `p`, selected instead of inserted.
fn payload_select(d: &JsonDialect) -> String {
    let text = insert_events(d);
    let cut = text.find("insert into outbox").expect("the insert");
    format!("{}select payload from p", &text[..cut])
}

static PAYLOAD_POSTGRES: LazyLock<String> = LazyLock::new(|| payload_select(&POSTGRES_JSON));
static PAYLOAD_SQLITE: LazyLock<String> = LazyLock::new(|| payload_select(&SQLITE_JSON));

/// The payload the outbox's SQL builds for the rows as they are now.
async fn sql_payload<D: Database>(
    store: &SqlStore<D>,
    volume: VolumeId,
    attachment: AttachmentId,
) -> Value {
    let text: &'static str = match D::KIND {
        StoreKind::Postgres => &PAYLOAD_POSTGRES,
        StoreKind::Sqlite => &PAYLOAD_SQLITE,
    };
    let kinds = [EventKind::VolumeAttachStart];
    let sql = store
        .events_statement(text, &kinds, volume.uuid(), Some(attachment), Utc::now())
        .expect("events on");
    let (payload,): (String,) = store.db.fetch_optional(sql).await.unwrap().unwrap();
    serde_json::from_str(&payload).expect("JSON")
}

/// The payloads of the outbox rows after `seq`, in order, and the last row's `seq`.
async fn rows_after<D: Database>(store: &SqlStore<D>, seq: i64) -> (Vec<Value>, i64) {
    let sql = Sql::new("select seq, payload from outbox where seq > $1 order by seq").bind(seq);
    let rows: Vec<(i64, Value)> = store.db.fetch_all(sql).await.unwrap();
    let last = rows.last().map_or(seq, |(seq, _)| *seq);
    (rows.into_iter().map(|(_, payload)| payload).collect(), last)
}

/// The SQL names no order for a volume's attachments; the service lists them in the
/// lock's. Compared as sets.
fn sorted(mut payload: Value) -> Value {
    if let Some(Value::Array(listed)) = payload.get_mut("volume_attachment") {
        listed.sort_by_key(|a| a["id"].as_str().map(str::to_owned));
    }
    payload
}

fn at(seconds: u32, micros: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, seconds).unwrap()
        + chrono::Duration::microseconds(micros.into())
}

fn driver() -> DriverConnection {
    let mut data = serde_json::Map::new();
    data.insert("target_iqn".into(), json!("iqn.2004-10.org.test:v"));
    DriverConnection {
        driver_volume_type: "iscsi".into(),
        data,
    }
}

fn connection(
    id: AttachmentId,
    connector: Value,
    mode: AttachMode,
    by: Connecting,
    now: DateTime<Utc>,
) -> NewConnection {
    NewConnection {
        attachment_id: id,
        connector: Connector::from_json(Some(connector)).expect("an object"),
        attach_mode: mode,
        driver: driver(),
        by,
        now,
    }
}

fn reservation(
    id: AttachmentId,
    volume: VolumeId,
    server: &str,
    mode: AttachMode,
    now: DateTime<Utc>,
) -> NewAttachment {
    NewAttachment {
        id,
        volume_id: volume,
        instance_uuid: Some(server.into()),
        expected_multiattach: true,
        attach_mode: mode,
        default_max_attachments: None,
        now,
    }
}

/// A multiattach volume with two live metadata keys and a removed one.
async fn shared_volume<D: Database>(store: &SqlStore<D>) -> VolumeId {
    let volume = VolumeId::generate();
    let created = at(1, 120_000);
    let row = Sql::new(
        "insert into volumes (id, project_id, user_id, host, size, availability_zone, status, \
                              attach_status, display_name, volume_type_id, multiattach, \
                              created_at, deleted) \
         select $1, 'p1', 'u1', 'h@file#file', 1, 'nova', 'available', 'detached', \
                'shared one', id, $3, $2, false from volume_types limit 1",
    )
    .bind(volume)
    .bind(created)
    .bind(true);
    store.db.execute(row).await.expect("volume");
    let metadata = Sql::new(
        "insert into volume_metadata (volume_id, key, value, created_at, deleted) \
         values ($1, 'purpose', 'shared', $2, false), ($1, 'tier', 'gold', $2, false), \
                ($1, 'old', 'gone', $2, true)",
    )
    .bind(volume)
    .bind(created);
    store.db.execute(metadata).await.expect("metadata");
    volume
}

/// Runs `write`, then holds the rows it recorded to the SQL's payloads: the first
/// `before` of them to the rows before it, the rest to the rows after it.
async fn check<D: Database, F: std::future::Future>(
    store: &SqlStore<D>,
    seq: &mut i64,
    (volume, attachment): (VolumeId, AttachmentId),
    before: usize,
    what: &str,
    write: F,
) {
    let earlier = sql_payload(store, volume, attachment).await;
    write.await;
    let later = sql_payload(store, volume, attachment).await;
    let (recorded, last) = rows_after(store, *seq).await;
    *seq = last;
    assert!(recorded.len() > before, "{what}: {} rows", recorded.len());
    for (n, payload) in recorded.into_iter().enumerate() {
        let expected = if n < before { &earlier } else { &later };
        assert_eq!(sorted(payload), sorted(expected.clone()), "{what}, row {n}");
    }
}

async fn payloads_equal_the_sqls<D: Database>(db: D) {
    let store = SqlStore {
        db,
        events: true,
        relay_listening: Default::default(),
    };
    let volume = shared_volume(&store).await;
    let (first, second) = (AttachmentId::generate(), AttachmentId::generate());
    let mut seq = 0;
    let rw = AttachMode::ReadWrite;
    let new = reservation(first, volume, "server-a", rw, at(2, 0));
    check(&store, &mut seq, (volume, first), 0, "reserve", async {
        store.reserve_attachment(&new).await.unwrap();
    })
    .await;
    let connector = json!({"host": "h1", "mountpoint": "/dev/vdb", "mode": "rw"});
    let update = connection(first, connector, rw, Connecting::Update, at(3, 1));
    check(&store, &mut seq, (volume, first), 1, "connect", async {
        store.connect_attachment(&update).await.unwrap();
    })
    .await;
    check(&store, &mut seq, (volume, first), 0, "complete", async {
        store
            .complete_attachment(first, at(4, 500_000))
            .await
            .unwrap();
    })
    .await;
    let ro = AttachMode::ReadOnly;
    let new = reservation(second, volume, "server-b", ro, at(5, 123_456));
    let hostless = json!({"initiator": "iqn.2004-10.org.test:b", "mode": "ro"});
    let create = connection(second, hostless, ro, Connecting::NewReservation, new.now);
    check(
        &store,
        &mut seq,
        (volume, second),
        0,
        "create with a connector",
        async {
            store.reserve_connected(&new, &create).await.unwrap();
        },
    )
    .await;
    check(
        &store,
        &mut seq,
        (volume, second),
        0,
        "complete the second",
        async {
            store.complete_attachment(second, at(6, 10)).await.unwrap();
        },
    )
    .await;
    check(&store, &mut seq, (volume, first), 1, "delete", async {
        store
            .delete_attachment(first, at(7, 999_990))
            .await
            .unwrap();
    })
    .await;
    check(
        &store,
        &mut seq,
        (volume, second),
        1,
        "delete the last",
        async {
            store.delete_attachment(second, at(8, 0)).await.unwrap();
        },
    )
    .await;
}

#[tokio::test]
async fn attach_payloads_built_in_the_service_equal_the_sqls_sqlite() {
    payloads_equal_the_sqls(test_databases::sqlite().await).await;
}

#[tokio::test]
async fn attach_payloads_built_in_the_service_equal_the_sqls_postgres() {
    let Some((db, fresh)) = test_databases::FreshPostgres::create().await else {
        return;
    };
    payloads_equal_the_sqls(db).await;
    fresh.drop_it().await;
}
