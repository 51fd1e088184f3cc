//! Calls the service owes Nova (Cinder's `cinder/compute/nova.py`): recorded with the
//! change that owes them, sent later, tried again while Nova does not answer. The rule
//! here decides, after each try, whether the call is done, waits for another try, or is
//! given up (and what the user is told then).

use chrono::{DateTime, Duration, Utc};

use super::ids::{ComputeCallId, VolumeId};
use super::message::{action, detail, Action, Detail};
use super::string_enum::string_enum;

string_enum! {
    /// What the call asks of Nova.
    ComputeCallKind {
        VolumeExtended => "volume-extended",
        VolumeReimaged => "volume-reimaged",
        SwapVolume => "swap-volume",
    }
}

string_enum! {
    /// Where a call is.
    ComputeCallStatus {
        Pending => "pending",
        Sent => "sent",
        Failed => "failed",
    }
}

/// A call to record, in the transaction of the change that owes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewComputeCall {
    pub id: ComputeCallId,
    pub kind: ComputeCallKind,
    pub volume_id: VolumeId,
    /// The volume the servers move to (a swap).
    pub new_volume_id: Option<VolumeId>,
    pub project_id: String,
    /// The Nova servers concerned (instance uuids of the volume's attachments).
    pub servers: Vec<String>,
    pub created_at: DateTime<Utc>,
}

impl NewComputeCall {
    /// The event call for `volume`'s `servers`; `None` when no server is to be told
    /// (Cinder sends no event for a volume attached to no instance).
    pub fn event(
        kind: ComputeCallKind,
        volume_id: VolumeId,
        project_id: &str,
        servers: impl IntoIterator<Item = String>,
        now: DateTime<Utc>,
    ) -> Option<NewComputeCall> {
        let mut servers: Vec<String> = servers.into_iter().collect();
        servers.sort();
        servers.dedup();
        (!servers.is_empty()).then(|| NewComputeCall {
            id: ComputeCallId::generate(),
            kind,
            volume_id,
            new_volume_id: None,
            project_id: project_id.to_owned(),
            servers,
            created_at: now,
        })
    }
}

/// A recorded call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComputeCall {
    pub id: ComputeCallId,
    pub kind: ComputeCallKind,
    pub volume_id: VolumeId,
    pub new_volume_id: Option<VolumeId>,
    pub project_id: String,
    pub servers: Vec<String>,
    pub status: ComputeCallStatus,
    pub attempts: i64,
    pub next_attempt_at: DateTime<Utc>,
    /// What Nova said last (its status and body), or why it could not be asked.
    pub answer: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// How one try went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TryOutcome {
    /// Nova took the call.
    Taken(String),
    /// Nova refused it for good (no such server, a refused request).
    Refused(String),
    /// Nova could not be asked, or failed: worth another try.
    Unavailable(String),
}

/// What becomes of the call after a try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settlement {
    Sent {
        answer: String,
    },
    Retry {
        at: DateTime<Utc>,
        answer: String,
    },
    /// Given up: the user message to leave (Cinder's words for the call's kind).
    Failed {
        answer: String,
        told: Option<(Action, Detail)>,
    },
}

/// The longest wait between two tries.
const LONGEST_WAIT: i64 = 60;

/// After try number `attempt` (1 for the first) of `call`: sent, another try after a
/// wait that doubles up to a minute, or given up once `retry_for` has passed since the
/// call was recorded, or at once when Nova refused it.
pub fn settle(
    call: &ComputeCall,
    attempt: i64,
    outcome: TryOutcome,
    now: DateTime<Utc>,
    retry_for: Duration,
) -> Settlement {
    match outcome {
        TryOutcome::Taken(answer) => Settlement::Sent { answer },
        TryOutcome::Refused(answer) => Settlement::Failed {
            answer,
            told: told(call.kind),
        },
        TryOutcome::Unavailable(answer) => {
            let wait = 1i64 << attempt.clamp(0, 6);
            let at = now + Duration::seconds(wait.min(LONGEST_WAIT));
            if at - call.created_at > retry_for {
                Settlement::Failed {
                    answer,
                    told: told(call.kind),
                }
            } else {
                Settlement::Retry { at, answer }
            }
        }
    }
}

