use super::*;
use crate::domain::volume::locked as volume;
use AttachStatus::*;

fn attachment(volume: &LockedVolume, status: AttachStatus, instance: &str) -> LiveAttachment {
    LiveAttachment {
        id: AttachmentId::generate(),
        volume_id: volume.id,
        instance_uuid: Some(instance.to_owned()),
        attach_status: status,
        attach_mode: Some(AttachMode::ReadWrite),
        attached_host: None,
        connected: matches!(status, Attaching | Attached),
    }
}

fn with_mode(mut a: LiveAttachment, mode: AttachMode) -> LiveAttachment {
    a.attach_mode = Some(mode);
    a
}

fn ask(instance: Option<&str>, expected_multiattach: bool) -> Reservation<'_> {
    Reservation {
        instance_uuid: instance,
        expected_multiattach,
        mode: AttachMode::Unset,
        default_max_attachments: None,
    }
}

fn state(status: VolumeStatus, attach_status: AttachStatus) -> Option<VolumeState> {
    Some(VolumeState {
        status,
        attach_status,
    })
}

/// The volume's state after `transition` (unchanged when it writes none).
fn after(volume: &LockedVolume, transition: Transition) -> Option<VolumeState> {
    Some(transition.volume.unwrap_or(volume.state()))
}

fn driver() -> DriverConnection {
    let mut data = Map::new();
    data.insert("target_iqn".into(), Value::String("iqn.x".into()));
    DriverConnection {
        driver_volume_type: "iscsi".into(),
        data,
    }
}

/// A volume in `status` with the one attachment (of `server-1`) that status implies.
fn volume_with_its_attachment(
    status: VolumeStatus,
    multiattach: bool,
) -> (LockedVolume, Vec<LiveAttachment>) {
    let attach_status = match status {
        VolumeStatus::Available | VolumeStatus::Downloading | VolumeStatus::Error => Detached,
        VolumeStatus::Reserved => Reserved,
        VolumeStatus::Attaching => Attaching,
        _ => Attached,
    };
    let v = volume(status, attach_status, multiattach);
    let live = if attach_status == Detached {
        vec![]
    } else {
        vec![attachment(&v, attach_status, "server-1")]
    };
    (v, live)
}

#[test]
fn reservation_table() {
    use VolumeStatus::*;
    // (status, multiattach, expected, same instance) -> volume status written (None:
    // unchanged), or refused
    let cases = [
        (Available, false, false, false, Ok(Some(Reserved))),
        (Downloading, false, false, false, Ok(Some(Reserved))),
        (InUse, false, false, false, Err(())),
        (InUse, false, false, true, Ok(None)),
        (Reserved, false, false, true, Ok(None)),
        (Reserved, false, false, false, Err(())),
        (Attaching, false, false, true, Err(())),
        (InUse, true, true, false, Ok(None)),
        // A multiattach volume takes attachments while others are pending.
        (Reserved, true, true, false, Ok(None)),
        (Attaching, true, true, false, Ok(None)),
        (Available, true, true, false, Ok(Some(Reserved))),
        (Detaching, true, true, false, Err(())),
        (Maintenance, true, true, false, Err(())),
        (Extending, true, true, false, Err(())),
        (Available, true, false, false, Err(())),
        (Error, false, false, true, Err(())),
        (ErrorDeleting, true, true, false, Err(())),
    ];
    for (status, multiattach, expected, same, wanted) in cases {
        let (v, live) = volume_with_its_attachment(status, multiattach);
        let instance = if same { "server-1" } else { "server-2" };
        let got = reserve(&v, &live, &ask(Some(instance), expected))
            .map(|t| t.volume.map(|s| s.status))
            .map_err(|_| ());
        assert_eq!(got, wanted, "{status} {multiattach} {expected} {same}");
    }
}

#[test]
fn a_multiattach_volume_being_migrated_takes_no_new_attachment() {
    let migrating = |multiattach| LockedVolume {
        migration_status: Some("migrating".into()),
        ..volume(VolumeStatus::InUse, Attached, multiattach)
    };
    let shared = migrating(true);
    let live = [attachment(&shared, Attached, "one")];
    assert_eq!(
        reserve(&shared, &live, &ask(Some("two"), true)),
        Err(AttachRefusal::Migrating)
    );
    let done = LockedVolume {
        migration_status: Some("success".into()),
        ..shared.clone()
    };
    assert!(reserve(&done, &live, &ask(Some("two"), true)).is_ok());
    // Single-attach volumes keep Cinder's rule: the same instance may still add one.
    let single = migrating(false);
    let live = [attachment(&single, Attached, "one")];
    assert!(reserve(&single, &live, &ask(Some("one"), false)).is_ok());
}

