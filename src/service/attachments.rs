//! Attachment use cases: reserve, connect, complete, detach, and the lookups around them.
//!
//! The attach rules are decided in the store's transactions (`domain::attach`, under the
//! volume's lock); what is left here is who may ask (policy and visibility), the backend
//! calls, which happen outside any transaction (export first, then record; withdraw the
//! export if the record is refused). A create with a connector exports first and then
//! reserves and connects in one transaction, so nothing is left to undo.

use super::Service;
use crate::backend::{AccessTurn, Backend, BackendError};
use crate::domain::attach::{self, LiveAttachment};
use crate::domain::attachment::{
    AttachMode, AttachStatus, Attachment, AttachmentCall, AttachmentFilters, AttachmentRecord,
    AttachmentSortKey, Connecting, Connector, Detached, DriverConnection, NewAttachment,
    NewConnection,
};
use crate::domain::detach_guard::Ending;
use crate::domain::ids::{AttachmentId, VolumeId};
use crate::domain::paging::Page;
use crate::domain::refusal::AttachRefusal;
use crate::domain::volume::{Volume, VolumeStatus};
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::{rules, Target};

/// A new attachment as the API received it.
#[derive(Debug, Clone)]
pub struct CreateAttachment {
    pub volume_id: VolumeId,
    pub instance_uuid: Option<String>,
    /// `None` (or an empty connector) reserves only.
    pub connector: Option<Connector>,
    /// `rw`/`ro` from 3.54.
    pub mode: Option<AttachMode>,
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

fn not_found(id: AttachmentId) -> DomainError {
    DomainError::AttachmentNotFound(id.to_string())
}

pub(super) fn connector_error(err: BackendError) -> DomainError {
    match err {
        BackendError::InvalidConnector(key) => DomainError::ConnectorMissing(key),
        BackendError::Failed(message) | BackendError::Busy(message) => {
            DomainError::ConnectFailed(message)
        }
    }
}

/// What a connect records: a new attachment, reserved in the same transaction (a create
/// with a connector), or an existing reservation (an update).
#[derive(Clone, Copy)]
enum Connect<'a> {
    Reserving(&'a NewAttachment),
    Reserved(AttachmentId),
}

/// What a refused attach event means for the caller of `call`.
pub(super) fn refused(
    volume: VolumeId,
    refusal: AttachRefusal,
    call: AttachmentCall,
) -> DomainError {
    match refusal {
        AttachRefusal::Reservation {
            status,
            multiattach,
        } => DomainError::ReservationRefused {
            volume,
            status,
            multiattach,
        },
        AttachRefusal::VolumeInError(status) => DomainError::VolumeInError {
            volume,
            status,
            call,
        },
        AttachRefusal::DuplicateConnector => DomainError::DuplicateConnector(volume),
        AttachRefusal::AttachmentLimit { limit, from_type } => {
            DomainError::AttachmentLimitReached {
                volume,
                limit,
                from_type,
            }
        }
        AttachRefusal::WriterHeld { holder } => DomainError::WriterHeld { volume, holder },
        AttachRefusal::Migrating => DomainError::MigratingVolume(volume),
    }
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
            let marker = AttachmentId::from(marker);
            let visible = self.store.get_attachment(marker).await?.filter(|r| {
                filters
                    .project_id
                    .as_ref()
                    .is_none_or(|p| *p == r.project_id)
            });
            if visible.is_none() {
                return Err(not_found(marker));
            }
        }
        if request.matches_nothing {
            return Ok(Vec::new());
        }
        let mut found = self.store.list_attachments(&filters, page).await?;
        self.add_shared_connections(&mut found).await?;
        Ok(found)
    }

    /// Fills each connected attachment's `shared_connections` (one read for all).
    async fn add_shared_connections(
        &self,
        attachments: &mut [Attachment],
    ) -> Result<(), DomainError> {
        let mut volumes: Vec<VolumeId> = attachments
            .iter()
            .filter(|a| a.attached_host.is_some())
            .map(|a| a.volume_id)
            .collect();
        volumes.sort_by_key(|v| v.uuid());
        volumes.dedup();
        if volumes.is_empty() {
            return Ok(());
        }
        let connections = self.store.host_connections(&volumes).await?;
        for attachment in attachments {
            attachment.share_with(&connections);
        }
        Ok(())
    }

    /// `attachment` with its `shared_connections`.
    async fn with_shared_connections(
        &self,
        mut attachment: Attachment,
    ) -> Result<Attachment, DomainError> {
        self.add_shared_connections(std::slice::from_mut(&mut attachment))
            .await?;
        Ok(attachment)
    }

    /// An attachment the caller may see: other projects' attachments do not exist for
    /// non-admins (joined through the volume, unlike Cinder's cross join).
    pub async fn get_attachment(
        &self,
        caller: &RequestContext,
        id: AttachmentId,
    ) -> Result<AttachmentRecord, DomainError> {
        let record = self
            .store
            .get_attachment(id)
            .await?
            .ok_or_else(|| not_found(id))?;
        if caller.is_project_scoped() && record.project_id != caller.project_id {
            return Err(not_found(id));
        }
        Ok(record)
    }

    /// The attachment as stored now, with `format` from the volume's admin metadata
    /// added to its connection info, as `GET /attachments/{id}` shows it.
    pub async fn show_attachment(
        &self,
        caller: &RequestContext,
        id: AttachmentId,
    ) -> Result<Attachment, DomainError> {
        let mut attachment = self.get_attachment(caller, id).await?.attachment;
        if let Some(volume) = self.store.get_volume_brief(attachment.volume_id).await? {
            if let (Some(format), Some(serde_json::Value::Object(info))) = (
                volume.admin_metadata.get("format"),
                attachment.connection_info.as_mut(),
            ) {
                info.insert("format".into(), serde_json::Value::String(format.clone()));
            }
        }
        self.with_shared_connections(attachment).await
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
        // Cinder refuses a volume in an error state before anything else (the rule of
        // `attach::reserve`, answered from the volume just read).
        if attach::in_error_state(volume.status) {
            return Err(refused(
                volume.id,
                AttachRefusal::VolumeInError(volume.status),
                AttachmentCall::Create,
            ));
        }
        // Cinder asks when the volume is `in-use`; here a multiattach volume also takes a
        // new attachment while others are reserved or attaching, so the rule is asked
        // whenever another attachment exists.
        let shared = matches!(
            volume.status,
            VolumeStatus::InUse | VolumeStatus::Reserved | VolumeStatus::Attaching
        );
        if volume.multiattach && shared && volume.bootable {
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
            Some(connector) => AttachMode::connected(readonly, request.mode, connector.mode()),
            None => AttachMode::reserved(readonly, request.mode),
        };
        // A status that refuses every reservation is answered from the status just read,
        // without the volume's lock: under a crowd of attaches to one busy volume a
        // refusal then costs a read instead of a turn at the lock the winner needs.
        if let Some(refusal) = attach::refuses_any_reservation(volume.status, volume.multiattach) {
            return Err(refused(volume.id, refusal, AttachmentCall::Create));
        }
        let reservation = NewAttachment {
            id: AttachmentId::generate(),
            volume_id: volume.id,
            instance_uuid: request.instance_uuid,
            expected_multiattach: volume.multiattach,
            attach_mode,
            default_max_attachments: self.settings.max_attachments_per_volume,
            now: self.clock.now(),
        };
        let Some(connector) = connector else {
            return self.reserve_only(&volume, &reservation).await;
        };
        // Exported first, then reserved and connected in one transaction: nothing is
        // left behind when either is refused or fails.
        self.connect(
            &volume,
            connector,
            attach_mode,
            Connect::Reserving(&reservation),
        )
        .await
        .map_err(|err| failed_on_the_way(err, AttachmentCall::Create))
    }

    /// A reservation without a connector: the attachment as stored.
    async fn reserve_only(
        &self,
        volume: &Volume,
        reservation: &NewAttachment,
    ) -> Result<Attachment, DomainError> {
        let turn = self.gates.enter(volume.id).await;
        let reserved = self.store.reserve_attachment(reservation).await;
        drop(turn);
        match reserved? {
            Outcome::Done(()) => {}
            Outcome::Gone => return Err(DomainError::VolumeNotFound(volume.id.to_string())),
            Outcome::Refused(refusal) => {
                return Err(refused(volume.id, refusal, AttachmentCall::Create))
            }
        }
        let id = reservation.id;
        let stored = self
            .store
            .get_attachment(id)
            .await?
            .ok_or_else(|| not_found(id))?;
        Ok(stored.attachment)
    }

    /// Connects an attachment to the host in `connector`.
    pub async fn update_attachment(
        &self,
        caller: &RequestContext,
        id: AttachmentId,
        connector: Connector,
    ) -> Result<Attachment, DomainError> {
        let record = self.get_attachment(caller, id).await?;
        if connector.host().is_none_or(str::is_empty) {
            return Err(DomainError::ConnectorMissing("host".to_owned()));
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
            .ok_or_else(|| DomainError::VolumeNotFound(volume_id.to_string()))?;
        // The rule of `attach::connect`, answered before the backend exports the volume.
        if attach::in_error_state(volume.status) {
            return Err(refused(
                volume.id,
                AttachRefusal::VolumeInError(volume.status),
                AttachmentCall::Update,
            ));
        }
        self.backend_of(&volume)?
            .driver
            .validate_connector(&connector)
            .map_err(connector_error)?;
        let mode = AttachMode::connected(
            volume.is_readonly(),
            record.attachment.attach_mode,
            connector.mode(),
        );
        self.connect(&volume, connector, mode, Connect::Reserved(id))
            .await
            .map_err(|err| failed_on_the_way(err, AttachmentCall::Update))
    }

    /// Exports the volume to the connector's host and records the connection; if the
    /// record is refused, the export is withdrawn again. Returns the attachment as stored
    /// (with its shared connections, read under the volume's lock).
    async fn connect(
        &self,
        volume: &Volume,
        mut connector: Connector,
        mode: AttachMode,
        what: Connect<'_>,
    ) -> Result<Attachment, DomainError> {
        let (attachment_id, by) = match what {
            Connect::Reserving(new) => (new.id, Connecting::NewReservation),
            Connect::Reserved(id) => (id, Connecting::Update),
        };
        connector.set_mode(mode);
        let backend = self.backend_of(volume)?;
        let qos = self.host_qos(volume).await?;
        let (access, mut driver) =
            export_in_turn(backend.driver.as_ref(), volume.storage_id(), &connector).await?;
        driver.data.insert("qos_specs".to_owned(), qos);
        let connection = NewConnection {
            attachment_id,
            connector,
            attach_mode: mode,
            driver,
            by,
            now: self.clock.now(),
        };
        let turn = self.gates.enter(volume.id).await;
        let outcome = match what {
            Connect::Reserving(new) => self.store.reserve_connected(new, &connection).await,
            Connect::Reserved(_) => self.store.connect_attachment(&connection).await,
        };
        drop(turn);
        if !matches!(outcome, Ok(Outcome::Done(_))) {
            withdraw_unused_export(
                backend.driver.as_ref(),
                volume.storage_id(),
                &connection.connector,
            )
            .await;
        }
        drop(access);
        match outcome? {
            Outcome::Done(attachment) => Ok(attachment),
            Outcome::Gone if by == Connecting::NewReservation => {
                Err(DomainError::VolumeNotFound(volume.id.to_string()))
            }
            Outcome::Gone => Err(not_found(attachment_id)),
            Outcome::Refused(refusal) => Err(refused(volume.id, refusal, by.into())),
        }
    }

    /// `os-complete`: the host finished attaching.
    pub async fn complete_attachment(
        &self,
        caller: &RequestContext,
        id: AttachmentId,
    ) -> Result<(), DomainError> {
        // As in Cinder, the attachment decides who may see it; the volume is read (and
        // locked) by the store's transaction.
        let record = self.get_attachment(caller, id).await?;
        self.policy.enforce(
            rules::ATTACHMENT_COMPLETE,
            caller,
            &Target::project(&record.project_id),
        )?;
        let turn = self.gates.enter(record.attachment.volume_id).await;
        let completed = self.store.complete_attachment(id, self.clock.now()).await;
        drop(turn);
        completed?.found().ok_or_else(|| not_found(id))
    }

    /// Detaches: withdraws the export, removes the attachment and recomputes the volume.
    /// Returns the volume's remaining attachments that are not detached.
    pub async fn delete_attachment(
        &self,
        caller: &RequestContext,
        id: AttachmentId,
    ) -> Result<Vec<LiveAttachment>, DomainError> {
        let record = self.get_attachment(caller, id).await?;
        self.policy.enforce(
            rules::ATTACHMENT_DELETE,
            caller,
            &Target::project(&record.project_id),
        )?;
        self.guard_detach(caller, Ending::Named(Some(&record.attachment)), None)
            .await?;
        let volume_id = record.attachment.volume_id;
        let host = record.volume_host.as_deref();
        // Decided in the database first, then applied to the backend, inside the
        // volume's access turn: a backend whose access follows the database cuts the host
        // off unless another live attachment still uses its connection.
        let access = self.access_turn(record.volume_storage, host).await;
        let turn = self.gates.enter(volume_id).await;
        let deleted = self.store.delete_attachment(id, self.clock.now()).await;
        drop(turn);
        if matches!(deleted, Ok(Outcome::Done(_))) {
            self.withdraw_export(
                record.volume_storage,
                host,
                record.attachment.attach_status,
                &record.connector,
            )
            .await;
        }
        drop(access);
        deleted?.found().ok_or_else(|| not_found(id))
    }

    /// The access turn of the volume whose storage is `volume_id` (`Volume::storage_id`)
    /// at its backend (see `Backend::access_turn`); `None` for
    /// backends without one, or when the backend cannot give it (logged: the change
    /// still goes ahead, and reconciliation applies it later).
    pub(super) async fn access_turn(
        &self,
        volume_id: VolumeId,
        volume_host: Option<&str>,
    ) -> Option<AccessTurn> {
        let backend = self.backend_at(volume_host, volume_id).ok()?;
        match backend.driver.access_turn(volume_id).await {
            Ok(turn) => turn,
            Err(err) => {
                tracing::warn!(%volume_id, error = %err, "backend gave no access turn");
                None
            }
        }
    }

    /// Ends the backend's export for an attachment that was connected, after the
    /// database no longer holds it (`volume_id`: the storage id the backend knows).
    /// Cinder logs a failure and goes on: the attachment goes either way.
    pub(super) async fn withdraw_export(
        &self,
        volume_id: VolumeId,
        volume_host: Option<&str>,
        status: AttachStatus,
        connector: &Connector,
    ) {
        if status == AttachStatus::Reserved || connector.is_empty() {
            return;
        }
        let Ok(backend) = self.backend_at(volume_host, volume_id) else {
            return;
        };
        if let Err(err) = backend
            .driver
            .terminate_connection(volume_id, connector)
            .await
        {
            tracing::warn!(%volume_id, error = %err, "backend could not terminate the connection");
        }
    }
}

