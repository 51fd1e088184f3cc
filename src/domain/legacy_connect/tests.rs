use serde_json::Map;

use super::*;
use crate::domain::refusal::AttachRefusal;
use crate::domain::volume::locked as volume;

fn row(status: AttachStatus, instance: Option<&str>, host: Option<&str>) -> LiveAttachment {
    LiveAttachment {
        id: AttachmentId::generate(),
        volume_id: crate::domain::ids::VolumeId::generate(),
        instance_uuid: instance.map(str::to_owned),
        attach_status: status,
        attach_mode: Some(AttachMode::ReadWrite),
        attached_host: host.map(str::to_owned),
        connected: host.is_some(),
    }
}

fn driver() -> DriverConnection {
    DriverConnection {
        driver_volume_type: "iscsi".into(),
        data: Map::new(),
    }
}

fn connect(host: &str, mode: AttachMode) -> HostConnect<'_> {
    HostConnect {
        host,
        new_id: AttachmentId::generate(),
        mode,
        default_max_attachments: None,
        enforce_multipath: false,
    }
}

fn attach_request(instance: Option<&str>) -> AttachRequest<'_> {
    AttachRequest {
        instance_uuid: instance,
        host_name: None,
        mode: AttachMode::ReadWrite,
        new_id: AttachmentId::generate(),
        default_max_attachments: None,
    }
}

fn status_of(state: Option<VolumeState>) -> Option<VolumeStatus> {
    state.map(|s| s.status)
}

#[test]
fn a_first_connection_adds_an_attaching_attachment() {
    let available = volume(VolumeStatus::Available, AttachStatus::Detached, false);
    let request = connect("compute-1", AttachMode::ReadWrite);
    let done = initialize(&available, &[], &request, &driver()).expect("allowed");
    assert!(!done.existing);
    assert_eq!(done.attachment_id, request.new_id);
    assert_eq!(status_of(done.volume), Some(VolumeStatus::Attaching));
    assert_eq!(done.info["access_mode"], "rw");
    assert_eq!(done.info["attachment_id"], request.new_id.to_string());
    // After os-reserve the volume is already attaching: nothing to write.
    let reserved = volume(VolumeStatus::Attaching, AttachStatus::Detached, false);
    let done = initialize(&reserved, &[], &request, &driver()).expect("allowed");
    assert_eq!(
        done.volume,
        Some(VolumeState {
            status: VolumeStatus::Attaching,
            attach_status: AttachStatus::Attaching
        })
    );
}

#[test]
fn the_same_host_refreshes_its_connection() {
    let in_use = volume(VolumeStatus::InUse, AttachStatus::Attached, false);
    let live = [row(
        AttachStatus::Attached,
        Some("instance"),
        Some("compute-1"),
    )];
    let done = initialize(
        &in_use,
        &live,
        &connect("compute-1", AttachMode::ReadWrite),
        &driver(),
    )
    .expect("allowed");
    assert!(done.existing);
    assert_eq!(done.attachment_id, live[0].id);
    assert_eq!(done.volume, None);
    assert_eq!(
        initialize(
            &in_use,
            &live,
            &connect("compute-1", AttachMode::ReadOnly),
            &driver()
        ),
        Err(LegacyConnectRefusal::Legacy(LegacyWhy::DifferentMode))
    );
}

#[test]
fn initialize_refuses_maintenance_and_statuses_it_does_not_own() {
    let request = connect("compute-1", AttachMode::ReadWrite);
    for (status, why) in [
        (VolumeStatus::Maintenance, LegacyWhy::Maintenance),
        (VolumeStatus::Error, LegacyWhy::Status(VolumeStatus::Error)),
        (
            VolumeStatus::Creating,
            LegacyWhy::Status(VolumeStatus::Creating),
        ),
    ] {
        let locked = volume(status, AttachStatus::Detached, false);
        assert_eq!(
            initialize(&locked, &[], &request, &driver()),
            Err(LegacyConnectRefusal::Legacy(why))
        );
    }
}

