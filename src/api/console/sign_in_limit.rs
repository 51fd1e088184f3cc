//! Failed console sign-ins, counted per client address: past `MAX_FAILURES` in a window
//! the client is refused (429) until the window ends, before Keystone is asked, so the
//! sign-in cannot be used to guess passwords or to hammer Keystone. A success clears the
//! client's count. Behind a proxy every client shares the proxy's address.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed sign-ins a client may make in one window.
pub const MAX_FAILURES: u32 = 5;
/// How long a client's failures count.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Clients remembered at most; past it, windows that ended are dropped first, then the
/// whole table (an attacker spraying addresses only resets counts, never grows memory).
const MAX_CLIENTS: usize = 10_000;

/// The peer address of a request's connection, set by the accept loop (absent for
/// requests that did not come over a socket, such as the in-process tests').
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub SocketAddr);

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    since: Instant,
}

#[derive(Debug, Default)]
pub struct SignInLimiter {
    clients: Mutex<HashMap<Option<IpAddr>, Failures>>,
}

impl SignInLimiter {
    /// `Err(seconds to wait)` while `client` has used up its failures.
    pub fn admit(&self, client: Option<IpAddr>, now: Instant) -> Result<(), u64> {
        let clients = self.lock();
        match clients.get(&client) {
            Some(f) if f.count >= MAX_FAILURES && now < f.since + WINDOW => {
                let left = (f.since + WINDOW).saturating_duration_since(now);
                Err(left.as_secs().max(1))
            }
            _ => Ok(()),
        }
    }

    pub fn failed(&self, client: Option<IpAddr>, now: Instant) {
        let mut clients = self.lock();
        if clients.len() >= MAX_CLIENTS && !clients.contains_key(&client) {
            clients.retain(|_, f| now < f.since + WINDOW);
            if clients.len() >= MAX_CLIENTS {
                clients.clear();
            }
        }
        let entry = clients.entry(client).or_insert(Failures {
            count: 0,
            since: now,
        });
        if now >= entry.since + WINDOW {
            *entry = Failures {
                count: 0,
                since: now,
            };
        }
        entry.count += 1;
    }

    pub fn succeeded(&self, client: Option<IpAddr>) {
        self.lock().remove(&client);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Option<IpAddr>, Failures>> {
        self.clients.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> Option<IpAddr> {
        Some(IpAddr::from([10, 0, 0, last]))
    }

    #[test]
    fn a_client_is_held_back_after_its_failures_and_others_are_not() {
        let limiter = SignInLimiter::default();
        let t0 = Instant::now();
        for _ in 0..MAX_FAILURES {
            assert_eq!(limiter.admit(ip(1), t0), Ok(()));
            limiter.failed(ip(1), t0);
        }
        assert_eq!(limiter.admit(ip(1), t0), Err(60));
        assert_eq!(limiter.admit(ip(1), t0 + Duration::from_secs(45)), Err(15));
        assert_eq!(limiter.admit(ip(2), t0), Ok(()));
        // The window ends: admitted again, and the count starts over.
        assert_eq!(limiter.admit(ip(1), t0 + WINDOW), Ok(()));
        limiter.failed(ip(1), t0 + WINDOW);
        assert_eq!(limiter.admit(ip(1), t0 + WINDOW), Ok(()));
    }

    #[test]
    fn a_success_clears_the_count() {
        let limiter = SignInLimiter::default();
        let t0 = Instant::now();
        for _ in 0..MAX_FAILURES - 1 {
            limiter.failed(ip(1), t0);
        }
        limiter.succeeded(ip(1));
        limiter.failed(ip(1), t0);
        assert_eq!(limiter.admit(ip(1), t0), Ok(()));
    }

    #[test]
    fn many_addresses_do_not_grow_the_table_without_bound() {
        let limiter = SignInLimiter::default();
        let t0 = Instant::now();
        for n in 0..(MAX_CLIENTS as u32 + 10) {
            limiter.failed(Some(IpAddr::from(n.to_be_bytes())), t0);
        }
        assert!(limiter.lock().len() <= MAX_CLIENTS);
    }
}
