//! Row shapes shared by both dialects (ids as `DbId`), and their conversion into domain
//! values. A value the domain does not know is reported as `Corrupt`, never guessed.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::{DbId, StoreError};
use crate::domain::attachment::{AttachStatus, Attachment};
use crate::domain::message::Message;
use crate::domain::volume::{Volume, VolumeStatus};
use crate::domain::volume_type::VolumeType;

pub(super) fn attach_status(text: &str) -> Result<AttachStatus, StoreError> {
    AttachStatus::parse(text).ok_or_else(|| StoreError::Corrupt(format!("attach_status {text:?}")))
}

pub(super) fn volume_status(text: &str) -> Result<VolumeStatus, StoreError> {
    VolumeStatus::parse(text).ok_or_else(|| StoreError::Corrupt(format!("volume status {text:?}")))
}

pub(super) fn json(text: Option<String>) -> Result<Option<serde_json::Value>, StoreError> {
    text.map(|t| serde_json::from_str(&t).map_err(|e| StoreError::Corrupt(e.to_string())))
        .transpose()
}

/// A row struct read by both dialects: sqlx's `FromRow` for PostgreSQL and `lite`'s
/// (by column name) for SQLite, from one field list.
macro_rules! row_struct {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($field_vis:vis $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$meta])*
        #[derive(sqlx::FromRow)]
        $vis struct $name {
            $($field_vis $field: $ty),*
        }

        impl super::lite::FromRow for $name {
            fn locate(columns: &[&str]) -> Result<Vec<usize>, StoreError> {
                Ok(vec![$(super::lite::column(columns, stringify!($field))?),*])
            }

            fn from_row(row: &rusqlite::Row<'_>, at: &[usize]) -> Result<Self, StoreError> {
                let mut at = at.iter();
                Ok($name { $($field: super::lite::get(row, at.next(), stringify!($field))?),* })
            }
        }
    };
}

