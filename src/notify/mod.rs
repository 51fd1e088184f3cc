//! The relay of the notification outbox (`store::EventStore`): publishes the events the
//! writes recorded, in order, to the message bus, and marks each outbox row sent once
//! the broker confirmed every event it holds. Delivery is at least once: an event published but not yet marked when
//! the process dies goes out again, with the same `message_id`. The broker being down
//! holds events back without holding up the API; they go out when it returns.

mod amqp;
mod bus_url;
mod health;
pub mod tls;

use std::sync::Arc;
use std::time::Duration;

pub use amqp::{BusConfig, PublishError, Publisher};
pub use bus_url::{bus_url, with_tls};
pub use health::{RelayHealth, RelayState};

use crate::clock::Clock;
use crate::domain::event::{OutboxRow, RecordedEvent};
use crate::store::Store;

/// Events read and published per round.
const BATCH: u32 = 200;
/// How often an idle relay looks for new events where the database cannot wake it
/// (SQLite).
const IDLE_POLL: Duration = Duration::from_millis(100);
/// How long an idle relay on PostgreSQL waits for a notification (this process's writes
/// send one) before it looks anyway: for the writes of other processes, and for one that
/// raced the relay's going idle. Under half the lease, which is renewed between waits.
const IDLE_LISTEN: Duration = Duration::from_secs(1);
/// How long a relay's lease lasts; it is renewed at half of it.
const LEASE: Duration = Duration::from_secs(10);
/// The longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How long connecting to one broker host, or one batch's publishes and confirms, may
/// take before the connection is given up: a broker that accepted the socket and then
/// went silent (stopping, or starting) must not hold the relay until the heartbeat
/// notices.
const BROKER_TIMEOUT: Duration = Duration::from_secs(15);

/// Dials the broker once, at start. A broker that refuses these credentials, this
/// virtual host or the exchange as configured would refuse every later attempt too, so
/// that is an error naming the cause; one that cannot be reached yet only holds the
/// events back (they wait in the outbox), so that is a warning.
pub async fn check_bus(bus: &BusConfig) -> Result<(), String> {
    let dialed = Publisher::connect(bus, BROKER_TIMEOUT).await;
    match dialed {
        Ok(publisher) => {
            publisher.close().await;
            Ok(())
        }
        Err(err) if err.is_refusal() => Err(format!(
            "the message bus refused the notification relay ({err}); \
             check the user, password and virtual host of --notify-url or transport_url, \
             and for TLS the CA, certificate and key files (--notify-ssl-*)"
        )),
        Err(err) => {
            tracing::warn!(error = %err, "message bus unreachable at start; events wait in the outbox until it answers");
            Ok(())
        }
    }
}

/// Runs the relay in the background for as long as the process lives; `health` follows
/// how it fares.
pub fn start(
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    bus: BusConfig,
    holder: String,
    health: Arc<RelayHealth>,
) {
    tokio::spawn(async move { relay(store, clock, bus, holder, health).await });
}

async fn relay(
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    bus: BusConfig,
    holder: String,
    health: Arc<RelayHealth>,
) {
    let lease = chrono::Duration::from_std(LEASE).unwrap_or(chrono::Duration::seconds(10));
    let mut held_until = None;
    let mut publisher: Option<Publisher> = None;
    let mut backoff = Duration::from_millis(250);
    loop {
        let now = clock.now();
        // One relay at a time, so the events go out in order.
        if held_until.is_none_or(|until| until - lease / 2 < now) {
            held_until = match store.take_relay_lease(&holder, now, now + lease).await {
                Ok(true) => Some(now + lease),
                Ok(false) => None,
                Err(err) => {
                    tracing::warn!(error = %err, "notification relay: cannot take its lease");
                    None
                }
            };
            if held_until.is_none() {
                health.standby();
                tokio::time::sleep(LEASE / 2).await;
                continue;
            }
        }
        let pending = match store.pending_events(BATCH).await {
            Ok(pending) => pending,
            Err(err) => {
                tracing::warn!(error = %err, "notification relay: cannot read the outbox");
                tokio::time::sleep(backoff).await;
                continue;
            }
        };
        if pending.is_empty() {
            health.caught_up();
            if let Err(err) = store.wait_for_events(IDLE_POLL, IDLE_LISTEN).await {
                tracing::warn!(error = %err, "notification relay: cannot wait for new events; polling");
                tokio::time::sleep(IDLE_POLL).await;
            }
            continue;
        }
        let connected = match publisher.take() {
            Some(p) if p.is_connected() => Ok(p),
            _ => Publisher::connect(&bus, BROKER_TIMEOUT).await,
        };
        let current = match connected {
            Ok(p) => p,
            Err(err) => {
                tracing::warn!(error = %err, pending = pending.len(), "notification relay: message bus unreachable; events wait");
                health.failing(err.to_string(), clock.now());
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        let (confirmed, failure) =
            tokio::time::timeout(BROKER_TIMEOUT, current.publish(&bus.topic, &pending))
                .await
                .unwrap_or((Vec::new(), Some(PublishError::TimedOut)));
        let done = rows_confirmed(&pending, &confirmed);
        if let Err(err) = store.mark_events_sent(&done, clock.now()).await {
            // They go out again later: at least once, with the same message ids.
            tracing::warn!(error = %err, "notification relay: cannot mark events sent");
        }
        match failure {
            None => {
                health.delivering();
                backoff = Duration::from_millis(250);
                publisher = Some(current);
            }
            Some(err) => {
                tracing::warn!(error = %err, "notification relay: publishing stopped; will retry");
                health.failing(err.to_string(), clock.now());
                current.close().await;
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// The rows of `pending` whose every event is among `confirmed` (a row's events go
/// out again together when one of them was not confirmed).
fn rows_confirmed(pending: &[RecordedEvent], confirmed: &[i64]) -> Vec<OutboxRow> {
    let confirmed: std::collections::HashSet<i64> = confirmed.iter().copied().collect();
    let mut rows: Vec<OutboxRow> = Vec::new();
    let mut missing: std::collections::HashSet<OutboxRow> = std::collections::HashSet::new();
    for event in pending {
        if !confirmed.contains(&event.seq) {
            missing.insert(event.row);
        } else if rows.last() != Some(&event.row) {
            rows.push(event.row);
        }
    }
    rows.retain(|row| !missing.contains(row));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_marked_sent_only_once_all_its_events_were_confirmed() {
        let event = RecordedEvent::numbered;
        let pending = [
            event(3, OutboxRow::Event(3)),
            event(8, OutboxRow::Point(8)),
            event(9, OutboxRow::Point(8)),
            event(16, OutboxRow::Point(16)),
        ];
        assert_eq!(
            rows_confirmed(&pending, &[3, 8]),
            [OutboxRow::Event(3)],
            "row 8 waits for its second event"
        );
        assert_eq!(
            rows_confirmed(&pending, &[3, 8, 9, 16]),
            [
                OutboxRow::Event(3),
                OutboxRow::Point(8),
                OutboxRow::Point(16)
            ]
        );
        assert!(rows_confirmed(&pending, &[]).is_empty());
    }
}