impl Service {
    /// What `connection_info.qos_specs` carries for the volume: its type's front-end QoS
    /// specs, scaled to its size (null without any).
    pub(super) async fn host_qos(&self, volume: &Volume) -> Result<serde_json::Value, DomainError> {
        if volume.volume_type_qos_specs_id.is_none() {
            return Ok(serde_json::Value::Null);
        }
        let qos = self.store.qos_of_type(volume.volume_type_id).await?;
        Ok(crate::domain::qos::for_the_host(qos.as_ref(), volume.size))
    }
}

/// Takes the volume's access turn at the backend, then exports the volume to
/// `connector`. The turn is held until the caller has recorded the connection (or
/// withdrawn the export): a backend whose access follows the database (tgt) lets no
/// other change to this volume's access in between.
pub(super) async fn export_in_turn(
    driver: &dyn Backend,
    volume_id: VolumeId,
    connector: &Connector,
) -> Result<(Option<AccessTurn>, DriverConnection), DomainError> {
    let access = driver
        .access_turn(volume_id)
        .await
        .map_err(connector_error)?;
    let exported = driver
        .initialize_connection(volume_id, connector)
        .await
        .map_err(connector_error)?;
    Ok((access, exported))
}

/// Withdraws an export made for a connection whose record was refused (or failed): the
/// backend lets the host in only while a record says so. A failure is logged; the
/// backend's reconciliation repairs what is left.
pub(super) async fn withdraw_unused_export(
    driver: &dyn Backend,
    volume_id: VolumeId,
    connector: &Connector,
) {
    if let Err(err) = driver.terminate_connection(volume_id, connector).await {
        tracing::warn!(%volume_id, error = %err, "could not withdraw an unused export");
    }
}

