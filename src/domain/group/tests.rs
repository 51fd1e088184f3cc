use super::*;

fn group() -> Group {
    Group {
        id: GroupId::generate(),
        user_id: None,
        project_id: "p".into(),
        host: Some("h@file#file".into()),
        availability_zone: "nova".into(),
        status: GroupStatus::Available,
        name: None,
        description: None,
        group_type_id: GroupTypeId::generate(),
        volume_type_ids: vec![VolumeTypeId::generate()],
        group_snapshot_id: None,
        source_group_id: None,
        replication_status: "disabled".into(),
        created_at: Utc::now(),
        updated_at: None,
    }
}

fn candidate(group: &Group) -> MemberCandidate {
    MemberCandidate {
        id: VolumeId::generate(),
        project_id: group.project_id.clone(),
        volume_type_id: group.volume_type_ids[0],
        status: VolumeStatus::Available,
        host: Some("h@file#other".into()),
        group_id: None,
    }
}

#[test]
fn a_volume_joins_when_its_project_type_status_and_backend_fit() {
    let g = group();
    let v = candidate(&g);
    assert_eq!(may_join(&g, &v), Ok(true));
    let member = MemberCandidate {
        group_id: Some(g.id.to_string()),
        ..v.clone()
    };
    assert_eq!(may_join(&g, &member), Ok(false));
    let cases = [
        MemberCandidate {
            group_id: Some("other".into()),
            ..v.clone()
        },
        MemberCandidate {
            project_id: "q".into(),
            ..v.clone()
        },
        MemberCandidate {
            volume_type_id: VolumeTypeId::generate(),
            ..v.clone()
        },
        MemberCandidate {
            status: VolumeStatus::Error,
            ..v.clone()
        },
        MemberCandidate {
            host: Some("elsewhere@file#file".into()),
            ..v.clone()
        },
    ];
    for case in cases {
        assert!(may_join(&g, &case).is_err(), "{case:?}");
    }
    let refused = may_join(
        &g,
        &MemberCandidate {
            status: VolumeStatus::Creating,
            ..v
        },
    );
    let text = refused.unwrap_err().message(g.id);
    assert!(
        text.ends_with("Valid states are: ('available', 'in-use')."),
        "{text}"
    );
}

#[test]
fn id_lists_split_like_cinder_and_refuse_overlap() {
    assert_eq!(id_list(Some(",a,b,")), vec!["a", "b"]);
    assert!(id_list(Some(",")).is_empty());
    assert!(id_list(None).is_empty());
    let both = check_disjoint(&["a".into()], &["a".into()]).unwrap_err();
    let text = both.message(GroupId::generate());
    assert_eq!(text, "UUIDs ['a'] are in both add and remove volume list.");
}

#[test]
fn delete_needs_delete_volumes_for_members_and_never_attached_ones() {
    let empty = MembersState::default();
    assert_eq!(may_delete(GroupStatus::Available, empty, false), Ok(()));
    assert_eq!(
        may_delete(GroupStatus::Creating, empty, false),
        Err(GroupDeleteRefusal::Status(GroupStatus::Creating))
    );
    assert_eq!(may_delete(GroupStatus::Creating, empty, true), Ok(()));
    let one = MembersState {
        volumes: 1,
        ..empty
    };
    assert_eq!(
        may_delete(GroupStatus::Available, one, false),
        Err(GroupDeleteRefusal::HasVolumes)
    );
    assert_eq!(may_delete(GroupStatus::Available, one, true), Ok(()));
    let attached = MembersState {
        attached: true,
        ..one
    };
    assert_eq!(
        may_delete(GroupStatus::Available, attached, true),
        Err(GroupDeleteRefusal::Attached)
    );
}
