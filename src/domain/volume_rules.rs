//! Cinder's rules for changing a volume, each a pure function of the volume as its write
//! transaction holds it locked. The store applies what they allow.

use super::attachment::AttachStatus;
use super::refusal::{
    ExtendRefusal, MetadataRefusal, RetypeRefusal, VolumeDeleteRefusal, VolumeStatusRefusal,
};
use super::volume::{LockedVolume, Retype, VolumeStatus, MAX_METADATA_ITEMS};

/// Statuses from which a volume may be deleted without `force`.
pub const DELETABLE_STATUSES: &[VolumeStatus] = &[
    VolumeStatus::Available,
    VolumeStatus::Error,
    VolumeStatus::ErrorRestoring,
    VolumeStatus::ErrorExtending,
    VolumeStatus::ErrorManaging,
];

/// Statuses in which Cinder refuses to update a volume.
pub const UPDATE_REFUSED: &[VolumeStatus] = &[VolumeStatus::Maintenance];

/// Statuses in which Cinder refuses to change a volume's metadata.
pub const METADATA_CHANGE_REFUSED: &[VolumeStatus] =
    &[VolumeStatus::Maintenance, VolumeStatus::Uploading];

/// Migration states that do not block a delete or a retype.
fn migration_allows_change(migration_status: Option<&str>) -> bool {
    matches!(
        migration_status,
        None | Some("deleting" | "error" | "success")
    )
}

/// A delete may start (the volume becomes `deleting`): it is not attached, migrating or
/// in a group, and, without `force`, its status is one of `DELETABLE_STATUSES`.
pub fn delete(volume: &LockedVolume, force: bool) -> Result<(), VolumeDeleteRefusal> {
    let allowed = volume.attach_status != AttachStatus::Attached
        && migration_allows_change(volume.migration_status.as_deref())
        && !volume.in_group
        && (force || DELETABLE_STATUSES.contains(&volume.status));
    allowed
        .then_some(())
        .ok_or(VolumeDeleteRefusal::Undeletable)
}

/// An extend may start (the volume becomes `extending`): the size grows, and the volume
/// is `available` (`in-use` for an extend of an attached volume, 3.42+).
pub fn extend(volume: &LockedVolume, new_size: i64, attached: bool) -> Result<(), ExtendRefusal> {
    if new_size <= volume.size {
        return Err(ExtendRefusal::NotLarger {
            current: volume.size,
        });
    }
    let expected = if attached {
        VolumeStatus::InUse
    } else {
        VolumeStatus::Available
    };
    if volume.status != expected {
        return Err(ExtendRefusal::Status(volume.status));
    }
    Ok(())
}

/// A status change that must find the volume in `from` (provisioning, extending,
/// deleting finishing or failing).
pub fn transition(volume: &LockedVolume, from: VolumeStatus) -> Result<(), VolumeStatusRefusal> {
    if volume.status == from {
        Ok(())
    } else {
        Err(VolumeStatusRefusal(volume.status))
    }
}

/// The readonly flag changes only while the volume is `available`.
pub fn set_readonly(volume: &LockedVolume) -> Result<(), VolumeStatusRefusal> {
    transition(volume, VolumeStatus::Available)
}

/// Writes that a status in `refused` forbids (update, metadata changes).
pub fn change_allowed(
    volume: &LockedVolume,
    refused: &[VolumeStatus],
) -> Result<(), VolumeStatusRefusal> {
    if refused.contains(&volume.status) {
        Err(VolumeStatusRefusal(volume.status))
    } else {
        Ok(())
    }
}

/// Cinder's retype conditions. A change of multiattach (or of single-writer) needs an
/// `available` volume; any retype needs an `available` or `in-use` volume that is not
/// migrating or in a group, a different type, and the multiattach flag the caller read.
pub fn retype(volume: &LockedVolume, retype: &Retype) -> Result<(), RetypeRefusal> {
    if retype.new_multiattach != volume.multiattach && volume.status != VolumeStatus::Available {
        return Err(RetypeRefusal::Multiattach(volume.status));
    }
    if retype.new_single_writer != volume.type_single_writer
        && volume.status != VolumeStatus::Available
    {
        return Err(RetypeRefusal::SingleWriter(volume.status));
    }
    let allowed = volume.multiattach == retype.expected_multiattach
        && matches!(volume.status, VolumeStatus::Available | VolumeStatus::InUse)
        && volume.volume_type_id != retype.new_type_id
        && migration_allows_change(volume.migration_status.as_deref())
        && !volume.in_group;
    allowed.then_some(()).ok_or(RetypeRefusal::Unretypable)
}