#[test]
fn attachment_limits() {
    let v = volume(VolumeStatus::InUse, Attached, true);
    let live: Vec<_> = (0..3)
        .map(|i| attachment(&v, Attached, &format!("s{i}")))
        .collect();
    let capped = |limit| Reservation {
        default_max_attachments: limit,
        ..ask(Some("new"), true)
    };
    assert!(reserve(&v, &live, &capped(Some(4))).is_ok());
    assert_eq!(
        reserve(&v, &live, &capped(Some(3))),
        Err(AttachRefusal::AttachmentLimit {
            limit: 3,
            from_type: false
        })
    );
    assert!(reserve(&v, &live, &capped(None)).is_ok());
    // The type's cap wins over the service's default, either way.
    let typed = |limit| LockedVolume {
        type_max_attachments: Some(limit),
        ..v.clone()
    };
    assert_eq!(
        reserve(&typed(3), &live, &capped(Some(100))),
        Err(AttachRefusal::AttachmentLimit {
            limit: 3,
            from_type: true
        })
    );
    assert!(reserve(&typed(10), &live, &capped(Some(2))).is_ok());
    // Even the same instance counts against the cap.
    let single = volume(VolumeStatus::InUse, Attached, false);
    let held = [attachment(&single, Attached, "s0")];
    assert!(reserve(&single, &held, &capped(Some(1))).is_err());
}

#[test]
fn single_writer() {
    let v = LockedVolume {
        type_single_writer: true,
        ..volume(VolumeStatus::InUse, Attached, true)
    };
    let writer = attachment(&v, Attached, "w");
    let reader = with_mode(attachment(&v, Attached, "r"), AttachMode::ReadOnly);
    let asking = |mode| Reservation {
        mode,
        ..ask(Some("new"), true)
    };
    let live = [reader.clone(), writer.clone()];
    assert_eq!(
        reserve(&v, &live, &asking(AttachMode::ReadWrite)),
        Err(AttachRefusal::WriterHeld { holder: writer.id })
    );
    assert!(reserve(&v, &live, &asking(AttachMode::ReadOnly)).is_ok());
    assert!(
        reserve(&v, &live, &asking(AttachMode::Unset)).is_ok(),
        "no mode yet: decided when it connects"
    );
    assert!(reserve(
        &v,
        std::slice::from_ref(&reader),
        &asking(AttachMode::ReadWrite)
    )
    .is_ok());
    let plain = LockedVolume {
        type_single_writer: false,
        ..v.clone()
    };
    assert!(reserve(&plain, &live, &asking(AttachMode::ReadWrite)).is_ok());
    // Connecting as rw: refused while another writes, fine for the writer itself.
    let pending = with_mode(attachment(&v, Reserved, "p"), AttachMode::Unset);
    let live = [reader, writer.clone(), pending.clone()];
    let connecting = |target: &LiveAttachment, mode| {
        connect(
            &v,
            &live,
            target,
            Connecting::Update,
            mode,
            &driver(),
            false,
        )
        .map(|_| ())
    };
    assert_eq!(
        connecting(&pending, AttachMode::ReadWrite),
        Err(AttachRefusal::WriterHeld { holder: writer.id })
    );
    assert_eq!(connecting(&pending, AttachMode::ReadOnly), Ok(()));
    assert_eq!(connecting(&writer, AttachMode::ReadWrite), Ok(()));
}

#[test]
fn a_refused_reservation_names_the_status_and_the_flag_read() {
    let v = volume(VolumeStatus::InUse, Attached, false);
    assert_eq!(
        reserve(&v, &[], &ask(None, false)),
        Err(AttachRefusal::Reservation {
            status: VolumeStatus::InUse,
            multiattach: false
        })
    );
    // No instance is never the same instance.
    let live = [LiveAttachment {
        instance_uuid: None,
        ..attachment(&v, Attached, "")
    }];
    assert!(reserve(&v, &live, &ask(None, false)).is_err());
}

#[test]
fn nothing_is_reserved_on_a_volume_in_an_error_state() {
    let v = volume(VolumeStatus::Error, Detached, false);
    assert_eq!(
        reserve(&v, &[], &ask(Some("i"), false)),
        Err(AttachRefusal::VolumeInError(VolumeStatus::Error))
    );
    assert_eq!(
        refuses_any_reservation(VolumeStatus::ErrorExtending, true),
        Some(AttachRefusal::VolumeInError(VolumeStatus::ErrorExtending))
    );
}

