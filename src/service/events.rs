//! The audit trail: the notification events the outbox recorded, for admins.

use super::Service;
use crate::domain::event::{EventFilters, RecordedEvent};
use crate::domain::{DomainError, RequestContext};
use crate::policy::{rules, Target};
use crate::store::EventBacklog;

impl Service {
    pub async fn list_events(
        &self,
        caller: &RequestContext,
        filters: &EventFilters,
    ) -> Result<Vec<RecordedEvent>, DomainError> {
        self.policy
            .enforce(rules::EVENTS_INDEX, caller, &Target::caller(caller))?;
        Ok(self.store.list_events(filters).await?)
    }
}

impl Service {
    /// The events the broker has not confirmed yet (for `/healthcheck?detailed`, which
    /// asks no credentials: counts only).
    pub async fn event_backlog(&self) -> Result<EventBacklog, DomainError> {
        Ok(self.store.event_backlog().await?)
    }
}
