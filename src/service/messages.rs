//! User messages: read and dismiss what went wrong after a request was accepted, under
//! Cinder's `message:*` rules (readers read, members delete).

use super::Service;
use crate::domain::ids::MessageId;
use crate::domain::message::Message;
use crate::domain::{DomainError, RequestContext};
use crate::policy::{rules, Target};

fn not_found(id: MessageId) -> DomainError {
    DomainError::MessageNotFound(id.to_string())
}

impl Service {
    /// The caller's project's messages; admins with `all_tenants` see every project.
    pub async fn list_messages(
        &self,
        caller: &RequestContext,
        all_tenants: bool,
    ) -> Result<Vec<Message>, DomainError> {
        self.policy
            .enforce(rules::MESSAGE_GET_ALL, caller, &Target::caller(caller))?;
        let project = caller.listing_project(all_tenants, None);
        Ok(self.store.list_messages(project.as_deref()).await?)
    }

    pub async fn get_message(
        &self,
        caller: &RequestContext,
        id: MessageId,
    ) -> Result<Message, DomainError> {
        let message = self.visible_message(caller, id).await?;
        self.policy.enforce(
            rules::MESSAGE_GET,
            caller,
            &Target::project(&message.project_id),
        )?;
        Ok(message)
    }

    /// A message of the caller's project (any, for admins); others do not exist.
    async fn visible_message(
        &self,
        caller: &RequestContext,
        id: MessageId,
    ) -> Result<Message, DomainError> {
        let message = self
            .store
            .get_message(id)
            .await?
            .ok_or_else(|| not_found(id))?;
        if caller.is_project_scoped() && message.project_id != caller.project_id {
            return Err(not_found(id));
        }
        Ok(message)
    }

    pub async fn delete_message(
        &self,
        caller: &RequestContext,
        id: MessageId,
    ) -> Result<(), DomainError> {
        let message = self.visible_message(caller, id).await?;
        self.policy.enforce(
            rules::MESSAGE_DELETE,
            caller,
            &Target::project(&message.project_id),
        )?;
        self.store
            .delete_message(id, self.clock.now())
            .await?
            .found()
            .ok_or_else(|| not_found(id))
    }
}
