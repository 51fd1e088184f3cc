//! Reading result rows, the same way for both databases: each database exposes its row
//! through `Row` (typed getters by column position), and values are read in `select`
//! order through `Columns`. A value that does not fit is `Corrupt`, never guessed.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::error::StoreError;
use crate::domain::attachment::{AttachMode, AttachStatus};
use crate::domain::backup::BackupStatus;
use crate::domain::compute_call::{ComputeCallKind, ComputeCallStatus};
use crate::domain::group::GroupStatus;
use crate::domain::group_snapshot::GroupSnapshotStatus;
use crate::domain::ids::{
    AttachmentId, BackupId, ComputeCallId, GroupId, GroupSnapshotId, GroupTypeId, MessageId,
    QosSpecsId, ServiceId, SnapshotId, TransferId, VolumeId, VolumeTypeId,
};
use crate::domain::snapshot::SnapshotStatus;
use crate::domain::volume::VolumeStatus;

/// One result row of either database. `None` is SQL NULL.
pub trait Row {
    fn uuid(&self, at: usize) -> Result<Option<Uuid>, StoreError>;
    fn text(&self, at: usize) -> Result<Option<String>, StoreError>;
    fn int(&self, at: usize) -> Result<Option<i64>, StoreError>;
    fn bool(&self, at: usize) -> Result<Option<bool>, StoreError>;
    fn timestamp(&self, at: usize) -> Result<Option<DateTime<Utc>>, StoreError>;
}

/// A Rust value stored in one column.
pub trait Column: Sized {
    fn read(row: &dyn Row, at: usize) -> Result<Option<Self>, StoreError>;
}

/// What `Columns::get` reads: a column value, or an `Option` of one for nullable columns.
pub trait FromColumn: Sized {
    fn from_column(row: &dyn Row, at: usize) -> Result<Self, StoreError>;
}

impl<T: Column> FromColumn for T {
    fn from_column(row: &dyn Row, at: usize) -> Result<Self, StoreError> {
        T::read(row, at)?.ok_or_else(|| StoreError::corrupt(format!("column {at} is NULL")))
    }
}

impl<T: Column> FromColumn for Option<T> {
    fn from_column(row: &dyn Row, at: usize) -> Result<Self, StoreError> {
        T::read(row, at)
    }
}

/// The columns of a row, read left to right.
pub struct Columns<'r> {
    row: &'r dyn Row,
    next: usize,
}

impl<'r> Columns<'r> {
    pub fn new(row: &'r dyn Row) -> Self {
        Columns { row, next: 0 }
    }

    /// The next column's value.
    pub fn get<T: FromColumn>(&mut self) -> Result<T, StoreError> {
        let value = T::from_column(self.row, self.next);
        self.next += 1;
        value
    }

    /// The next column's value, without moving past it.
    pub fn peek<T: FromColumn>(&self) -> Result<T, StoreError> {
        T::from_column(self.row, self.next)
    }

    /// Moves past `n` columns without reading them.
    pub fn skip(&mut self, n: usize) {
        self.next += n;
    }
}

/// A value made of consecutive columns of a row.
pub trait FromRow: Sized {
    fn from_row(columns: &mut Columns<'_>) -> Result<Self, StoreError>;
}

macro_rules! column_via {
    ($getter:ident($stored:ty): $($ty:ty => $convert:expr),+ $(,)?) => {
        $(impl Column for $ty {
            fn read(row: &dyn Row, at: usize) -> Result<Option<Self>, StoreError> {
                let convert: fn($stored) -> Result<$ty, StoreError> = $convert;
                row.$getter(at)?.map(convert).transpose()
            }
        })+
    };
}

fn parsed<T>(parse: fn(&str) -> Option<T>, what: &str, text: String) -> Result<T, StoreError> {
    parse(&text).ok_or_else(|| StoreError::corrupt(format!("{what} {text:?}")))
}

column_via!(uuid(Uuid):
    Uuid => Ok,
    VolumeId => |id| Ok(id.into()),
    AttachmentId => |id| Ok(id.into()),
    VolumeTypeId => |id| Ok(id.into()),
    MessageId => |id| Ok(id.into()),
    ServiceId => |id| Ok(id.into()),
    QosSpecsId => |id| Ok(id.into()),
    GroupTypeId => |id| Ok(id.into()),
    GroupId => |id| Ok(id.into()),
    GroupSnapshotId => |id| Ok(id.into()),
    BackupId => |id| Ok(id.into()),
    ComputeCallId => |id| Ok(id.into()),
    SnapshotId => |id| Ok(id.into()),
    TransferId => |id| Ok(id.into()),
);
column_via!(text(String):
    String => Ok,
    VolumeStatus => |t| parsed(VolumeStatus::parse, "volume status", t),
    SnapshotStatus => |t| parsed(SnapshotStatus::parse, "snapshot status", t),
    GroupStatus => |t| parsed(GroupStatus::parse, "group status", t),
    GroupSnapshotStatus => |t| parsed(GroupSnapshotStatus::parse, "group snapshot status", t),
    BackupStatus => |t| parsed(BackupStatus::parse, "backup status", t),
    AttachStatus => |t| parsed(AttachStatus::parse, "attach_status", t),
    AttachMode => |t| parsed(AttachMode::parse, "attach_mode", t),
    ComputeCallKind => |t| parsed(ComputeCallKind::parse, "compute call kind", t),
    ComputeCallStatus => |t| parsed(ComputeCallStatus::parse, "compute call status", t),
    serde_json::Value => |t| serde_json::from_str(&t).map_err(StoreError::corrupt),
);
column_via!(int(i64): i64 => Ok);
column_via!(bool(bool): bool => Ok);
column_via!(timestamp(DateTime<Utc>): DateTime<Utc> => Ok);

/// A row whose values are not needed (`select 1`).
impl FromRow for () {
    fn from_row(_: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(())
    }
}

macro_rules! tuple_row {
    ($($T:ident),+) => {
        impl<$($T: FromColumn),+> FromRow for ($($T,)+) {
            fn from_row(columns: &mut Columns<'_>) -> Result<Self, StoreError> {
                Ok(($(columns.get::<$T>()?,)+))
            }
        }
    };
}

tuple_row!(A);
tuple_row!(A, B);
tuple_row!(A, B, C);
tuple_row!(A, B, C, D);
tuple_row!(A, B, C, D, E);
tuple_row!(A, B, C, D, E, F);
