//! The volume actions of the attach flow before attachments existed (`os-reserve`,
//! `os-unreserve`, `os-begin_detaching`, `os-roll_detaching`): they move the volume's
//! status only, with Cinder's compare-and-swap rules. Tempest and older Nova still use
//! them.

use super::attach::VolumeAttachState;
use super::attachment::AttachStatus;
use super::volume::VolumeStatus;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegacyAction {
    Reserve,
    Unreserve,
    BeginDetaching,
    RollDetaching,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LegacyOutcome {
    Set(VolumeStatus),
    /// Nothing to do (Cinder answers 202 all the same).
    Unchanged,
    /// 400 with this reason; nothing written.
    Refused(String),
}

/// What `action` does to a volume in `state`; `has_attached` says whether it holds an
/// attached attachment (an unreserve then returns it to `in-use`).
pub fn decide(
    action: LegacyAction,
    state: VolumeAttachState,
    multiattach: bool,
    has_attached: bool,
) -> LegacyOutcome {
    match action {
        LegacyAction::Reserve => {
            let allowed = state.status == VolumeStatus::Available
                || (multiattach && state.status == VolumeStatus::InUse);
            if allowed {
                LegacyOutcome::Set(VolumeStatus::Attaching)
            } else {
                let expected = if multiattach {
                    "available or in-use"
                } else {
                    "available"
                };
                LegacyOutcome::Refused(format!(
                    "Volume status must be {expected} to reserve, but the status is {}.",
                    state.status
                ))
            }
        }
        LegacyAction::Unreserve if state.status == VolumeStatus::Attaching => {
            LegacyOutcome::Set(if has_attached {
                VolumeStatus::InUse
            } else {
                VolumeStatus::Available
            })
        }
        LegacyAction::BeginDetaching => {
            if state.status == VolumeStatus::InUse
                && state.attach_status == AttachStatus::Attached
                && !state.migrating
            {
                LegacyOutcome::Set(VolumeStatus::Detaching)
            } else if state.migrating {
                // Cinder hides the detach of a migrating volume from its status.
                LegacyOutcome::Unchanged
            } else {
                LegacyOutcome::Refused(
                    "Unable to detach volume. Volume status must be 'in-use' and \
                     attach_status must be 'attached' to detach."
                        .to_owned(),
                )
            }
        }
        LegacyAction::RollDetaching if state.status == VolumeStatus::Detaching => {
            LegacyOutcome::Set(VolumeStatus::InUse)
        }
        LegacyAction::Unreserve | LegacyAction::RollDetaching => LegacyOutcome::Unchanged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(status: VolumeStatus, attach_status: AttachStatus) -> VolumeAttachState {
        VolumeAttachState {
            status,
            attach_status,
            migrating: false,
        }
    }

    #[test]
    fn reserve_and_unreserve() {
        let available = state(VolumeStatus::Available, AttachStatus::Detached);
        let in_use = state(VolumeStatus::InUse, AttachStatus::Attached);
        assert_eq!(
            decide(LegacyAction::Reserve, available, false, false),
            LegacyOutcome::Set(VolumeStatus::Attaching)
        );
        assert_eq!(
            decide(LegacyAction::Reserve, in_use, true, true),
            LegacyOutcome::Set(VolumeStatus::Attaching)
        );
        assert_eq!(
            decide(LegacyAction::Reserve, in_use, false, true),
            LegacyOutcome::Refused(
                "Volume status must be available to reserve, but the status is in-use.".into()
            )
        );
        let attaching = state(VolumeStatus::Attaching, AttachStatus::Detached);
        assert_eq!(
            decide(LegacyAction::Unreserve, attaching, false, false),
            LegacyOutcome::Set(VolumeStatus::Available)
        );
        assert_eq!(
            decide(LegacyAction::Unreserve, attaching, true, true),
            LegacyOutcome::Set(VolumeStatus::InUse)
        );
        assert_eq!(
            decide(LegacyAction::Unreserve, available, false, false),
            LegacyOutcome::Unchanged
        );
    }

    #[test]
    fn detaching_begins_and_rolls_back() {
        let in_use = state(VolumeStatus::InUse, AttachStatus::Attached);
        assert_eq!(
            decide(LegacyAction::BeginDetaching, in_use, false, true),
            LegacyOutcome::Set(VolumeStatus::Detaching)
        );
        let available = state(VolumeStatus::Available, AttachStatus::Detached);
        assert!(matches!(
            decide(LegacyAction::BeginDetaching, available, false, false),
            LegacyOutcome::Refused(_)
        ));
        let migrating = VolumeAttachState {
            migrating: true,
            ..available
        };
        assert_eq!(
            decide(LegacyAction::BeginDetaching, migrating, false, false),
            LegacyOutcome::Unchanged
        );
        let detaching = state(VolumeStatus::Detaching, AttachStatus::Attached);
        assert_eq!(
            decide(LegacyAction::RollDetaching, detaching, false, true),
            LegacyOutcome::Set(VolumeStatus::InUse)
        );
        assert_eq!(
            decide(LegacyAction::RollDetaching, in_use, false, true),
            LegacyOutcome::Unchanged
        );
    }
}
