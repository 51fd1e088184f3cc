//! `bench/cycle.sql` is the attach cycle as the PostgreSQL store runs it, for pgbench
//! (`bench/pg-ceiling.sh`): this test runs one cycle the way the load generator does
//! (create with a connector, `os-complete`, delete), records every statement the store
//! logs (target `cinder_attach::sql`) and compares them, rendered for pgbench, with the
//! file. `bench/volume-cycle.sql` and `bench/snapshot-cycle.sql` are the same for the
//! volume and snapshot create/delete cycles of `cinder-attach-bench --mode volumes` and
//! `--mode snapshots`. `bench/cycle-sqlite.sql` is the attach cycle as the SQLite store
//! runs it, for `cinder-attach-bench --replay-sqlite`. `UPDATE_CYCLE_SQL=1 cargo test
//! --test it cycle_sql` rewrites them.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

use crate::support::{Backend, TestApp, TestDb};

/// A logged statement: the request that ran it, its SQL text, its arguments as literals.
type Logged = (String, String, Vec<String>);

/// The statements logged so far, each under the request that ran it.
#[derive(Clone, Default)]
struct Recorder {
    inner: Arc<Mutex<(String, Vec<Logged>)>>,
}

impl Recorder {
    fn request(&self, name: &str) {
        self.inner.lock().unwrap().0 = name.to_owned();
    }

    fn statements(&self) -> Vec<Logged> {
        self.inner.lock().unwrap().1.clone()
    }
}

