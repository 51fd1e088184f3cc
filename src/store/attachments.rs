//! Attachments: lookups, and the attach events, each lock → decide (`domain::attach`)
//! → apply in one transaction.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::connector_specs;
use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::paging::push_page;
use super::side_tables::{self, left_joined, SideTable};
use super::writes::Writes;
use super::{locks, SqlStore};
use crate::domain::attach::{self, LiveAttachment, Reservation};
use crate::domain::attachment::{
    AttachStatus, Attachment, AttachmentFilters, AttachmentRecord, AttachmentSortKey, Connecting,
    HostConnection, NewAttachment, NewConnection,
};
use crate::domain::event::attach_events;
use crate::domain::ids::{AttachmentId, VolumeId};
use crate::domain::paging::Page;
use crate::domain::refusal::AttachRefusal;
use crate::domain::volume::LockedVolume;
use crate::domain::volume_usage::AttachmentUsage;
use crate::domain::Outcome;
use std::convert::Infallible;

#[async_trait]
pub trait AttachmentStore: Send + Sync {
    /// One page of live attachments matching `filters`.
    async fn list_attachments(
        &self,
        filters: &AttachmentFilters,
        page: &Page<AttachmentSortKey>,
    ) -> Result<Vec<Attachment>, StoreError>;

    /// A live attachment with its volume's project and host and its connector.
    async fn get_attachment(
        &self,
        id: AttachmentId,
    ) -> Result<Option<AttachmentRecord>, StoreError>;

    /// The connected live attachments of `volumes`, with their hosts.
    async fn host_connections(
        &self,
        volumes: &[VolumeId],
    ) -> Result<Vec<HostConnection>, StoreError>;

    /// Adds a reservation if the attach rules allow it (`Gone`: no such volume).
    async fn reserve_attachment(
        &self,
        new: &NewAttachment,
    ) -> Result<Outcome<(), AttachRefusal>, StoreError>;

    /// A reservation and its connection in one transaction (a create with a connector,
    /// whose export the backend already made): the attachment as stored.
    async fn reserve_connected(
        &self,
        new: &NewAttachment,
        connection: &NewConnection,
    ) -> Result<Outcome<Attachment, AttachRefusal>, StoreError>;

    /// Records a connection; the attachment as stored afterwards.
    async fn connect_attachment(
        &self,
        new: &NewConnection,
    ) -> Result<Outcome<Attachment, AttachRefusal>, StoreError>;

    /// The host finished attaching.
    async fn complete_attachment(
        &self,
        id: AttachmentId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError>;

    /// Removes the attachment (soft delete, with its connector); the volume follows the
    /// attachments that remain. Returns those of them that are not detached.
    async fn delete_attachment(
        &self,
        id: AttachmentId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Vec<LiveAttachment>, Infallible>, StoreError>;
}

/// Columns of `Attachment` (alias `a`).
pub(super) const ATTACHMENT_COLUMNS: &str = "a.id, a.volume_id, a.instance_uuid, \
    a.attached_host, a.mountpoint, a.attach_status, a.attach_mode, a.attach_time, \
    a.detach_time, a.connection_info, a.created_at";

/// The same, unqualified, for `returning` (SQLite refuses qualified names there).
const ATTACHMENT_RETURNING: &str = "id, volume_id, instance_uuid, attached_host, mountpoint, \
    attach_status, attach_mode, attach_time, detach_time, connection_info, created_at";

impl FromRow for Attachment {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(Attachment {
            id: c.get()?,
            volume_id: c.get()?,
            instance_uuid: c.get()?,
            attached_host: c.get()?,
            mountpoint: c.get()?,
            attach_status: c.get()?,
            attach_mode: c.get()?,
            attach_time: c.get()?,
            detach_time: c.get()?,
            connection_info: c.get()?,
            created_at: c.get()?,
            shared_connections: Vec::new(),
        })
    }
}

impl FromRow for HostConnection {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(HostConnection {
            id: c.get()?,
            volume_id: c.get()?,
            host: c.get()?,
        })
    }
}

/// One statement (one row per connector item), so one snapshot and one round trip.
static ATTACHMENT_LOOKUP: LazyLock<String> = LazyLock::new(|| {
    format!(
        "select {ATTACHMENT_COLUMNS}, v.project_id, v.host, v.name_id, s.key, s.value \
           from volume_attachment a join volumes v on v.id = a.volume_id \
           left join attachment_specs s on s.attachment_id = a.id and s.deleted = false \
          where a.id = $1 and a.deleted = false"
    )
});

