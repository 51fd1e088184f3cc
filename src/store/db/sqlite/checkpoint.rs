//! WAL checkpoints off the request path.

use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;

use super::super::error::StoreError;
use super::pool::Opener;
use super::writer::{Writer, WriterSlot};

/// Keeps the WAL short, from a thread of its own, so the write connection never
/// checkpoints inside a commit (a checkpoint fsyncs; every request queued behind the
/// write lock would wait for it).
///
/// Passive checkpoints copy frames without blocking anyone, but under a steady stream
/// of writes they never catch up, and SQLite only starts the WAL over once one has: the
/// file grew by ~100 MB/s under the attach benchmark. So once the WAL holds more than
/// `RESTART_FRAMES`, a RESTART checkpoint runs on the write connection itself: the few
/// frames the passive pass left are copied while in-process writers wait for the
/// connection (as for any transaction), readers finish, and the WAL starts over.
/// Stops when dropped.
pub struct Checkpointer {
    _stop: std::sync::mpsc::Sender<()>,
}

impl Checkpointer {
    const INTERVAL: Duration = Duration::from_millis(100);
    /// About 62 MiB of 4 KiB pages. A restart holds the write connection (a few ms: the
    /// frames left, a sync of the database file, readers to finish), so how often it runs
    /// shapes the tail of write latency: at 1,000 frames it ran about every round under
    /// the attach benchmark and the p99 of a request was 9-9.5 ms, at 16,000 6.5-7 ms,
    /// never restarting 6-6.3 ms (issue 27).
    const RESTART_FRAMES: i64 = 16_000;
    /// How long a RESTART waits for readers that started before it.
    const READERS_WAIT: Duration = Duration::from_millis(50);

    pub fn start(opener: &Opener, writer: &Writer) -> Result<Self, StoreError> {
        Self::start_restarting_at(opener, writer, Self::RESTART_FRAMES)
    }

    /// `start` with another restart threshold (the tests use a small one, so that a run
    /// of a few seconds goes through many restarts with room to spare below the bound).
    pub fn start_restarting_at(
        opener: &Opener,
        writer: &Writer,
        restart_frames: i64,
    ) -> Result<Self, StoreError> {
        let conn = opener.open()?;
        let slot = writer.slot.clone();
        // From here on the write connection leaves checkpoints to this thread.
        if let Some(writer) = slot.check_out_blocking() {
            writer.pragma_update(None, "wal_autocheckpoint", 0)?;
        }
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(Self::INTERVAL)
                {
                    if let Err(err) = Self::round(&conn, &slot, restart_frames) {
                        tracing::warn!(error = %err, "SQLite WAL checkpoint failed");
                    }
                }
            })
            .map_err(|e| StoreError::Other(e.into()))?;
        Ok(Checkpointer { _stop: stop })
    }

    fn round(
        conn: &Connection,
        slot: &Arc<WriterSlot>,
        restart_frames: i64,
    ) -> Result<(), rusqlite::Error> {
        let frames = checkpoint(conn, "PASSIVE")?;
        if frames < restart_frames {
            return Ok(());
        }
        let Some(writer) = slot.check_out_blocking() else {
            return Ok(());
        };
        writer.busy_timeout(Self::READERS_WAIT)?;
        let restarted = checkpoint(&writer, "RESTART");
        writer.busy_timeout(Duration::ZERO)?;
        restarted.map(drop)
    }
}

/// Runs a checkpoint; the number of frames the WAL held.
fn checkpoint(conn: &Connection, mode: &str) -> Result<i64, rusqlite::Error> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
        row.get(1)
    })
}
