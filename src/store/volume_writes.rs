//! Changes to a volume that Cinder's rules govern. Each locks the volume, asks its rule
//! (`domain::volume_rules`, `domain::attach`, `domain::legacy_attach`) and applies what
//! the rule allows, in one transaction.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::connector_specs;
use super::db::error::StoreError;
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::locks::Locked;
use super::side_tables::{KeyValue, SideTable};
use super::SqlStore;
use crate::domain::attach;
use crate::domain::attachment::{AttachStatus, Detached};
use crate::domain::compute_call::ComputeCallKind;
use crate::domain::event::EventKind;
use crate::domain::ids::{SnapshotId, VolumeId};
use crate::domain::legacy_attach::{self, LegacyAction};
use crate::domain::message::Message;
use crate::domain::quota::{self, QuotaOwner};
use crate::domain::refusal::{
    ExtendRefusal, LegacyActionRefusal, RetypeRefusal, VolumeDeleteRefusal, VolumeStatusRefusal,
};
use crate::domain::snapshot::SnapshotStatus;
use crate::domain::snapshot_rules;
use crate::domain::volume::{
    LockedVolume, MigrationStatus, Retype, StatusReset, VolumeStatus, SOFT_DELETED_STATUS,
};
use crate::domain::volume_rules;
use crate::domain::Outcome;
use std::convert::Infallible;