#[derive(Default)]
struct Fields {
    sql: Option<String>,
    args: Option<String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.record_debug(field, &format_args!("{value}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        match field.name() {
            "sql" => self.sql = Some(text),
            "args" => self.args = Some(text),
            _ => {}
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for Recorder {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != "cinder_attach::sql" {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let args: Vec<String> = fields
            .args
            .and_then(|a| serde_json::from_str(&a).ok())
            .unwrap_or_default();
        let mut inner = self.inner.lock().unwrap();
        let request = inner.0.clone();
        inner
            .1
            .push((request, fields.sql.unwrap_or_default(), args));
    }
}

/// What stands for the run's own values in the file: pgbench's client number and a
/// random number per cycle (`:n`) make them unique per client and cycle.
struct Values {
    volume: String,
    attachment: String,
    instance: String,
    volumes_dir: String,
    /// The volume type the cycle's volumes get (the default one): looked up by name in
    /// the replay's database, whose ids are its own.
    volume_type: String,
}

fn is_quoted_uuid(literal: &str) -> bool {
    literal
        .strip_prefix('\'')
        .and_then(|rest| rest.strip_suffix('\''))
        .is_some_and(|inner| uuid::Uuid::parse_str(inner).is_ok())
}

/// The `[[message id, event type, priority], …]` argument of an event group, if
/// `literal` is one.
fn event_list(literal: &str) -> Option<Vec<(uuid::Uuid, String, String)>> {
    let inner = literal.strip_prefix('\'')?.strip_suffix('\'')?;
    serde_json::from_str(inner).ok()
}

/// `'a:b'` as `'a' || ':' || 'b'`, so pgbench does not read `:b` as a variable.
fn split_variable_like_colons(literal: &str) -> String {
    let mut out = String::new();
    let mut chars = literal.chars().peekable();
    while let Some(c) = chars.next() {
        let before_name = chars
            .peek()
            .is_some_and(|next| next.is_ascii_alphabetic() || *next == '_');
        if c == ':' && before_name {
            out.push_str("' || ':' || '");
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` with every JSON string that is a time (`"2026-12-03T06:34:32.838423+00:00"`,
/// in an events payload) made one fixed time of the same shape.
fn fixed_times(text: &str) -> String {
    const STAND_IN: &str = "2026-01-02T03:04:05.678901+00:00";
    let is_time_start = |s: &str| {
        let b = s.as_bytes();
        b.len() >= 19
            && [4, 7].iter().all(|&i| b[i] == b'-')
            && b[10] == b'T'
            && [13, 16].iter().all(|&i| b[i] == b':')
            && [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]
                .iter()
                .all(|&i| b[i].is_ascii_digit())
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('"') {
        out.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        if is_time_start(rest) {
            let end = rest.find('"').unwrap_or(rest.len());
            out.push_str(STAND_IN);
            rest = &rest[end..];
        }
    }
    out.push_str(rest);
    out
}

impl Values {
    /// `text` with the run's own path, ids and times inside it (connection info, an
    /// events payload) made fixed.
    fn stand_ins(&self, text: &str) -> String {
        let text = text
            .replace(&self.volumes_dir, "/srv/cinder-attach/volumes")
            .replace(&self.volume, "00000000-0000-4000-8000-0000000000a1")
            .replace(&self.attachment, "00000000-0000-4000-8000-0000000000b2")
            .replace(&self.volume_type, "00000000-0000-4000-8000-0000000000c3")
            .replace(&self.instance, "00000000-0000-4000-8000-0000000000d4");
        fixed_times(&text)
    }

    /// One argument, as pgbench SQL.
    fn render(&self, literal: &str) -> String {
        let quoted = |id: &str| format!("'{id}'");
        // Variables cast to text, so the file also runs as prepared statements
        // (`pgbench -M prepared`, as the store runs them).
        let (client, n) = ("cast(:client_id as text)", "cast(:n as text)");
        if literal == quoted(&self.volume) {
            format!("md5('bench' || {client})::uuid")
        } else if literal == quoted(&self.attachment) {
            format!("md5('attachment' || {client} || '-' || {n})::uuid")
        } else if literal == quoted(&self.volume_type) {
            "(select id from volume_types where name = '__DEFAULT__')".to_owned()
        } else if literal == quoted(&self.instance) {
            format!("md5('instance' || {client} || '-' || {n})")
        } else if literal.starts_with("'20") && literal.ends_with("Z'") {
            "now()".to_owned()
        } else if literal.starts_with("'req-") {
            "'req-bench'".to_owned()
        } else if is_quoted_uuid(literal) {
            // A notification event's own message id: new for every event.
            "gen_random_uuid()".to_owned()
        } else if let Some(events) = event_list(literal) {
            // The `[message id, event type, priority]` of a group of events: a fixed
            // stand-in for each message id (nothing looks events up by it).
            let pairs: Vec<_> = events
                .iter()
                .map(|(_, kind, priority)| {
                    json!(["00000000-0000-4000-8000-0000000000e1", kind, priority])
                })
                .collect();
            format!("'{}'", Value::from(pairs))
        } else {
            // Inside other text (connection info): fixed stand-ins. A space after each
            // JSON colon, because pgbench -M prepared takes `:false` for a variable;
            // any other colon before a name (a spec key such as `attach:single_writer`)
            // is concatenated in for the same reason.
            let text = self.stand_ins(literal).replace("\":", "\": ");
            split_variable_like_colons(&text)
        }
    }

    /// A statement with its `$N` replaced by its arguments, on one line.
    fn statement(&self, sql: &str, args: &[String]) -> String {
        let mut out = String::new();
        let mut chars = sql.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '$' {
                out.push(c);
                continue;
            }
            let mut number = String::new();
            while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                number.push(*d);
                chars.next();
            }
            let at: usize = number.parse().expect("a numbered placeholder");
            out.push_str(&self.render(&args[at - 1]));
        }
        let line = out.split_whitespace().collect::<Vec<_>>().join(" ");
        format!("{line};")
    }
}

/// The file for one cycle: `what` says which (a line of the header), then its statements.
fn render(what: &str, statements: &[Logged], values: &Values) -> String {
    let mut out = format!(
        "-- {what} as cinder-attach's PostgreSQL store runs it\n\
         -- ({} statements, one per line, `begin`/`commit` included). Generated by\n\
         -- tests/it/store/cycle_sql.rs from the statements the store logs; do not edit,\n\
         -- regenerate with `UPDATE_CYCLE_SQL=1 cargo test --test it cycle_sql`.\n\
         -- Volume ids are md5('bench' || client) as seeded by bench/pg-ceiling.sh; what\n\
         -- the cycle makes is md5('attachment' || client || '-' || n).\n\
         \\set n random(1, 4611686018427387904)\n",
        statements.len()
    );
    push_statements(&mut out, statements, |sql, args| {
        format!("{}\n", values.statement(sql, args))
    });
    out
}

/// Each statement as `line` writes it, under a `-- <request>` line where the request
/// that ran it changes.
fn push_statements(
    out: &mut String,
    statements: &[Logged],
    line: impl Fn(&str, &[String]) -> String,
) {
    let mut request = "";
    for (name, sql, args) in statements {
        if name != request {
            out.push_str(&format!("-- {name}\n"));
            request = name;
        }
        out.push_str(&line(sql, args));
    }
}

/// One argument of the SQLite file, as JSON: a string starting with `$` stands for a
/// value of the replay's own (`$volume`, `$attachment`, `$instance`: the client's, new per
/// cycle; `$volume_type`: the default type; `$now`; `$uuid`: a new one), `$$` for a
/// literal `$`; other strings, numbers, booleans and null are themselves.
fn sqlite_arg(literal: &str, values: &Values) -> Value {
    if let Ok(parsed) = serde_json::from_str::<Value>(literal) {
        if !parsed.is_string() {
            return parsed; // null, true, false, a number
        }
    }
    let text = literal
        .strip_prefix('\'')
        .and_then(|rest| rest.strip_suffix('\''))
        .expect("a quoted literal")
        .replace("''", "'");
    let token = |name: &str| Value::from(format!("${name}"));
    if text == values.volume {
        token("volume")
    } else if text == values.attachment {
        token("attachment")
    } else if text == values.instance {
        token("instance")
    } else if text == values.volume_type {
        token("volume_type")
    } else if chrono::DateTime::parse_from_rfc3339(&text).is_ok() {
        token("now")
    } else if text.starts_with("req-") {
        Value::from("req-bench")
    } else if uuid::Uuid::parse_str(&text).is_ok() {
        token("uuid")
    } else if let Some(events) = event_list(literal) {
        let stand_in = "00000000-0000-4000-8000-0000000000e1";
        let list: Vec<_> = events
            .iter()
            .map(|(_, k, p)| json!([stand_in, k, p]))
            .collect();
        Value::from(Value::from(list).to_string())
    } else {
        let text = values.stand_ins(&text);
        match text.strip_prefix('$') {
            Some(rest) => Value::from(format!("$${rest}")),
            None => Value::from(text),
        }
    }
}

/// The SQLite file: each statement on a line as the store prepares it (`$N` numbered
/// parameters), then `-- args` and its arguments (`sqlite_arg`).
fn render_sqlite(what: &str, statements: &[Logged], values: &Values) -> String {
    let mut out = format!(
        "-- {what} as cinder-attach's SQLite store runs it\n\
         -- ({} statements, `BEGIN`/`COMMIT` and savepoints included), for\n\
         -- `cinder-attach-bench --replay-sqlite`. Generated by tests/it/store/cycle_sql.rs\n\
         -- from the statements the store logs; do not edit, regenerate with\n\
         -- `UPDATE_CYCLE_SQL=1 cargo test --test it cycle_sql`.\n",
        statements.len()
    );
    push_statements(&mut out, statements, |sql, args| {
        let line = sql.split_whitespace().collect::<Vec<_>>().join(" ");
        let args: Vec<Value> = args.iter().map(|a| sqlite_arg(a, values)).collect();
        format!("{line};\n-- args {}\n", Value::from(args))
    });
    out
}

fn connector() -> Value {
    json!({"host": "bench-host-0", "initiator": "iqn.2004-10.org.bench:0", "ip": "10.0.0.1",
           "platform": "x86_64", "os_type": "linux", "multipath": false,
           "mountpoint": "/dev/vdb"})
}

/// One attach cycle as the load generator runs it, recorded: the statements and the
/// values that stand for the run's own.
async fn record_attach_cycle(db: TestDb) -> (Vec<Logged>, Values) {
    let app = TestApp::new(db).await;
    let volume = app.create_volume(json!({"size": 1})).await["id"]
        .as_str()
        .expect("volume id")
        .to_owned();
    let instance = uuid::Uuid::new_v4().to_string();
    let recorder = Recorder::default();
    let subscriber = tracing_subscriber::registry().with(recorder.clone());
    let attachment = {
        // This test's runtime has one thread: everything the requests do is seen here.
        let _recording = tracing::subscriber::set_default(subscriber);
        recorder.request("create");
        let body = json!({"volume_uuid": volume, "instance_uuid": instance,
                          "connector": connector()});
        let created = app.post_attachment(body, "3.44").await;
        assert_eq!(created.status, 200, "{}", created.text);
        let id = created.json["attachment"]["id"]
            .as_str()
            .expect("id")
            .to_owned();
        recorder.request("os-complete");
        assert_eq!(app.complete(&id).await.status, 204);
        recorder.request("delete");
        assert_eq!(app.delete_attachment(&id).await.status, 200);
        id
    };
    let values = Values {
        volume,
        attachment,
        instance,
        volumes_dir: app.volumes_dir.display().to_string(),
        volume_type: default_type(&app).await,
    };
    let statements = recorder.statements();
    assert!(statements.len() > 10, "{statements:?}");
    (statements, values)
}

const ATTACH_CYCLE: &str = "One attach cycle (create with a connector, os-complete, delete)";

#[tokio::test(flavor = "current_thread")]
async fn cycle_sql_is_what_the_store_runs() {
    cinder_attach::telemetry::init_for_test();
    // One recording at a time: two at once in one process see each other's work.
    let sqlite = TestDb::create(Backend::Sqlite)
        .await
        .expect("a SQLite file");
    let (statements, values) = record_attach_cycle(sqlite).await;
    let rendered = render_sqlite(ATTACH_CYCLE, &statements, &values);
    compare_with_file("cycle-sqlite.sql", &rendered);
    let Some(db) = TestDb::create(Backend::Postgres).await else {
        return;
    };
    let (statements, values) = record_attach_cycle(db).await;
    compare_with_file("cycle.sql", &render(ATTACH_CYCLE, &statements, &values));
    if let Some(db) = TestDb::create(Backend::Postgres).await {
        volume_and_snapshot_cycle_sql_is_what_the_store_runs(db).await;
    }
}

async fn default_type(app: &TestApp) -> String {
    let shown = app.get("/v3/p1/types/default").send().await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    shown.json["volume_type"]["id"]
        .as_str()
        .expect("type id")
        .to_owned()
}

/// Checks `bench/<file>` holds `generated` (or writes it, with UPDATE_CYCLE_SQL set).
fn compare_with_file(file: &str, generated: &str) {
    let path = format!("{}/bench/{file}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("UPDATE_CYCLE_SQL").is_some() {
        std::fs::write(&path, generated).expect("the cycle file written");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "bench/{file} is not what the store runs; regenerate it with \
         `UPDATE_CYCLE_SQL=1 cargo test --test it cycle_sql`. The store runs:\n{generated}"
    );
}

/// One create/delete cycle of `collection` as `cinder-attach-bench --mode volumes` (or
/// `snapshots`) runs it: create, show until `available`, delete, show until gone.
async fn made_and_removed(
    app: &TestApp,
    recorder: &Recorder,
    (collection, key): (&str, &str),
    body: Value,
) -> String {
    recorder.request("create");
    let created = app
        .send_json(axum::http::Method::POST, collection, Some(body))
        .await;
    assert_eq!(created.status, 202, "{}", created.text);
    let id = created.json[key]["id"].as_str().expect("id").to_owned();
    let path = format!("{collection}/{id}");
    // The client polls as often as timing makes it; the file holds one show each way.
    // The work behind each answer is waited for in the database (unlogged), under the
    // request that started it.
    let table = if key == "volume" {
        "volumes"
    } else {
        "snapshots"
    };
    settle(app, table, &id, Some("available")).await;
    recorder.request("show");
    assert_eq!(app.get(&path).send().await.status, 200);
    recorder.request("delete");
    let deleted = app.send_json(axum::http::Method::DELETE, &path, None).await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    settle(app, table, &id, None).await;
    recorder.request("show");
    assert_eq!(app.get(&path).send().await.status, 404);
    id
}

/// Waits until the row `id` of `table` has status `wanted` (`None`: is deleted).
async fn settle(app: &TestApp, table: &str, id: &str, wanted: Option<&str>) {
    let sql = format!("select status from {table} where id = '{id}' and deleted = false");
    for _ in 0..500 {
        if app.db.column(&sql).await.first().map(String::as_str) == wanted {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("{table} {id} did not become {wanted:?}");
}

/// The volume and snapshot cycles (run after the attach cycle, in the same test: two
/// recordings at once in one process see each other's transactions).
async fn volume_and_snapshot_cycle_sql_is_what_the_store_runs(db: TestDb) {
    let app = TestApp::new(db).await;
    let volume = app.create_volume(json!({"size": 1})).await["id"]
        .as_str()
        .expect("volume id")
        .to_owned();
    let volume_type = default_type(&app).await;
    let cycles = [
        (
            "volume-cycle.sql",
            "One volume cycle (create 1 GiB, show, delete, show)",
            ("/v3/p1/volumes", "volume"),
            json!({"volume": {"size": 1, "name": "bench-cycle"}}),
        ),
        (
            "snapshot-cycle.sql",
            "One snapshot cycle (create of the client's volume, show, delete, show)",
            ("/v3/p1/snapshots", "snapshot"),
            json!({"snapshot": {"volume_id": volume, "name": "bench-cycle"}}),
        ),
    ];
    for (file, what, collection, body) in cycles {
        let recorder = Recorder::default();
        let subscriber = tracing_subscriber::registry().with(recorder.clone());
        let made = {
            let _recording = tracing::subscriber::set_default(subscriber);
            made_and_removed(&app, &recorder, collection, body).await
        };
        let values = Values {
            volume: volume.clone(),
            // What the cycle makes takes the place an attachment has in the attach cycle.
            attachment: made,
            instance: uuid::Uuid::nil().to_string(),
            volumes_dir: app.volumes_dir.display().to_string(),
            volume_type: volume_type.clone(),
        };
        let statements = recorder.statements();
        assert!(statements.len() > 3, "{statements:?}");
        compare_with_file(file, &render(what, &statements, &values));
    }
}
