//! The status aggregator: a volume's `(status, attach_status)` follows from its live
//! attachments, by one pure function, at every attachment event and in the consistency
//! checker.

use super::super::attachment::AttachStatus;
use super::super::volume::{LockedVolume, VolumeState, VolumeStatus};

/// A state the volume holds by itself, set by the legacy volume actions rather than by
/// an attachment: `os-reserve` (the volume is `attaching` with no attachment attaching)
/// and `os-begin_detaching` (the volume is `detaching`; attachments are never).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    None,
    Attaching,
    Detaching,
}

impl Hold {
    /// The hold a volume in `status` is under, given its live attachments before the
    /// event. A detach releases any hold (Cinder recomputes the volume from what remains),
    /// so detaches pass `Hold::None` instead.
    pub fn of(status: VolumeStatus, live: impl IntoIterator<Item = AttachStatus>) -> Self {
        match status {
            VolumeStatus::Detaching => Hold::Detaching,
            VolumeStatus::Attaching if !live.into_iter().any(|s| s == AttachStatus::Attaching) => {
                Hold::Attaching
            }
            _ => Hold::None,
        }
    }
}

/// Which attachment statuses are present among the live ones that count (error
/// attachments do not: Cinder ignores them when it recomputes a volume).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Present {
    attached: bool,
    attaching: bool,
    reserved: bool,
}

impl Present {
    fn of(live: impl IntoIterator<Item = AttachStatus>) -> Self {
        let mut present = Present::default();
        for status in live {
            match status {
                AttachStatus::Attached => present.attached = true,
                AttachStatus::Attaching => present.attaching = true,
                AttachStatus::Reserved => present.reserved = true,
                _ => {}
            }
        }
        present
    }

    /// The volume's `attach_status`: the most advanced attachment's.
    fn attach_status(self) -> AttachStatus {
        if self.attached {
            AttachStatus::Attached
        } else if self.attaching {
            AttachStatus::Attaching
        } else if self.reserved {
            AttachStatus::Reserved
        } else {
            AttachStatus::Detached
        }
    }
}

/// The volume's status from its live attachments: `in-use` if any is attached (even
/// while others attach), else `attaching` if any is attaching, else `reserved` if any is
/// reserved, else `available`. A legacy hold comes first (`detaching` while something is
/// still attached, `attaching` from `os-reserve`). A migrating or uploading volume with
/// nothing left keeps its status, as Cinder's `volume_detached` does.
pub fn status_of(
    status: VolumeStatus,
    migrating: bool,
    hold: Hold,
    live: impl IntoIterator<Item = AttachStatus>,
) -> VolumeState {
    let present = Present::of(live);
    let attach_status = present.attach_status();
    let status = match hold {
        Hold::Detaching if present.attached => VolumeStatus::Detaching,
        Hold::Attaching => VolumeStatus::Attaching,
        _ if present.attached => VolumeStatus::InUse,
        _ if present.attaching => VolumeStatus::Attaching,
        _ if present.reserved => VolumeStatus::Reserved,
        _ if migrating || status == VolumeStatus::Uploading => status,
        _ => VolumeStatus::Available,
    };
    VolumeState {
        status,
        attach_status,
    }
}

/// `status_of` for a locked volume.
pub fn aggregate(
    volume: &LockedVolume,
    hold: Hold,
    live: impl IntoIterator<Item = AttachStatus>,
) -> VolumeState {
    status_of(volume.status, volume.migrating(), hold, live)
}

/// The statuses the aggregator owns: any other (creating, extending, error, ...) is
/// set by another operation and is not the attach machine's to judge.
pub const AGGREGATED_STATUSES: &[VolumeStatus] = &[
    VolumeStatus::Available,
    VolumeStatus::Reserved,
    VolumeStatus::Attaching,
    VolumeStatus::InUse,
    VolumeStatus::Detaching,
];

