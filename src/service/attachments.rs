//! Attachment use cases: reserve, connect, complete, detach, and the lookups around them.
//!
//! Every write goes through one store transaction holding the volume row, where the
//! domain's attach state machine decides; backend calls happen outside it (connect
//! first, then record; undo the export if the record is refused).

use serde_json::Value;
use uuid::Uuid;

use super::volumes::volume_not_found;
use super::Service;
use crate::backend::{BackendError, Connector};
use crate::domain::attach::{self, ConnectionExtras, ReserveDecision};
use crate::domain::attachment::{
    AttachStatus, Attachment, AttachmentFilters, AttachmentRecord, AttachmentSortKey,
    ConnectOutcome, Connecting, Connection, Reservation, ReserveOutcome,
};
use crate::domain::paging::Page;
use crate::domain::volume::Volume;
use crate::domain::volume_type::SPEC_TRUE;
use crate::domain::{DomainError, RequestContext};
use crate::policy::{rules, Target};

pub fn attachment_not_found(id: impl std::fmt::Display) -> DomainError {
    DomainError::NotFound(format!(
        "Volume attachment could not be found with filter: attachment_id = {id}."
    ))
}

/// A new attachment as the API received it.
#[derive(Debug, Clone, Default)]
pub struct CreateAttachment {
    pub volume_id: Uuid,
    pub instance_uuid: Option<String>,
    /// `None` (or an empty object) reserves only.
    pub connector: Option<Connector>,
    /// `rw`/`ro` from 3.54.
    pub mode: Option<String>,
}

/// A listing: the filters a caller gave, before scoping.
#[derive(Debug, Clone, Default)]
pub struct ListAttachments {
    /// `all_tenants` was given (its presence counts, whatever the value).
    pub all_tenants: bool,
    pub filters: AttachmentFilters,
    /// A filter nothing can match was given (an unknown column, for admins).
    pub matches_nothing: bool,
}

/// Cinder's scoping: everyone lists their own project; an admin asking for
/// `all_tenants` sees every project, or the one named by `project_id`.
pub fn listing_scope(caller: &RequestContext, request: &ListAttachments) -> Option<String> {
    caller.listing_project(request.all_tenants, request.filters.project_id.clone())
}

fn error_state_message(volume: &Volume, verb: &str) -> String {
    format!(
        "Volume attachments can not be {verb} if the volume is in an error state. \
         The Volume {} currently has a status of: {} ",
        volume.id, volume.status
    )
}

fn text_of<'a>(connector: &'a Connector, key: &str) -> Option<&'a str> {
    connector.get(key).and_then(Value::as_str)
}

impl Service {
    pub async fn list_attachments(
        &self,
        caller: &RequestContext,
        request: &ListAttachments,
        page: &Page<AttachmentSortKey>,
    ) -> Result<Vec<Attachment>, DomainError> {
        let mut filters = request.filters.clone();
        filters.project_id = listing_scope(caller, request);
        if let Some(marker) = page.marker {
            let visible = self.store.get_attachment(marker).await?.filter(|r| {
                filters
                    .project_id
                    .as_ref()
                    .is_none_or(|p| *p == r.project_id)
            });
            if visible.is_none() {
                return Err(attachment_not_found(marker));
            }
        }
        if request.matches_nothing {
            return Ok(Vec::new());
        }
        Ok(self.store.list_attachments(&filters, page).await?)
    }

    /// An attachment the caller may see: other projects' attachments do not exist for
    /// non-admins (joined through the volume, unlike Cinder's cross join).
    pub async fn get_attachment(
        &self,
        caller: &RequestContext,
        id: Uuid,
    ) -> Result<AttachmentRecord, DomainError> {
        let record = self
            .store
            .get_attachment(id)
            .await?
            .ok_or_else(|| attachment_not_found(id))?;
        if caller.is_project_scoped() && record.project_id != caller.project_id {
            return Err(attachment_not_found(id));
        }
        Ok(record)
    }

