//! How every write to a volume or its attachments starts and ends. It starts by locking
//! the volume row (`LockedVolume`) and reading the volume's live attachments; the rules
//! of `domain` decide from those two; it ends by writing the volume's new state. Every
//! transaction takes the volume's lock before it touches an attachment, so the lock order
//! is the same everywhere. On PostgreSQL the lock and the read are one round trip, the
//! function `cinder_attach_lock_volume_rows` (migration 0010, which repeats the columns of
//! `LOCKED_VOLUME_COLUMNS` and `LIVE_ATTACHMENTS`: change them together).

use std::sync::LazyLock;

use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor};
use super::SqlStore;
use crate::domain::attach::{is_connected, LiveAttachment};
use crate::domain::ids::{AttachmentId, VolumeId};
use crate::domain::volume::{LockedVolume, VolumeState};
use crate::domain::volume_type::{
    parse_max_attachments, MAX_ATTACHMENTS_SPEC, SINGLE_WRITER_SPEC, SPEC_TRUE,
};

/// `LockedVolume`'s columns (volume alias `v`; `$2` is `SPEC_TRUE`, `$3` and `$4` the
/// keys `attach:max_attachments` and `attach:single_writer`). The type's specs are read
/// in the same statement: they cannot change while a volume uses the type.
const LOCKED_VOLUME_COLUMNS: &str = "\
    v.id, v.status, v.attach_status, v.migration_status, v.multiattach, v.size, \
    v.volume_type_id, v.encryption_key_id is not null, \
    v.group_id is not null or v.consistencygroup_id is not null, \
    coalesce((select s.value = $2 from volume_type_extra_specs s \
               where s.volume_type_id = v.volume_type_id and s.key = 'multiattach' \
                 and s.deleted = false), false), \
    coalesce((select s.value = $2 from volume_type_extra_specs s \
               where s.volume_type_id = v.volume_type_id and s.key = 'cacheable' \
                 and s.deleted = false), false), \
    (select s.value from volume_type_extra_specs s \
      where s.volume_type_id = v.volume_type_id and s.key = $3 \
        and s.deleted = false), \
    coalesce((select s.value = $2 from volume_type_extra_specs s \
               where s.volume_type_id = v.volume_type_id and s.key = $4 \
                 and s.deleted = false), false), \
    exists (select 1 from volume_admin_metadata m \
             where m.volume_id = v.id and m.key = 'attached_mode' and m.deleted = false)";

static LOCK_VOLUME: LazyLock<String> = LazyLock::new(|| {
    format!("select {LOCKED_VOLUME_COLUMNS} from volumes v where v.id = $1 and v.deleted = false")
});

/// The volume of a live attachment. Only the volume row is locked.
static LOCK_ATTACHMENT_VOLUME: LazyLock<String> = LazyLock::new(|| {
    format!(
        "select {LOCKED_VOLUME_COLUMNS} \
           from volume_attachment a join volumes v on v.id = a.volume_id \
          where a.id = $1 and a.deleted = false and v.deleted = false"
    )
});

/// Read after the lock is held: on PostgreSQL a statement sees the rows committed
/// before it started, so reading them in the locking statement could miss an attachment
/// committed while that statement waited for the lock.
const LIVE_ATTACHMENTS: &str = "\
    select id, volume_id, instance_uuid, attach_status, attach_mode, attached_host, \
           connection_info \
      from volume_attachment where volume_id = $1 and deleted = false order by created_at, id";

/// PostgreSQL: lock and read in one round trip (migration 0010); `$1` the volume
/// or `$2` one of its attachments, `$3`-`$5` as `$2`-`$4` of `LOCKED_VOLUME_COLUMNS`. The
/// volume's row, then one row per live attachment; nothing when the volume is gone.
const LOCK_WITH_ATTACHMENTS: &str =
    "select * from cinder_attach_lock_volume_rows($1, $2, $3, $4, $5)";

const WRITE_VOLUME_STATE: &str =
    "update volumes set status = $2, attach_status = $3, updated_at = $4 where id = $1";

impl FromRow for LockedVolume {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(LockedVolume {
            id: c.get()?,
            status: c.get()?,
            attach_status: c.get()?,
            migration_status: c.get()?,
            multiattach: c.get()?,
            size: c.get()?,
            volume_type_id: c.get()?,
            encrypted: c.get()?,
            in_group: c.get()?,
            type_multiattach: c.get()?,
            type_cacheable: c.get()?,
            type_max_attachments: c
                .get::<Option<String>>()?
                .as_deref()
                .and_then(parse_max_attachments),
            type_single_writer: c.get()?,
            attached_mode_recorded: c.get()?,
        })
    }
}

/// The columns of `LIVE_ATTACHMENTS`.
impl FromRow for LiveAttachment {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        let (id, volume_id, instance_uuid, attach_status, attach_mode, attached_host) =
            (c.get()?, c.get()?, c.get()?, c.get()?, c.get()?, c.get()?);
        let info: Option<String> = c.get()?;
        Ok(LiveAttachment {
            id,
            volume_id,
            instance_uuid,
            attach_status,
            attach_mode,
            attached_host,
            connected: is_connected(info.as_deref()).map_err(StoreError::corrupt)?,
        })
    }
}

/// A row of `LOCK_WITH_ATTACHMENTS`: the volume (first, its attachment columns null), or
/// one of its live attachments (its volume columns null).
enum LockedRow {
    Volume(LockedVolume),
    Attachment(LiveAttachment),
}