/// Whether a volume status can stand with these live attachments: what the aggregator
/// makes of them (the invariant every write path keeps; the consistency checker's test).
pub fn status_consistent(status: VolumeStatus, attachments: &[AttachStatus]) -> bool {
    if !AGGREGATED_STATUSES.contains(&status) {
        return true;
    }
    let hold = Hold::of(status, attachments.iter().copied());
    status_of(status, false, hold, attachments.iter().copied()).status == status
}

#[cfg(test)]
mod tests {
    use super::*;
    use AttachStatus::*;

    /// The aggregator over every sequence of up to three sibling statuses, for each
    /// hold, against the rule as the issue states it.
    #[test]
    fn aggregate_every_combination() {
        use VolumeStatus as V;
        let kinds = [
            Attached,
            Attaching,
            Reserved,
            ErrorAttaching,
            ErrorDetaching,
            Detached,
        ];
        // Every sequence of length 0 to 3 (order must not matter either).
        let mut combinations: Vec<Vec<AttachStatus>> = vec![vec![]];
        let mut last: Vec<Vec<AttachStatus>> = vec![vec![]];
        for _ in 0..3 {
            last = last
                .iter()
                .flat_map(|c| {
                    kinds.iter().map(move |k| {
                        let mut c = c.clone();
                        c.push(*k);
                        c
                    })
                })
                .collect();
            combinations.extend(last.iter().cloned());
        }
        assert_eq!(combinations.len(), 1 + 6 + 36 + 216);
        for hold in [Hold::None, Hold::Attaching, Hold::Detaching] {
            for live in &combinations {
                let any = |s| live.contains(&s);
                let wanted_status = match hold {
                    Hold::Detaching if any(Attached) => V::Detaching,
                    Hold::Attaching => V::Attaching,
                    _ if any(Attached) => V::InUse,
                    _ if any(Attaching) => V::Attaching,
                    _ if any(Reserved) => V::Reserved,
                    _ => V::Available,
                };
                let wanted_attach = [Attached, Attaching, Reserved]
                    .into_iter()
                    .find(|s| any(*s))
                    .unwrap_or(Detached);
                let got = status_of(V::InUse, false, hold, live.iter().copied());
                assert_eq!(
                    (got.status, got.attach_status),
                    (wanted_status, wanted_attach),
                    "{hold:?} {live:?}"
                );
            }
        }
    }

    #[test]
    fn aggregate_named_cases() {
        use VolumeStatus as V;
        let cases: &[(&[AttachStatus], V)] = &[
            (&[], V::Available),
            (&[Attached, Attaching], V::InUse),
            (&[Attached, Reserved, Attaching], V::InUse),
            (&[Attaching, Reserved], V::Attaching),
            (&[Reserved, Reserved], V::Reserved),
            (&[ErrorAttaching, Reserved], V::Reserved),
            (&[ErrorAttaching, ErrorDetaching], V::Available),
        ];
        for (live, wanted) in cases {
            let got = status_of(V::Available, false, Hold::None, live.iter().copied());
            assert_eq!(got.status, *wanted, "{live:?}");
        }
        // Nothing left: a migrating or uploading volume keeps its status.
        assert_eq!(status_of(V::InUse, true, Hold::None, []).status, V::InUse);
        assert_eq!(
            status_of(V::Uploading, false, Hold::None, []).status,
            V::Uploading
        );
        assert_eq!(
            status_of(V::Uploading, false, Hold::None, [Reserved]).status,
            V::Reserved
        );
    }

    #[test]
    fn holds_come_from_the_legacy_actions() {
        use VolumeStatus as V;
        assert_eq!(Hold::of(V::Detaching, [Attached]), Hold::Detaching);
        assert_eq!(Hold::of(V::Attaching, [Attached]), Hold::Attaching);
        assert_eq!(Hold::of(V::Attaching, []), Hold::Attaching);
        assert_eq!(
            Hold::of(V::Attaching, [Attaching]),
            Hold::None,
            "an attachment is attaching: no hold"
        );
        assert_eq!(Hold::of(V::InUse, [Attached]), Hold::None);
    }
}
