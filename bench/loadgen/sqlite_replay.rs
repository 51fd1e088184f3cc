//! `--replay-sqlite FILE --database DB`: the ceiling of the SQLite store for one cycle.
//!
//! Replays the statements the SQLite store runs for one cycle (`bench/cycle-sqlite.sql`,
//! generated from the store's own statement log) for CLIENTS clients from one thread,
//! with no HTTP, no JSON and no async runtime in between: the same prepared statements
//! with the same parameters, on connections opened as the store opens them (WAL,
//! `synchronous=NORMAL`, foreign keys on), reads on a read connection, writes on the
//! write connection, and the store's checkpoint policy on a thread of its own.
//!
//! SQLite runs one write transaction at a time, so one thread is the fastest way to run
//! them: with a thread per client (measured first: 1,101 cycles/s at 16 clients against
//! 1,246 for one client alone, 2026-11-28) the hand-offs of the write connection cost
//! more than the parallel reads gain. And the clients' transactions share their commits
//! as the store's group commit at its best does: every client's transaction of one step
//! of the cycle in one group, one `COMMIT`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{SecondsFormat, Utc};
use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags};
use serde::Serialize;
use uuid::Uuid;

/// One statement of the file and its arguments.
struct Statement {
    sql: String,
    args: Vec<serde_json::Value>,
}

#[derive(Debug, Serialize)]
pub struct ReplayReport {
    pub clients: usize,
    pub cycles: u64,
    pub seconds: f64,
    pub cycles_per_s: f64,
    /// This process's CPU (user + system) per cycle.
    pub cpu_ms_per_cycle: f64,
    pub statements_per_cycle: usize,
}

fn parse(text: &str) -> Result<Vec<Statement>, String> {
    let mut statements: Vec<Statement> = Vec::new();
    for line in text.lines() {
        if let Some(args) = line.strip_prefix("-- args ") {
            let last = statements
                .last_mut()
                .ok_or("`-- args` before any statement")?;
            last.args = serde_json::from_str(args).map_err(|e| format!("{line}: {e}"))?;
        } else if !line.starts_with("--") && !line.trim().is_empty() {
            let sql = line.trim_end_matches(';').to_owned();
            statements.push(Statement {
                sql,
                args: Vec::new(),
            });
        }
    }
    if statements.is_empty() {
        return Err("the file holds no statements".into());
    }
    Ok(statements)
}

/// The values a client's cycle stands in for the recorded ones (see `sqlite_arg` in
/// tests/it/store/cycle_sql.rs).
struct CycleValues {
    volume: String,
    volume_type: String,
    attachment: String,
    instance: String,
}

fn bound(arg: &serde_json::Value, values: &CycleValues) -> Result<Value, String> {
    Ok(match arg {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Integer(i64::from(*b)),
        serde_json::Value::Number(n) => Value::Integer(n.as_i64().ok_or("not an integer")?),
        serde_json::Value::String(s) => match s.strip_prefix('$') {
            None => Value::Text(s.clone()),
            Some(escaped) if escaped.starts_with('$') => Value::Text(escaped.to_owned()),
            Some("volume") => Value::Text(values.volume.clone()),
            Some("volume_type") => Value::Text(values.volume_type.clone()),
            Some("attachment") => Value::Text(values.attachment.clone()),
            Some("instance") => Value::Text(values.instance.clone()),
            Some("uuid") => Value::Text(Uuid::new_v4().to_string()),
            Some("now") => Value::Text(Utc::now().to_rfc3339_opts(SecondsFormat::AutoSi, false)),
            Some(other) => return Err(format!("unknown stand-in ${other}")),
        },
        other => return Err(format!("unexpected argument {other}")),
    })
}

fn open(path: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.set_prepared_statement_cache_capacity(256);
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(conn)
}

fn run_statement(
    conn: &Connection,
    statement: &Statement,
    values: &CycleValues,
) -> Result<(), String> {
    let fail = |e: rusqlite::Error| format!("{}: {e}", statement.sql);
    let mut stmt = conn.prepare_cached(&statement.sql).map_err(fail)?;
    for index in 1..=stmt.parameter_count() {
        let name = stmt.parameter_name(index).unwrap_or("?");
        let number: usize = name
            .strip_prefix('$')
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("unsupported parameter {name}"))?;
        let arg = statement.args.get(number - 1).ok_or("too few arguments")?;
        stmt.raw_bind_parameter(index, bound(arg, values)?)
            .map_err(fail)?;
    }
    let mut rows = stmt.raw_query();
    while rows.next().map_err(fail)?.is_some() {}
    Ok(())
}

/// A run of statements outside any transaction, or one write transaction (`BEGIN
/// IMMEDIATE` to `COMMIT`, both left out: the group's own bracket them).
enum Segment<'a> {
    Reads(&'a [Statement]),
    Transaction(&'a [Statement]),
}

fn segments(statements: &[Statement]) -> Result<Vec<Segment<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = statements;
    while !rest.is_empty() {
        match rest.iter().position(|s| s.sql == "BEGIN IMMEDIATE") {
            Some(0) => {
                let end = rest.iter().position(|s| s.sql == "COMMIT");
                let end = end.ok_or("a transaction without its COMMIT")?;
                out.push(Segment::Transaction(&rest[1..end]));
                rest = &rest[end + 1..];
            }
            Some(begin) => {
                out.push(Segment::Reads(&rest[..begin]));
                rest = &rest[begin..];
            }
            None => {
                out.push(Segment::Reads(rest));
                rest = &[];
            }
        }
    }
    Ok(out)
}