/// A row of `ATTACHMENT_LOOKUP`.
struct LookupRow {
    attachment: Attachment,
    project_id: String,
    volume_host: Option<String>,
    volume_name_id: Option<VolumeId>,
    spec_key: Option<String>,
    spec_value: Option<String>,
}

impl FromRow for LookupRow {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(LookupRow {
            attachment: Attachment::from_row(c)?,
            project_id: c.get()?,
            volume_host: c.get()?,
            volume_name_id: c.get()?,
            spec_key: c.get()?,
            spec_value: c.get()?,
        })
    }
}

const INSERT_RESERVATION: &str = "\
    insert into volume_attachment (id, volume_id, instance_uuid, attach_status, attach_mode, \
                                   connection_info, created_at, deleted) \
    values ($1, $2, $3, $4, $5, '{}', $6, false)";

pub(super) static INSERT_CONNECTED: LazyLock<String> = LazyLock::new(|| {
    format!(
        "insert into volume_attachment (id, volume_id, instance_uuid, attach_status, attach_mode, \
                                        attached_host, mountpoint, attach_time, connection_info, \
                                        created_at, updated_at, deleted) \
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $8, $8, false) \
      returning {ATTACHMENT_RETURNING}"
    )
});

static CONNECT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "update volume_attachment \
            set attach_status = $2, attached_host = $3, mountpoint = $4, attach_time = $5, \
                attach_mode = $6, connection_info = $7, updated_at = $5 \
          where id = $1 and deleted = false \
      returning {ATTACHMENT_RETURNING}"
    )
});

const COMPLETE: &str = "update volume_attachment set attach_status = $2, updated_at = $3 \
                         where id = $1 and deleted = false";

const DETACH: &str = "\
    update volume_attachment \
       set deleted = true, deleted_at = $2, attach_status = $3, detach_time = $2, updated_at = $2 \
     where id = $1 and deleted = false";

const FORGET_ATTACHED_MODE: &str = "\
    update volume_admin_metadata set deleted = true, deleted_at = $2 \
     where volume_id = $1 and key = 'attached_mode' and deleted = false";

/// The connections among a volume's live attachments.
fn host_connections(live: &[LiveAttachment]) -> Vec<HostConnection> {
    live.iter()
        .filter_map(LiveAttachment::host_connection)
        .collect()
}

impl<D: Database> SqlStore<D> {
    /// Removes attachments of `volume` as a detach does: the attachment (soft-deleted,
    /// `detached`), its connector, and the volume's `attached_mode` when it has one.
    pub(super) async fn remove_attachments(
        tx: &mut D::Tx,
        volume: &LockedVolume,
        ids: &[AttachmentId],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut writes = Writes::new();
        writes.extend(removals(volume, ids, now));
        Self::apply(tx, writes).await
    }
}

/// Whether attachment `$1` carries the stamp `$2` of a write: its creation, its last
/// update or its removal (every attachment write stamps one of them with its time).
const STAMPED: &str = "select count(*) from volume_attachment \
     where id = $1 and (created_at = $2 or updated_at = $2 or deleted_at = $2)";

/// How long a write whose commit was lost waits for the database to answer again.
const SETTLE_FOR: Duration = Duration::from_secs(30);

impl<D: Database> SqlStore<D> {
    /// The outcome of committing a write to attachment `id` stamped `now`. When the
    /// database went away while committing (a failover), the change may be stored or
    /// not: this asks, once the database (the new primary) answers again, whether the
    /// row carries the stamp. Stored, the write is done; not stored, the database was
    /// unavailable and nothing changed, which is what a 503 promises. No answer within
    /// `SETTLE_FOR`, the write stays in doubt.
    async fn settle_attachment_write(
        &self,
        committed: Result<(), StoreError>,
        id: AttachmentId,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let Err(StoreError::InDoubt(source)) = committed else {
            return committed;
        };
        tracing::warn!(attachment_id = %id, error = %source, "commit outcome lost; asking the database");
        let deadline = Instant::now() + SETTLE_FOR;
        loop {
            let asked = self
                .db
                .fetch_optional::<(i64,)>(Sql::new(STAMPED).bind(id).bind(now));
            match asked.await {
                Ok(Some((found,))) if found > 0 => return Ok(()),
                Ok(_) => return Err(StoreError::Unavailable(source)),
                Err(StoreError::Unavailable(_)) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(StoreError::Unavailable(_)) => return Err(StoreError::InDoubt(source)),
                Err(err) => return Err(err),
            }
        }
    }
}

