//! The legacy attach actions that keep attachment rows (`os-initialize_connection`,
//! `os-attach`, `os-terminate_connection`, `os-detach`), each lock → decide
//! (`domain::legacy_connect`) → apply in one transaction, like the attachments API.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::attachments::INSERT_CONNECTED;
use super::connector_specs;
use super::db::error::StoreError;
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::side_tables::SideTable;
use super::SqlStore;
use crate::domain::attachment::{
    AttachMode, AttachStatus, Attachment, Connector, Detached, DriverConnection,
};
use crate::domain::event::attach_events;
use crate::domain::ids::{AttachmentId, VolumeId};
use crate::domain::legacy_connect::{self, AttachRequest, AttachRow, HostConnect, HostConnected};
use crate::domain::refusal::LegacyConnectRefusal;
use crate::domain::Outcome;

/// `os-initialize_connection` as the store records it.
#[derive(Debug, Clone)]
pub struct LegacyConnect {
    pub volume_id: VolumeId,
    pub new_id: AttachmentId,
    /// With `mode` set to `mode`.
    pub connector: Connector,
    pub mode: AttachMode,
    pub driver: DriverConnection,
    pub default_max_attachments: Option<u32>,
    pub now: DateTime<Utc>,
}

/// `os-attach` as the store records it.
#[derive(Debug, Clone)]
pub struct LegacyAttach {
    pub volume_id: VolumeId,
    pub new_id: AttachmentId,
    pub instance_uuid: Option<String>,
    pub host_name: Option<String>,
    pub mountpoint: String,
    pub mode: AttachMode,
    pub default_max_attachments: Option<u32>,
    pub now: DateTime<Utc>,
}

#[async_trait]
pub trait LegacyAttachStore: Send + Sync {
    /// Records the host's connection (a new `attaching` attachment, or the host's
    /// existing one refreshed).
    async fn legacy_initialize(
        &self,
        request: &LegacyConnect,
    ) -> Result<Outcome<HostConnected, LegacyConnectRefusal>, StoreError>;

    /// Marks the consumer attached; the attachment it wrote.
    async fn legacy_attach(
        &self,
        request: &LegacyAttach,
    ) -> Result<Outcome<AttachmentId, LegacyConnectRefusal>, StoreError>;