#[test]
fn new_connections_meet_the_sharing_limits() {
    let mut shared = volume(VolumeStatus::InUse, AttachStatus::Attached, true);
    shared.type_max_attachments = Some(1);
    let live = [row(AttachStatus::Attached, Some("a"), Some("compute-1"))];
    assert_eq!(
        initialize(
            &shared,
            &live,
            &connect("compute-2", AttachMode::ReadWrite),
            &driver()
        ),
        Err(LegacyConnectRefusal::Sharing(
            AttachRefusal::AttachmentLimit {
                limit: 1,
                from_type: true
            }
        ))
    );
    shared.type_max_attachments = None;
    shared.type_single_writer = true;
    assert_eq!(
        initialize(
            &shared,
            &live,
            &connect("compute-2", AttachMode::ReadWrite),
            &driver()
        ),
        Err(LegacyConnectRefusal::Sharing(AttachRefusal::WriterHeld {
            holder: live[0].id
        }))
    );
    let reader = initialize(
        &shared,
        &live,
        &connect("compute-2", AttachMode::ReadOnly),
        &driver(),
    )
    .expect("a reader fits");
    assert_eq!(reader.info["access_mode"], "ro");
}

#[test]
fn attach_claims_the_hosts_connection() {
    let attaching = volume(VolumeStatus::Attaching, AttachStatus::Attaching, false);
    let connection = row(AttachStatus::Attaching, None, Some("compute-1"));
    let done = attach(
        &attaching,
        std::slice::from_ref(&connection),
        &attach_request(Some("vm-1")),
    )
    .expect("allowed");
    assert_eq!(done.row, AttachRow::Complete(connection.id));
    assert_eq!(status_of(done.volume), Some(VolumeStatus::InUse));
}

#[test]
fn attach_without_a_connection_adds_an_attached_attachment() {
    let available = volume(VolumeStatus::Available, AttachStatus::Detached, false);
    let request = attach_request(Some("vm-1"));
    let done = attach(&available, &[], &request).expect("allowed");
    assert_eq!(done.row, AttachRow::New(request.new_id));
    assert_eq!(
        done.volume,
        Some(VolumeState {
            status: VolumeStatus::InUse,
            attach_status: AttachStatus::Attached
        })
    );
}

#[test]
fn attach_again_for_the_same_instance_changes_nothing() {
    let in_use = volume(VolumeStatus::InUse, AttachStatus::Attached, false);
    let live = [row(AttachStatus::Attached, Some("vm-1"), Some("compute-1"))];
    let done = attach(&in_use, &live, &attach_request(Some("vm-1"))).expect("allowed");
    assert_eq!(done.row, AttachRow::Already(live[0].id));
    assert_eq!(done.volume, None);
}

#[test]
fn attach_completes_the_instances_own_reservation() {
    let reserved = volume(VolumeStatus::Reserved, AttachStatus::Reserved, false);
    let live = [row(AttachStatus::Reserved, Some("vm-1"), None)];
    let done = attach(&reserved, &live, &attach_request(Some("vm-1"))).expect("allowed");
    assert_eq!(done.row, AttachRow::Complete(live[0].id));
    assert_eq!(status_of(done.volume), Some(VolumeStatus::InUse));
}

#[test]
fn a_single_attach_volume_takes_no_second_consumer() {
    let in_use = volume(VolumeStatus::InUse, AttachStatus::Attached, false);
    let live = [row(AttachStatus::Attached, Some("vm-1"), Some("compute-1"))];
    assert_eq!(
        attach(&in_use, &live, &attach_request(Some("vm-2"))),
        Err(LegacyConnectRefusal::Legacy(LegacyWhy::AttachedElsewhere))
    );
    // Reserved by another instance through the attachments API: refused as well.
    let reserved = volume(VolumeStatus::Reserved, AttachStatus::Reserved, false);
    let live = [row(AttachStatus::Reserved, Some("vm-1"), None)];
    assert_eq!(
        attach(&reserved, &live, &attach_request(Some("vm-2"))),
        Err(LegacyConnectRefusal::Legacy(LegacyWhy::AttachedElsewhere))
    );
    // A multiattach volume takes it.
    let shared = volume(VolumeStatus::InUse, AttachStatus::Attached, true);
    let live = [row(AttachStatus::Attached, Some("vm-1"), Some("compute-1"))];
    assert!(matches!(
        attach(&shared, &live, &attach_request(Some("vm-2"))),
        Ok(Attached {
            row: AttachRow::New(_),
            volume: None
        })
    ));
}

