//! The volume actions of the attach flow before attachments existed (`os-reserve`,
//! `os-unreserve`, `os-begin_detaching`, `os-roll_detaching`): they move the volume's
//! status only, with Cinder's compare-and-swap rules. Tempest and older Nova still use
//! them.

use super::attach::{aggregate, statuses, Hold, LiveAttachment, Transition};
use super::attachment::AttachStatus;
use super::refusal::LegacyActionRefusal;
use super::volume::{LockedVolume, VolumeState, VolumeStatus};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegacyAction {
    Reserve,
    Unreserve,
    BeginDetaching,
    RollDetaching,
}

/// What `action` does to the locked volume. An unreserve returns the volume to `in-use`
/// when one of its attachments is attached; actions that find nothing to do change
/// nothing (Cinder answers 202 all the same).
pub fn decide(
    action: LegacyAction,
    volume: &LockedVolume,
    live: &[LiveAttachment],
) -> Result<Transition, LegacyActionRefusal> {
    let set = |status: VolumeStatus| {
        Ok(Transition {
            volume: Some(VolumeState {
                status,
                attach_status: volume.attach_status,
            }),
            detached: Vec::new(),
        })
    };
    let unchanged = || {
        Ok(Transition {
            volume: None,
            detached: Vec::new(),
        })
    };
    match action {
        LegacyAction::Reserve => {
            let allowed = volume.status == VolumeStatus::Available
                || (volume.multiattach && volume.status == VolumeStatus::InUse);
            if allowed {
                set(VolumeStatus::Attaching)
            } else {
                Err(LegacyActionRefusal::Reserve {
                    status: volume.status,
                    multiattach: volume.multiattach,
                })
            }
        }
        // Cinder: `in-use` when something is attached, else `available`; here the
        // aggregator's answer, so a connection still attaching keeps the volume
        // `attaching`.
        LegacyAction::Unreserve if volume.status == VolumeStatus::Attaching => Ok(
            Transition::towards(volume, aggregate(volume, Hold::None, statuses(live))),
        ),
        LegacyAction::BeginDetaching => {
            if volume.status == VolumeStatus::InUse
                && volume.attach_status == AttachStatus::Attached
                && !volume.migrating()
            {
                set(VolumeStatus::Detaching)
            } else if volume.migrating() {
                // Cinder hides the detach of a migrating volume from its status.
                unchanged()
            } else {
                Err(LegacyActionRefusal::NotAttached)
            }
        }
        LegacyAction::RollDetaching if volume.status == VolumeStatus::Detaching => {
            set(VolumeStatus::InUse)
        }
        LegacyAction::Unreserve | LegacyAction::RollDetaching => unchanged(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ids::AttachmentId;
    use crate::domain::volume::locked as volume;

    fn attached(volume: &LockedVolume) -> Vec<LiveAttachment> {
        vec![LiveAttachment {
            id: AttachmentId::generate(),
            volume_id: volume.id,
            instance_uuid: None,
            attach_status: AttachStatus::Attached,
            attach_mode: None,
            attached_host: None,
            connected: true,
        }]
    }

    fn status_after(result: Result<Transition, LegacyActionRefusal>) -> Option<VolumeStatus> {
        result.expect("allowed").volume.map(|v| v.status)
    }

    #[test]
    fn reserve_and_unreserve() {
        let available = volume(VolumeStatus::Available, AttachStatus::Detached, false);
        assert_eq!(
            status_after(decide(LegacyAction::Reserve, &available, &[])),
            Some(VolumeStatus::Attaching)
        );
        let shared = volume(VolumeStatus::InUse, AttachStatus::Attached, true);
        assert_eq!(
            status_after(decide(LegacyAction::Reserve, &shared, &attached(&shared))),
            Some(VolumeStatus::Attaching)
        );
        let in_use = volume(VolumeStatus::InUse, AttachStatus::Attached, false);
        assert_eq!(
            decide(LegacyAction::Reserve, &in_use, &attached(&in_use)),
            Err(LegacyActionRefusal::Reserve {
                status: VolumeStatus::InUse,
                multiattach: false
            })
        );
        let attaching = volume(VolumeStatus::Attaching, AttachStatus::Detached, false);
        assert_eq!(
            status_after(decide(LegacyAction::Unreserve, &attaching, &[])),
            Some(VolumeStatus::Available)
        );
        assert_eq!(
            status_after(decide(
                LegacyAction::Unreserve,
                &attaching,
                &attached(&attaching)
            )),
            Some(VolumeStatus::InUse)
        );
        assert_eq!(
            status_after(decide(LegacyAction::Unreserve, &available, &[])),
            None
        );
    }

    #[test]
    fn detaching_begins_and_rolls_back() {
        let in_use = volume(VolumeStatus::InUse, AttachStatus::Attached, false);
        assert_eq!(
            status_after(decide(LegacyAction::BeginDetaching, &in_use, &[])),
            Some(VolumeStatus::Detaching)
        );
        let available = volume(VolumeStatus::Available, AttachStatus::Detached, false);
        assert_eq!(
            decide(LegacyAction::BeginDetaching, &available, &[]),
            Err(LegacyActionRefusal::NotAttached)
        );
        let migrating = LockedVolume {
            migration_status: Some("migrating".into()),
            ..available.clone()
        };
        assert_eq!(
            status_after(decide(LegacyAction::BeginDetaching, &migrating, &[])),
            None
        );
        let detaching = volume(VolumeStatus::Detaching, AttachStatus::Attached, false);
        assert_eq!(
            status_after(decide(LegacyAction::RollDetaching, &detaching, &[])),
            Some(VolumeStatus::InUse)
        );
        assert_eq!(
            status_after(decide(LegacyAction::RollDetaching, &in_use, &[])),
            None
        );
    }
}
