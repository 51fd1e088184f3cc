use super::*;
use crate::domain::ids::VolumeId;
use crate::domain::volume::VolumeStatus;

fn message(err: DomainError) -> (u16, String) {
    let api = ApiError::from(err);
    (api.status().as_u16(), api.to_string())
}

#[test]
fn reservation_refusals_name_the_allowed_statuses() {
    let volume = VolumeId::generate();
    let (code, text) = message(DomainError::ReservationRefused {
        volume,
        status: VolumeStatus::InUse,
        multiattach: false,
    });
    assert_eq!(code, 400);
    assert_eq!(
        text,
        format!(
            "Invalid volume: Volume {volume} status must be available or downloading to \
             reserve, but the current status is in-use."
        )
    );
    let (_, text) = message(DomainError::ReservationRefused {
        volume,
        status: VolumeStatus::Reserved,
        multiattach: true,
    });
    assert!(text.contains("available or in-use or downloading"));
}

#[test]
fn delete_refusals() {
    assert_eq!(
        delete_refusal(false),
        "Volume status must be available or error or error_restoring or error_extending or \
         error_managing and must not be migrating, attached, belong to a group, have \
         snapshots, awaiting a transfer, or be disassociated from snapshots after volume \
         transfer."
    );
    assert!(delete_refusal(true).starts_with("Volume  must not be migrating, attached"));
}

#[test]
fn error_states_are_400_on_create_and_409_on_update() {
    let volume = VolumeId::generate();
    let err = |call| DomainError::VolumeInError {
        volume,
        status: VolumeStatus::Error,
        call,
    };
    let (code, text) = message(err(AttachmentCall::Create));
    assert_eq!(code, 400);
    assert!(text.starts_with("Invalid volume: Volume attachments can not be created"));
    let (code, text) = message(err(AttachmentCall::Update));
    assert_eq!(code, 409);
    assert!(text.starts_with("Resource conflict: Volume attachments can not be updated"));
    assert!(text.ends_with("currently has a status of: error "));
}

#[test]
fn failures_on_the_way_are_wrapped_with_their_cause() {
    let cause = DomainError::ConnectFailed("no target".into());
    let (code, text) = message(DomainError::AttachmentFailed {
        call: AttachmentCall::Create,
        cause: Box::new(cause),
    });
    assert_eq!(code, 500);
    assert_eq!(
        text,
        "Unable to create attachment for volume (Bad or unexpected response from the \
         storage volume backend API: no target)."
    );
}

#[test]
fn policy_denials_name_the_rule() {
    assert_eq!(
        message(DomainError::PolicyDenied("volume:multiattach")),
        (
            403,
            "Policy doesn't allow volume:multiattach to be performed.".to_owned()
        )
    );
}

#[test]
fn internal_details_stay_in_the_log() {
    let (code, _) = message(DomainError::Internal("secret table".into()));
    assert_eq!(code, 500);
}