#[test]
fn refusals_without_the_lock_follow_the_same_rule() {
    assert!(refuses_any_reservation(VolumeStatus::Attaching, false).is_some());
    assert!(refuses_any_reservation(VolumeStatus::Attaching, true).is_none());
    assert!(refuses_any_reservation(VolumeStatus::Detaching, true).is_some());
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
    assert_eq!(connected.volume, state(VolumeStatus::Attaching, Attaching));
    assert_eq!(
        complete(&v, std::slice::from_ref(&target), &target).volume,
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
        Err(AttachRefusal::VolumeInError(VolumeStatus::Error))
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
        Err(AttachRefusal::DuplicateConnector)
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
            after(&v, detach(&v, &live, &target)),
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
        after(&migrating, detach_all(&migrating, &[])),
        state(VolumeStatus::InUse, Detached)
    );
    let uploading = volume(VolumeStatus::Uploading, Attached, false);
    assert_eq!(
        after(&uploading, detach_all(&uploading, &[])),
        state(VolumeStatus::Uploading, Detached)
    );
    // Only a full detach is held back.
    let target = attachment(&migrating, Attached, "a");
    let rest = attachment(&migrating, Reserved, "b");
    assert_eq!(
        after(
            &migrating,
            detach(&migrating, &[target.clone(), rest], &target)
        ),
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
fn a_second_host_attaching_leaves_the_volume_in_use() {
    let v = volume(VolumeStatus::InUse, Attached, true);
    let first = attachment(&v, Attached, "one");
    let second = attachment(&v, Reserved, "two");
    let live = [first.clone(), second.clone()];
    let connected = connect(
        &v,
        &live,
        &second,
        Connecting::Update,
        AttachMode::ReadWrite,
        &driver(),
        false,
    )
    .unwrap();
    assert_eq!(connected.volume, None, "stays in-use: nothing to write");
    assert_eq!(complete(&v, &live, &second).volume, None, "already in-use");
    // The first detaching while the second attaches: the volume is attaching.
    let attaching = attachment(&v, Attaching, "two");
    assert_eq!(
        detach(&v, &[first.clone(), attaching], &first).volume,
        state(VolumeStatus::Attaching, Attaching)
    );
    // A legacy detach in progress holds `detaching` while something is attached.
    let detaching = volume(VolumeStatus::Detaching, Attached, true);
    assert_eq!(complete(&detaching, &live, &second).volume, None);
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
    assert!(status_consistent(
        VolumeStatus::InUse,
        &[Attached, Attaching]
    ));
    assert!(!status_consistent(VolumeStatus::Reserved, &[Attached]));
    assert!(!status_consistent(
        VolumeStatus::Attaching,
        &[Attached, Attaching]
    ));
    assert!(
        status_consistent(VolumeStatus::Attaching, &[]),
        "os-reserve"
    );
    assert!(status_consistent(VolumeStatus::Detaching, &[Attached]));
    assert!(!status_consistent(VolumeStatus::Detaching, &[]));
    assert!(status_consistent(VolumeStatus::Extending, &[Reserved]));
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
    assert!(is_connected(Some(&info.to_string())).unwrap());
    assert!(!is_connected(None).unwrap());
}

#[test]
fn connected_means_a_non_empty_object() {
    for (text, connected) in [
        (r#"{"driver_volume_type": "iscsi"}"#, true),
        (r#" { "a" : {"b": [1, {"c": null}]} } "#, true),
        ("{}", false),
        (" { } ", false),
        ("null", false),
        ("[]", false),
        (r#"[{"a": 1}]"#, false),
        (r#""{\"a\": 1}""#, false),
        ("1", false),
        ("-1.5", false),
        ("true", false),
    ] {
        assert_eq!(is_connected(Some(text)).unwrap(), connected, "{text}");
    }
    for broken in ["", "{", r#"{"a": 1"#, r#"{"a": 1} x"#, "nul"] {
        assert!(is_connected(Some(broken)).is_err(), "{broken:?}");
    }
}

#[test]
fn error_states_are_the_statuses_that_mention_error() {
    for status in VolumeStatus::ALL {
        assert_eq!(
            in_error_state(*status),
            status.as_str().contains("error"),
            "{status:?}"
        );
    }
}
