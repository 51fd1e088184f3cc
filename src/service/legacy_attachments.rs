//! The legacy attach actions that keep attachment rows: `os-initialize_connection`,
//! `os-attach`, `os-terminate_connection`, `os-detach` and the admin's `os-force_detach`.
//! The rules are decided in the store's transactions (`domain::legacy_connect`); here:
//! who may ask, and the backend calls around the record, in the volume's access turn
//! like every attachment write (export first, record, withdraw if refused; record the
//! end first, then withdraw).

use std::future::Future;

use serde_json::{json, Map, Value};

use super::attachments::{connector_error, export_in_turn, refused, withdraw_unused_export};
use super::volume_not_found;
use super::Service;
use crate::domain::attachment::{AttachMode, AttachStatus, AttachmentCall, Connector, Detached};
use crate::domain::detach_guard::Ending;
use crate::domain::ids::{AttachmentId, VolumeId};
use crate::domain::legacy_connect::{self, LegacyStep, LegacyWhy};
use crate::domain::refusal::LegacyConnectRefusal;
use crate::domain::volume::{Volume, VolumeStatus};
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::rules;
use crate::store::{LegacyAttach, LegacyConnect, StoreError};

/// `os-attach` as the API received it.
#[derive(Debug, Clone)]
pub struct AttachVolume {
    pub instance_uuid: Option<String>,
    pub host_name: Option<String>,
    pub mountpoint: String,
    pub mode: AttachMode,
}

/// An attachment id as `os-detach` / `os-force_detach` name it.
#[derive(Debug, Clone, Copy)]
pub enum DetachTarget {
    /// None given: the volume's only attachment.
    Only,
    Id(AttachmentId),
}

fn legacy_refused(
    step: LegacyStep,
    volume: VolumeId,
    refusal: LegacyConnectRefusal,
) -> DomainError {
    match refusal {
        LegacyConnectRefusal::Legacy(LegacyWhy::HostNeeded) => {
            DomainError::ConnectorMissing("host".into())
        }
        LegacyConnectRefusal::Legacy(why) => DomainError::LegacyRefused { step, why },
        LegacyConnectRefusal::Sharing(sharing) => refused(volume, sharing, AttachmentCall::Create),
    }
}

fn in_maintenance(volume: &Volume, step: LegacyStep) -> Result<(), DomainError> {
    if volume.status == VolumeStatus::Maintenance {
        return Err(DomainError::LegacyRefused {
            step,
            why: LegacyWhy::Maintenance,
        });
    }
    Ok(())
}