/// Refuses metadata of more than `MAX_METADATA_ITEMS` items.
pub fn check_metadata_count(count: usize) -> Result<(), MetadataRefusal> {
    if count > MAX_METADATA_ITEMS {
        return Err(MetadataRefusal::TooManyItems(count));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ids::VolumeTypeId;

    fn volume(status: VolumeStatus) -> LockedVolume {
        crate::domain::volume::locked(status, AttachStatus::Detached, false)
    }

    #[test]
    fn delete_conditions() {
        assert_eq!(delete(&volume(VolumeStatus::Available), false), Ok(()));
        assert_eq!(
            delete(&volume(VolumeStatus::InUse), false),
            Err(VolumeDeleteRefusal::Undeletable)
        );
        assert_eq!(delete(&volume(VolumeStatus::InUse), true), Ok(()));
        let attached = LockedVolume {
            attach_status: AttachStatus::Attached,
            ..volume(VolumeStatus::InUse)
        };
        assert_eq!(
            delete(&attached, true),
            Err(VolumeDeleteRefusal::Undeletable)
        );
        let migrating = LockedVolume {
            migration_status: Some("migrating".into()),
            ..volume(VolumeStatus::Available)
        };
        assert_eq!(
            delete(&migrating, true),
            Err(VolumeDeleteRefusal::Undeletable)
        );
        let grouped = LockedVolume {
            in_group: true,
            ..volume(VolumeStatus::Available)
        };
        assert_eq!(
            delete(&grouped, false),
            Err(VolumeDeleteRefusal::Undeletable)
        );
    }

    #[test]
    fn extend_conditions() {
        let v = LockedVolume {
            size: 2,
            ..volume(VolumeStatus::InUse)
        };
        assert_eq!(
            extend(&v, 2, false),
            Err(ExtendRefusal::NotLarger { current: 2 })
        );
        assert_eq!(
            extend(&v, 3, false),
            Err(ExtendRefusal::Status(VolumeStatus::InUse))
        );
        let available = LockedVolume {
            size: 2,
            ..volume(VolumeStatus::Available)
        };
        assert_eq!(extend(&available, 3, false), Ok(()));
        assert_eq!(
            extend(&available, 3, true),
            Err(ExtendRefusal::Status(VolumeStatus::Available))
        );
    }

    fn retype_to(
        v: &LockedVolume,
        new_type_id: VolumeTypeId,
        new_multiattach: bool,
        expected_multiattach: bool,
    ) -> Retype {
        Retype {
            volume_id: v.id,
            new_type_id,
            expected_multiattach,
            new_multiattach,
            new_single_writer: false,
        }
    }

    #[test]
    fn retype_conditions() {
        let v = volume(VolumeStatus::InUse);
        let other = VolumeTypeId::generate();
        assert_eq!(retype(&v, &retype_to(&v, other, false, false)), Ok(()));
        assert_eq!(
            retype(&v, &retype_to(&v, other, true, false)),
            Err(RetypeRefusal::Multiattach(VolumeStatus::InUse))
        );
        assert_eq!(
            retype(&v, &retype_to(&v, v.volume_type_id, false, false)),
            Err(RetypeRefusal::Unretypable)
        );
        assert_eq!(
            retype(&v, &retype_to(&v, other, false, true)),
            Err(RetypeRefusal::Unretypable),
            "the flag changed since the caller read it"
        );
        let available = volume(VolumeStatus::Available);
        assert_eq!(
            retype(&available, &retype_to(&available, other, true, false)),
            Ok(())
        );
        let error = volume(VolumeStatus::Error);
        assert_eq!(
            retype(&error, &retype_to(&error, other, false, false)),
            Err(RetypeRefusal::Unretypable)
        );
    }

    #[test]
    fn single_writer_changes_only_while_available() {
        let other = VolumeTypeId::generate();
        let into = |v: &LockedVolume| Retype {
            new_single_writer: true,
            ..retype_to(v, other, false, false)
        };
        let in_use = volume(VolumeStatus::InUse);
        assert_eq!(
            retype(&in_use, &into(&in_use)),
            Err(RetypeRefusal::SingleWriter(VolumeStatus::InUse))
        );
        let available = volume(VolumeStatus::Available);
        assert_eq!(retype(&available, &into(&available)), Ok(()));
        let single = LockedVolume {
            type_single_writer: true,
            ..in_use.clone()
        };
        assert_eq!(retype(&single, &into(&single)), Ok(()), "no change");
        assert_eq!(
            retype(&single, &retype_to(&single, other, false, false)),
            Err(RetypeRefusal::SingleWriter(VolumeStatus::InUse)),
            "out of single-writer"
        );
    }

    #[test]
    fn status_guards() {
        let v = volume(VolumeStatus::Maintenance);
        assert_eq!(
            change_allowed(&v, UPDATE_REFUSED),
            Err(VolumeStatusRefusal(VolumeStatus::Maintenance))
        );
        assert_eq!(
            change_allowed(&volume(VolumeStatus::Uploading), UPDATE_REFUSED),
            Ok(())
        );
        assert_eq!(set_readonly(&volume(VolumeStatus::Available)), Ok(()));
        assert_eq!(
            transition(&volume(VolumeStatus::Creating), VolumeStatus::Extending),
            Err(VolumeStatusRefusal(VolumeStatus::Creating))
        );
    }
}
