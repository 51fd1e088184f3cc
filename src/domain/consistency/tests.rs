use super::*;

fn volume(status: VolumeStatus, multiattach: bool) -> VolumeFacts {
    let id = VolumeId::generate();
    VolumeFacts {
        id,
        storage: id,
        status,
        multiattach,
        host: Some("h@file#file".to_owned()),
        reserved_growth: 0,
    }
}

fn attachment(volume: &VolumeFacts, status: AttachStatus, instance: &str) -> AttachmentFacts {
    AttachmentFacts {
        id: AttachmentId::generate(),
        volume_id: volume.id,
        instance_uuid: Some(instance.to_owned()),
        attach_status: status,
    }
}

fn storage(volumes: &[&VolumeFacts]) -> Vec<BackendObjects> {
    vec![BackendObjects {
        host: "h@file".to_owned(),
        volume_ids: volumes.iter().map(|v| v.storage).collect(),
        snapshot_ids: BTreeSet::new(),
    }]
}

#[test]
fn a_consistent_snapshot_has_no_findings() {
    let single = volume(VolumeStatus::InUse, false);
    let shared = volume(VolumeStatus::InUse, true);
    let idle = volume(VolumeStatus::Available, false);
    let snapshot = Snapshot {
        attachments: vec![
            attachment(&single, AttachStatus::Attached, "i1"),
            attachment(&single, AttachStatus::Reserved, "i1"),
            attachment(&shared, AttachStatus::Attached, "i1"),
            attachment(&shared, AttachStatus::Attached, "i2"),
            attachment(&idle, AttachStatus::Detached, "i3"),
        ],
        volumes: vec![single.clone(), shared.clone(), idle.clone()],
        specs_of_deleted_attachments: vec![],
        quotas: vec![],
        snapshots: vec![],
    };
    assert_eq!(
        check(&snapshot, &storage(&[&single, &shared, &idle])),
        vec![]
    );
}

#[test]
fn every_kind_of_violation_is_found() {
    let lying = volume(VolumeStatus::Available, false);
    let gone = volume(VolumeStatus::Available, false);
    let crowded = volume(VolumeStatus::InUse, false);
    let dataless = volume(VolumeStatus::Available, false);
    let being_made = volume(VolumeStatus::Creating, false);
    let stale = VolumeFacts {
        reserved_growth: 2,
        ..volume(VolumeStatus::ErrorExtending, false)
    };
    let growing = VolumeFacts {
        reserved_growth: 2,
        ..volume(VolumeStatus::Extending, false)
    };
    let stray = VolumeId::generate();
    let deleted_attachment = AttachmentId::generate();
    let snapshot = Snapshot {
        attachments: vec![
            attachment(&lying, AttachStatus::Attached, "i1"),
            attachment(&gone, AttachStatus::Reserved, "i1"),
            attachment(&crowded, AttachStatus::Attached, "i1"),
            attachment(&crowded, AttachStatus::Attached, "i2"),
        ],
        // `gone` is deleted: not among the live volumes.
        volumes: vec![
            lying.clone(),
            crowded.clone(),
            dataless.clone(),
            being_made.clone(),
            stale.clone(),
            growing.clone(),
        ],
        specs_of_deleted_attachments: vec![
            (deleted_attachment, "host".to_owned()),
            (deleted_attachment, "initiator".to_owned()),
        ],
        quotas: vec![over_quota("p1")],
        snapshots: vec![],
    };
    let mut backends = storage(&[&lying, &crowded, &stale, &growing]);
    backends[0].volume_ids.insert(stray);
    let kinds: Vec<String> = check(&snapshot, &backends)
        .iter()
        .map(|f| {
            serde_json::to_value(f).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "status_mismatch",
            "several_instances_without_multiattach",
            "attachment_of_deleted_volume",
            "specs_of_deleted_attachment",
            "backend_object_missing",
            "backend_object_without_volume",
            "stale_reservation",
            "over_quota",
        ]
    );
}

/// Project `p` holds 7 GiB (2 of them reserved) against a limit of 5.
fn over_quota(project: &str) -> ProjectQuota {
    let mut usage = Usage {
        volumes: 3,
        gigabytes: 5,
        ..Usage::default()
    };
    usage.reserve_growth("gold", 2);
    usage.by_type.insert("gold".to_owned(), (3, 5));
    ProjectQuota {
        project_id: project.to_owned(),
        rows: QuotaRows {
            project: [("gigabytes".to_owned(), 5)].into(),
            defaults: Default::default(),
            configured: quota::QuotaDefaults::unlimited(),
        },
        usage,
    }
}

#[test]
fn usage_over_a_limit_names_the_project_and_resource() {
    let snapshot = Snapshot {
        quotas: vec![over_quota("p9")],
        ..Snapshot::default()
    };
    let findings = check(&snapshot, &[]);
    assert_eq!(
        findings,
        vec![Finding::OverQuota {
            project_id: "p9".into(),
            resource: "gigabytes".into(),
            consumed: 7,
            limit: 5
        }]
    );
    assert_eq!(
        findings[0].to_string(),
        "project p9 uses 7 of gigabytes, over its limit of 5"
    );
}

#[test]
fn a_moved_volumes_storage_is_named_after_its_name_id() {
    let moved = VolumeFacts {
        storage: VolumeId::generate(),
        ..volume(VolumeStatus::InUse, false)
    };
    let snapshot = Snapshot {
        volumes: vec![moved.clone()],
        ..Snapshot::default()
    };
    let found = |ids: Vec<VolumeId>| {
        let backends = vec![BackendObjects {
            host: "h@file".to_owned(),
            volume_ids: ids.into_iter().collect(),
            snapshot_ids: BTreeSet::new(),
        }];
        check(&snapshot, &backends)
            .into_iter()
            .filter(|f| {
                matches!(
                    f,
                    Finding::BackendObjectMissing { .. }
                        | Finding::BackendObjectWithoutVolume { .. }
                )
            })
            .count()
    };
    assert_eq!(found(vec![moved.storage]), 0);
    // Storage named after its own id is a stray, and its own storage is missing.
    assert_eq!(found(vec![moved.id]), 2);
}

#[test]
fn volumes_on_unchecked_backends_are_left_alone() {
    let elsewhere = VolumeFacts {
        host: Some("other@file#file".to_owned()),
        ..volume(VolumeStatus::Available, false)
    };
    let snapshot = Snapshot {
        volumes: vec![elsewhere],
        ..Snapshot::default()
    };
    assert_eq!(check(&snapshot, &storage(&[])), vec![]);
}

#[test]
fn snapshots_of_deleted_volumes_and_negative_usage_are_found() {
    let kept = volume(VolumeStatus::Available, false);
    let (orphan, gone) = (SnapshotId::generate(), VolumeId::generate());
    let mut negative = over_quota("p2");
    negative.rows.project.clear();
    negative.usage.backup_gigabytes = -100;
    let snapshot = Snapshot {
        volumes: vec![kept.clone()],
        snapshots: vec![(SnapshotId::generate(), kept.id), (orphan, gone)],
        quotas: vec![negative],
        ..Snapshot::default()
    };
    let findings = check(&snapshot, &storage(&[&kept]));
    assert_eq!(
        findings,
        vec![
            Finding::SnapshotOfDeletedVolume {
                snapshot_id: orphan,
                volume_id: gone,
            },
            Finding::NegativeUsage {
                project_id: "p2".into(),
                resource: "backup_gigabytes".into(),
                consumed: -100,
            },
        ]
    );
    assert_eq!(
        findings[1].to_string(),
        "project p2 uses -100 of backup_gigabytes, below zero"
    );
}
