//! How every write to a volume or its attachments starts and ends. It starts by locking
//! the volume row (`LockedVolume`) and reading the volume's live attachments; the rules
//! of `domain` decide from those two; it ends by writing the volume's new state. Every
//! transaction takes the volume's lock before it touches an attachment, so the lock order
//! is the same everywhere. On PostgreSQL the lock and the read are one round trip, the
//! function `cinder_attach_lock_volume_rows` (migration 0010, which repeats the columns of
//! `LOCKED_VOLUME_COLUMNS` and `LIVE_ATTACHMENTS`: change them together). A write that
//! records events reads the volume's usage payload with the lock (`lock_volume_with_usage`:
//! migration 0029's `cinder_attach_lock_volume_usage`, which repeats those columns and
//! `USAGE_COLUMNS_SQLITE`'s too).

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use serde_json::Value;

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
use crate::domain::volume_usage::{AttachmentUsage, VolumeUsage};

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

/// The same, with the rest of the volume's usage payload (migration 0029): `$6` the
/// write's time.
const LOCK_WITH_USAGE: &str =
    "select * from cinder_attach_lock_volume_usage($1, $2, $3, $4, $5, $6)";

/// SQLite: the rest of the volume's usage payload, after `LOCKED_VOLUME_COLUMNS` (`$5`
/// the write's time), as migration 0029's function reads it on PostgreSQL. Times and
/// metadata as the JSON SQLite's `json_object` makes of them in the outbox's statement.
const USAGE_COLUMNS_SQLITE: &str = "\
    v.project_id, v.host, v.user_id, v.availability_zone, v.display_name, \
    json_quote(v.created_at), v.snapshot_id, \
    coalesce((select json_group_object(m.key, m.value) from volume_metadata m \
               where m.volume_id = v.id and m.deleted = false), '{}'), \
    json_quote($5)";

static LOCK_VOLUME_USAGE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "select {LOCKED_VOLUME_COLUMNS}, {USAGE_COLUMNS_SQLITE} \
           from volumes v where v.id = $1 and v.deleted = false"
    )
});

static LOCK_ATTACHMENT_VOLUME_USAGE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "select {LOCKED_VOLUME_COLUMNS}, {USAGE_COLUMNS_SQLITE} \
           from volume_attachment a join volumes v on v.id = a.volume_id \
          where a.id = $1 and a.deleted = false and v.deleted = false"
    )
});

/// `LIVE_ATTACHMENTS` with what the usage payload shows of each attachment.
const LIVE_ATTACHMENTS_USAGE: &str = "\
    select id, volume_id, instance_uuid, attach_status, attach_mode, attached_host, \
           connection_info, mountpoint, json_quote(attach_time), json_quote(detach_time) \
      from volume_attachment where volume_id = $1 and deleted = false order by created_at, id";

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

/// A row of a lock function (`LOCK_WITH_ATTACHMENTS`, `LOCK_WITH_USAGE`): the volume
/// (first, its attachment columns null), or one of its live attachments (its volume
/// columns null).
enum LockRow<V, A> {
    Volume(V),
    Attachment(A),
}

/// What a lock function's row holds of the volume: how many columns it reads.
trait VolumeColumns: FromRow {
    const WIDTH: usize;
}

impl VolumeColumns for LockedVolume {
    const WIDTH: usize = 14;
}

impl VolumeColumns for VolumeWithUsage {
    const WIDTH: usize = LockedVolume::WIDTH + 9;
}

impl<V: VolumeColumns, A: FromRow> FromRow for LockRow<V, A> {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        if c.peek::<Option<VolumeId>>()?.is_some() {
            return Ok(LockRow::Volume(V::from_row(c)?));
        }
        c.skip(V::WIDTH);
        Ok(LockRow::Attachment(A::from_row(c)?))
    }
}

/// A JSON column the database rendered.
fn json_column(c: &mut Columns<'_>) -> Result<Value, StoreError> {
    let text: Option<String> = c.get()?;
    match text {
        None => Ok(Value::Null),
        Some(text) => serde_json::from_str(&text)
            .map_err(|err| StoreError::corrupt(format!("a rendered JSON column: {err}"))),
    }
}

