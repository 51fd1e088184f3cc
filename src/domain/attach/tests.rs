use super::*;
use crate::domain::volume::locked as volume;
use AttachStatus::*;

fn attachment(volume: &LockedVolume, status: AttachStatus, instance: &str) -> LiveAttachment {
    LiveAttachment {
        id: AttachmentId::generate(),
        volume_id: volume.id,
        instance_uuid: Some(instance.to_owned()),
        attach_status: status,
        connected: matches!(status, Attaching | Attached),
    }
}

fn state(status: VolumeStatus, attach_status: AttachStatus) -> Option<VolumeState> {
    Some(VolumeState {
        status,
        attach_status,
    })
}

fn driver() -> DriverConnection {
    let mut data = Map::new();
    data.insert("target_iqn".into(), Value::String("iqn.x".into()));
    DriverConnection {
        driver_volume_type: "iscsi".into(),
        data,
    }
}

#[test]
fn reservation_table() {
    use VolumeStatus::*;
    // (status, multiattach, expected, same instance) -> volume afterwards, or refused
    let cases = [
        (Available, false, false, false, Ok(Some(Reserved))),
        (Downloading, false, false, false, Ok(Some(Reserved))),
        (InUse, false, false, false, Err(())),
        (InUse, false, false, true, Ok(None)),
        (Reserved, false, false, true, Ok(None)),
        (Reserved, false, false, false, Err(())),
        (Attaching, false, false, true, Err(())),
        (InUse, true, true, false, Ok(Some(Reserved))),
        (Reserved, true, true, false, Err(())),
        (Attaching, true, true, false, Err(())),
        (Available, true, false, false, Err(())),
        (Error, false, false, true, Err(())),
        (ErrorDeleting, true, true, false, Err(())),
    ];
    for (status, multiattach, expected, same, wanted) in cases {
        let v = volume(status, Detached, multiattach);
        let live = [attachment(&v, Attached, "server-1")];
        let instance = if same { "server-1" } else { "server-2" };
        let got = reserve(&v, &live, Some(instance), expected)
            .map(|t| t.volume.map(|s| s.status))
            .map_err(|_| ());
        assert_eq!(got, wanted, "{status} {multiattach} {expected} {same}");
    }
}

#[test]
fn a_refused_reservation_names_the_status_and_the_flag_read() {
    let v = volume(VolumeStatus::InUse, Attached, false);
    assert_eq!(
        reserve(&v, &[], None, false),
        Err(Refusal::Reservation {
            status: VolumeStatus::InUse,
            multiattach: false
        })
    );
    // No instance is never the same instance.
    let live = [LiveAttachment {
        instance_uuid: None,
        ..attachment(&v, Attached, "")
    }];
    assert!(reserve(&v, &live, None, false).is_err());
}

#[test]
fn nothing_is_reserved_on_a_volume_in_an_error_state() {
    let v = volume(VolumeStatus::Error, Detached, false);
    assert_eq!(
        reserve(&v, &[], Some("i"), false),
        Err(Refusal::VolumeInError(VolumeStatus::Error))
    );
    assert_eq!(
        refuses_any_reservation(VolumeStatus::ErrorExtending, true),
        Some(Refusal::VolumeInError(VolumeStatus::ErrorExtending))
    );
}

#[test]
fn refusals_without_the_lock_follow_the_same_rule() {
    assert!(refuses_any_reservation(VolumeStatus::Attaching, false).is_some());
    assert!(refuses_any_reservation(VolumeStatus::Attaching, true).is_some());
    assert!(refuses_any_reservation(VolumeStatus::Reserved, true).is_none());
    assert!(refuses_any_reservation(VolumeStatus::InUse, false).is_none());
    assert!(refuses_any_reservation(VolumeStatus::Available, false).is_none());
}

#[test]
fn connect_complete_and_detach_move_the_volume() {
    let v = volume(VolumeStatus::Reserved, Detached, false);
    let target = attachment(&v, Reserved, "s");
    let connected = connect(
        &v,
        std::slice::from_ref(&target),
        &target,
        Connecting::Update,
        AttachMode::ReadWrite,
        &driver(),
        false,
    )
    .unwrap();
    assert_eq!(
        Some(connected.volume),
        state(VolumeStatus::Attaching, Attaching)
    );
    assert_eq!(
        complete(&v, &target).volume,
        state(VolumeStatus::InUse, Attached)
    );
    let detached = detach(&v, std::slice::from_ref(&target), &target);
    assert_eq!(detached.volume, state(VolumeStatus::Available, Detached));
    assert_eq!(detached.detached, vec![target.id]);
}

#[test]
fn updates_are_refused_on_volumes_in_error_and_duplicate_connectors() {
    let broken = volume(VolumeStatus::Error, Detached, false);
    let target = attachment(&broken, Reserved, "s");
    let update = |v: &LockedVolume, live: &[LiveAttachment], by| {
        connect(
            v,
            live,
            &live[0],
            by,
            AttachMode::ReadWrite,
            &driver(),
            false,
        )
        .map(|_| ())
    };
    assert_eq!(
        update(&broken, std::slice::from_ref(&target), Connecting::Update),
        Err(Refusal::VolumeInError(VolumeStatus::Error))
    );
    assert_eq!(
        update(
            &broken,
            std::slice::from_ref(&target),
            Connecting::NewReservation
        ),
        Ok(()),
        "the create that reserved it skips the update checks"
    );
    let v = volume(VolumeStatus::InUse, Attached, false);
    let one = attachment(&v, Reserved, "s");
    let other = attachment(&v, Attached, "s");
    assert_eq!(
        update(&v, &[one.clone(), other.clone()], Connecting::Update),
        Err(Refusal::DuplicateConnector)
    );
    assert_eq!(
        update(&v, std::slice::from_ref(&other), Connecting::Update),
        Ok(()),
        "one attachment reconnecting is fine"
    );
    let unconnected = LiveAttachment {
        connected: false,
        ..other.clone()
    };
    assert_eq!(
        update(&v, &[one.clone(), unconnected], Connecting::Update),
        Ok(())
    );
    let by_type = LockedVolume {
        type_multiattach: true,
        ..v.clone()
    };
    assert_eq!(update(&by_type, &[one, other], Connecting::Update), Ok(()));
}