/// A row struct made of another row struct (sqlx's `flatten`) and columns of its own,
/// read by both dialects like `row_struct!`.
macro_rules! row_struct_with {
    ($(#[$meta:meta])* $vis:vis struct $name:ident {
        $inner_vis:vis $inner:ident: $inner_ty:ty;
        $($field_vis:vis $field:ident : $ty:ty),+ $(,)?
    }) => {
        $(#[$meta])*
        #[derive(sqlx::FromRow)]
        $vis struct $name {
            #[sqlx(flatten)]
            $inner_vis $inner: $inner_ty,
            $($field_vis $field: $ty),+
        }

        impl super::lite::FromRow for $name {
            fn locate(columns: &[&str]) -> Result<Vec<usize>, StoreError> {
                let mut at = <$inner_ty as super::lite::FromRow>::locate(columns)?;
                $(at.push(super::lite::column(columns, stringify!($field))?);)+
                Ok(at)
            }

            fn from_row(row: &rusqlite::Row<'_>, at: &[usize]) -> Result<Self, StoreError> {
                let own = [$(stringify!($field)),+].len();
                let (inner, own) = at.split_at(at.len() - own);
                let mut own = own.iter();
                Ok($name {
                    $inner: super::lite::FromRow::from_row(row, inner)?,
                    $($field: super::lite::get(row, own.next(), stringify!($field))?),+
                })
            }
        }
    };
}

row_struct! {
    pub(super) struct AttachmentRow {
        pub id: DbId,
        pub volume_id: DbId,
        pub instance_uuid: Option<String>,
        pub attached_host: Option<String>,
        pub mountpoint: Option<String>,
        pub attach_status: String,
        pub attach_mode: Option<String>,
        pub attach_time: Option<DateTime<Utc>>,
        pub detach_time: Option<DateTime<Utc>>,
        pub connection_info: Option<String>,
        pub created_at: DateTime<Utc>,
    }
}

/// The columns of `AttachmentRow`, each behind `$prefix`.
macro_rules! attachment_columns {
    ($prefix:literal) => {
        concat!(
            $prefix,
            "id, ",
            $prefix,
            "volume_id, ",
            $prefix,
            "instance_uuid, ",
            $prefix,
            "attached_host, ",
            $prefix,
            "mountpoint, ",
            $prefix,
            "attach_status, ",
            $prefix,
            "attach_mode, ",
            $prefix,
            "attach_time, ",
            $prefix,
            "detach_time, ",
            $prefix,
            "connection_info, ",
            $prefix,
            "created_at"
        )
    };
}

/// Columns of `AttachmentRow`, for `select` lists (table alias `a`).
pub(super) const ATTACHMENT_COLUMNS: &str = attachment_columns!("a.");
/// The same, unqualified, for `returning` (SQLite refuses qualified names there).
pub(super) const ATTACHMENT_RETURNING: &str = attachment_columns!("");

impl TryFrom<AttachmentRow> for Attachment {
    type Error = StoreError;

    fn try_from(row: AttachmentRow) -> Result<Self, StoreError> {
        Ok(Attachment {
            id: row.id.0,
            volume_id: row.volume_id.0,
            instance_uuid: row.instance_uuid,
            attached_host: row.attached_host,
            mountpoint: row.mountpoint,
            attach_status: attach_status(&row.attach_status)?,
            attach_mode: row.attach_mode,
            attach_time: row.attach_time,
            detach_time: row.detach_time,
            connection_info: json(row.connection_info)?,
            created_at: row.created_at,
        })
    }
}

row_struct! {
    pub(super) struct VolumeRow {
        pub id: DbId,
        pub user_id: Option<String>,
        pub project_id: String,
        pub host: Option<String>,
        pub size: i64,
        pub availability_zone: String,
        pub status: String,
        pub attach_status: String,
        pub migration_status: Option<String>,
        pub display_name: Option<String>,
        pub display_description: Option<String>,
        pub volume_type_id: DbId,
        pub volume_type_name: Option<String>,
        pub encryption_key_id: Option<String>,
        pub bootable: bool,
        pub multiattach: bool,
        pub previous_status: Option<String>,
        pub service_uuid: Option<DbId>,
        pub shared_targets: Option<bool>,
        pub provider_id: Option<String>,
        pub group_id: Option<String>,
        pub consistencygroup_id: Option<String>,
        pub created_at: DateTime<Utc>,
        pub updated_at: Option<DateTime<Utc>>,
    }
}

/// Columns of `VolumeRow` (volume alias `v`, its type joined as `t`).
pub(super) const VOLUME_COLUMNS: &str = "v.id, v.user_id, v.project_id, v.host, v.size, \
     v.availability_zone, v.status, v.attach_status, v.migration_status, v.display_name, \
     v.display_description, v.volume_type_id, t.name as volume_type_name, v.encryption_key_id, \
     v.bootable, v.multiattach, v.previous_status, v.service_uuid, v.shared_targets, \
     v.provider_id, v.group_id, v.consistencygroup_id, v.created_at, v.updated_at";

/// `from` clause matching `VOLUME_COLUMNS`.
pub(super) const VOLUME_FROM: &str =
    " from volumes v left join volume_types t on t.id = v.volume_type_id";

impl VolumeRow {
    pub fn into_volume(self) -> Result<Volume, StoreError> {
        Ok(Volume {
            id: self.id.0,
            user_id: self.user_id,
            project_id: self.project_id,
            host: self.host,
            size: self.size,
            availability_zone: self.availability_zone,
            status: volume_status(&self.status)?,
            attach_status: attach_status(&self.attach_status)?,
            migration_status: self.migration_status,
            name: self.display_name,
            description: self.display_description,
            volume_type_id: self.volume_type_id.0,
            volume_type_name: self.volume_type_name,
            encryption_key_id: self.encryption_key_id,
            bootable: self.bootable,
            multiattach: self.multiattach,
            previous_status: self.previous_status,
            service_uuid: self.service_uuid.map(|id| id.0),
            shared_targets: self.shared_targets,
            provider_id: self.provider_id,
            group_id: self.group_id,
            consistencygroup_id: self.consistencygroup_id,
            created_at: self.created_at,
            updated_at: self.updated_at,
            metadata: BTreeMap::new(),
            admin_metadata: BTreeMap::new(),
            attachments: Vec::new(),
        })
    }
}

row_struct_with! {
    /// One row of a volume's brief lookup: the volume and one of its admin metadata
    /// items (none when it has none).
    pub(super) struct VolumeBriefRow {
        pub volume: VolumeRow;
        pub admin_key: Option<String>,
        pub admin_value: Option<String>,
    }
}

/// One `(key, value)` item of a key/value side table.
pub(super) type SideItem = (String, Option<String>);

/// The rows of a lookup that left-joins a key/value side table (one row per item, one
/// row with no item when there are none): the head, taken from the first row, and every
/// `(key, value)` item. `None` when there are no rows at all.
pub(super) fn left_joined<R, H>(
    rows: Vec<R>,
    split: impl Fn(R) -> (H, Option<String>, Option<String>),
) -> Option<(H, Vec<SideItem>)> {
    let mut head = None;
    let mut items = Vec::with_capacity(rows.len());
    for row in rows {
        let (this, key, value) = split(row);
        if let Some(key) = key {
            items.push((key, value));
        }
        head.get_or_insert(this);
    }
    head.map(|head| (head, items))
}

row_struct! {
    /// A `(owner id, key, value)` row of a key/value side table.
    pub(super) struct KeyValueRow {
        pub owner: DbId,
        pub key: String,
        pub value: Option<String>,
    }
}

row_struct! {
    pub(super) struct ProjectAccessRow {
        pub owner: DbId,
        pub project_id: String,
    }
}

row_struct! {
    pub(super) struct VolumeTypeRow {
        pub id: DbId,
        pub name: String,
        pub description: Option<String>,
        pub is_public: bool,
        pub qos_specs_id: Option<String>,
        pub created_at: DateTime<Utc>,
        pub updated_at: Option<DateTime<Utc>>,
    }
}

impl VolumeTypeRow {
    pub fn into_type(self) -> VolumeType {
        VolumeType {
            id: self.id.0,
            name: self.name,
            description: self.description,
            is_public: self.is_public,
            qos_specs_id: self.qos_specs_id,
            extra_specs: BTreeMap::new(),
            projects: Vec::new(),
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

row_struct! {
    pub(super) struct MessageRow {
        pub id: DbId,
        pub project_id: String,
        pub request_id: Option<String>,
        pub resource_type: String,
        pub resource_uuid: Option<String>,
        pub event_id: String,
        pub message_level: String,
        pub user_message: String,
        pub created_at: DateTime<Utc>,
        pub expires_at: Option<DateTime<Utc>>,
    }
}

impl From<MessageRow> for Message {
    fn from(row: MessageRow) -> Self {
        Message {
            id: row.id.0,
            project_id: row.project_id,
            request_id: row.request_id,
            resource_type: row.resource_type,
            resource_uuid: row.resource_uuid,
            event_id: row.event_id,
            message_level: row.message_level,
            user_message: row.user_message,
            created_at: row.created_at,
            expires_at: row.expires_at,
        }
    }
}

/// Attaches side-table rows to the volumes they belong to.
pub(super) fn assemble_volumes(
    volumes: &mut [Volume],
    metadata: Vec<KeyValueRow>,
    admin_metadata: Vec<KeyValueRow>,
    attachments: Vec<AttachmentRow>,
) -> Result<(), StoreError> {
    let index: std::collections::HashMap<uuid::Uuid, usize> =
        volumes.iter().enumerate().map(|(i, v)| (v.id, i)).collect();
    for row in metadata {
        if let Some(&i) = index.get(&row.owner.0) {
            volumes[i]
                .metadata
                .insert(row.key, row.value.unwrap_or_default());
        }
    }
    for row in admin_metadata {
        if let Some(&i) = index.get(&row.owner.0) {
            volumes[i]
                .admin_metadata
                .insert(row.key, row.value.unwrap_or_default());
        }
    }
    for row in attachments {
        if let Some(&i) = index.get(&row.volume_id.0) {
            volumes[i].attachments.push(Attachment::try_from(row)?);
        }
    }
    Ok(())
}

/// Attaches specs and access lists to the types they belong to.
pub(super) fn assemble_types(
    types: &mut [VolumeType],
    specs: Vec<KeyValueRow>,
    projects: Vec<ProjectAccessRow>,
) {
    let index: std::collections::HashMap<uuid::Uuid, usize> =
        types.iter().enumerate().map(|(i, t)| (t.id, i)).collect();
    for row in specs {
        if let Some(&i) = index.get(&row.owner.0) {
            types[i].extra_specs.insert(row.key, row.value);
        }
    }
    for row in projects {
        if let Some(&i) = index.get(&row.owner.0) {
            types[i].projects.push(row.project_id);
        }
    }
}

row_struct_with! {
    /// One row of an attachment lookup: the attachment, its volume's project and host,
    /// and one of its connector's `attachment_specs` (none when it has no connector).
    pub(super) struct AttachmentLookupRow {
        pub attachment: AttachmentRow;
        pub project_id: String,
        pub volume_host: Option<String>,
        pub spec_key: Option<String>,
        pub spec_value: Option<String>,
    }
}

/// Cinder's "has connection_info": a non-empty object.
pub(super) fn is_connected(info: Option<&str>) -> bool {
    info.and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        .and_then(|value| value.as_object().map(|o| !o.is_empty()))
        .unwrap_or(false)
}

row_struct! {
    pub(super) struct VolumeStateRow {
        pub status: String,
        pub attach_status: String,
        pub migration_status: Option<String>,
        pub multiattach: bool,
        pub volume_type_id: DbId,
    }
}

row_struct_with! {
    /// The volume of an attachment, with `VolumeStateRow`'s columns.
    pub(super) struct AttachedVolumeStateRow {
        pub state: VolumeStateRow;
        pub id: DbId,
    }
}

row_struct_with! {
    /// The volume a reservation locks, and whether the instance already holds one of its
    /// attachments (Cinder's same-instance override).
    pub(super) struct ReservedVolumeStateRow {
        pub state: VolumeStateRow;
        pub same_instance: bool,
    }
}

/// A volume row held under lock during an attachment transaction.
pub(super) struct LockedVolume {
    pub status: VolumeStatus,
    pub attach_status: AttachStatus,
    pub migrating: bool,
    pub multiattach: bool,
    pub volume_type_id: uuid::Uuid,
}

impl LockedVolume {
    pub fn state(&self) -> crate::domain::attach::VolumeAttachState {
        crate::domain::attach::VolumeAttachState {
            status: self.status,
            attach_status: self.attach_status,
            migrating: self.migrating,
        }
    }
}

impl TryFrom<VolumeStateRow> for LockedVolume {
    type Error = StoreError;

    fn try_from(row: VolumeStateRow) -> Result<Self, StoreError> {
        Ok(LockedVolume {
            status: volume_status(&row.status)?,
            attach_status: attach_status(&row.attach_status)?,
            migrating: !matches!(
                row.migration_status.as_deref(),
                None | Some("success" | "error" | "none")
            ),
            multiattach: row.multiattach,
            volume_type_id: row.volume_type_id.0,
        })
    }
}