/// The statements of `remove_attachments`.
fn removals(volume: &LockedVolume, ids: &[AttachmentId], now: DateTime<Utc>) -> Vec<Sql> {
    let mut statements = Vec::with_capacity(ids.len() * 2 + 1);
    for id in ids {
        let detach = Sql::new(DETACH)
            .bind(id)
            .bind(now)
            .bind(AttachStatus::Detached);
        statements.push(detach);
        statements.push(side_tables::remove_items(
            SideTable::AttachmentSpecs,
            id.uuid(),
            None,
            now,
        ));
    }
    // Only the legacy attach records it; the lock read whether it is there.
    if volume.attached_mode_recorded {
        statements.push(Sql::new(FORGET_ATTACHED_MODE).bind(volume.id).bind(now));
    }
    statements
}

#[async_trait]
impl<D: Database> AttachmentStore for SqlStore<D> {
    #[tracing::instrument(skip_all, err)]
    async fn list_attachments(
        &self,
        filters: &AttachmentFilters,
        page: &Page<AttachmentSortKey>,
    ) -> Result<Vec<Attachment>, StoreError> {
        let mut sql = Sql::new("select ");
        sql.push(ATTACHMENT_COLUMNS).push(
            " from volume_attachment a join volumes v on v.id = a.volume_id \
              where a.deleted = false",
        );
        if let Some(project) = &filters.project_id {
            sql.push(" and v.project_id = ").push_bind(project);
        }
        if let Some(volume) = filters.volume_id {
            sql.push(" and a.volume_id = ").push_bind(volume);
        }
        if let Some(instance) = &filters.instance_uuid {
            sql.push(" and a.instance_uuid = ").push_bind(instance);
        }
        if let Some(status) = &filters.attach_status {
            sql.push(" and a.attach_status = ").push_bind(status);
        }
        push_page(&mut sql, page, "a", "volume_attachment");
        self.db.fetch_all(sql).await
    }

    #[tracing::instrument(skip_all, fields(attachment_id = %id), err)]
    async fn get_attachment(
        &self,
        id: AttachmentId,
    ) -> Result<Option<AttachmentRecord>, StoreError> {
        let rows: Vec<LookupRow> = self
            .db
            .fetch_all(Sql::new(&ATTACHMENT_LOOKUP).bind(id))
            .await?;
        let joined = left_joined(
            rows.into_iter()
                .map(|r| {
                    let head = (r.attachment, r.project_id, r.volume_host, r.volume_name_id);
                    (head, r.spec_key, r.spec_value)
                })
                .collect(),
        );
        let Some(((attachment, project_id, volume_host, name_id), specs)) = joined else {
            return Ok(None);
        };
        Ok(Some(AttachmentRecord {
            volume_storage: name_id.unwrap_or(attachment.volume_id),
            attachment,
            project_id,
            volume_host,
            connector: connector_specs::decode(specs)?,
        }))
    }

    #[tracing::instrument(skip_all, err)]
    async fn host_connections(
        &self,
        volumes: &[VolumeId],
    ) -> Result<Vec<HostConnection>, StoreError> {
        if volumes.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = Sql::new(
            "select id, volume_id, attached_host from volume_attachment \
              where deleted = false and attached_host is not null and volume_id in (",
        );
        sql.push_list(volumes.iter().copied()).push(")");
        self.db.fetch_all(sql).await
    }

