//! From what the database holds (a volume's export and who may log in) and what tgtd
//! holds, the steps that make tgtd match: removals first, so that a host losing access
//! is cut off before anyone new is let in (the fencing order).
//!
//! Two plans: `plan` compares a volume with everything tgtd shows of its targets (at
//! creation, at start and in the periodic reconciliation), and `plan_change`, for each
//! attach and detach, works from the two targets' sessions only, because tgtd's full show
//! lists every target it has and costs it milliseconds per thousand targets.

use std::collections::BTreeSet;

use super::state::{SessionState, TargetState};
use crate::domain::export::{AccessGrant, TargetExport};

/// The LUN a volume is on in its targets (LUN 0 is tgtd's controller), as in Cinder's
/// tgt driver.
pub const VOLUME_LUN: u64 = 1;

/// One change to tgtd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Unbind { tid: u32, initiator: String },
    EndConnection { tid: u32, sid: u64, cid: u32 },
    DeleteTarget { tid: u32 },
    NewAccount,
    NewTarget { tid: u32, iqn: String },
    NewLun { tid: u32 },
    ReadOnly { tid: u32, read_only: bool },
    BindAccount { tid: u32 },
    Bind { tid: u32, initiator: String },
}

impl Step {
    fn is_removal(&self) -> bool {
        matches!(
            self,
            Step::Unbind { .. } | Step::EndConnection { .. } | Step::DeleteTarget { .. }
        )
    }

    /// For drift reports: what is wrong, not what will be done about it.
    pub fn describe(&self) -> String {
        match self {
            Step::Unbind { tid, initiator } => {
                format!("initiator {initiator} may log in to target {tid} without an attachment")
            }
            Step::EndConnection { tid, sid, .. } => {
                format!("session {sid} on target {tid} has no attachment behind it")
            }
            Step::DeleteTarget { tid } => format!("target {tid} is not this volume's"),
            Step::NewAccount => "the volume's CHAP account is missing".to_owned(),
            Step::NewTarget { iqn, .. } => format!("target {iqn} is missing"),
            Step::NewLun { tid } => format!("target {tid} has no logical unit"),
            Step::ReadOnly { tid, read_only } => format!(
                "target {tid}'s logical unit is {}",
                if *read_only { "writable" } else { "read-only" }
            ),
            Step::BindAccount { tid } => format!("target {tid} does not ask for CHAP"),
            Step::Bind { tid, initiator } => {
                format!("initiator {initiator} cannot log in to target {tid}")
            }
        }
    }
}

/// A volume's export as it should be in tgtd.
pub struct Wanted<'a> {
    pub export: &'a TargetExport,
    pub read_write_iqn: String,
    pub read_only_iqn: String,
    /// The volume's grants (others are ignored).
    pub grants: &'a [AccessGrant],
}

/// The steps, given every target tgtd has and, when known, its accounts (`None`: the
/// account is assumed present where a target has it bound).
pub fn plan(
    wanted: &Wanted<'_>,
    targets: &[TargetState],
    accounts: Option<&[String]>,
) -> Vec<Step> {
    let export = wanted.export;
    let user = export.auth_username.as_str();
    let mut steps = Vec::new();
    let mut account_seen = accounts.is_some_and(|list| list.iter().any(|a| a == user));
    let sides = [
        (export.read_write_tid(), &wanted.read_write_iqn, false),
        (export.read_only_tid(), &wanted.read_only_iqn, true),
    ];
    for (tid, iqn, read_only) in sides {
        let allowed: BTreeSet<&str> = wanted
            .grants
            .iter()
            .filter(|g| g.volume_id == export.volume_id && g.read_only == read_only)
            .map(|g| g.initiator.as_str())
            .collect();
        let current = targets.iter().find(|t| t.tid == tid);
        let current = match current {
            Some(target) if target.iqn == *iqn => target,
            other => {
                if other.is_some() {
                    steps.push(Step::DeleteTarget { tid });
                }
                steps.push(Step::NewTarget {
                    tid,
                    iqn: iqn.clone(),
                });
                steps.push(Step::NewLun { tid });
                if read_only {
                    steps.push(Step::ReadOnly { tid, read_only });
                }
                steps.push(Step::BindAccount { tid });
                steps.extend(allowed.iter().map(|initiator| Step::Bind {
                    tid,
                    initiator: (*initiator).to_owned(),
                }));
                continue;
            }
        };
        account_seen |= current.accounts.iter().any(|a| a == user);
        for entry in &current.acl {
            if !allowed.contains(entry.as_str()) {
                steps.push(Step::Unbind {
                    tid,
                    initiator: entry.clone(),
                });
            }
        }
        for session in &current.sessions {
            if !allowed.contains(session.initiator.as_str()) {
                steps.extend(session.connections.iter().map(|&cid| Step::EndConnection {
                    tid,
                    sid: session.sid,
                    cid,
                }));
            }
        }
        match current.lun(VOLUME_LUN) {
            None => {
                steps.push(Step::NewLun { tid });
                if read_only {
                    steps.push(Step::ReadOnly { tid, read_only });
                }
            }
            Some(lun) if lun.read_only != read_only => {
                steps.push(Step::ReadOnly { tid, read_only });
            }
            Some(_) => {}
        }
        if !current.accounts.iter().any(|a| a == user) {
            steps.push(Step::BindAccount { tid });
        }
        for initiator in &allowed {
            if !current.acl.iter().any(|a| a == initiator) {
                steps.push(Step::Bind {
                    tid,
                    initiator: (*initiator).to_owned(),
                });
            }
        }
    }
    if !account_seen {
        steps.push(Step::NewAccount);
    }
    // Stable: removals first, then the account before anything binds it.
    steps.sort_by_key(|step| match step {
        s if s.is_removal() => 0,
        Step::NewAccount => 1,
        _ => 2,
    });
    steps
}

