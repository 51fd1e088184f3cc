//! Who may end an attachment a server may still be using (Cinder's
//! `attachment_deletion_allowed`, bug #2004555): deleting it while the server's host keeps
//! the volume connected leaves a device behind that can later show another volume's data.
//! A request carrying a service token with a service role (Nova's own) may; anyone else
//! only after Nova says the server does not use the attachment, or when the attachment
//! was never connected to a server.

use super::attachment::Attachment;
use super::context::RequestContext;
use super::ids::{AttachmentId, VolumeId};

/// `[keystone_authtoken] service_token_roles`' default: the roles that make a request a
/// service's.
pub const SERVICE_TOKEN_ROLES: &[&str] = &["service"];

/// Whether the request comes from a service: its validated service token has one of
/// the service roles.
pub fn is_service_request(caller: &RequestContext) -> bool {
    caller
        .service_roles
        .iter()
        .any(|role| SERVICE_TOKEN_ROLES.contains(&role.as_str()))
}

/// Which attachment an action ends, as the guard sees it.
#[derive(Debug, Clone, Copy)]
pub enum Ending<'a> {
    /// One named attachment (`DELETE /attachments/{id}`, `os-detach` with an id): `None`
    /// when no live attachment has that id.
    Named(Option<&'a Attachment>),
    /// Whichever the volume has (`os-detach` without an id, `os-terminate_connection`).
    Unnamed,
}

/// What the guard decides before Nova is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DetachGuard {
    Allowed,
    /// Allowed unless Nova says `server` uses `attachment` of `volume`.
    AskNova {
        server: String,
        volume: VolumeId,
        attachment: AttachmentId,
    },
    /// Refused: the caller must detach through Nova (`server` is empty when no single
    /// attachment is meant).
    UseCompute {
        server: String,
    },
    /// The named attachment belongs to another volume.
    Mismatched,
}

/// Cinder's rule. `volume` and its live `attachments` when the action names a volume.
pub fn guard(
    caller: &RequestContext,
    ending: Ending<'_>,
    volume: Option<(VolumeId, &[Attachment])>,
) -> DetachGuard {
    if is_service_request(caller) {
        return DetachGuard::Allowed;
    }
    let attachment = match (ending, volume) {
        (Ending::Named(found), _) => found,
        (Ending::Unnamed, Some((_, []))) => return DetachGuard::Allowed,
        (Ending::Unnamed, Some((_, [only]))) => Some(only),
        (Ending::Unnamed, _) => None,
    };
    let Some(attachment) = attachment else {
        return DetachGuard::UseCompute {
            server: String::new(),
        };
    };
    if let Some((volume_id, _)) = volume {
        if volume_id != attachment.volume_id {
            return DetachGuard::Mismatched;
        }
    }
    let connected = attachment
        .connection_info
        .as_ref()
        .is_some_and(|info| info.as_object().is_none_or(|map| !map.is_empty()));
    match attachment
        .instance_uuid
        .as_deref()
        .filter(|s| !s.is_empty())
    {
        Some(server) if connected => DetachGuard::AskNova {
            server: server.to_owned(),
            volume: attachment.volume_id,
            attachment: attachment.id,
        },
        _ => DetachGuard::Allowed,
    }
}

/// What Nova said of the server's use of the volume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NovaUse {
    /// Nova has the volume attached to the server, through this attachment (`None`:
    /// Nova did not say which).
    Attached(Option<String>),
    /// No such server, or the volume is not attached to it.
    NotFound,
}

/// After Nova answered: refused only when Nova uses this very attachment (Cinder goes on
/// when Nova's attachment is another, with a warning).
pub fn after_nova(server: &str, attachment: AttachmentId, answer: &NovaUse) -> DetachGuard {
    match answer {
        NovaUse::Attached(Some(id)) if *id != attachment.to_string() => DetachGuard::Allowed,
        NovaUse::Attached(_) => DetachGuard::UseCompute {
            server: server.to_owned(),
        },
        NovaUse::NotFound => DetachGuard::Allowed,
    }
}

#[cfg(test)]
mod tests;