/// How many columns `LockedVolume` reads.
const LOCKED_VOLUME_WIDTH: usize = 14;

impl FromRow for LockedRow {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        if c.peek::<Option<VolumeId>>()?.is_some() {
            return Ok(LockedRow::Volume(LockedVolume::from_row(c)?));
        }
        c.skip(LOCKED_VOLUME_WIDTH);
        Ok(LockedRow::Attachment(LiveAttachment::from_row(c)?))
    }
}

/// Binds `$2`-`$4` of `LOCKED_VOLUME_COLUMNS`.
fn with_spec_keys(sql: Sql) -> Sql {
    sql.bind(SPEC_TRUE)
        .bind(MAX_ATTACHMENTS_SPEC)
        .bind(SINGLE_WRITER_SPEC)
}

/// A locked volume with its live attachments.
pub(super) struct Locked {
    pub volume: LockedVolume,
    pub live: Vec<LiveAttachment>,
}

impl<D: Database> SqlStore<D> {
    /// Locks a live volume for the rest of the transaction; `None` when it does not
    /// exist (or is deleted).
    pub(super) async fn lock_volume(
        tx: &mut D::Tx,
        id: VolumeId,
    ) -> Result<Option<LockedVolume>, StoreError> {
        let sql = with_spec_keys(Sql::locking(&LOCK_VOLUME, D::FOR_UPDATE).bind(id));
        tx.fetch_optional(sql).await
    }

    /// `lock_volume`, and the volume's live attachments.
    pub(super) async fn lock_volume_with_attachments(
        tx: &mut D::Tx,
        id: VolumeId,
    ) -> Result<Option<Locked>, StoreError> {
        if D::LOCK_FUNCTION {
            return Self::lock_in_one(tx, Some(id), None).await;
        }
        let Some(volume) = Self::lock_volume(tx, id).await? else {
            return Ok(None);
        };
        Ok(Some(Self::with_attachments(tx, volume).await?))
    }

    /// Locks the volume of a live attachment and reads the volume's attachments: the
    /// locked volume and the attachment among them, or `None` when it is gone.
    pub(super) async fn lock_attachment_volume(
        tx: &mut D::Tx,
        id: AttachmentId,
    ) -> Result<Option<(Locked, LiveAttachment)>, StoreError> {
        if D::LOCK_FUNCTION {
            let locked = Self::lock_in_one(tx, None, Some(id)).await?;
            return Ok(locked.and_then(|locked| {
                let target = locked.live.iter().find(|a| a.id == id).cloned();
                target.map(|target| (locked, target))
            }));
        }
        let sql =
            with_spec_keys(Sql::locking(&LOCK_ATTACHMENT_VOLUME, D::FOR_UPDATE_OF_VOLUME).bind(id));
        let Some(volume) = tx.fetch_optional::<LockedVolume>(sql).await? else {
            return Ok(None);
        };
        let locked = Self::with_attachments(tx, volume).await?;
        // The locking statement saw the attachment in its snapshot; on PostgreSQL a delete
        // committed while it waited for the lock shows only in the read after it.
        let target = locked.live.iter().find(|a| a.id == id).cloned();
        Ok(target.map(|target| (locked, target)))
    }

    /// `cinder_attach_lock_volume_rows`: the volume (given, or of the given attachment) locked,
    /// with its live attachments read after the lock, in one round trip.
    async fn lock_in_one(
        tx: &mut D::Tx,
        volume: Option<VolumeId>,
        attachment: Option<AttachmentId>,
    ) -> Result<Option<Locked>, StoreError> {
        let sql = Sql::new(LOCK_WITH_ATTACHMENTS)
            .bind(volume)
            .bind(attachment)
            .bind(SPEC_TRUE)
            .bind(MAX_ATTACHMENTS_SPEC)
            .bind(SINGLE_WRITER_SPEC);
        let rows: Vec<LockedRow> = tx.fetch_all(sql).await?;
        let mut rows = rows.into_iter();
        let volume = match rows.next() {
            None => return Ok(None),
            Some(LockedRow::Volume(volume)) => volume,
            Some(LockedRow::Attachment(_)) => {
                return Err(StoreError::corrupt(
                    "the lock function put an attachment first",
                ))
            }
        };
        let live = rows
            .map(|row| match row {
                LockedRow::Attachment(attachment) => Ok(attachment),
                LockedRow::Volume(_) => {
                    Err(StoreError::corrupt("the lock function gave two volumes"))
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(Some(Locked { volume, live }))
    }

    async fn with_attachments(tx: &mut D::Tx, volume: LockedVolume) -> Result<Locked, StoreError> {
        let live = tx
            .fetch_all(Sql::new(LIVE_ATTACHMENTS).bind(volume.id))
            .await?;
        Ok(Locked { volume, live })
    }

    /// Writes the volume's state as a rule decided it (nothing for `None`).
    pub(super) async fn write_volume_state(
        tx: &mut D::Tx,
        id: VolumeId,
        state: Option<VolumeState>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        if let Some(sql) = volume_state(id, state, now) {
            tx.execute(sql).await?;
        }
        Ok(())
    }
}

/// The statement writing the volume's state as a rule decided it (`None` for `None`).
pub(super) fn volume_state(
    id: VolumeId,
    state: Option<VolumeState>,
    now: DateTime<Utc>,
) -> Option<Sql> {
    state.map(|state| {
        Sql::new(WRITE_VOLUME_STATE)
            .bind(id)
            .bind(state.status)
            .bind(state.attach_status)
            .bind(now)
    })
}
