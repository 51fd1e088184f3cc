//! What the relay last managed, for `/healthcheck?detailed`: a relay whose broker refuses
//! it or cannot be reached keeps the API serving, so nothing else would show it.

use std::sync::Mutex;

use chrono::{DateTime, Utc};

/// The relay's state as this process sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelayState {
    /// Started, nothing tried yet.
    Starting,
    /// Another process holds the relay's lease and relays for every process.
    Standby,
    /// The last attempt delivered, or nothing waits and nothing failed.
    Delivering,
    /// The last attempt failed; the events wait.
    Failing { error: String, since: DateTime<Utc> },
}

#[derive(Debug)]
pub struct RelayHealth {
    state: Mutex<RelayState>,
}

impl Default for RelayHealth {
    fn default() -> Self {
        RelayHealth {
            state: Mutex::new(RelayState::Starting),
        }
    }
}

impl RelayHealth {
    pub fn state(&self) -> RelayState {
        self.lock().clone()
    }

    pub(super) fn delivering(&self) {
        *self.lock() = RelayState::Delivering;
    }

    /// Nothing waits: a failure stays reported until a delivery succeeds.
    pub(super) fn caught_up(&self) {
        let mut state = self.lock();
        if !matches!(*state, RelayState::Failing { .. }) {
            *state = RelayState::Delivering;
        }
    }

    pub(super) fn standby(&self) {
        *self.lock() = RelayState::Standby;
    }

    /// A failure; `since` stays the first failure's time while failures follow each other.
    pub(super) fn failing(&self, error: String, now: DateTime<Utc>) {
        let mut state = self.lock();
        let since = match &*state {
            RelayState::Failing { since, .. } => *since,
            _ => now,
        };
        *state = RelayState::Failing { error, since };
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RelayState> {
        // A panic elsewhere while holding it leaves a state that is still whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_failures_keeps_its_first_time() {
        let health = RelayHealth::default();
        let t0 = DateTime::from_timestamp(100, 0).unwrap();
        let t1 = DateTime::from_timestamp(200, 0).unwrap();
        health.failing("refused".into(), t0);
        health.failing("unreachable".into(), t1);
        assert_eq!(
            health.state(),
            RelayState::Failing {
                error: "unreachable".into(),
                since: t0
            }
        );
        health.delivering();
        health.failing("again".into(), t1);
        assert_eq!(
            health.state(),
            RelayState::Failing {
                error: "again".into(),
                since: t1
            }
        );
    }
}
