use chrono::Utc;
use serde_json::json;

use super::*;
use crate::domain::attachment::AttachStatus;

fn caller(service_roles: &[&str]) -> RequestContext {
    RequestContext {
        user_id: "u".into(),
        project_id: "p".into(),
        roles: vec!["member".into(), "service".into()],
        service_roles: service_roles.iter().map(|r| r.to_string()).collect(),
        is_admin: false,
        auth_token: None,
    }
}

fn attachment(
    volume: VolumeId,
    server: Option<&str>,
    info: Option<serde_json::Value>,
) -> Attachment {
    Attachment {
        id: AttachmentId::generate(),
        volume_id: volume,
        instance_uuid: server.map(str::to_owned),
        attached_host: None,
        mountpoint: None,
        attach_status: AttachStatus::Attached,
        attach_mode: None,
        attach_time: None,
        detach_time: None,
        connection_info: info,
        created_at: Utc::now(),
        shared_connections: vec![],
    }
}

#[test]
fn a_service_token_with_the_service_role_may_always() {
    let volume = VolumeId::generate();
    let used = attachment(
        volume,
        Some("s1"),
        Some(json!({"driver_volume_type": "iscsi"})),
    );
    let ending = Ending::Named(Some(&used));
    assert_eq!(
        guard(&caller(&["service"]), ending, None),
        DetachGuard::Allowed
    );
    // The user's own roles do not count, nor another service role.
    assert!(matches!(
        guard(&caller(&["admin"]), ending, None),
        DetachGuard::AskNova { .. }
    ));
    assert!(matches!(
        guard(&caller(&[]), ending, None),
        DetachGuard::AskNova { .. }
    ));
}

#[test]
fn only_a_server_connection_needs_novas_word() {
    let volume = VolumeId::generate();
    let user = caller(&[]);
    let info = || Some(json!({"driver_volume_type": "iscsi"}));
    let connected = attachment(volume, Some("s1"), info());
    assert_eq!(
        guard(&user, Ending::Named(Some(&connected)), None),
        DetachGuard::AskNova {
            server: "s1".into(),
            volume,
            attachment: connected.id
        }
    );
    for (server, info) in [
        (None, info()),
        (Some("s1"), None),
        (Some("s1"), Some(json!({}))),
    ] {
        let a = attachment(volume, server, info);
        assert_eq!(
            guard(&user, Ending::Named(Some(&a)), None),
            DetachGuard::Allowed
        );
    }
}

#[test]
fn without_a_single_attachment_meant_the_user_is_sent_to_nova() {
    let volume = VolumeId::generate();
    let user = caller(&[]);
    let use_compute = DetachGuard::UseCompute {
        server: String::new(),
    };
    assert_eq!(guard(&user, Ending::Named(None), None), use_compute);
    assert_eq!(
        guard(&user, Ending::Unnamed, Some((volume, &[]))),
        DetachGuard::Allowed
    );
    let two = [
        attachment(volume, Some("s1"), None),
        attachment(volume, Some("s2"), None),
    ];
    assert_eq!(
        guard(&user, Ending::Unnamed, Some((volume, &two))),
        use_compute
    );
    assert_eq!(
        guard(&user, Ending::Unnamed, Some((volume, &two[..1]))),
        DetachGuard::Allowed
    );
    let other = attachment(VolumeId::generate(), None, None);
    assert_eq!(
        guard(&user, Ending::Named(Some(&other)), Some((volume, &two))),
        DetachGuard::Mismatched
    );
}

#[test]
fn nova_refuses_only_for_its_own_attachment() {
    let id = AttachmentId::generate();
    let refused = DetachGuard::UseCompute {
        server: "s1".into(),
    };
    assert_eq!(
        after_nova("s1", id, &NovaUse::Attached(Some(id.to_string()))),
        refused
    );
    assert_eq!(after_nova("s1", id, &NovaUse::Attached(None)), refused);
    let other = AttachmentId::generate().to_string();
    assert_eq!(
        after_nova("s1", id, &NovaUse::Attached(Some(other))),
        DetachGuard::Allowed
    );
    assert_eq!(
        after_nova("s1", id, &NovaUse::NotFound),
        DetachGuard::Allowed
    );
}
