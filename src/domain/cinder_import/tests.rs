use chrono::Utc;

use super::*;

const VOL: &str = "00000000-0000-4000-8000-000000000001";
const TYPE: &str = "00000000-0000-4000-8000-0000000000f1";

fn cinder_type(name: &str, specs: &[(&str, &str)]) -> CinderType {
    CinderType {
        id: TYPE.into(),
        name: name.into(),
        description: None,
        is_public: true,
        qos_specs_id: None,
        specs: specs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Some((*v).to_owned())))
            .collect(),
        projects: vec![],
        encrypted: false,
        created_at: Utc::now(),
    }
}

fn volume(status: &str) -> CinderVolume {
    CinderVolume {
        id: VOL.into(),
        user_id: Some("u".into()),
        project_id: Some("p".into()),
        host: Some("cinder-1@lvm#lvm".into()),
        size: 1,
        availability_zone: Some("nova".into()),
        status: status.into(),
        display_name: Some("v".into()),
        display_description: None,
        volume_type_id: TYPE.into(),
        bootable: false,
        multiattach: false,
        encryption_key_id: None,
        snapshot_id: None,
        source_volid: None,
        name_id: None,
        group_id: None,
        consistencygroup_id: None,
        migration_status: None,
        use_quota: true,
        metadata: Pairs::new(),
        admin_metadata: Pairs::new(),
        image_metadata: Pairs::new(),
        created_at: Utc::now(),
    }
}