/// Cinder's answer to `os-initialize_connection`: the driver's type and `data` apart,
/// `enforce_multipath` beside them (the stored, flat info holds both in one object).
fn nested_connection_info(flat: Value) -> Value {
    let mut data = match flat {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let driver_volume_type = data.remove("driver_volume_type").unwrap_or(Value::Null);
    let enforce_multipath = data
        .get("enforce_multipath")
        .cloned()
        .unwrap_or(Value::Bool(false));
    json!({
        "driver_volume_type": driver_volume_type,
        "data": data,
        "enforce_multipath": enforce_multipath,
    })
}

impl Service {
    /// `os-initialize_connection`: exports the volume to the connector's host and records
    /// the host's connection; Cinder's `connection_info`.
    pub async fn initialize_connection(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        connector: Connector,
    ) -> Result<Value, DomainError> {
        let volume = self
            .volume_with_rule(caller, id, rules::LEGACY_INITIALIZE)
            .await?;
        in_maintenance(&volume, LegacyStep::Initialize)?;
        let backend = self.backend_of(&volume)?;
        backend
            .driver
            .validate_connector(&connector)
            .map_err(connector_error)?;
        let host = connector
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| DomainError::ConnectorMissing("host".to_owned()))?
            .to_owned();
        // The host's attachment keeps its mode; a new connection gets Cinder's: the last
        // legacy attach's `attached_mode`, else `ro` for read-only volumes, else `rw`.
        let existing = volume.attachments.iter().find(|a| {
            a.attached_host.as_deref() == Some(host.as_str())
                && matches!(
                    a.attach_status,
                    AttachStatus::Attaching | AttachStatus::Attached
                )
        });
        let mode = match existing {
            Some(found) => legacy_connect::effective(found.attach_mode),
            None => {
                let attached_mode = volume
                    .admin_metadata
                    .get("attached_mode")
                    .and_then(|m| AttachMode::requested(m));
                AttachMode::connected(volume.is_readonly(), attached_mode, connector.mode())
            }
        };
        let mut connector = connector;
        connector.set_mode(mode);
        let qos = self.host_qos(&volume).await?;
        // Cinder answers a backend's failure here with a fixed text; the reason is logged.
        let exported =
            export_in_turn(backend.driver.as_ref(), volume.storage_id(), &connector).await;
        let (access, mut driver) = exported.map_err(|err| match err {
            DomainError::ConnectFailed(why) => {
                tracing::warn!(volume_id = %volume.id, error = %why, "the backend could not export the volume");
                DomainError::ConnectionInfoUnavailable
            }
            other => other,
        })?;
        driver.data.insert("qos_specs".to_owned(), qos);
        let request = LegacyConnect {
            volume_id: volume.id,
            new_id: AttachmentId::generate(),
            connector,
            mode,
            driver,
            default_max_attachments: self.settings.max_attachments_per_volume,
            now: self.clock.now(),
        };
        let turn = self.gates.enter(volume.id).await;
        let outcome = self.store.legacy_initialize(&request).await;
        drop(turn);
        if !matches!(outcome, Ok(Outcome::Done(_))) {
            withdraw_unused_export(
                backend.driver.as_ref(),
                volume.storage_id(),
                &request.connector,
            )
            .await;
        }
        drop(access);
        match outcome? {
            Outcome::Done(connected) => Ok(nested_connection_info(connected.info)),
            Outcome::Gone => Err(volume_not_found(id)),
            Outcome::Refused(refusal) => Err(legacy_refused(LegacyStep::Initialize, id, refusal)),
        }
    }

    /// `os-attach`: the consumer is attached (its own attachment completed, a host's
    /// connection claimed, or a new attachment).
    pub async fn attach_volume(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        request: AttachVolume,
    ) -> Result<(), DomainError> {
        let volume = self
            .volume_under_rule(caller, id, rules::LEGACY_ATTACH)
            .await?;
        in_maintenance(&volume, LegacyStep::Attach)?;
        if volume.is_readonly() && request.mode != AttachMode::ReadOnly {
            return Err(DomainError::InvalidAttachMode {
                volume: id,
                mode: request.mode.as_str(),
            });
        }
        let attach = LegacyAttach {
            volume_id: id,
            new_id: AttachmentId::generate(),
            instance_uuid: request.instance_uuid,
            host_name: request
                .host_name
                .as_deref()
                .map(legacy_connect::sanitize_hostname),
            mountpoint: request.mountpoint,
            mode: request.mode,
            default_max_attachments: self.settings.max_attachments_per_volume,
            now: self.clock.now(),
        };
        let turn = self.gates.enter(id).await;
        let outcome = self.store.legacy_attach(&attach).await;
        drop(turn);
        match outcome? {
            Outcome::Done(_) => Ok(()),
            Outcome::Gone => Err(volume_not_found(id)),
            Outcome::Refused(refusal) => Err(legacy_refused(LegacyStep::Attach, id, refusal)),
        }
    }

    /// `os-terminate_connection`.
    pub async fn terminate_connection(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        connector: Option<Connector>,
    ) -> Result<(), DomainError> {
        let volume = self
            .volume_under_rule(caller, id, rules::LEGACY_TERMINATE)
            .await?;
        self.guard_detach(caller, Ending::Unnamed, Some(volume.id))
            .await?;
        self.end_host_connection(&volume, connector).await
    }

    /// `os-detach`.
    pub async fn detach_volume(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        target: DetachTarget,
    ) -> Result<(), DomainError> {
        let volume = self
            .volume_under_rule(caller, id, rules::LEGACY_DETACH)
            .await?;
        self.guard_legacy_detach(caller, &volume, target).await?;
        self.detach_legacy(&volume, target).await
    }

    /// `os-force_detach`: the connector's connection ends (when one is given), then the
    /// attachment goes whatever its state; other attachments of the volume stay.
    pub async fn force_detach(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        target: DetachTarget,
        connector: Option<Connector>,
    ) -> Result<(), DomainError> {
        let volume = self
            .volume_under_rule(caller, id, rules::FORCE_DETACH)
            .await?;
        // Cinder ends the connector's connection, then detaches: each step guarded.
        self.guard_detach(caller, Ending::Unnamed, Some(volume.id))
            .await?;
        self.guard_legacy_detach(caller, &volume, target).await?;
        // An attachment that is not there is refused before anything is ended (Cinder's
        // manager would end the connector's connection, then find nothing to detach).
        if let DetachTarget::Id(attachment) = target {
            let live = self.store.get_attachment(attachment).await?;
            if live.is_none() {
                return Err(DomainError::ForceDetachNotFound(attachment.to_string()));
            }
        }
        if let Some(connector) = connector.filter(|c| !c.is_empty()) {
            self.end_host_connection(&volume, Some(connector)).await?;
        }
        self.detach_legacy(&volume, target).await
    }

    /// `guard_detach` for `os-detach`'s target.
    async fn guard_legacy_detach(
        &self,
        caller: &RequestContext,
        volume: &Volume,
        target: DetachTarget,
    ) -> Result<(), DomainError> {
        match target {
            DetachTarget::Only => {
                self.guard_detach(caller, Ending::Unnamed, Some(volume.id))
                    .await
            }
            DetachTarget::Id(id) => {
                let found = self.store.get_attachment(id).await?;
                let named = found.as_ref().map(|r| &r.attachment);
                self.guard_detach(caller, Ending::Named(named), Some(volume.id))
                    .await
            }
        }
    }

    /// Records the end of a host's connection, then withdraws the backend's export for
    /// each connection that ended (or for the connector given, when nothing was recorded
    /// for it).
    async fn end_host_connection(
        &self,
        volume: &Volume,
        connector: Option<Connector>,
    ) -> Result<(), DomainError> {
        let host = connector
            .as_ref()
            .and_then(|c| c.host())
            .filter(|h| !h.is_empty());
        let record = self
            .store
            .legacy_terminate(volume.id, host, self.clock.now());
        let unrecorded = connector.as_ref().filter(|c| !c.is_empty());
        self.end_connections(volume, record, unrecorded).await
    }

    async fn detach_legacy(
        &self,
        volume: &Volume,
        target: DetachTarget,
    ) -> Result<(), DomainError> {
        in_maintenance(volume, LegacyStep::Detach)?;
        let id = match target {
            DetachTarget::Only => None,
            DetachTarget::Id(id) => {
                let found = self.store.get_attachment(id).await?;
                if found.is_some_and(|r| r.attachment.volume_id != volume.id) {
                    return Err(DomainError::MismatchedAttachment);
                }
                Some(id)
            }
        };
        let record = self.store.legacy_detach(volume.id, id, self.clock.now());
        self.end_connections(volume, record, None).await
    }

    /// Runs `record` (a write that ends connections; not started until awaited here) in
    /// the volume's access turn and gate, then withdraws the export of each connection it
    /// ended, or of `unrecorded` when it ended none: decided in the database first, then
    /// applied to the backend, as every detach is.
    async fn end_connections(
        &self,
        volume: &Volume,
        record: impl Future<Output = Result<Outcome<Vec<Detached>, LegacyConnectRefusal>, StoreError>>,
        unrecorded: Option<&Connector>,
    ) -> Result<(), DomainError> {
        let volume_host = volume.host.as_deref();
        let access = self.access_turn(volume.storage_id(), volume_host).await;
        let turn = self.gates.enter(volume.id).await;
        let outcome = record.await;
        drop(turn);
        let ended = match outcome? {
            Outcome::Done(ended) => ended,
            Outcome::Gone => return Err(volume_not_found(volume.id)),
            Outcome::Refused(refusal) => {
                return Err(legacy_refused(LegacyStep::Detach, volume.id, refusal))
            }
        };
        match unrecorded.filter(|_| ended.is_empty()) {
            Some(connector) => {
                let status = AttachStatus::Attached;
                self.withdraw_export(volume.storage_id(), volume_host, status, connector)
                    .await;
            }
            None => {
                self.withdraw_all(volume.storage_id(), volume_host, &ended)
                    .await
            }
        }
        drop(access);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_nests_the_drivers_data() {
        let flat = json!({"driver_volume_type": "iscsi", "target_iqn": "iqn.x", "access_mode": "ro",
                          "enforce_multipath": true});
        assert_eq!(
            nested_connection_info(flat),
            json!({"driver_volume_type": "iscsi",
                   "data": {"target_iqn": "iqn.x", "access_mode": "ro", "enforce_multipath": true},
                   "enforce_multipath": true})
        );
    }
}