#[test]
fn attach_refuses_a_connection_made_for_the_other_mode() {
    let attaching = volume(VolumeStatus::Attaching, AttachStatus::Attaching, false);
    let mut connection = row(AttachStatus::Attaching, None, Some("compute-1"));
    connection.attach_mode = Some(AttachMode::ReadOnly);
    assert_eq!(
        attach(
            &attaching,
            std::slice::from_ref(&connection),
            &attach_request(Some("vm-1"))
        ),
        Err(LegacyConnectRefusal::Legacy(LegacyWhy::DifferentMode))
    );
}

#[test]
fn terminate_removes_unfinished_and_disconnects_finished() {
    let shared = volume(VolumeStatus::InUse, AttachStatus::Attached, true);
    let live = [
        row(AttachStatus::Attached, Some("vm-1"), Some("compute-1")),
        row(AttachStatus::Attaching, None, Some("compute-1")),
        row(AttachStatus::Attached, Some("vm-2"), Some("compute-2")),
    ];
    let done = terminate(&shared, &live, Some("compute-1")).expect("allowed");
    assert_eq!(done.removed, vec![live[1].id]);
    assert_eq!(done.disconnected, vec![live[0].id]);
    assert_eq!(done.volume, None);
    // Without a host and several connected: the caller must say which.
    assert_eq!(
        terminate(&shared, &live, None),
        Err(LegacyConnectRefusal::Legacy(LegacyWhy::HostNeeded))
    );
}

#[test]
fn terminate_ends_an_attach_in_progress() {
    let attaching = volume(VolumeStatus::Attaching, AttachStatus::Attaching, false);
    let live = [row(AttachStatus::Attaching, None, Some("compute-1"))];
    let done = terminate(&attaching, &live, None).expect("allowed");
    assert_eq!(done.removed, vec![live[0].id]);
    assert_eq!(status_of(done.volume), Some(VolumeStatus::Available));
    // An os-reserve hold ends as well (Cinder unreserves after terminating).
    let held = volume(VolumeStatus::Attaching, AttachStatus::Detached, false);
    let done = terminate(&held, &[], Some("compute-1")).expect("allowed");
    assert_eq!(status_of(done.volume), Some(VolumeStatus::Available));
}

#[test]
fn detach_needs_an_id_among_several() {
    let shared = volume(VolumeStatus::InUse, AttachStatus::Attached, true);
    let live = [
        row(AttachStatus::Attached, Some("vm-1"), Some("compute-1")),
        row(AttachStatus::Attached, Some("vm-2"), Some("compute-2")),
    ];
    assert_eq!(
        detach(&shared, &live, None),
        Err(LegacyConnectRefusal::Legacy(LegacyWhy::SeveralAttachments))
    );
    let done = detach(&shared, &live, Some(live[1].id)).expect("allowed");
    assert_eq!(done.detached, vec![live[1].id]);
    assert_eq!(done.volume, None);
    let done = detach(&shared, &live[..1], None).expect("allowed");
    assert_eq!(done.detached, vec![live[0].id]);
    assert_eq!(status_of(done.volume), Some(VolumeStatus::Available));
}

#[test]
fn detach_of_an_unknown_attachment_recomputes_the_volume() {
    let detaching = volume(VolumeStatus::Detaching, AttachStatus::Detached, false);
    let done = detach(&detaching, &[], Some(AttachmentId::generate())).expect("allowed");
    assert!(done.detached.is_empty());
    assert_eq!(status_of(done.volume), Some(VolumeStatus::Available));
    let maintenance = volume(VolumeStatus::Maintenance, AttachStatus::Detached, false);
    assert_eq!(
        detach(&maintenance, &[], None),
        Err(LegacyConnectRefusal::Legacy(LegacyWhy::Maintenance))
    );
}

#[test]
fn host_names_are_sanitized_as_cinder_does() {
    assert_eq!(
        sanitize_hostname("My_Host name.example-"),
        "my-host-name.example"
    );
    assert_eq!(sanitize_hostname("..compute#1!"), "compute1");
    assert_eq!(sanitize_hostname("node\u{263a}x"), "nodex");
}
