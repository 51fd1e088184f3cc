//! The relay of calls owed to Nova: every process with Nova configured takes the calls
//! due (a lease each, so one process sends a call), sends them, and writes how each went
//! (`domain::compute_call::settle`): sent, tried again after a wait while Nova does not
//! answer, or given up with the user message Cinder leaves. A call recorded just before a
//! crash is sent after the restart: it is in the database, not in memory. A process killed
//! while it sends a call leaves that call leased: the lease covers one bounded try, so
//! another process (or the restarted one) sends it once the lease has run out.

use std::sync::Arc;
use std::time::Duration;

use super::Service;
use crate::compute::{CallResult, Nova, ServerEvent};
use crate::domain::compute_call::{self, ComputeCall, ComputeCallKind, TryOutcome};

/// Calls taken per round: one, so that a lease is one try long, whatever the backlog.
const BATCH: i64 = 1;
/// How long a taken call stays this process's beyond the longest try: its settling.
const SETTLE_MARGIN: Duration = Duration::from_secs(10);
/// How often the relay looks for calls due.
const POLL: Duration = Duration::from_millis(500);

impl Service {
    /// The project under which a change owes Nova a call for `volume`: `None` when no
    /// Nova is configured (then none is owed, as Cinder without Nova).
    pub(super) fn nova_owed<'a>(
        &self,
        volume: &'a crate::domain::volume::Volume,
    ) -> Option<&'a str> {
        self.settings
            .nova
            .as_ref()
            .map(|_| volume.project_id.as_str())
    }

    /// Starts the relay when Nova is configured; it runs until the process ends.
    pub fn keep_calling_nova(&self) {
        let Some(nova) = self.settings.nova.clone() else {
            return;
        };
        let service = self.clone();
        tokio::spawn(async move {
            loop {
                match service.call_nova_once(&nova).await {
                    Ok(0) => tokio::time::sleep(POLL).await,
                    Ok(_) => {}
                    Err(err) => {
                        tracing::warn!(error = %err, "calls owed to Nova could not be read; trying again");
                        tokio::time::sleep(POLL * 4).await;
                    }
                }
            }
        });
    }

    /// Sends the calls due now; how many were taken.
    pub async fn call_nova_once(
        &self,
        nova: &Arc<Nova>,
    ) -> Result<usize, crate::domain::DomainError> {
        let now = self.clock.now();
        let limit = nova.try_limit();
        let lease_until = chrono::Duration::from_std(limit.saturating_add(SETTLE_MARGIN))
            .ok()
            .and_then(|lease| now.checked_add_signed(lease))
            .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC);
        let calls = self
            .store
            .claim_compute_calls(now, lease_until, BATCH)
            .await?;
        let taken = calls.len();
        for call in calls {
            // Bounded as a whole, so that the try ends before its lease does.
            let outcome = tokio::time::timeout(limit, send(nova, &call))
                .await
                .unwrap_or_else(|_| {
                    TryOutcome::Unavailable(format!("no answer within {} s", limit.as_secs()))
                });
            let attempt = call.attempts + 1;
            let now = self.clock.now();
            let settlement =
                compute_call::settle(&call, attempt, outcome, now, self.settings.nova_retry_for);
            match &settlement {
                compute_call::Settlement::Sent { answer } => {
                    tracing::info!(call = %call.id, kind = %call.kind, volume_id = %call.volume_id, answer, "Nova took the call")
                }
                compute_call::Settlement::Retry { at, answer } => {
                    tracing::warn!(call = %call.id, kind = %call.kind, volume_id = %call.volume_id, answer, retry_at = %at, "Nova did not take the call; trying again")
                }
                compute_call::Settlement::Failed { answer, .. } => {
                    tracing::error!(call = %call.id, kind = %call.kind, volume_id = %call.volume_id, answer, "the call to Nova is given up")
                }
            }
            self.store
                .settle_compute_call(&call, attempt, &settlement, now)
                .await?;
            // A swap Nova will not make leaves the move to be undone.
            if let (compute_call::Settlement::Failed { .. }, ComputeCallKind::SwapVolume) =
                (&settlement, call.kind)
            {
                if let Some(temporary) = call.new_volume_id {
                    self.swap_given_up(call.volume_id, temporary).await;
                }
            }
        }
        Ok(taken)
    }
}

/// One try of `call`.
async fn send(nova: &Nova, call: &ComputeCall) -> TryOutcome {
    let result = match call.kind {
        ComputeCallKind::VolumeExtended | ComputeCallKind::VolumeReimaged => {
            let events: Vec<ServerEvent> = call
                .servers
                .iter()
                .map(|server| ServerEvent {
                    name: call.kind.as_str(),
                    server: server.clone(),
                    volume: call.volume_id.to_string(),
                })
                .collect();
            nova.send_events(&events).await
        }
        ComputeCallKind::SwapVolume => {
            let (Some(server), Some(new)) = (call.servers.first(), call.new_volume_id) else {
                return TryOutcome::Refused("a swap names no server or no new volume".into());
            };
            nova.swap_volume(server, &call.volume_id.to_string(), &new.to_string())
                .await
        }
    };
    match result {
        CallResult::Done(answer) => TryOutcome::Taken(answer),
        CallResult::Refused(answer) => TryOutcome::Refused(answer),
        CallResult::Unavailable(answer) => TryOutcome::Unavailable(answer),
    }
}