/// One target's live sessions, as `show --mode conn` lists them.
pub struct TargetSessions<'a> {
    pub tid: u32,
    pub sessions: &'a [SessionState],
}

/// The steps of one attach or detach: `joining` is let in, and cut off are `leaving`
/// (the initiator of an attachment just removed) and every initiator with a session but
/// no grant. What this cannot see, an ACL entry of a host without a session left by a
/// change that failed or was interrupted, the full reconciliation removes (at start,
/// before any request, and every few seconds).
pub fn plan_change(
    export: &TargetExport,
    grants: &[AccessGrant],
    sessions: &[TargetSessions<'_>],
    joining: Option<&AccessGrant>,
    leaving: Option<&AccessGrant>,
) -> Vec<Step> {
    let mut steps = Vec::new();
    for side in sessions {
        let read_only = side.tid == export.read_only_tid();
        let tid = side.tid;
        let allowed = |initiator: &str| {
            grants.iter().chain(joining).any(|g| {
                g.volume_id == export.volume_id
                    && g.read_only == read_only
                    && g.initiator == initiator
            })
        };
        let mut cut: BTreeSet<&str> = side
            .sessions
            .iter()
            .map(|s| s.initiator.as_str())
            .filter(|i| !allowed(i))
            .collect();
        cut.extend(
            leaving
                .filter(|g| g.read_only == read_only && !allowed(&g.initiator))
                .map(|g| g.initiator.as_str()),
        );
        for initiator in &cut {
            steps.push(Step::Unbind {
                tid,
                initiator: (*initiator).to_owned(),
            });
        }
        for session in side
            .sessions
            .iter()
            .filter(|s| cut.contains(s.initiator.as_str()))
        {
            steps.extend(session.connections.iter().map(|&cid| Step::EndConnection {
                tid,
                sid: session.sid,
                cid,
            }));
        }
        if let Some(grant) = joining.filter(|g| g.read_only == read_only) {
            steps.push(Step::Bind {
                tid,
                initiator: grant.initiator.clone(),
            });
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::tgt::state::LunState;
    use crate::domain::ids::VolumeId;

    fn export() -> TargetExport {
        TargetExport {
            volume_id: VolumeId::generate(),
            number: 3,
            auth_username: "ca-user".into(),
            auth_password: "secret".into(),
        }
    }

    fn grant(export: &TargetExport, initiator: &str, read_only: bool) -> AccessGrant {
        AccessGrant {
            volume_id: export.volume_id,
            initiator: initiator.into(),
            read_only,
        }
    }

    fn target(tid: u32, iqn: &str, read_only: bool, acl: &[&str]) -> TargetState {
        TargetState {
            tid,
            iqn: iqn.into(),
            sessions: vec![],
            luns: vec![LunState {
                lun: VOLUME_LUN,
                read_only,
                path: Some("/v".into()),
            }],
            accounts: vec!["ca-user".into()],
            acl: acl.iter().map(|a| (*a).to_owned()).collect(),
        }
    }

    fn wanted<'a>(export: &'a TargetExport, grants: &'a [AccessGrant]) -> Wanted<'a> {
        Wanted {
            export,
            read_write_iqn: "iqn.t:volume-x".into(),
            read_only_iqn: "iqn.t:volume-x-ro".into(),
            grants,
        }
    }

    #[test]
    fn nothing_in_tgtd_builds_both_targets() {
        let export = export();
        let grants = [
            grant(&export, "iqn.h:a", false),
            grant(&export, "iqn.h:b", true),
        ];
        let steps = plan(&wanted(&export, &grants), &[], Some(&[]));
        assert_eq!(steps[0], Step::NewAccount);
        assert!(steps.contains(&Step::NewTarget {
            tid: 5,
            iqn: "iqn.t:volume-x".into()
        }));
        assert!(steps.contains(&Step::ReadOnly {
            tid: 6,
            read_only: true
        }));
        assert!(!steps.contains(&Step::ReadOnly {
            tid: 5,
            read_only: true
        }));
        assert!(steps.contains(&Step::Bind {
            tid: 5,
            initiator: "iqn.h:a".into()
        }));
        assert!(steps.contains(&Step::Bind {
            tid: 6,
            initiator: "iqn.h:b".into()
        }));
        assert!(!steps.contains(&Step::Bind {
            tid: 5,
            initiator: "iqn.h:b".into()
        }));
    }

    #[test]
    fn matching_state_needs_nothing() {
        let export = export();
        let grants = [grant(&export, "iqn.h:a", false)];
        let targets = [
            target(5, "iqn.t:volume-x", false, &["iqn.h:a"]),
            target(6, "iqn.t:volume-x-ro", true, &[]),
        ];
        assert!(plan(&wanted(&export, &grants), &targets, None).is_empty());
    }

    #[test]
    fn a_detached_writer_is_cut_off_before_a_new_one_is_let_in() {
        let export = export();
        let grants = [grant(&export, "iqn.h:new", false)];
        let mut rw = target(5, "iqn.t:volume-x", false, &["iqn.h:old"]);
        rw.sessions.push(SessionState {
            sid: 9,
            initiator: "iqn.h:old".into(),
            connections: vec![0],
        });
        let targets = [rw, target(6, "iqn.t:volume-x-ro", true, &[])];
        let steps = plan(&wanted(&export, &grants), &targets, None);
        assert_eq!(
            steps,
            vec![
                Step::Unbind {
                    tid: 5,
                    initiator: "iqn.h:old".into()
                },
                Step::EndConnection {
                    tid: 5,
                    sid: 9,
                    cid: 0
                },
                Step::Bind {
                    tid: 5,
                    initiator: "iqn.h:new".into()
                },
            ]
        );
    }

    #[test]
    fn a_foreign_target_on_the_id_is_replaced_and_a_writable_ro_lun_fixed() {
        let export = export();
        let targets = [
            target(5, "iqn.t:volume-other", false, &[]),
            target(6, "iqn.t:volume-x-ro", false, &[]),
        ];
        let steps = plan(&wanted(&export, &[]), &targets, None);
        assert_eq!(steps[0], Step::DeleteTarget { tid: 5 });
        assert!(steps.contains(&Step::ReadOnly {
            tid: 6,
            read_only: true
        }));
    }

    fn session(sid: u64, initiator: &str) -> SessionState {
        SessionState {
            sid,
            initiator: initiator.into(),
            connections: vec![0],
        }
    }

    #[test]
    fn an_attach_cuts_off_stale_sessions_first_and_lets_the_new_host_in() {
        let export = export();
        let joining = grant(&export, "iqn.h:new", false);
        let kept = [grant(&export, "iqn.h:reader", true)];
        let rw = [session(7, "iqn.h:old")];
        let ro = [session(8, "iqn.h:reader")];
        let sessions = [
            TargetSessions {
                tid: 5,
                sessions: &rw,
            },
            TargetSessions {
                tid: 6,
                sessions: &ro,
            },
        ];
        let steps = plan_change(&export, &kept, &sessions, Some(&joining), None);
        assert_eq!(
            steps,
            vec![
                Step::Unbind {
                    tid: 5,
                    initiator: "iqn.h:old".into()
                },
                Step::EndConnection {
                    tid: 5,
                    sid: 7,
                    cid: 0
                },
                Step::Bind {
                    tid: 5,
                    initiator: "iqn.h:new".into()
                },
            ]
        );
    }

    #[test]
    fn a_detach_cuts_off_the_host_unless_another_attachment_keeps_it() {
        let export = export();
        let rw = [session(7, "iqn.h:a")];
        let sessions = [
            TargetSessions {
                tid: 5,
                sessions: &rw,
            },
            TargetSessions {
                tid: 6,
                sessions: &[],
            },
        ];
        let leaving = grant(&export, "iqn.h:a", false);
        let still = [leaving.clone()];
        assert!(plan_change(&export, &still, &sessions, None, Some(&leaving)).is_empty());
        let steps = plan_change(&export, &[], &sessions, None, Some(&leaving));
        assert_eq!(
            steps,
            vec![
                Step::Unbind {
                    tid: 5,
                    initiator: "iqn.h:a".into()
                },
                Step::EndConnection {
                    tid: 5,
                    sid: 7,
                    cid: 0
                },
            ]
        );
        // A reader leaving without a session is still taken off the read-only ACL.
        let reader = grant(&export, "iqn.h:r", true);
        let idle = [
            TargetSessions {
                tid: 5,
                sessions: &[],
            },
            TargetSessions {
                tid: 6,
                sessions: &[],
            },
        ];
        assert_eq!(
            plan_change(&export, &[], &idle, None, Some(&reader)),
            vec![Step::Unbind {
                tid: 6,
                initiator: "iqn.h:r".into()
            }]
        );
    }
}