    #[tracing::instrument(skip_all, fields(volume_id = %new.volume_id), err)]
    async fn reserve_attachment(
        &self,
        new: &NewAttachment,
    ) -> Result<Outcome<(), AttachRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let usage_at = self.events.then_some(new.now);
        let Some(mut locked) =
            Self::lock_volume_with_usage(&mut tx, new.volume_id, usage_at).await?
        else {
            return Ok(Outcome::Gone);
        };
        let request = Reservation::of(new);
        let decided = attach::reserve(&locked.volume, &locked.live, &request);
        let transition = match decided {
            Ok(transition) => transition,
            Err(refusal) => return Ok(Outcome::Refused(refusal)),
        };
        let insert = Sql::new(INSERT_RESERVATION)
            .bind(new.id)
            .bind(new.volume_id)
            .bind(&new.instance_uuid)
            .bind(AttachStatus::Reserved)
            .bind(new.attach_mode)
            .bind(new.now);
        let mut writes = Writes::new();
        writes.push(insert).push(locks::volume_state(
            new.volume_id,
            transition.volume,
            new.now,
        ));
        if let Some(usage) = locked.usage.as_mut() {
            usage.add(AttachmentUsage::reserved(new));
            usage.set_state(transition.volume);
            let point = [(attach_events::RESERVE.after, usage.payload(Some(new.id)))];
            writes.extend(self.usage_events_writes(&point, usage, Some(new.id), new.now));
        }
        Self::apply(&mut tx, writes).await?;
        self.settle_attachment_write(tx.commit().await, new.id, new.now)
            .await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(volume_id = %new.volume_id), err)]
    async fn reserve_connected(
        &self,
        new: &NewAttachment,
        connection: &NewConnection,
    ) -> Result<Outcome<Attachment, AttachRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let usage_at = self.events.then_some(new.now);
        let Some(mut locked) =
            Self::lock_volume_with_usage(&mut tx, new.volume_id, usage_at).await?
        else {
            return Ok(Outcome::Gone);
        };
        let request = Reservation::of(new);
        if let Err(refusal) = attach::reserve(&locked.volume, &locked.live, &request) {
            return Ok(Outcome::Refused(refusal));
        }
        let others = host_connections(&locked.live);
        // The connect rule sees the new reservation among the volume's attachments.
        let target = LiveAttachment::reserved(new);
        locked.live.push(target.clone());
        let decided = attach::connect(
            &locked.volume,
            &locked.live,
            &target,
            Connecting::NewReservation,
            connection.attach_mode,
            &connection.driver,
            connection.connector.enforce_multipath(),
        );
        let connected = match decided {
            Ok(connected) => connected,
            Err(refusal) => return Ok(Outcome::Refused(refusal)),
        };
        let insert = Sql::new(&INSERT_CONNECTED)
            .bind(new.id)
            .bind(new.volume_id)
            .bind(&new.instance_uuid)
            .bind(AttachStatus::Attaching)
            .bind(connection.attach_mode)
            .bind(connection.connector.host().unwrap_or_default())
            .bind(connection.connector.mountpoint())
            .bind(new.now)
            .bind(connected.info.to_string());
        let items = connector_specs::encode(&connection.connector);
        let mut writes = Writes::new();
        writes
            .push(side_tables::insert_items(
                SideTable::AttachmentSpecs,
                new.id.uuid(),
                items,
                new.now,
            ))
            .push(locks::volume_state(
                new.volume_id,
                connected.volume,
                new.now,
            ));
        if let Some(usage) = locked.usage.as_mut() {
            let mut attachment = AttachmentUsage::reserved(new);
            attachment.connect(connection, &usage.now);
            usage.add(attachment);
            usage.set_state(connected.volume);
            let point = [(
                attach_events::RESERVE_CONNECTED.after,
                usage.payload(Some(new.id)),
            )];
            writes.extend(self.usage_events_writes(&point, usage, Some(new.id), new.now));
        }
        let Some(mut stored) = Self::apply_returning::<Attachment>(&mut tx, insert, writes).await?
        else {
            return Err(StoreError::Other("the insert returned no row".into()));
        };
        self.settle_attachment_write(tx.commit().await, new.id, new.now)
            .await?;
        stored.share_with(&others);
        Ok(Outcome::Done(stored))
    }

    #[tracing::instrument(skip_all, fields(attachment_id = %new.attachment_id), err)]
    async fn connect_attachment(
        &self,
        new: &NewConnection,
    ) -> Result<Outcome<Attachment, AttachRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let usage_at = self.events.then_some(new.now);
        let Some((mut locked, target)) =
            Self::lock_attachment_volume_with_usage(&mut tx, new.attachment_id, usage_at).await?
        else {
            return Ok(Outcome::Gone);
        };
        let decided = attach::connect(
            &locked.volume,
            &locked.live,
            &target,
            new.by,
            new.attach_mode,
            &new.driver,
            new.connector.enforce_multipath(),
        );
        let connection = match decided {
            Ok(connection) => connection,
            Err(refusal) => return Ok(Outcome::Refused(refusal)),
        };
        let attachment = Some(new.attachment_id);
        let events = attach_events::CONNECT;
        if let Some(usage) = &locked.usage {
            let point = [(events.before, usage.payload(attachment))];
            for sql in self.usage_events_writes(&point, usage, attachment, new.now) {
                tx.execute(sql).await?;
            }
        }
        let update = Sql::new(&CONNECT)
            .bind(new.attachment_id)
            .bind(AttachStatus::Attaching)
            .bind(new.connector.host().unwrap_or_default())
            .bind(new.connector.mountpoint())
            .bind(new.now)
            .bind(new.attach_mode)
            .bind(connection.info.to_string());
        let Some(mut stored) = tx.fetch_optional::<Attachment>(update).await? else {
            return Ok(Outcome::Gone);
        };
        // The other connections were read under the lock: no second read for them.
        stored.share_with(&host_connections(&locked.live));
        let owner = new.attachment_id.uuid();
        if new.by == Connecting::Update {
            Self::remove_items(&mut tx, SideTable::AttachmentSpecs, owner, None, new.now).await?;
        }
        let items = connector_specs::encode(&new.connector);
        Self::insert_items(&mut tx, SideTable::AttachmentSpecs, owner, items, new.now).await?;
        Self::write_volume_state(&mut tx, locked.volume.id, connection.volume, new.now).await?;
        if let Some(usage) = locked.usage.as_mut() {
            let now = usage.now.clone();
            if let Some(connected) = usage.attachment_mut(new.attachment_id) {
                connected.connect(new, &now);
            }
            usage.set_state(connection.volume);
            let point = [(events.after, usage.payload(attachment))];
            for sql in self.usage_events_writes(&point, usage, attachment, new.now) {
                tx.execute(sql).await?;
            }
        }
        self.settle_attachment_write(tx.commit().await, new.attachment_id, new.now)
            .await?;
        Ok(Outcome::Done(stored))
    }

    #[tracing::instrument(skip_all, fields(attachment_id = %id), err)]
    async fn complete_attachment(
        &self,
        id: AttachmentId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let usage_at = self.events.then_some(now);
        let Some((mut locked, target)) =
            Self::lock_attachment_volume_with_usage(&mut tx, id, usage_at).await?
        else {
            return Ok(Outcome::Gone);
        };
        let transition = attach::complete(&locked.volume, &locked.live, &target);
        let done = Sql::new(COMPLETE)
            .bind(id)
            .bind(AttachStatus::Attached)
            .bind(now);
        let mut writes = Writes::new();
        writes.push(done).push(locks::volume_state(
            locked.volume.id,
            transition.volume,
            now,
        ));
        if let Some(usage) = locked.usage.as_mut() {
            if let Some(completed) = usage.attachment_mut(id) {
                completed.attach_status = AttachStatus::Attached;
            }
            usage.set_state(transition.volume);
            let point = [(attach_events::COMPLETE.after, usage.payload(Some(id)))];
            writes.extend(self.usage_events_writes(&point, usage, Some(id), now));
        }
        Self::apply(&mut tx, writes).await?;
        self.settle_attachment_write(tx.commit().await, id, now)
            .await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, fields(attachment_id = %id), err)]
    async fn delete_attachment(
        &self,
        id: AttachmentId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Vec<LiveAttachment>, Infallible>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let usage_at = self.events.then_some(now);
        let Some((mut locked, target)) =
            Self::lock_attachment_volume_with_usage(&mut tx, id, usage_at).await?
        else {
            return Ok(Outcome::Gone);
        };
        let transition = attach::detach(&locked.volume, &locked.live, &target);
        let volume = locked.volume.id;
        let mut writes = Writes::new();
        writes
            .extend(removals(&locked.volume, &transition.detached, now))
            .push(locks::volume_state(volume, transition.volume, now));
        if let Some(usage) = locked.usage.as_mut() {
            // The events before the removal show the rows as the lock found them.
            let events = attach_events::DELETE;
            let before = usage.payload(Some(id));
            usage.detach(&transition.detached);
            usage.set_state(transition.volume);
            let points = [
                (events.before, before),
                (events.after, usage.payload(Some(id))),
            ];
            writes.extend(self.usage_events_writes(&points, usage, Some(id), now));
        }
        Self::apply(&mut tx, writes).await?;
        self.settle_attachment_write(tx.commit().await, id, now)
            .await?;
        let remaining = locked
            .live
            .into_iter()
            .filter(|a| !transition.detached.contains(&a.id))
            .filter(|a| a.attach_status != AttachStatus::Detached)
            .collect();
        Ok(Outcome::Done(remaining))
    }
}

#[cfg(test)]
mod tests;
