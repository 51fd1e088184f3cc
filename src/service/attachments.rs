//! Attachment use cases.

use super::Service;
use crate::domain::attachment::{Attachment, AttachmentScope};
use crate::domain::{DomainError, RequestContext};

/// What a listing asks for beyond the caller's identity.
#[derive(Debug, Clone, Default)]
pub struct ListAttachments {
    /// `all_tenants` was given (Cinder honours its presence, whatever the value).
    pub all_tenants: bool,
    /// `project_id`, only meaningful to admins together with `all_tenants`.
    pub project_id: Option<String>,
}

/// Cinder's scoping: everyone lists their own project; an admin asking for
/// `all_tenants` sees every project, or the one named by `project_id`.
pub fn listing_scope(caller: &RequestContext, request: &ListAttachments) -> AttachmentScope {
    let project_id = if caller.is_admin && request.all_tenants {
        request.project_id.clone()
    } else {
        Some(caller.project_id.clone())
    };
    AttachmentScope { project_id }
}

impl Service {
    pub async fn list_attachments(
        &self,
        caller: &RequestContext,
        request: &ListAttachments,
    ) -> Result<Vec<Attachment>, DomainError> {
        Ok(self
            .store
            .list_attachments(&listing_scope(caller, request))
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(is_admin: bool) -> RequestContext {
        RequestContext {
            user_id: "u".into(),
            project_id: "p".into(),
            roles: vec![],
            service_roles: vec![],
            is_admin,
        }
    }

    #[test]
    fn scope_rules() {
        let own = Some("p".to_owned());
        let all = ListAttachments {
            all_tenants: true,
            project_id: None,
        };
        let other = ListAttachments {
            all_tenants: true,
            project_id: Some("q".into()),
        };
        let plain = ListAttachments::default();
        assert_eq!(listing_scope(&caller(false), &plain).project_id, own);
        assert_eq!(listing_scope(&caller(false), &all).project_id, own);
        assert_eq!(listing_scope(&caller(false), &other).project_id, own);
        assert_eq!(listing_scope(&caller(true), &plain).project_id, own);
        assert_eq!(listing_scope(&caller(true), &all).project_id, None);
        assert_eq!(
            listing_scope(&caller(true), &other).project_id.as_deref(),
            Some("q")
        );
    }
}