/// The user message for a call given up: Cinder's for a failed event; none for a swap,
/// whose migration ends in error and says so itself.
fn told(kind: ComputeCallKind) -> Option<(Action, Detail)> {
    match kind {
        ComputeCallKind::VolumeExtended => {
            Some((action::EXTEND_VOLUME, detail::NOTIFY_COMPUTE_SERVICE_FAILED))
        }
        ComputeCallKind::VolumeReimaged => {
            Some((action::REIMAGE_VOLUME, detail::REIMAGE_VOLUME_FAILED))
        }
        ComputeCallKind::SwapVolume => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(kind: ComputeCallKind, created_at: DateTime<Utc>) -> ComputeCall {
        ComputeCall {
            id: ComputeCallId::generate(),
            kind,
            volume_id: VolumeId::generate(),
            new_volume_id: None,
            project_id: "p".into(),
            servers: vec!["s".into()],
            status: ComputeCallStatus::Pending,
            attempts: 0,
            next_attempt_at: created_at,
            answer: None,
            created_at,
        }
    }

    #[test]
    fn tries_wait_longer_each_time_until_given_up() {
        let t0 = Utc::now();
        let extended = call(ComputeCallKind::VolumeExtended, t0);
        let ten_minutes = Duration::minutes(10);
        let down = || TryOutcome::Unavailable("connection refused".into());
        let table = [(1, 2), (2, 4), (3, 8), (5, 32), (6, 60), (30, 60)];
        for (attempt, wait) in table {
            assert_eq!(
                settle(&extended, attempt, down(), t0, ten_minutes),
                Settlement::Retry {
                    at: t0 + Duration::seconds(wait),
                    answer: "connection refused".into()
                },
                "attempt {attempt}"
            );
        }
        let late = t0 + Duration::minutes(10);
        assert_eq!(
            settle(&extended, 12, down(), late, ten_minutes),
            Settlement::Failed {
                answer: "connection refused".into(),
                told: Some((action::EXTEND_VOLUME, detail::NOTIFY_COMPUTE_SERVICE_FAILED)),
            }
        );
    }

    #[test]
    fn nova_taking_or_refusing_ends_the_call() {
        let t0 = Utc::now();
        let reimaged = call(ComputeCallKind::VolumeReimaged, t0);
        let hour = Duration::hours(1);
        assert_eq!(
            settle(&reimaged, 1, TryOutcome::Taken("200".into()), t0, hour),
            Settlement::Sent {
                answer: "200".into()
            }
        );
        assert_eq!(
            settle(&reimaged, 1, TryOutcome::Refused("404".into()), t0, hour),
            Settlement::Failed {
                answer: "404".into(),
                told: Some((action::REIMAGE_VOLUME, detail::REIMAGE_VOLUME_FAILED)),
            }
        );
        let swap = call(ComputeCallKind::SwapVolume, t0);
        assert_eq!(
            settle(&swap, 1, TryOutcome::Refused("400".into()), t0, hour),
            Settlement::Failed {
                answer: "400".into(),
                told: None
            }
        );
    }

    #[test]
    fn no_server_no_call() {
        let volume = VolumeId::generate();
        let kind = ComputeCallKind::VolumeExtended;
        assert_eq!(
            NewComputeCall::event(kind, volume, "p", vec![], Utc::now()),
            None
        );
        let call = NewComputeCall::event(
            kind,
            volume,
            "p",
            vec!["b".to_owned(), "a".to_owned(), "b".to_owned()],
            Utc::now(),
        )
        .unwrap();
        assert_eq!(call.servers, ["a", "b"]);
    }
}