/// The locked volume with the usage fields of `USAGE_COLUMNS_SQLITE` (or migration
/// 0029's volume row); its attachments are added after.
struct VolumeWithUsage(LockedVolume, VolumeUsage);

impl FromRow for VolumeWithUsage {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        let volume = LockedVolume::from_row(c)?;
        let usage = VolumeUsage {
            id: volume.id,
            project_id: c.get()?,
            host: c.get()?,
            user_id: c.get()?,
            availability_zone: c.get()?,
            volume_type_id: volume.volume_type_id.to_string(),
            display_name: c.get()?,
            created_at: json_column(c)?,
            status: volume.status,
            snapshot_id: c.get::<Option<uuid::Uuid>>()?.map(|id| id.to_string()),
            size: volume.size,
            multiattach: volume.multiattach,
            metadata: json_column(c)?,
            attachments: Vec::new(),
            removed: Vec::new(),
            now: json_column(c)?,
        };
        Ok(VolumeWithUsage(volume, usage))
    }
}

/// A live attachment with what its usage shows (`LIVE_ATTACHMENTS_USAGE`).
struct AttachmentWithUsage(LiveAttachment, AttachmentUsage);

impl FromRow for AttachmentWithUsage {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        let live = LiveAttachment::from_row(c)?;
        let usage = AttachmentUsage {
            id: live.id,
            volume_id: live.volume_id,
            instance_uuid: live.instance_uuid.clone(),
            attached_host: live.attached_host.clone(),
            mountpoint: c.get()?,
            attach_time: json_column(c)?,
            detach_time: json_column(c)?,
            attach_status: live.attach_status,
            attach_mode: live.attach_mode,
        };
        Ok(AttachmentWithUsage(live, usage))
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
    /// The volume's usage payload as the lock found it, when it was asked for.
    pub usage: Option<VolumeUsage>,
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
        Self::lock_volume_with_usage(tx, id, None).await
    }

    /// `lock_volume_with_attachments`; with `usage_at` (the write's time), the volume's
    /// usage payload too, read in the same statements.
    pub(super) async fn lock_volume_with_usage(
        tx: &mut D::Tx,
        id: VolumeId,
        usage_at: Option<DateTime<Utc>>,
    ) -> Result<Option<Locked>, StoreError> {
        if D::LOCK_FUNCTION {
            return Self::lock_in_one(tx, Some(id), None, usage_at).await;
        }
        let Some(now) = usage_at else {
            let Some(volume) = Self::lock_volume(tx, id).await? else {
                return Ok(None);
            };
            return Ok(Some(Self::with_attachments(tx, volume).await?));
        };
        let sql = Sql::locking(&LOCK_VOLUME_USAGE, D::FOR_UPDATE).bind(id);
        let Some(locked) = tx.fetch_optional(with_spec_keys(sql).bind(now)).await? else {
            return Ok(None);
        };
        Ok(Some(Self::with_attachment_usage(tx, locked).await?))
    }

    /// Locks the volume of a live attachment and reads the volume's attachments: the
    /// locked volume and the attachment among them, or `None` when it is gone; with
    /// `usage_at`, the usage payload too, as `lock_volume_with_usage`.
    pub(super) async fn lock_attachment_volume_with_usage(
        tx: &mut D::Tx,
        id: AttachmentId,
        usage_at: Option<DateTime<Utc>>,
    ) -> Result<Option<(Locked, LiveAttachment)>, StoreError> {
        let locked = if D::LOCK_FUNCTION {
            Self::lock_in_one(tx, None, Some(id), usage_at).await?
        } else if let Some(now) = usage_at {
            let sql = Sql::locking(&LOCK_ATTACHMENT_VOLUME_USAGE, D::FOR_UPDATE_OF_VOLUME);
            match tx
                .fetch_optional(with_spec_keys(sql.bind(id)).bind(now))
                .await?
            {
                Some(locked) => Some(Self::with_attachment_usage(tx, locked).await?),
                None => None,
            }
        } else {
            let sql = Sql::locking(&LOCK_ATTACHMENT_VOLUME, D::FOR_UPDATE_OF_VOLUME);
            match tx
                .fetch_optional::<LockedVolume>(with_spec_keys(sql.bind(id)))
                .await?
            {
                Some(volume) => Some(Self::with_attachments(tx, volume).await?),
                None => None,
            }
        };
        // The locking statement saw the attachment in its snapshot; on PostgreSQL a delete
        // committed while it waited for the lock shows only in the read after it.
        Ok(locked.and_then(|locked| {
            let target = locked.live.iter().find(|a| a.id == id).cloned();
            target.map(|target| (locked, target))
        }))
    }

    /// The lock function (`cinder_attach_lock_volume_rows`, or with `usage_at`
    /// `cinder_attach_lock_volume_usage`): the volume (given, or of the given attachment)
    /// locked, with its live attachments read after the lock, in one round trip.
    async fn lock_in_one(
        tx: &mut D::Tx,
        volume: Option<VolumeId>,
        attachment: Option<AttachmentId>,
        usage_at: Option<DateTime<Utc>>,
    ) -> Result<Option<Locked>, StoreError> {
        let text = if usage_at.is_some() {
            LOCK_WITH_USAGE
        } else {
            LOCK_WITH_ATTACHMENTS
        };
        let mut sql = Sql::new(text)
            .bind(volume)
            .bind(attachment)
            .bind(SPEC_TRUE)
            .bind(MAX_ATTACHMENTS_SPEC)
            .bind(SINGLE_WRITER_SPEC);
        let Some(now) = usage_at else {
            let rows: Vec<LockRow<LockedVolume, LiveAttachment>> = tx.fetch_all(sql).await?;
            let found = in_lock_order(rows)?;
            return Ok(found.map(|(volume, live)| Locked {
                volume,
                live,
                usage: None,
            }));
        };
        sql = sql.bind(now);
        let rows: Vec<LockRow<VolumeWithUsage, AttachmentWithUsage>> = tx.fetch_all(sql).await?;
        let found = in_lock_order(rows)?;
        Ok(found.map(|(volume, attachments)| with_usage(volume, attachments)))
    }

    async fn with_attachments(tx: &mut D::Tx, volume: LockedVolume) -> Result<Locked, StoreError> {
        let live = tx
            .fetch_all(Sql::new(LIVE_ATTACHMENTS).bind(volume.id))
            .await?;
        Ok(Locked {
            volume,
            live,
            usage: None,
        })
    }

    async fn with_attachment_usage(
        tx: &mut D::Tx,
        volume: VolumeWithUsage,
    ) -> Result<Locked, StoreError> {
        let attachments = tx
            .fetch_all(Sql::new(LIVE_ATTACHMENTS_USAGE).bind(volume.0.id))
            .await?;
        Ok(with_usage(volume, attachments))
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

/// The rows of a lock function in their order: the volume first, then its attachments;
/// `None` when there are none (the volume is gone).
fn in_lock_order<V, A>(rows: Vec<LockRow<V, A>>) -> Result<Option<(V, Vec<A>)>, StoreError> {
    let mut rows = rows.into_iter();
    let volume = match rows.next() {
        None => return Ok(None),
        Some(LockRow::Volume(volume)) => volume,
        Some(LockRow::Attachment(_)) => {
            return Err(StoreError::corrupt(
                "the lock function put an attachment first",
            ))
        }
    };
    let attachments = rows
        .map(|row| match row {
            LockRow::Attachment(attachment) => Ok(attachment),
            LockRow::Volume(_) => Err(StoreError::corrupt("the lock function gave two volumes")),
        })
        .collect::<Result<_, _>>()?;
    Ok(Some((volume, attachments)))
}

/// A lock's rows with their usage, as `Locked`.
fn with_usage(volume: VolumeWithUsage, attachments: Vec<AttachmentWithUsage>) -> Locked {
    let VolumeWithUsage(volume, mut usage) = volume;
    let (live, listed) = attachments.into_iter().map(|a| (a.0, a.1)).unzip();
    usage.attachments = listed;
    Locked {
        volume,
        live,
        usage: Some(usage),
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