#[async_trait]
pub trait VolumeWriteStore: Send + Sync {
    /// Moves a volume from `from` to `to` (refused in any other status).
    async fn transition_volume(
        &self,
        id: VolumeId,
        from: VolumeStatus,
        to: VolumeStatus,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), VolumeStatusRefusal>, StoreError>;
    /// A `creating` (or `downloading`) volume failed: it becomes `error` and its project gets `message`,
    /// both or neither.
    async fn fail_volume_creation(
        &self,
        id: VolumeId,
        message: &Message,
    ) -> Result<Outcome<(), VolumeStatusRefusal>, StoreError>;
    /// Starts a delete under Cinder's conditions: the volume becomes `deleting`. A volume
    /// with live snapshots is refused unless `cascade`; then its snapshots become
    /// `deleting` too and are returned, for the backend to remove first.
    async fn begin_volume_delete(
        &self,
        id: VolumeId,
        force: bool,
        cascade: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Vec<SnapshotId>, VolumeDeleteRefusal>, StoreError>;
    /// Soft-deletes a volume with its attachments, their connectors and its metadata.
    async fn finish_volume_delete(
        &self,
        id: VolumeId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError>;
    /// Starts an extend: an `available` volume becomes `extending`, if the growth fits
    /// the quota of `owner` (its project, and its type's name).
    async fn begin_extend(
        &self,
        id: VolumeId,
        new_size: i64,
        attached: bool,
        owner: &QuotaOwner,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), ExtendRefusal>, StoreError>;
    /// Records the new size and returns an `extending` volume to the status its
    /// attachments give it (`available` or `in-use`).
    /// With `tell_nova` (the volume's project), the servers it is attached to are owed
    /// a `volume-extended` event, recorded in the same transaction.
    async fn finish_extend(
        &self,
        id: VolumeId,
        new_size: i64,
        tell_nova: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), VolumeStatusRefusal>, StoreError>;
    async fn set_bootable(
        &self,
        id: VolumeId,
        bootable: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError>;
    /// Sets admin metadata `readonly` while the volume is `available`.
    async fn set_readonly(
        &self,
        id: VolumeId,
        readonly: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), VolumeStatusRefusal>, StoreError>;
    /// Writes the fields given; with `attach_status = detached` every attachment is
    /// detached first (returned, with the connectors their exports were made for).
    async fn reset_status(
        &self,
        id: VolumeId,
        reset: &StatusReset,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Vec<Detached>, Infallible>, StoreError>;
    /// Changes the type (and the multiattach flag) under Cinder's retype conditions, if
    /// the volume and its snapshots fit the new type's quotas (`owner` names the volume's
    /// project and the new type).
    async fn retype_volume(
        &self,
        retype: &Retype,
        owner: &QuotaOwner,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), RetypeRefusal>, StoreError>;
    /// `os-reserve` and friends.
    async fn legacy_attach_action(
        &self,
        id: VolumeId,
        action: LegacyAction,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), LegacyActionRefusal>, StoreError>;
}

/// A plain status change; none of them sets `extending`, so growth reserved by an extend
/// is released with it (an extend that failed).
const SET_STATUS: &str =
    "update volumes set status = $2, reserved_growth = 0, updated_at = $3 where id = $1";

const SET_STATUS_KEEPING_PREVIOUS: &str =
    "update volumes set previous_status = status, status = $2, updated_at = $3 where id = $1";

/// The volume becomes `extending` with its growth reserved against its project's quota.
const BEGIN_EXTEND: &str = "update volumes set previous_status = status, status = $2, \
     reserved_growth = $3, updated_at = $4 where id = $1";

/// The growth lands: the reservation becomes the size.
const SET_SIZE: &str = "update volumes set size = $2, reserved_growth = 0, status = $3, \
     updated_at = $4 where id = $1";

const SET_BOOTABLE: &str =
    "update volumes set bootable = $2, updated_at = $3 where id = $1 and deleted = false";

const SET_READONLY: &str = "\
    insert into volume_admin_metadata (volume_id, key, value, created_at, deleted) \
    values ($1, 'readonly', $2, $3, false) \
    on conflict (volume_id, key) where deleted = false \
    do update set value = excluded.value, updated_at = excluded.created_at";

const RESET: &str = "\
    update volumes \
       set status = coalesce($2, status), attach_status = coalesce($3, attach_status), \
           migration_status = case when $4 then $5 else migration_status end, updated_at = $6, \
           reserved_growth = case when coalesce($2, status) = $7 then reserved_growth else 0 end \
     where id = $1";

const CONNECTORS_OF_VOLUME: &str = "\
    select s.attachment_id, s.key, s.value \
      from attachment_specs s join volume_attachment a on a.id = s.attachment_id \
     where a.volume_id = $1 and a.deleted = false and s.deleted = false \
     order by s.attachment_id, s.key";

const DELETE_CONNECTORS_OF_VOLUME: &str = "\
    update attachment_specs set deleted = true, deleted_at = $2 \
     where deleted = false \
       and attachment_id in (select id from volume_attachment where volume_id = $1)";

const DELETE_ATTACHMENTS_OF_VOLUME: &str = "\
    update volume_attachment set deleted = true, deleted_at = $2, attach_status = $3 \
     where volume_id = $1 and deleted = false";

/// The volume's live snapshots, and whether each belongs to a group snapshot.
const SNAPSHOTS_OF_VOLUME: &str = "select id, status, group_snapshot_id is not null \
     from snapshots where volume_id = $1 and deleted = false order by id";

const SNAPSHOTS_DELETING: &str = "update snapshots set status = $2, updated_at = $3 \
                                   where volume_id = $1 and deleted = false";

const CLOSE_TRANSFERS_OF_VOLUME: &str = "update transfers set deleted = true, deleted_at = $2 \
     where volume_id = $1 and deleted = false";

const DELETE_VOLUME: &str = "\
    update volumes set deleted = true, deleted_at = $2, status = $3, migration_status = null \
     where id = $1 and deleted = false";

pub(super) type Begun<Tx, T, R> = Result<(Tx, LockedVolume), Outcome<T, R>>;

impl<D: Database> SqlStore<D> {
    /// Starts a write to volume `id`: locks it and asks `rule`. The transaction and the
    /// locked volume, or the answer that ends the write.
    pub(super) async fn write_volume_if<T, R>(
        &self,
        id: VolumeId,
        rule: impl FnOnce(&LockedVolume) -> Result<(), R> + Send,
    ) -> Result<Begun<D::Tx, T, R>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume(&mut tx, id).await? else {
            return Ok(Err(Outcome::Gone));
        };
        match rule(&locked) {
            Ok(()) => Ok(Ok((tx, locked))),
            Err(refusal) => Ok(Err(Outcome::Refused(refusal))),
        }
    }

    /// Runs `sql` in a write to volume `id` that `rule` allows.
    async fn apply_if<R>(
        &self,
        id: VolumeId,
        rule: impl FnOnce(&LockedVolume) -> Result<(), R> + Send,
        sql: Sql,
    ) -> Result<Outcome<(), R>, StoreError> {
        let (mut tx, _) = match self.write_volume_if(id, rule).await? {
            Ok(begun) => begun,
            Err(answer) => return Ok(answer),
        };
        tx.execute(sql).await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    /// The connectors of the volume's live attachments, by attachment.
    pub(super) async fn connectors_of(
        tx: &mut D::Tx,
        locked: &Locked,
    ) -> Result<Vec<Detached>, StoreError> {
        let items: Vec<KeyValue> = tx
            .fetch_all(Sql::new(CONNECTORS_OF_VOLUME).bind(locked.volume.id))
            .await?;
        locked
            .live
            .iter()
            .map(|a| {
                let own = items
                    .iter()
                    .filter(|item| item.owner == a.id.uuid())
                    .map(|item| (item.key.clone(), item.value.clone()));
                Ok(Detached {
                    id: a.id,
                    attach_status: a.attach_status,
                    connector: connector_specs::decode(own)?,
                })
            })
            .collect()
    }
}

#[async_trait]
impl<D: Database> VolumeWriteStore for SqlStore<D> {
    #[tracing::instrument(skip_all, fields(volume_id = %id, %from, %to), err)]
    async fn transition_volume(
        &self,
        id: VolumeId,
        from: VolumeStatus,
        to: VolumeStatus,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), VolumeStatusRefusal>, StoreError> {
        let (mut tx, _) = match self
            .write_volume_if(id, |v| volume_rules::transition(v, from))
            .await?
        {
            Ok(begun) => begun,
            Err(answer) => return Ok(answer),
        };
        tx.execute(Sql::new(SET_STATUS).bind(id).bind(to).bind(now))
            .await?;
        if let Some(kind) = EventKind::of_transition(from, to) {
            self.record_events(&mut tx, &[kind], id, None, now).await?;
        }
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn fail_volume_creation(
        &self,
        id: VolumeId,
        message: &Message,
    ) -> Result<Outcome<(), VolumeStatusRefusal>, StoreError> {
        let now = message.created_at;
        // A volume made from an image fails in `downloading` too, or in the status an
        // attachment reserved it into while it downloaded: its data is gone either way.
        let rule = |v: &LockedVolume| match v.status {
            VolumeStatus::Downloading
            | VolumeStatus::Reserved
            | VolumeStatus::Attaching
            | VolumeStatus::InUse => Ok(()),
            _ => volume_rules::transition(v, VolumeStatus::Creating),
        };
        let (mut tx, _) = match self.write_volume_if(id, rule).await? {
            Ok(begun) => begun,
            Err(answer) => return Ok(answer),
        };
        let failed = Sql::new(SET_STATUS)
            .bind(id)
            .bind(VolumeStatus::Error)
            .bind(now);
        tx.execute(failed).await?;
        Self::add_message(&mut tx, message).await?;
        self.record_events(&mut tx, &[EventKind::VolumeCreateError], id, None, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id, force), err)]
    async fn begin_volume_delete(
        &self,
        id: VolumeId,
        force: bool,
        cascade: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Vec<SnapshotId>, VolumeDeleteRefusal>, StoreError> {
        let (mut tx, _) = match self
            .write_volume_if(id, |v| volume_rules::delete(v, force))
            .await?
        {
            Ok(begun) => begun,
            Err(answer) => return Ok(answer),
        };
        // Locked, so that no volume starts being made from one of them meanwhile.
        let lock = Sql::locking(SNAPSHOTS_OF_VOLUME, D::FOR_UPDATE).bind(id);
        let snapshots: Vec<(SnapshotId, SnapshotStatus, bool)> = tx.fetch_all(lock).await?;
        let statuses: Vec<SnapshotStatus> = snapshots.iter().map(|(_, s, _)| *s).collect();
        // A group snapshot's snapshots go only with it (Cinder's cascade condition).
        let grouped = snapshots.iter().any(|(_, _, grouped)| *grouped);
        let allowed = snapshot_rules::may_delete_volume_with(&statuses, cascade && !grouped);
        if let Err(refusal) = allowed {
            return Ok(Outcome::Refused(refusal));
        }
        if let Some(creating) = Self::creating_from_volume(&mut tx, id).await? {
            return Ok(Outcome::Refused(VolumeDeleteRefusal::SourceOfCreating(
                creating,
            )));
        }
        if !snapshots.is_empty() {
            let deleting = Sql::new(SNAPSHOTS_DELETING)
                .bind(id)
                .bind(SnapshotStatus::Deleting)
                .bind(now);
            tx.execute(deleting).await?;
            for (snapshot, _, _) in &snapshots {
                let events = &[EventKind::SnapshotDeleteStart];
                self.record_snapshot_events(&mut tx, events, *snapshot, now)
                    .await?;
            }
        }
        let sql = Sql::new(SET_STATUS_KEEPING_PREVIOUS)
            .bind(id)
            .bind(VolumeStatus::Deleting)
            .bind(now);
        tx.execute(sql).await?;
        self.record_events(&mut tx, &[EventKind::VolumeDeleteStart], id, None, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(
            snapshots.into_iter().map(|(s, _, _)| s).collect(),
        ))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn finish_volume_delete(
        &self,
        id: VolumeId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError> {
        let (mut tx, _) = match self
            .write_volume_if(id, |_| Ok::<(), Infallible>(()))
            .await?
        {
            Ok(begun) => begun,
            Err(answer) => return Ok(answer),
        };
        // Children first.
        tx.execute(Sql::new(DELETE_CONNECTORS_OF_VOLUME).bind(id).bind(now))
            .await?;
        let attachments = Sql::new(DELETE_ATTACHMENTS_OF_VOLUME)
            .bind(id)
            .bind(now)
            .bind(AttachStatus::Deleted);
        tx.execute(attachments).await?;
        for table in [SideTable::VolumeMetadata, SideTable::VolumeAdminMetadata] {
            Self::remove_items(&mut tx, table, id.uuid(), None, now).await?;
        }
        // An offer of a volume that is gone is withdrawn with it.
        tx.execute(Sql::new(CLOSE_TRANSFERS_OF_VOLUME).bind(id).bind(now))
            .await?;
        let volume = Sql::new(DELETE_VOLUME)
            .bind(id)
            .bind(now)
            .bind(SOFT_DELETED_STATUS);
        tx.execute(volume).await?;
        self.record_events(&mut tx, &[EventKind::VolumeDeleteEnd], id, None, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn begin_extend(
        &self,
        id: VolumeId,
        new_size: i64,
        attached: bool,
        owner: &QuotaOwner,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), ExtendRefusal>, StoreError> {
        let rule = |v: &LockedVolume| volume_rules::extend(v, new_size, attached);
        let (mut tx, locked) = match self.write_volume_if(id, rule).await? {
            Ok(begun) => begun,
            Err(answer) => return Ok(answer),
        };
        let (limits, usage) = Self::locked_quota(&mut tx, owner).await?;
        let growth = quota::check_extend(&limits, &usage, locked.size, new_size, &owner.type_name);
        if let Err(over) = growth {
            return Ok(Outcome::Refused(ExtendRefusal::OverQuota(over)));
        }
        let sql = Sql::new(BEGIN_EXTEND)
            .bind(id)
            .bind(VolumeStatus::Extending)
            .bind(new_size - locked.size)
            .bind(now);
        tx.execute(sql).await?;
        self.record_events(&mut tx, &[EventKind::VolumeResizeStart], id, None, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn finish_extend(
        &self,
        id: VolumeId,
        new_size: i64,
        tell_nova: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), VolumeStatusRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume_with_attachments(&mut tx, id).await? else {
            return Ok(Outcome::Gone);
        };
        if let Err(refusal) = volume_rules::transition(&locked.volume, VolumeStatus::Extending) {
            return Ok(Outcome::Refused(refusal));
        }
        // Back to what its attachments make it: `in-use` when extended while attached.
        let live = locked.live.iter().map(|a| a.attach_status);
        let after = attach::aggregate(&locked.volume, attach::Hold::None, live);
        let sql = Sql::new(SET_SIZE)
            .bind(id)
            .bind(new_size)
            .bind(after.status)
            .bind(now);
        tx.execute(sql).await?;
        self.record_events(&mut tx, &[EventKind::VolumeResizeEnd], id, None, now)
            .await?;
        let kind = ComputeCallKind::VolumeExtended;
        Self::owe_event(&mut tx, kind, id, tell_nova, &locked.live, now).await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn set_bootable(
        &self,
        id: VolumeId,
        bootable: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError> {
        // No rule: any live volume.
        let sql = Sql::new(SET_BOOTABLE).bind(id).bind(bootable).bind(now);
        Ok(match self.db.execute(sql).await? {
            0 => Outcome::Gone,
            _ => Outcome::Done(()),
        })
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn set_readonly(
        &self,
        id: VolumeId,
        readonly: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), VolumeStatusRefusal>, StoreError> {
        let value = if readonly { "True" } else { "False" };
        let sql = Sql::new(SET_READONLY).bind(id).bind(value).bind(now);
        self.apply_if(id, volume_rules::set_readonly, sql).await
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn reset_status(
        &self,
        id: VolumeId,
        reset: &StatusReset,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Vec<Detached>, Infallible>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume_with_attachments(&mut tx, id).await? else {
            return Ok(Outcome::Gone);
        };
        let mut detached = Vec::new();
        if reset.attach_status == Some(AttachStatus::Detached) {
            detached = Self::connectors_of(&mut tx, &locked).await?;
            let transition = attach::detach_all(&locked.volume, &locked.live);
            Self::remove_attachments(&mut tx, &locked.volume, &transition.detached, now).await?;
            Self::write_volume_state(&mut tx, id, transition.volume, now).await?;
        }
        // A status set by hand ends an offer the volume was waiting in (Cinder would keep
        // the orphaned transfer; its volume could never be offered again).
        if reset
            .status
            .is_some_and(|s| s != VolumeStatus::AwaitingTransfer)
        {
            tx.execute(Sql::new(CLOSE_TRANSFERS_OF_VOLUME).bind(id).bind(now))
                .await?;
        }
        let migration = reset
            .migration_status
            .filter(|m| *m != MigrationStatus::None);
        let sql = Sql::new(RESET)
            .bind(id)
            .bind(reset.status)
            .bind(reset.attach_status)
            .bind(reset.migration_status.is_some())
            .bind(migration)
            .bind(now)
            .bind(VolumeStatus::Extending);
        tx.execute(sql).await?;
        tx.commit().await?;
        Ok(Outcome::Done(detached))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %retype.volume_id), err)]
    async fn retype_volume(
        &self,
        retype: &Retype,
        owner: &QuotaOwner,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), RetypeRefusal>, StoreError> {
        let id = retype.volume_id;
        let rule = |v: &LockedVolume| volume_rules::retype(v, retype);
        let (mut tx, locked) = match self.write_volume_if(id, rule).await? {
            Ok(begun) => begun,
            Err(answer) => return Ok(answer),
        };
        let retype = super::volume_migrations::MigratingRetype {
            retype: retype.clone(),
            owner: owner.clone(),
        };
        if let Err(refusal) = self.apply_retype(&mut tx, &locked, &retype, now).await? {
            return Ok(Outcome::Refused(refusal));
        }
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %id), err)]
    async fn legacy_attach_action(
        &self,
        id: VolumeId,
        action: LegacyAction,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), LegacyActionRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let Some(locked) = Self::lock_volume_with_attachments(&mut tx, id).await? else {
            return Ok(Outcome::Gone);
        };
        let transition = match legacy_attach::decide(action, &locked.volume, &locked.live) {
            Ok(transition) => transition,
            Err(refusal) => return Ok(Outcome::Refused(refusal)),
        };
        if transition.volume.is_some() {
            Self::write_volume_state(&mut tx, id, transition.volume, now).await?;
            tx.commit().await?;
        }
        Ok(Outcome::Done(()))
    }
}