    /// The attachment as stored now, with `format` from the volume's admin metadata
    /// added to its connection info, as `GET /attachments/{id}` shows it.
    pub async fn show_attachment(
        &self,
        caller: &RequestContext,
        id: Uuid,
    ) -> Result<Attachment, DomainError> {
        let mut attachment = self.get_attachment(caller, id).await?.attachment;
        if let Some(volume) = self.store.get_volume_brief(attachment.volume_id).await? {
            if let (Some(format), Some(Value::Object(info))) = (
                volume.admin_metadata.get("format"),
                attachment.connection_info.as_mut(),
            ) {
                info.insert("format".into(), Value::String(format.clone()));
            }
        }
        Ok(attachment)
    }

    /// Reserves a volume for a consumer, and connects it at once when a connector is
    /// given. A refused or failed request leaves nothing behind.
    pub async fn create_attachment(
        &self,
        caller: &RequestContext,
        request: CreateAttachment,
    ) -> Result<Attachment, DomainError> {
        let volume = self.get_volume_brief(caller, request.volume_id).await?;
        let target = Target::project(&volume.project_id);
        self.policy
            .enforce(rules::ATTACHMENT_CREATE, caller, &target)?;
        if attach::in_error_state(volume.status) {
            return Err(DomainError::InvalidVolume(error_state_message(
                &volume, "created",
            )));
        }
        if volume.multiattach
            && volume.status == crate::domain::volume::VolumeStatus::InUse
            && volume.bootable
        {
            self.policy
                .enforce(rules::MULTIATTACH_BOOTABLE, caller, &target)?;
        }
        let connector = request.connector.filter(|c| !c.is_empty());
        // The connector is checked before anything is reserved.
        if let Some(connector) = &connector {
            self.backend_of(&volume)?
                .driver
                .validate_connector(connector)
                .map_err(connector_error)?;
        }
        let readonly = volume.is_readonly();
        let attach_mode = match &connector {
            Some(connector) => attach::connect_mode(
                readonly,
                request.mode.as_deref(),
                text_of(connector, "mode"),
            ),
            None => attach::reserved_mode(readonly, request.mode.as_deref()),
        };
        // A status that refuses every reservation (even the same instance's) is refused
        // here, without the volume's lock: the answer for the status just read. Under a
        // crowd of attaches to one busy multiattach volume, refusals then cost a read
        // each instead of a turn at the lock the winning attach needs.
        if attach::decide_reservation(volume.status, volume.multiattach, volume.multiattach, true)
            == ReserveDecision::Refuse
        {
            return Err(DomainError::InvalidVolume(attach::reserve_refusal(
                volume.id,
                volume.multiattach,
                volume.status,
            )));
        }
        let reservation = Reservation {
            attachment_id: Uuid::new_v4(),
            volume_id: volume.id,
            instance_uuid: request.instance_uuid,
            expected_multiattach: volume.multiattach,
            attach_mode: attach_mode.clone(),
            now: self.clock.now(),
        };
        match self.store.reserve_attachment(&reservation).await? {
            ReserveOutcome::Reserved | ReserveOutcome::SameInstance => {}
            ReserveOutcome::Refused(status) => {
                return Err(DomainError::InvalidVolume(attach::reserve_refusal(
                    volume.id,
                    volume.multiattach,
                    status,
                )))
            }
            ReserveOutcome::VolumeGone => return Err(volume_not_found(volume.id)),
        }
        let id = reservation.attachment_id;
        if let Some(connector) = connector {
            let outcome = self
                .connect(
                    &volume,
                    id,
                    connector,
                    attach_mode,
                    Connecting::NewReservation,
                )
                .await;
            return match outcome {
                Ok(attachment) => Ok(attachment),
                Err(err) => {
                    // Undo the reservation so the volume is as it was.
                    self.store.delete_attachment(id, self.clock.now()).await?;
                    Err(match err {
                        DomainError::Failed(message) => DomainError::Failed(format!(
                            "Unable to create attachment for volume ({message})."
                        )),
                        other => other,
                    })
                }
            };
        }
        let stored = self
            .store
            .get_attachment(id)
            .await?
            .ok_or_else(|| attachment_not_found(id))?;
        Ok(stored.attachment)
    }

