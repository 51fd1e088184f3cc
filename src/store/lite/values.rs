//! Values bound to statements and read back from rows, stored the way sqlx's SQLite
//! driver stores them so that files written before this layer read the same.

use chrono::{DateTime, NaiveDateTime, SecondsFormat, TimeZone, Utc};
use rusqlite::types::{Value, ValueRef};
use rusqlite::Row;

use super::super::{DbId, StoreError};
/// A value that can be bound to a statement parameter, stored the way sqlx's SQLite
/// driver stores it (so databases written before this layer read the same).
pub trait Bind {
    fn into_value(self) -> Value;
}

impl Bind for Value {
    fn into_value(self) -> Value {
        self
    }
}

impl Bind for DbId {
    fn into_value(self) -> Value {
        Value::Text(self.0.hyphenated().to_string())
    }
}

impl Bind for String {
    fn into_value(self) -> Value {
        Value::Text(self)
    }
}

impl Bind for &str {
    fn into_value(self) -> Value {
        Value::Text(self.to_owned())
    }
}

impl Bind for &String {
    fn into_value(self) -> Value {
        Value::Text(self.clone())
    }
}

impl Bind for i64 {
    fn into_value(self) -> Value {
        Value::Integer(self)
    }
}

impl Bind for i32 {
    fn into_value(self) -> Value {
        Value::Integer(self.into())
    }
}

impl Bind for bool {
    fn into_value(self) -> Value {
        Value::Integer(self.into())
    }
}

impl Bind for DateTime<Utc> {
    fn into_value(self) -> Value {
        Value::Text(self.to_rfc3339_opts(SecondsFormat::AutoSi, false))
    }
}

impl Bind for &Option<String> {
    fn into_value(self) -> Value {
        self.as_deref().into_value()
    }
}

impl<T: Bind> Bind for Option<T> {
    fn into_value(self) -> Value {
        self.map_or(Value::Null, Bind::into_value)
    }
}

/// A column value read into a Rust type; a mismatch means the file holds something this
/// code never wrote, reported as `Corrupt`.
pub trait Decode: Sized {
    fn decode(value: ValueRef<'_>) -> Result<Self, String>;
}

fn mismatch(expected: &str, value: ValueRef<'_>) -> String {
    format!("expected {expected}, found {:?}", value.data_type())
}

impl Decode for String {
    fn decode(value: ValueRef<'_>) -> Result<Self, String> {
        match value {
            ValueRef::Text(text) => String::from_utf8(text.to_vec()).map_err(|e| e.to_string()),
            other => Err(mismatch("text", other)),
        }
    }
}

impl Decode for i64 {
    fn decode(value: ValueRef<'_>) -> Result<Self, String> {
        match value {
            ValueRef::Integer(n) => Ok(n),
            other => Err(mismatch("integer", other)),
        }
    }
}

impl Decode for bool {
    fn decode(value: ValueRef<'_>) -> Result<Self, String> {
        i64::decode(value).map(|n| n != 0)
    }
}

impl Decode for DbId {
    fn decode(value: ValueRef<'_>) -> Result<Self, String> {
        let text = value.as_str().map_err(|_| mismatch("uuid text", value))?;
        uuid::Uuid::parse_str(text)
            .map(DbId)
            .map_err(|e| format!("{text:?}: {e}"))
    }
}

impl Decode for DateTime<Utc> {
    fn decode(value: ValueRef<'_>) -> Result<Self, String> {
        match value {
            ValueRef::Text(_) => {
                let text = value.as_str().map_err(|e| e.to_string())?;
                parse_timestamp(text).ok_or_else(|| format!("timestamp {text:?}"))
            }
            ValueRef::Integer(seconds) => Utc
                .timestamp_opt(seconds, 0)
                .single()
                .ok_or_else(|| format!("timestamp {seconds}")),
            other => Err(mismatch("timestamp", other)),
        }
    }
}

/// RFC 3339 (what `Bind` writes) or SQLite's own `YYYY-MM-DD HH:MM:SS[.f]` (UTC).
pub(super) fn parse_timestamp(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    ["%F %T%.f", "%FT%T%.f"]
        .iter()
        .find_map(|format| NaiveDateTime::parse_from_str(text, format).ok())
        .map(|naive| naive.and_utc())
}

impl<T: Decode> Decode for Option<T> {
    fn decode(value: ValueRef<'_>) -> Result<Self, String> {
        match value {
            ValueRef::Null => Ok(None),
            other => T::decode(other).map(Some),
        }
    }
}

/// A result row read into a Rust value: structs by column name, tuples by position.
pub trait FromRow: Sized {
    /// Where each value this row type reads sits among the statement's `columns`.
    fn locate(columns: &[&str]) -> Result<Vec<usize>, StoreError>;
    fn from_row(row: &Row<'_>, at: &[usize]) -> Result<Self, StoreError>;
}

/// The index of column `name`, for `FromRow` implementations.
pub fn column(columns: &[&str], name: &str) -> Result<usize, StoreError> {
    columns
        .iter()
        .position(|c| c.eq_ignore_ascii_case(name))
        .ok_or_else(|| StoreError::Corrupt(format!("the query returns no column {name:?}")))
}

/// The value at `at` (as located by `FromRow::locate`) decoded as `T`.
pub fn get<T: Decode>(row: &Row<'_>, at: Option<&usize>, name: &str) -> Result<T, StoreError> {
    let index = *at.ok_or_else(|| StoreError::Corrupt(format!("column {name} not located")))?;
    let value = row.get_ref(index)?;
    T::decode(value).map_err(|e| StoreError::Corrupt(format!("column {name}: {e}")))
}

macro_rules! tuple_row {
    ($($T:ident),+) => {
        impl<$($T: Decode),+> FromRow for ($($T,)+) {
            fn locate(columns: &[&str]) -> Result<Vec<usize>, StoreError> {
                let wanted = [$(stringify!($T)),+].len();
                if columns.len() < wanted {
                    return Err(StoreError::Corrupt(format!(
                        "the query returns {} columns, {wanted} expected",
                        columns.len()
                    )));
                }
                Ok((0..wanted).collect())
            }

            fn from_row(row: &Row<'_>, at: &[usize]) -> Result<Self, StoreError> {
                let mut at = at.iter();
                Ok(($(get::<$T>(row, at.next(), stringify!($T))?,)+))
            }
        }
    };
}

tuple_row!(A);
tuple_row!(A, B);
tuple_row!(A, B, C);
tuple_row!(A, B, C, D);