/// Cycles of every client, step by step, until `stop`: each client's reads on the read
/// connection, then the same transaction of every client in one group on the write
/// connection (each in its savepoint, as recorded) under one `COMMIT`: the store's group
/// commit when every client queues for the writer, with nothing to hand over.
fn cycles_in_groups(
    path: &Path,
    writer: &Mutex<Connection>,
    statements: &[Statement],
    mut clients: Vec<CycleValues>,
    stop: &AtomicBool,
    cycles: &AtomicU64,
) -> Result<(), String> {
    let reader = open(path).map_err(|e| e.to_string())?;
    let segments = segments(statements)?;
    let control = |conn: &Connection, sql: &str| {
        conn.prepare_cached(sql)
            .and_then(|mut s| s.execute([]))
            .map_err(|e| format!("{sql}: {e}"))
    };
    while !stop.load(Ordering::Relaxed) {
        for values in &mut clients {
            values.attachment = Uuid::new_v4().to_string();
            values.instance = Uuid::new_v4().to_string();
        }
        for segment in &segments {
            match segment {
                Segment::Reads(reads) => {
                    for values in &clients {
                        for statement in *reads {
                            run_statement(&reader, statement, values)?;
                        }
                    }
                }
                Segment::Transaction(writes) => {
                    let conn = writer.lock().unwrap_or_else(|e| e.into_inner());
                    control(&conn, "BEGIN IMMEDIATE")?;
                    for values in &clients {
                        for statement in *writes {
                            run_statement(&conn, statement, values)?;
                        }
                    }
                    control(&conn, "COMMIT")?;
                }
            }
        }
        cycles.fetch_add(clients.len() as u64, Ordering::Relaxed);
    }
    Ok(())
}

/// The store's checkpoint policy (src/store/db/sqlite/checkpoint.rs): a passive pass
/// every 100 ms, a restart on the write connection past 16,000 frames.
fn checkpoints(path: &Path, writer: &Mutex<Connection>, stop: &AtomicBool) {
    let Ok(conn) = open(path) else { return };
    let frames = |conn: &Connection, mode: &str| {
        conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
            row.get::<_, i64>(1)
        })
    };
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        if frames(&conn, "PASSIVE").unwrap_or(0) >= 16_000 {
            let writer = writer.lock().unwrap_or_else(|e| e.into_inner());
            let _ = writer.busy_timeout(Duration::from_millis(50));
            let _ = frames(&writer, "RESTART");
            let _ = writer.busy_timeout(Duration::ZERO);
        }
    }
}

/// Seeds a volume per client in a database `cinder-attach migrate` made, then replays.
pub fn run(
    file: &Path,
    database: &Path,
    clients: usize,
    duration: Duration,
) -> Result<ReplayReport, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let statements = Arc::new(parse(&text)?);
    let writer = open(database).map_err(|e| format!("{}: {e}", database.display()))?;
    writer
        .pragma_update(None, "wal_autocheckpoint", 0)
        .and_then(|()| writer.pragma_update(None, "journal_size_limit", 64_i64 << 20))
        .and_then(|()| writer.busy_timeout(Duration::ZERO))
        .map_err(|e| e.to_string())?;
    let volume_type: String = writer
        .query_row(
            "select id from volume_types where name = '__DEFAULT__'",
            [],
            |row| row.get(0),
        )
        .map_err(|e| format!("no default volume type (run `cinder-attach migrate`): {e}"))?;
    let now = Utc::now().to_rfc3339_opts(SecondsFormat::AutoSi, false);
    let mut volumes = Vec::new();
    for _ in 0..clients {
        let id = Uuid::new_v4().to_string();
        writer
            .execute(
                "insert into volumes (id, project_id, host, size, status, attach_status, \
                 volume_type_id, created_at, deleted) \
                 values (?1, 'p1', 'h@file#file', 1, 'available', 'detached', ?2, ?3, 0)",
                rusqlite::params![id, volume_type, now],
            )
            .map_err(|e| format!("seeding a volume: {e}"))?;
        volumes.push(CycleValues {
            volume: id,
            volume_type: volume_type.clone(),
            attachment: String::new(),
            instance: String::new(),
        });
    }
    let writer = Arc::new(Mutex::new(writer));
    let stop = Arc::new(AtomicBool::new(false));
    let cycles = Arc::new(AtomicU64::new(0));
    let (started, cpu_before) = (Instant::now(), crate::cpu::own_seconds());
    let checkpointer = {
        let (path, writer, stop) = (database.to_owned(), writer.clone(), stop.clone());
        std::thread::spawn(move || checkpoints(&path, &writer, &stop))
    };
    let replayed = {
        let (path, writer, stop) = (database.to_owned(), writer.clone(), stop.clone());
        let (statements, cycles) = (statements.clone(), cycles.clone());
        std::thread::spawn(move || {
            cycles_in_groups(&path, &writer, &statements, volumes, &stop, &cycles)
        })
    };
    let deadline = started + duration;
    while Instant::now() < deadline && !replayed.is_finished() {
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    let failed = replayed
        .join()
        .map_err(|_| "the replay panicked".to_owned())?
        .err();
    let _ = checkpointer.join();
    let (seconds, cpu) = (
        started.elapsed().as_secs_f64(),
        crate::cpu::own_seconds() - cpu_before,
    );
    if let Some(err) = failed {
        return Err(err);
    }
    let done = cycles.load(Ordering::Relaxed);
    Ok(ReplayReport {
        clients,
        cycles: done,
        seconds,
        cycles_per_s: done as f64 / seconds,
        cpu_ms_per_cycle: cpu * 1e3 / done.max(1) as f64,
        statements_per_cycle: statements.len(),
    })
}