    /// Connects an attachment to the host in `connector`.
    pub async fn update_attachment(
        &self,
        caller: &RequestContext,
        id: Uuid,
        connector: Connector,
    ) -> Result<Attachment, DomainError> {
        let record = self.get_attachment(caller, id).await?;
        if text_of(&connector, "host").is_none_or(str::is_empty) {
            return Err(connector_error(BackendError::InvalidConnector(
                "host".to_owned(),
            )));
        }
        self.policy.enforce(
            rules::ATTACHMENT_UPDATE,
            caller,
            &Target::project(&record.project_id),
        )?;
        let volume_id = record.attachment.volume_id;
        let volume = self
            .store
            .get_volume_brief(volume_id)
            .await?
            .ok_or_else(|| volume_not_found(volume_id))?;
        if attach::in_error_state(volume.status) {
            return Err(DomainError::Conflict(format!(
                "Resource conflict: {}",
                error_state_message(&volume, "updated")
            )));
        }
        self.backend_of(&volume)?
            .driver
            .validate_connector(&connector)
            .map_err(connector_error)?;
        let mode = attach::connect_mode(
            volume.is_readonly(),
            record.attachment.attach_mode.as_deref(),
            text_of(&connector, "mode"),
        );
        self.connect(&volume, id, connector, mode, Connecting::Update)
            .await
            .map_err(|err| match err {
                DomainError::Failed(message) => {
                    DomainError::Failed(format!("Unable to update attachment ({message})."))
                }
                other => other,
            })
    }

    /// Exports the volume to the connector's host and records the connection; if the
    /// record is refused, the export is withdrawn again. Returns the attachment as stored.
    async fn connect(
        &self,
        volume: &Volume,
        attachment_id: Uuid,
        mut connector: Connector,
        mode: String,
        by: Connecting,
    ) -> Result<Attachment, DomainError> {
        connector.insert("mode".into(), Value::String(mode.clone()));
        let backend = self.backend_of(volume)?;
        let data = backend
            .driver
            .initialize_connection(volume.id, &connector)
            .await
            .map_err(|err| match err {
                BackendError::InvalidConnector(_) => connector_error(err),
                BackendError::Failed(message) => DomainError::Failed(format!(
                    "Bad or unexpected response from the storage volume backend API: {message}"
                )),
            })?;
        let cacheable = self
            .store
            .volume_type_spec(volume.volume_type_id, "cacheable")
            .await?
            .as_deref()
            == Some(SPEC_TRUE);
        let access_mode = if mode == "ro" || volume.is_readonly() {
            "ro"
        } else {
            "rw"
        };
        let info = attach::connection_info(
            &data.driver_volume_type,
            &data.data,
            &ConnectionExtras {
                attachment_id,
                access_mode: access_mode.to_owned(),
                encrypted: volume.encryption_key_id.is_some(),
                cacheable,
                enforce_multipath: connector
                    .get("enforce_multipath")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            },
        );
        let connection = Connection {
            attachment_id,
            attached_host: text_of(&connector, "host").unwrap_or_default().to_owned(),
            mountpoint: text_of(&connector, "mountpoint").unwrap_or("na").to_owned(),
            connector: connector.clone(),
            connection_info: info,
            attach_mode: mode,
            by,
            now: self.clock.now(),
        };
        let outcome = self.store.connect_attachment(&connection).await;
        if !matches!(outcome, Ok(ConnectOutcome::Connected(_))) {
            if let Err(err) = backend
                .driver
                .terminate_connection(volume.id, &connector)
                .await
            {
                tracing::warn!(volume_id = %volume.id, error = %err, "could not withdraw an unused export");
            }
        }
        match outcome? {
            ConnectOutcome::Connected(attachment) => Ok(attachment),
            ConnectOutcome::AttachmentGone => Err(attachment_not_found(attachment_id)),
            ConnectOutcome::VolumeInError(status) => Err(DomainError::Conflict(format!(
                "Resource conflict: Volume attachments can not be updated if the volume is in an error state. \
                 The Volume {} currently has a status of: {status} ",
                volume.id
            ))),
            ConnectOutcome::DuplicateConnector => Err(DomainError::Conflict(format!(
                "Resource conflict: duplicate connectors detected on volume {}",
                volume.id
            ))),
        }
    }

