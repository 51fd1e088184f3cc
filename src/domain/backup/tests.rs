use chrono::TimeZone;

use super::*;

fn at(hour: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 27, hour, 0, 0).unwrap()
}

fn candidate(hour: u32, status: BackupStatus) -> ParentCandidate {
    ParentCandidate {
        id: BackupId::generate(),
        status,
        data_timestamp: Some(at(hour)),
        service: Some(POSIX_SERVICE.to_owned()),
    }
}

#[test]
fn in_use_volumes_need_force_and_snapshots_must_be_available() {
    assert_eq!(check_source(VolumeStatus::Available, None, false), Ok(()));
    assert_eq!(check_source(VolumeStatus::InUse, None, true), Ok(()));
    assert_eq!(
        check_source(VolumeStatus::InUse, None, false),
        Err(CreateRefusal::InUseWithoutForce)
    );
    let refused = check_source(VolumeStatus::Extending, None, true).unwrap_err();
    assert_eq!(
        refused.reason(),
        "Volume to be backed up must be available or in-use, but the current status is \
         \"extending\"."
    );
    // A snapshot's own status decides, whatever its volume is doing.
    assert_eq!(
        check_source(
            VolumeStatus::Extending,
            Some(SnapshotStatus::Available),
            false
        ),
        Ok(())
    );
    assert_eq!(
        check_source(
            VolumeStatus::Available,
            Some(SnapshotStatus::BackingUp),
            false
        ),
        Err(CreateRefusal::SnapshotStatus(SnapshotStatus::BackingUp))
    );
}

#[test]
fn the_parent_is_the_newest_available_backup_older_than_a_snapshot() {
    let eight = candidate(8, BackupStatus::Available);
    let nine_error = candidate(9, BackupStatus::Error);
    let ten = candidate(10, BackupStatus::Available);
    let all = [eight.clone(), nine_error, ten.clone()];
    assert_eq!(choose_parent(&all, None, POSIX_SERVICE), Some(ten.id));
    // A snapshot of 9:30 builds on the backup of 8:00, not the newer one.
    let snapshot = at(9) + chrono::Duration::minutes(30);
    let chosen = choose_parent(&all, Some(snapshot), POSIX_SERVICE);
    assert_eq!(chosen, Some(eight.id));
    assert_eq!(choose_parent(&all, Some(at(7)), POSIX_SERVICE), None);
    assert_eq!(choose_parent(&[], None, POSIX_SERVICE), None);
    // Another driver's backups are not built on: the newest this driver made is.
    assert_eq!(choose_parent(&all, None, CEPH_SERVICE), None);
    let eleven = ParentCandidate {
        service: Some(CEPH_SERVICE.to_owned()),
        ..candidate(11, BackupStatus::Available)
    };
    let all = [eight.clone(), ten.clone(), eleven.clone()];
    assert_eq!(choose_parent(&all, None, POSIX_SERVICE), Some(ten.id));
    assert_eq!(choose_parent(&all, None, CEPH_SERVICE), Some(eleven.id));
}

#[test]
fn a_backup_is_ours_when_our_driver_made_it_under_any_of_its_names() {
    assert!(is_our_backup(POSIX_SERVICE, Some(POSIX_SERVICE)));
    assert!(is_our_backup(
        POSIX_SERVICE,
        Some("cinder.backup.drivers.posix")
    ));
    assert!(is_our_backup(POSIX_SERVICE, None));
    assert!(!is_our_backup(POSIX_SERVICE, Some(CEPH_SERVICE)));
    assert!(!is_our_backup(
        CEPH_SERVICE,
        Some("cinder.backup.drivers.swift")
    ));
    assert_eq!(
        not_our_backup("Restore backup", POSIX_SERVICE, Some(CEPH_SERVICE)),
        "Restore backup aborted, the backup service currently configured \
         [cinder.backup.drivers.posix.PosixBackupDriver] is not the backup service that was \
         used to create this backup [cinder.backup.drivers.ceph.CephBackupDriver]."
    );
}

fn backup(status: BackupStatus, dependents: i64) -> Backup {
    Backup {
        id: BackupId::generate(),
        volume_id: VolumeId::generate(),
        snapshot_id: None,
        user_id: None,
        project_id: "p".into(),
        host: None,
        availability_zone: None,
        name: None,
        description: None,
        container: None,
        status,
        fail_reason: None,
        service_metadata: None,
        service: None,
        size: 1,
        object_count: 0,
        parent_id: None,
        num_dependent_backups: dependents,
        data_timestamp: None,
        restore_volume_id: None,
        created_at: at(1),
        updated_at: None,
        metadata: BTreeMap::new(),
        encryption_key_id: None,
    }
}

#[test]
fn deletes_need_available_or_error_unless_forced_and_never_with_incrementals() {
    assert_eq!(check_delete(&backup(BackupStatus::Error, 0), false), Ok(()));
    assert_eq!(
        check_delete(&backup(BackupStatus::Creating, 0), false),
        Err(DeleteRefusal::Status)
    );
    assert_eq!(
        check_delete(&backup(BackupStatus::Creating, 0), true),
        Ok(())
    );
    assert_eq!(
        check_delete(&backup(BackupStatus::Available, 1), true),
        Err(DeleteRefusal::HasIncrementals)
    );
}

#[test]
fn restores_need_an_available_backup_and_a_large_enough_available_volume() {
    let ok = check_restore(BackupStatus::Available, 2, VolumeStatus::Available, 2);
    assert_eq!(ok, Ok(()));
    let small = check_restore(BackupStatus::Available, 2, VolumeStatus::Available, 1);
    assert_eq!(
        small.unwrap_err().reason(),
        "volume size 1 is too small to restore backup of size 2."
    );
    let busy = check_restore(BackupStatus::Available, 1, VolumeStatus::InUse, 1);
    assert_eq!(busy, Err(RestoreRefusal::VolumeStatus));
    let creating = check_restore(BackupStatus::Creating, 1, VolumeStatus::Available, 1);
    assert_eq!(creating, Err(RestoreRefusal::BackupStatus));
}

#[test]
fn reset_status_takes_available_or_error_in_any_case() {
    assert_eq!(reset_status_of("ERROR"), Ok(BackupStatus::Error));
    assert_eq!(
        reset_status_of("creating").unwrap_err(),
        "Backup status: creating is invalid, valid statuses are: ['available', 'error']."
    );
}

#[test]
fn containers_stay_inside_the_repository() {
    let volume = VolumeId::parse("0123abcd-0000-0000-0000-000000000001").unwrap();
    assert_eq!(
        default_container(volume),
        "01/23/0123abcd-0000-0000-0000-000000000001"
    );
    assert!(check_container("nightly/db-1").is_ok());
    for bad in ["../etc", "/abs", "a//b", "a/./b", "sp ace", ""] {
        assert!(check_container(bad).is_err(), "{bad}");
    }
}