    /// Ends a host's connection (`None`: the volume's only connected host). Returns the
    /// attachments whose connection ended, with their connectors.
    async fn legacy_terminate(
        &self,
        volume_id: VolumeId,
        host: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Vec<Detached>, LegacyConnectRefusal>, StoreError>;

    /// Removes the given attachment, or the volume's only one; the removed attachments
    /// with their connectors.
    async fn legacy_detach(
        &self,
        volume_id: VolumeId,
        attachment_id: Option<AttachmentId>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Vec<Detached>, LegacyConnectRefusal>, StoreError>;
}

const REFRESH: &str = "\
    update volume_attachment set connection_info = $2, updated_at = $3 \
     where id = $1 and deleted = false";

/// Completes an existing attachment; an instance given claims it.
const COMPLETE_LEGACY: &str = "\
    update volume_attachment \
       set attach_status = $2, instance_uuid = coalesce($3, instance_uuid), mountpoint = $4, \
           attach_mode = $5, attach_time = coalesce(attach_time, $6), updated_at = $6 \
     where id = $1 and deleted = false";

const INSERT_ATTACHED: &str = "\
    insert into volume_attachment (id, volume_id, instance_uuid, attached_host, mountpoint, \
                                   attach_status, attach_mode, attach_time, connection_info, \
                                   created_at, updated_at, deleted) \
    values ($1, $2, $3, $4, $5, $6, $7, $8, '{}', $8, $8, false)";

const DISCONNECT: &str = "\
    update volume_attachment set connection_info = '{}', updated_at = $2 \
     where id = $1 and deleted = false";

/// Cinder records the mode of the last legacy attach in the volume's admin metadata.
const RECORD_ATTACHED_MODE: &str = "\
    insert into volume_admin_metadata (volume_id, key, value, created_at, deleted) \
    values ($1, 'attached_mode', $2, $3, false) \
    on conflict (volume_id, key) where deleted = false \
    do update set value = excluded.value, updated_at = excluded.created_at";

impl<D: Database> SqlStore<D> {
    /// The connectors of the live attachments `ids` of the locked volume.
    async fn connectors_among(
        tx: &mut D::Tx,
        locked: &super::locks::Locked,
        ids: &[AttachmentId],
    ) -> Result<Vec<Detached>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let all = Self::connectors_of(tx, locked).await?;
        Ok(all.into_iter().filter(|d| ids.contains(&d.id)).collect())
    }
}

#[async_trait]
impl<D: Database> LegacyAttachStore for SqlStore<D> {
    #[tracing::instrument(skip_all, fields(volume_id = %request.volume_id), err)]
    async fn legacy_initialize(
        &self,
        request: &LegacyConnect,
    ) -> Result<Outcome<HostConnected, LegacyConnectRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume_with_attachments(&mut tx, request.volume_id).await?
        else {
            return Ok(Outcome::Gone);
        };
        let host = request.connector.host().unwrap_or_default();
        let asked = HostConnect {
            host,
            new_id: request.new_id,
            mode: request.mode,
            default_max_attachments: request.default_max_attachments,
            enforce_multipath: request.connector.enforce_multipath(),
        };
        let decided =
            legacy_connect::initialize(&locked.volume, &locked.live, &asked, &request.driver);
        let connected = match decided {
            Ok(connected) => connected,
            Err(refusal) => return Ok(Outcome::Refused(refusal)),
        };
        let owner = connected.attachment_id.uuid();
        if connected.existing {
            let refresh = Sql::new(REFRESH)
                .bind(connected.attachment_id)
                .bind(connected.info.to_string())
                .bind(request.now);
            tx.execute(refresh).await?;
            Self::remove_items(
                &mut tx,
                SideTable::AttachmentSpecs,
                owner,
                None,
                request.now,
            )
            .await?;
        } else {
            let insert = Sql::new(&INSERT_CONNECTED)
                .bind(request.new_id)
                .bind(request.volume_id)
                .bind(None::<String>)
                .bind(AttachStatus::Attaching)
                .bind(request.mode)
                .bind(host)
                .bind(request.connector.mountpoint())
                .bind(request.now)
                .bind(connected.info.to_string());
            tx.fetch_optional::<Attachment>(insert).await?;
        }
        let items = connector_specs::encode(&request.connector);
        Self::insert_items(
            &mut tx,
            SideTable::AttachmentSpecs,
            owner,
            items,
            request.now,
        )
        .await?;
        Self::write_volume_state(&mut tx, request.volume_id, connected.volume, request.now).await?;
        tx.commit().await?;
        Ok(Outcome::Done(connected))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %request.volume_id), err)]
    async fn legacy_attach(
        &self,
        request: &LegacyAttach,
    ) -> Result<Outcome<AttachmentId, LegacyConnectRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume_with_attachments(&mut tx, request.volume_id).await?
        else {
            return Ok(Outcome::Gone);
        };
        let asked = AttachRequest {
            instance_uuid: request.instance_uuid.as_deref(),
            host_name: request.host_name.as_deref(),
            mode: request.mode,
            new_id: request.new_id,
            default_max_attachments: request.default_max_attachments,
        };
        let attached = match legacy_connect::attach(&locked.volume, &locked.live, &asked) {
            Ok(attached) => attached,
            Err(refusal) => return Ok(Outcome::Refused(refusal)),
        };
        let written = match attached.row {
            AttachRow::Already(id) => return Ok(Outcome::Done(id)),
            AttachRow::Complete(id) => {
                let complete = Sql::new(COMPLETE_LEGACY)
                    .bind(id)
                    .bind(AttachStatus::Attached)
                    .bind(&request.instance_uuid)
                    .bind(&request.mountpoint)
                    .bind(request.mode)
                    .bind(request.now);
                tx.execute(complete).await?;
                id
            }
            AttachRow::New(id) => {
                // Cinder keeps the host name of a host attach; an instance's is unknown.
                let host = request
                    .instance_uuid
                    .is_none()
                    .then_some(&request.host_name);
                let insert = Sql::new(INSERT_ATTACHED)
                    .bind(id)
                    .bind(request.volume_id)
                    .bind(&request.instance_uuid)
                    .bind(host.cloned().flatten())
                    .bind(&request.mountpoint)
                    .bind(AttachStatus::Attached)
                    .bind(request.mode)
                    .bind(request.now);
                tx.execute(insert).await?;
                id
            }
        };
        let mode = Sql::new(RECORD_ATTACHED_MODE)
            .bind(request.volume_id)
            .bind(request.mode.as_str())
            .bind(request.now);
        tx.execute(mode).await?;
        Self::write_volume_state(&mut tx, request.volume_id, attached.volume, request.now).await?;
        let (events, volume) = (attach_events::LEGACY_ATTACH.after, request.volume_id);
        self.record_events(&mut tx, events, volume, Some(written), request.now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(written))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %volume_id), err)]
    async fn legacy_terminate(
        &self,
        volume_id: VolumeId,
        host: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Vec<Detached>, LegacyConnectRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume_with_attachments(&mut tx, volume_id).await? else {
            return Ok(Outcome::Gone);
        };
        let terminated = match legacy_connect::terminate(&locked.volume, &locked.live, host) {
            Ok(terminated) => terminated,
            Err(refusal) => return Ok(Outcome::Refused(refusal)),
        };
        let ended: Vec<AttachmentId> = terminated
            .removed
            .iter()
            .chain(&terminated.disconnected)
            .copied()
            .collect();
        let connectors = Self::connectors_among(&mut tx, &locked, &ended).await?;
        if !terminated.removed.is_empty() {
            Self::remove_attachments(&mut tx, &locked.volume, &terminated.removed, now).await?;
        }
        for id in &terminated.disconnected {
            tx.execute(Sql::new(DISCONNECT).bind(id).bind(now)).await?;
            Self::remove_items(&mut tx, SideTable::AttachmentSpecs, id.uuid(), None, now).await?;
        }
        Self::write_volume_state(&mut tx, volume_id, terminated.volume, now).await?;
        tx.commit().await?;
        Ok(Outcome::Done(connectors))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %volume_id), err)]
    async fn legacy_detach(
        &self,
        volume_id: VolumeId,
        attachment_id: Option<AttachmentId>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Vec<Detached>, LegacyConnectRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume_with_attachments(&mut tx, volume_id).await? else {
            return Ok(Outcome::Gone);
        };
        let transition = match legacy_connect::detach(&locked.volume, &locked.live, attachment_id) {
            Ok(transition) => transition,
            Err(refusal) => return Ok(Outcome::Refused(refusal)),
        };
        let detached = Self::connectors_among(&mut tx, &locked, &transition.detached).await?;
        let events = attach_events::LEGACY_DETACH;
        for id in &transition.detached {
            self.record_events(&mut tx, events.before, volume_id, Some(*id), now)
                .await?;
        }
        Self::remove_attachments(&mut tx, &locked.volume, &transition.detached, now).await?;
        Self::write_volume_state(&mut tx, volume_id, transition.volume, now).await?;
        for id in &transition.detached {
            self.record_events(&mut tx, events.after, volume_id, Some(*id), now)
                .await?;
        }
        tx.commit().await?;
        Ok(Outcome::Done(detached))
    }
}