    /// `os-complete`: the host finished attaching.
    pub async fn complete_attachment(
        &self,
        caller: &RequestContext,
        id: Uuid,
    ) -> Result<(), DomainError> {
        // As in Cinder, the attachment decides who may see it; the volume is read (and
        // locked) by the store's transaction.
        let record = self.get_attachment(caller, id).await?;
        self.policy.enforce(
            rules::ATTACHMENT_COMPLETE,
            caller,
            &Target::project(&record.project_id),
        )?;
        if !self.store.complete_attachment(id, self.clock.now()).await? {
            return Err(attachment_not_found(id));
        }
        Ok(())
    }

    /// Detaches: withdraws the export, removes the attachment and recomputes the volume.
    /// Returns the volume's remaining attachments that are not detached.
    pub async fn delete_attachment(
        &self,
        caller: &RequestContext,
        id: Uuid,
    ) -> Result<Vec<Attachment>, DomainError> {
        let record = self.get_attachment(caller, id).await?;
        self.policy.enforce(
            rules::ATTACHMENT_DELETE,
            caller,
            &Target::project(&record.project_id),
        )?;
        if record.attachment.attach_status != AttachStatus::Reserved && !record.connector.is_empty()
        {
            let volume_id = record.attachment.volume_id;
            if let Ok(backend) = self.backend_at(record.volume_host.as_deref(), volume_id) {
                if let Err(err) = backend
                    .driver
                    .terminate_connection(volume_id, &record.connector)
                    .await
                {
                    // Cinder logs and goes on: the attachment goes either way.
                    tracing::warn!(attachment_id = %id, error = %err, "backend could not terminate the connection");
                }
            }
        }
        self.store
            .delete_attachment(id, self.clock.now())
            .await?
            .ok_or_else(|| attachment_not_found(id))
    }
}

fn connector_error(err: BackendError) -> DomainError {
    match err {
        BackendError::InvalidConnector(key) => DomainError::InvalidInput(format!(
            "Connector doesn't have required information: {key}"
        )),
        BackendError::Failed(message) => DomainError::Failed(message),
    }
}

/// The connector a request sent, as an object (`None` for null).
pub fn connector_from(value: Option<Value>) -> Option<Connector> {
    match value {
        Some(Value::Object(map)) => Some(map),
        _ => None,
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

    fn request(all_tenants: bool, project: Option<&str>) -> ListAttachments {
        ListAttachments {
            all_tenants,
            filters: AttachmentFilters {
                project_id: project.map(str::to_owned),
                ..Default::default()
            },
            matches_nothing: false,
        }
    }

    #[test]
    fn scope_rules() {
        let own = Some("p".to_owned());
        assert_eq!(listing_scope(&caller(false), &request(false, None)), own);
        assert_eq!(listing_scope(&caller(false), &request(true, None)), own);
        assert_eq!(
            listing_scope(&caller(false), &request(true, Some("q"))),
            own
        );
        assert_eq!(
            listing_scope(&caller(true), &request(false, Some("q"))),
            own
        );
        assert_eq!(listing_scope(&caller(true), &request(true, None)), None);
        assert_eq!(
            listing_scope(&caller(true), &request(true, Some("q"))).as_deref(),
            Some("q")
        );
    }

    #[test]
    fn null_connector_is_none() {
        assert!(connector_from(None).is_none());
        assert!(connector_from(Some(Value::Null)).is_none());
        assert_eq!(
            connector_from(Some(serde_json::json!({"host": "h"})))
                .unwrap()
                .len(),
            1
        );
    }
}
