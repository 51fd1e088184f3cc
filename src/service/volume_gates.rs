//! Attachment writes to one volume take turns inside the process (two at a time on
//! PostgreSQL) before they take the volume's row lock in the database. The row lock is
//! what keeps the rules (and it alone orders writes from several processes); the gate
//! only spares the database a queue of many transactions waiting on one row, which
//! PostgreSQL serves far slower than a queue of one: every waiter wakes, re-reads the row
//! and goes back to sleep at each commit.
//! Gates are taken before a transaction begins and never while one is open, so they
//! cannot deadlock with the database's locks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::domain::ids::VolumeId;

/// Writes of one volume let through at once on PostgreSQL: one holding the row lock and
/// one waiting at it, so the next begins the moment the lock is free and the database
/// never queues more than these.
pub const ROW_LOCK_TURNS: usize = 2;

/// The same on SQLite, where every write already waits in process for the one write
/// connection, woken one at a time, and the transactions waiting there when one commits
/// share its commit (`store::db::sqlite::writer`): two at a time would cut every such group
/// to two members and drain it before the next two start. Enough for the writes a
/// group takes.
pub const SINGLE_WRITER_TURNS: usize = 32;

/// One gate per volume that has a write in progress.
#[derive(Debug)]
pub struct VolumeGates {
    gates: Mutex<HashMap<VolumeId, Arc<Semaphore>>>,
    at_once: usize,
}

impl Default for VolumeGates {
    fn default() -> Self {
        Self::new(ROW_LOCK_TURNS)
    }
}

/// The turn of one write; the gate is removed when no one else waits for it.
pub struct Turn<'a> {
    gates: &'a VolumeGates,
    volume: VolumeId,
    gate: Arc<Semaphore>,
    guard: Option<OwnedSemaphorePermit>,
}

impl VolumeGates {
    /// Gates letting `at_once` writes of one volume through at a time.
    pub fn new(at_once: usize) -> Self {
        VolumeGates {
            gates: Mutex::default(),
            at_once: at_once.max(1),
        }
    }

    /// Waits for `volume`'s turn in this process.
    pub async fn enter(&self, volume: VolumeId) -> Turn<'_> {
        let gate = {
            let mut gates = self.gates.lock().unwrap_or_else(|e| e.into_inner());
            gates
                .entry(volume)
                .or_insert_with(|| Arc::new(Semaphore::new(self.at_once)))
                .clone()
        };
        let guard = gate
            .clone()
            .acquire_owned()
            .await
            .expect("gates are never closed");
        Turn {
            gates: self,
            volume,
            gate,
            guard: Some(guard),
        }
    }

    #[cfg(test)]
    fn open_gates(&self) -> usize {
        self.gates.lock().unwrap().len()
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.guard.take();
        let mut gates = self.gates.gates.lock().unwrap_or_else(|e| e.into_inner());
        // The map's and this turn's references only: nobody is waiting.
        if Arc::strong_count(&self.gate) == 2 {
            gates.remove(&self.volume);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Runs 20 writes on two volumes through gates of `at_once`: the most writes of one
    /// volume seen inside at a time.
    async fn most_inside_at_once(at_once: usize) -> usize {
        let gates = Arc::new(VolumeGates::new(at_once));
        let (a, b) = (VolumeId::generate(), VolumeId::generate());
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for i in 0..20 {
            let (gates, inside, most) = (gates.clone(), inside.clone(), most.clone());
            let volume = if i % 2 == 0 { a } else { b };
            tasks.push(tokio::spawn(async move {
                let _turn = gates.enter(volume).await;
                if volume == a {
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(gates.open_gates(), 0, "a gate left behind");
        most.load(Ordering::SeqCst)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn as_many_writes_per_volume_at_a_time_as_the_gates_let_and_no_gate_left_behind() {
        assert_eq!(most_inside_at_once(ROW_LOCK_TURNS).await, 2);
        assert_eq!(most_inside_at_once(5).await, 5);
        assert_eq!(VolumeGates::default().at_once, ROW_LOCK_TURNS);
    }
}
