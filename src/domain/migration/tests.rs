use super::*;

fn volume(status: VolumeStatus) -> LockedVolume {
    crate::domain::volume::locked(status, AttachStatus::Detached, false)
}

const HERE: &str = "h@file#file";
const THERE: &str = "h@file2#file2";

#[test]
fn a_migration_starts_only_where_cinder_lets_it() {
    let available = volume(VolumeStatus::Available);
    assert_eq!(may_start(&available, false, HERE, THERE), Ok(()));
    let cases = [
        (
            volume(VolumeStatus::Error),
            false,
            THERE,
            MigrationRefusal::Status(VolumeStatus::Error),
        ),
        (
            LockedVolume {
                migration_status: Some("migrating".into()),
                ..volume(VolumeStatus::Available)
            },
            false,
            THERE,
            MigrationRefusal::Migrating,
        ),
        (
            volume(VolumeStatus::Available),
            true,
            THERE,
            MigrationRefusal::HasSnapshots,
        ),
        (
            LockedVolume {
                in_group: true,
                ..volume(VolumeStatus::Available)
            },
            false,
            THERE,
            MigrationRefusal::InGroup,
        ),
        (
            volume(VolumeStatus::Available),
            false,
            "h@file",
            MigrationRefusal::SameHost,
        ),
        (
            crate::domain::volume::locked(VolumeStatus::InUse, AttachStatus::Attached, false),
            false,
            THERE,
            MigrationRefusal::Attached,
        ),
    ];
    for (volume, snapshots, to, refusal) in cases {
        assert_eq!(
            may_start(&volume, snapshots, HERE, to),
            Err(refusal.clone()),
            "{refusal:?}"
        );
    }
    // A finished or failed migration is no obstacle.
    for done in ["success", "error"] {
        let moved = LockedVolume {
            migration_status: Some(done.into()),
            ..volume(VolumeStatus::Available)
        };
        assert_eq!(may_start(&moved, false, HERE, THERE), Ok(()));
    }
}

#[test]
fn what_the_volume_shows_while_it_moves() {
    use VolumeStatus as V;
    assert_eq!(status_during(V::Available, false, false), V::Available);
    assert_eq!(status_during(V::Available, true, false), V::Maintenance);
    assert_eq!(status_during(V::Available, true, true), V::Retyping);
    assert_eq!(status_during(V::Available, false, true), V::Retyping);
}

#[test]
fn the_move_is_final_only_if_nothing_changed() {
    let moving = |status| LockedVolume {
        migration_status: Some("migrating".into()),
        ..volume(status)
    };
    assert_eq!(may_finish(&moving(VolumeStatus::Available), 0, 1), Ok(()));
    assert_eq!(may_finish(&moving(VolumeStatus::Maintenance), 0, 1), Ok(()));
    assert_eq!(may_finish(&moving(VolumeStatus::Retyping), 0, 1), Ok(()));
    let changed = [
        (moving(VolumeStatus::Available), 1, 1),
        (moving(VolumeStatus::Reserved), 0, 1),
        (moving(VolumeStatus::Available), 0, 2),
        (volume(VolumeStatus::Available), 0, 1),
    ];
    for (volume, attachments, size) in changed {
        assert_eq!(
            may_finish(&volume, attachments, size),
            Err(MigrationRefusal::Changed)
        );
    }
}
