//! Cinder's guard before an attachment ends (`attachment_deletion_allowed`, bug
//! #2004555), with Nova configured: a caller without a service token's service role ends
//! an attachment connected to a server only after Nova says the server does not use it.
//! Without Nova configured no compute service is asked and nothing is guarded (D30).

use super::Service;
use crate::domain::attachment::Attachment;
use crate::domain::detach_guard::{self, DetachGuard, Ending};
use crate::domain::ids::VolumeId;
use crate::domain::{DomainError, RequestContext};

impl Service {
    /// Whether `caller` may end the attachment meant by `ending` (of volume `volume`,
    /// when the action names one).
    pub(super) async fn guard_detach(
        &self,
        caller: &RequestContext,
        ending: Ending<'_>,
        volume: Option<VolumeId>,
    ) -> Result<(), DomainError> {
        let Some(nova) = &self.settings.nova else {
            return Ok(());
        };
        if detach_guard::is_service_request(caller) {
            return Ok(());
        }
        // The volume's attachments count only when none is named.
        let attachments: Vec<Attachment> = match (ending, volume) {
            (Ending::Unnamed, Some(id)) => self
                .store
                .get_volume(id)
                .await?
                .map(|v| v.attachments)
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let volume = volume.map(|id| (id, attachments.as_slice()));
        let decided = match detach_guard::guard(caller, ending, volume) {
            DetachGuard::AskNova {
                server,
                volume,
                attachment,
            } => {
                let answer = nova
                    .server_volume(&server, &volume.to_string())
                    .await
                    .map_err(|why| {
                        tracing::warn!(%volume, %server, why, "Nova could not say whether the server uses the attachment");
                        DomainError::NovaUnreachable(server.clone())
                    })?;
                detach_guard::after_nova(&server, attachment, &answer)
            }
            other => other,
        };
        match decided {
            DetachGuard::Allowed | DetachGuard::AskNova { .. } => Ok(()),
            DetachGuard::Mismatched => Err(DomainError::MismatchedAttachment),
            DetachGuard::UseCompute { server } => {
                tracing::error!(server, "a user call to delete an in-use attachment is refused: it must come from Nova with a service token (bug #2004555)");
                Err(DomainError::NovaUsesAttachment(server))
            }
        }
    }
}