/// Every combination of up to two remaining attachments.
#[test]
fn detach_recomputes_from_what_remains() {
    let v = volume(VolumeStatus::InUse, Attached, true);
    let table: &[(&[AttachStatus], (VolumeStatus, AttachStatus))] = &[
        (&[], (VolumeStatus::Available, Detached)),
        (&[Attached], (VolumeStatus::InUse, Attached)),
        (&[Attaching], (VolumeStatus::Attaching, Attaching)),
        (&[Reserved], (VolumeStatus::Reserved, Reserved)),
        (&[ErrorAttaching], (VolumeStatus::Available, Detached)),
        (&[ErrorDetaching], (VolumeStatus::Available, Detached)),
        (&[Attached, Reserved], (VolumeStatus::InUse, Attached)),
        (&[Reserved, Attached], (VolumeStatus::InUse, Attached)),
        (&[Attaching, Reserved], (VolumeStatus::Attaching, Attaching)),
        (&[Attached, Attaching], (VolumeStatus::InUse, Attached)),
        (&[Reserved, Reserved], (VolumeStatus::Reserved, Reserved)),
        (
            &[ErrorAttaching, Reserved],
            (VolumeStatus::Reserved, Reserved),
        ),
        (&[ErrorAttaching, Attached], (VolumeStatus::InUse, Attached)),
        (
            &[ErrorDetaching, ErrorAttaching],
            (VolumeStatus::Available, Detached),
        ),
    ];
    for (remaining, (status, attach_status)) in table {
        let target = attachment(&v, Attached, "gone");
        let mut live = vec![target.clone()];
        live.extend(remaining.iter().map(|s| attachment(&v, *s, "other")));
        assert_eq!(
            detach(&v, &live, &target).volume,
            state(*status, *attach_status),
            "{remaining:?}"
        );
    }
}

#[test]
fn migrating_or_uploading_volumes_keep_their_status_when_detached() {
    let migrating = LockedVolume {
        migration_status: Some("migrating".into()),
        ..volume(VolumeStatus::InUse, Attached, false)
    };
    assert_eq!(
        detach_all(&migrating, &[]).volume,
        state(VolumeStatus::InUse, Detached)
    );
    let uploading = volume(VolumeStatus::Uploading, Attached, false);
    assert_eq!(
        detach_all(&uploading, &[]).volume,
        state(VolumeStatus::Uploading, Detached)
    );
    // Only a full detach is held back.
    let target = attachment(&migrating, Attached, "a");
    let rest = attachment(&migrating, Reserved, "b");
    assert_eq!(
        detach(&migrating, &[target.clone(), rest], &target).volume,
        state(VolumeStatus::Reserved, Reserved)
    );
}

#[test]
fn detach_all_removes_every_attachment() {
    let v = volume(VolumeStatus::InUse, Attached, true);
    let live = [attachment(&v, Attached, "a"), attachment(&v, Reserved, "b")];
    let t = detach_all(&v, &live);
    assert_eq!(t.detached, vec![live[0].id, live[1].id]);
    assert_eq!(t.volume, state(VolumeStatus::Available, Detached));
}

#[test]
fn reserve_rules() {
    assert_eq!(
        reserve_statuses(false),
        [VolumeStatus::Available, VolumeStatus::Downloading]
    );
    assert!(reserve_statuses(true).contains(&VolumeStatus::InUse));
    for status in [
        VolumeStatus::Error,
        VolumeStatus::ErrorDeleting,
        VolumeStatus::ErrorBackingUp,
    ] {
        assert!(in_error_state(status));
    }
    assert!(!in_error_state(VolumeStatus::InUse));
}

#[test]
fn consistency() {
    assert!(status_consistent(VolumeStatus::Available, &[]));
    assert!(status_consistent(
        VolumeStatus::Available,
        &[ErrorAttaching]
    ));
    assert!(!status_consistent(VolumeStatus::Available, &[Reserved]));
    assert!(!status_consistent(VolumeStatus::InUse, &[]));
    assert!(status_consistent(
        VolumeStatus::InUse,
        &[Attached, Reserved]
    ));
    assert!(!status_consistent(VolumeStatus::Reserved, &[Attached]));
}

#[test]
fn flat_connection_info() {
    let id = AttachmentId::generate();
    let extras = ConnectionExtras {
        attachment_id: id,
        access_mode: AttachMode::ReadOnly,
        encrypted: false,
        cacheable: false,
        enforce_multipath: false,
    };
    let info = connection_info(&driver(), &extras);
    assert_eq!(info["driver_volume_type"], "iscsi");
    assert_eq!(info["target_iqn"], "iqn.x");
    assert_eq!(info["access_mode"], "ro");
    assert_eq!(info["attachment_id"], id.to_string());
    assert_eq!(info["qos_specs"], Value::Null);
    assert_eq!(info["encrypted"], false);
    assert_eq!(info["enforce_multipath"], false);
    assert!(info.get("data").is_none(), "flat, not nested");
    assert!(is_connected(Some(&info)));
    assert!(!is_connected(Some(&serde_json::json!({}))));
    assert!(!is_connected(None));
}
