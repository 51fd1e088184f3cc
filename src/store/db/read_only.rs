//! Whether a PostgreSQL server demoted under us (a failover) was seen: the error path
//! notes it, and the pool closes the connections opened before it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

/// When a server last refused a write as read-only (a primary demoted under us), in
/// milliseconds since `EPOCH`; 0: never. Connections opened before that moment may lead to
/// the demoted server, so they are closed when released and the pool opens new ones.
static READ_ONLY_SEEN_MS: AtomicU64 = AtomicU64::new(0);
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Starts the clock read-only refusals are timed by, before the first connection opens.
pub(super) fn start_clock() {
    LazyLock::force(&EPOCH);
}

/// A write was refused with SQLSTATE 25006 (`read-only transaction`).
pub(super) fn note_read_only() {
    let now = u64::try_from(EPOCH.elapsed().as_millis()).unwrap_or(u64::MAX);
    READ_ONLY_SEEN_MS.fetch_max(now.max(1), Ordering::Relaxed);
}

/// Whether a connection `age` old was opened after the last read-only refusal.
pub(super) fn opened_since_read_only(age: Duration) -> bool {
    let seen = READ_ONLY_SEEN_MS.load(Ordering::Relaxed);
    let opened = EPOCH.elapsed().saturating_sub(age).as_millis();
    seen == 0 || opened >= u128::from(seen)
}