impl Service {
    /// `withdraw_export` for each attachment whose connection a write ended.
    pub(super) async fn withdraw_all(
        &self,
        volume_id: VolumeId,
        volume_host: Option<&str>,
        ended: &[Detached],
    ) {
        for attachment in ended {
            self.withdraw_export(
                volume_id,
                volume_host,
                attachment.attach_status,
                &attachment.connector,
            )
            .await;
        }
    }
}

/// A create or update (`call`) that failed on its way: Cinder wraps the cause of a
/// failure in "Unable to … attachment"; refusals go out as they are.
fn failed_on_the_way(err: DomainError, call: AttachmentCall) -> DomainError {
    if err.is_failure() {
        DomainError::AttachmentFailed {
            call,
            cause: Box::new(err),
        }
    } else {
        err
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
            auth_token: None,
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
    fn only_failures_are_wrapped() {
        let failure = DomainError::ConnectFailed("disk on fire".into());
        assert!(matches!(
            failed_on_the_way(failure, AttachmentCall::Update),
            DomainError::AttachmentFailed {
                call: AttachmentCall::Update,
                ..
            }
        ));
        let refusal = DomainError::DuplicateConnector(VolumeId::generate());
        assert!(matches!(
            failed_on_the_way(refusal, AttachmentCall::Create),
            DomainError::DuplicateConnector(_)
        ));
    }
}
