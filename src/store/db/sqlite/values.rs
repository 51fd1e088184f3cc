//! Values bound to statements and read back from rows, stored the way sqlx's SQLite
//! driver stores them (hyphenated lower-case uuid text, RFC 3339 timestamps, 0/1), so
//! database files written by earlier versions read the same.

use chrono::{DateTime, NaiveDateTime, SecondsFormat, TimeZone, Utc};
use rusqlite::types::{Value, ValueRef};
use uuid::Uuid;

use super::super::error::StoreError;
use super::super::row::Row;
use super::super::sql::Arg;

/// The SQLite value an argument is stored as.
pub(super) fn value(arg: &Arg) -> Value {
    match arg {
        Arg::Uuid(id) => id.map_or(Value::Null, |id| Value::Text(id.hyphenated().to_string())),
        Arg::Text(text) => text.clone().map_or(Value::Null, Value::Text),
        Arg::Int(n) => n.map_or(Value::Null, Value::Integer),
        Arg::Bool(b) => b.map_or(Value::Null, |b| Value::Integer(b.into())),
        Arg::Timestamp(at) => at.map_or(Value::Null, |at| {
            Value::Text(at.to_rfc3339_opts(SecondsFormat::AutoSi, false))
        }),
    }
}

/// A result row of rusqlite, read through the store's `Row`.
pub(super) struct LiteRow<'a, 'stmt>(pub &'a rusqlite::Row<'stmt>);

fn mismatch(at: usize, expected: &str, value: ValueRef<'_>) -> StoreError {
    StoreError::corrupt(format!(
        "column {at}: expected {expected}, found {:?}",
        value.data_type()
    ))
}

impl LiteRow<'_, '_> {
    fn value(&self, at: usize) -> Result<Option<ValueRef<'_>>, StoreError> {
        match self.0.get_ref(at)? {
            ValueRef::Null => Ok(None),
            value => Ok(Some(value)),
        }
    }

    fn str(&self, at: usize, expected: &str) -> Result<Option<&str>, StoreError> {
        self.value(at)?
            .map(|value| value.as_str().map_err(|_| mismatch(at, expected, value)))
            .transpose()
    }
}

impl Row for LiteRow<'_, '_> {
    fn uuid(&self, at: usize) -> Result<Option<Uuid>, StoreError> {
        self.str(at, "uuid text")?
            .map(|text| {
                Uuid::parse_str(text)
                    .map_err(|e| StoreError::corrupt(format!("column {at}: {text:?}: {e}")))
            })
            .transpose()
    }

    fn text(&self, at: usize) -> Result<Option<String>, StoreError> {
        Ok(self.str(at, "text")?.map(str::to_owned))
    }

    fn int(&self, at: usize) -> Result<Option<i64>, StoreError> {
        self.value(at)?
            .map(|value| match value {
                ValueRef::Integer(n) => Ok(n),
                other => Err(mismatch(at, "integer", other)),
            })
            .transpose()
    }

    fn bool(&self, at: usize) -> Result<Option<bool>, StoreError> {
        Ok(self.int(at)?.map(|n| n != 0))
    }

    fn timestamp(&self, at: usize) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.value(at)?
            .map(|value| match value {
                ValueRef::Text(_) => {
                    let text = value
                        .as_str()
                        .map_err(|_| mismatch(at, "timestamp", value))?;
                    parse_timestamp(text).ok_or_else(|| {
                        StoreError::corrupt(format!("column {at}: timestamp {text:?}"))
                    })
                }
                ValueRef::Integer(seconds) => {
                    Utc.timestamp_opt(seconds, 0).single().ok_or_else(|| {
                        StoreError::corrupt(format!("column {at}: timestamp {seconds}"))
                    })
                }
                other => Err(mismatch(at, "timestamp", other)),
            })
            .transpose()
    }
}

/// RFC 3339 (what `value` writes) or SQLite's own `YYYY-MM-DD HH:MM:SS[.f]` (UTC).
pub(super) fn parse_timestamp(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    ["%F %T%.f", "%FT%T%.f"]
        .iter()
        .find_map(|format| NaiveDateTime::parse_from_str(text, format).ok())
        .map(|naive| naive.and_utc())
}
