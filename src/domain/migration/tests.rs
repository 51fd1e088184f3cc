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

fn live(server: Option<&str>, status: AttachStatus, connected: bool) -> LiveAttachment {
    LiveAttachment {
        id: crate::domain::ids::AttachmentId::generate(),
        volume_id: VolumeId::generate(),
        instance_uuid: server.map(str::to_owned),
        attach_status: status,
        attach_mode: None,
        attached_host: Some("compute-1".into()),
        connected,
    }
}

#[test]
fn an_attached_volume_moves_only_by_swapping_its_one_server() {
    let in_use = crate::domain::volume::locked(VolumeStatus::InUse, AttachStatus::Attached, false);
    let used = live(Some("s1"), AttachStatus::Attached, true);
    assert_eq!(
        swap_server(&volume(VolumeStatus::Available), &[], true),
        Ok(None)
    );
    assert_eq!(
        swap_server(&volume(VolumeStatus::Available), &[], false),
        Ok(None)
    );
    assert_eq!(
        swap_server(&in_use, std::slice::from_ref(&used), true),
        Ok(Some("s1".into()))
    );
    assert_eq!(
        swap_server(&in_use, std::slice::from_ref(&used), false),
        Err(MigrationRefusal::Attached)
    );
    let not_one = [
        vec![used.clone(), live(Some("s2"), AttachStatus::Attached, true)],
        vec![live(None, AttachStatus::Attached, true)],
        vec![live(Some("s1"), AttachStatus::Reserved, false)],
        vec![live(Some("s1"), AttachStatus::Attached, false)],
        vec![],
    ];
    for attachments in not_one {
        assert_eq!(
            swap_server(&in_use, &attachments, true),
            Err(MigrationRefusal::NotOneServer),
            "{attachments:?}"
        );
    }
    // A reservation alone on an available volume is not moved by copying either.
    let reserved = [live(Some("s1"), AttachStatus::Reserved, false)];
    assert_eq!(
        swap_server(&volume(VolumeStatus::Reserved), &reserved, true),
        Err(MigrationRefusal::NotOneServer)
    );
    assert_eq!(
        target_of(used.volume_id),
        format!("target:{}", used.volume_id)
    );
}