fn attachment(status: &str) -> CinderAttachment {
    CinderAttachment {
        id: "00000000-0000-4000-8000-0000000000a1".into(),
        volume_id: VOL.into(),
        instance_uuid: Some("i".into()),
        attached_host: Some("compute-1".into()),
        mountpoint: None,
        attach_time: None,
        attach_mode: Some("rw".into()),
        attach_status: status.into(),
        connection_info: Some(r#"{"driver_volume_type": "iscsi"}"#.into()),
        connector: Some(r#"{"host": "compute-1"}"#.into()),
        specs: Pairs::new(),
        created_at: Utc::now(),
    }
}

fn destination(takes_live_attachments: bool) -> Destination {
    Destination {
        volume_host: "here@lvm#lvm".into(),
        service_uuid: ServiceId::generate(),
        availability_zone: "nova".into(),
        takes_live_attachments,
        shared_targets: Some(true),
        volumes: [VolumeId::parse(VOL).unwrap()].into(),
        snapshots: BTreeSet::new(),
    }
}

fn planned(cinder: &CinderDatabase, present: &Present, to: &Destination) -> ImportPlan {
    plan(cinder, present, |name| (name == "lvm").then_some(to))
}

fn reasons(plan: &ImportPlan) -> Vec<(&'static str, String)> {
    plan.refused
        .iter()
        .map(|r| (r.kind, r.reason.clone()))
        .collect()
}

#[test]
fn an_attached_volume_comes_with_its_attachment_and_the_status_it_makes() {
    let cinder = CinderDatabase {
        types: vec![cinder_type("lvm", &[])],
        volumes: vec![volume("in-use")],
        attachments: vec![attachment("attached")],
        ..Default::default()
    };
    let plan = planned(&cinder, &Present::default(), &destination(true));
    assert_eq!(reasons(&plan), vec![]);
    let taken = &plan.volumes[0];
    assert_eq!(taken.host, "here@lvm#lvm");
    assert_eq!(taken.status, VolumeStatus::InUse);
    assert_eq!(taken.attach_status, AttachStatus::Attached);
    assert_eq!(plan.attachments[0].connector.host(), Some("compute-1"));
    assert_eq!(plan.attachments[0].attach_mode, AttachMode::ReadWrite);
}

#[test]
fn a_status_the_attachments_do_not_make_is_refused_with_its_attachments() {
    let cinder = CinderDatabase {
        types: vec![cinder_type("lvm", &[])],
        volumes: vec![volume("available")],
        attachments: vec![attachment("attached")],
        ..Default::default()
    };
    let plan = planned(&cinder, &Present::default(), &destination(true));
    let why = reasons(&plan);
    assert_eq!(why.len(), 2, "{why:?}");
    assert_eq!(why[0].0, "attachment");
    assert!(why[1].1.contains("does not follow from its attachments"));
    assert!(plan.volumes.is_empty() && plan.attachments.is_empty());
}

#[test]
fn an_attached_volume_is_refused_where_attachments_need_records() {
    let cinder = CinderDatabase {
        types: vec![cinder_type("lvm", &[])],
        volumes: vec![volume("in-use")],
        attachments: vec![attachment("attached")],
        ..Default::default()
    };
    let plan = planned(&cinder, &Present::default(), &destination(false));
    assert!(reasons(&plan)[1].1.contains("detach it in Cinder first"));
}

#[test]
fn what_this_service_cannot_serve_is_refused() {
    type Change = Box<dyn Fn(&mut CinderVolume)>;
    let cases: Vec<(Change, &str)> = vec![
        (
            Box::new(|v| v.status = "creating".into()),
            "status is creating",
        ),
        (Box::new(|v| v.group_id = Some("g".into())), "group"),
        (
            Box::new(|v| v.encryption_key_id = Some("k".into())),
            "encrypted",
        ),
        (Box::new(|v| v.name_id = Some("x".into())), "named after x"),
        (Box::new(|v| v.use_quota = false), "temporary"),
        (
            Box::new(|v| v.host = Some("c@nfs#nfs".into())),
            "\"nfs\" maps to no backend",
        ),
        (
            Box::new(|v| v.id = "00000000-0000-4000-8000-000000000002".into()),
            "holds no volume-",
        ),
    ];
    for (change, reason) in cases {
        let mut v = volume("available");
        change(&mut v);
        let cinder = CinderDatabase {
            types: vec![cinder_type("lvm", &[])],
            volumes: vec![v],
            ..Default::default()
        };
        let plan = planned(&cinder, &Present::default(), &destination(true));
        let why = reasons(&plan);
        assert!(
            why.len() == 1 && why[0].1.contains(reason),
            "{reason}: {why:?}"
        );
    }
}

#[test]
fn a_type_of_a_name_taken_here_is_mapped_only_with_the_same_specs() {
    let here = VolumeTypeId::generate();
    let present = Present {
        types: [("lvm".to_owned(), (here, Pairs::new()))].into(),
    };
    let cinder = CinderDatabase {
        types: vec![cinder_type("lvm", &[])],
        volumes: vec![volume("available")],
        ..Default::default()
    };
    let plan = planned(&cinder, &present, &destination(true));
    assert_eq!(plan.mapped_types, vec![("lvm".to_owned(), here)]);
    assert_eq!(plan.volumes[0].volume_type_id, here);
    assert!(plan.types.is_empty());

    let cinder = CinderDatabase {
        types: vec![cinder_type("lvm", &[("multiattach", "<is> True")])],
        ..cinder
    };
    let plan = planned(&cinder, &present, &destination(true));
    let why = reasons(&plan);
    assert!(why[0].1.contains("other extra specs"), "{why:?}");
    assert!(why[1].1.contains("is not taken"), "{why:?}");
}

#[test]
fn quotas_of_resources_unknown_here_are_refused() {
    let cinder = CinderDatabase {
        types: vec![cinder_type("lvm", &[])],
        quotas: vec![
            ("p".into(), "volumes_lvm".into(), 3),
            ("p".into(), "volumes_gone".into(), 3),
        ],
        quota_classes: vec![("gold".into(), "volumes".into(), 1)],
        ..Default::default()
    };
    let plan = planned(&cinder, &Present::default(), &destination(true));
    assert_eq!(plan.quotas, vec![("p".into(), "volumes_lvm".into(), 3)]);
    assert_eq!(reasons(&plan).len(), 2);
}
