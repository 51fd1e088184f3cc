//! A statement and its arguments, the same for both databases: SQL text with `$N`
//! placeholders and values each database binds its own way (`Arg`).

use std::borrow::Cow;

use chrono::{DateTime, SecondsFormat, Utc};
use uuid::Uuid;

use crate::domain::attachment::{AttachMode, AttachStatus};
use crate::domain::ids::{
    AttachmentId, MessageId, QosSpecsId, ServiceId, SnapshotId, TransferId, VolumeId, VolumeTypeId,
};
use crate::domain::snapshot::SnapshotStatus;
use crate::domain::volume::{MigrationStatus, VolumeStatus};

/// A bound value. Each kind carries its own NULL, because PostgreSQL types its
/// parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    Uuid(Option<Uuid>),
    Text(Option<String>),
    Int(Option<i64>),
    Bool(Option<bool>),
    Timestamp(Option<DateTime<Utc>>),
}

impl Arg {
    /// The value as an SQL literal (PostgreSQL syntax), for statement logs.
    pub fn literal(&self) -> String {
        fn quoted(text: &str) -> String {
            format!("'{}'", text.replace('\'', "''"))
        }
        match self {
            Arg::Uuid(Some(id)) => quoted(&id.to_string()),
            Arg::Text(Some(text)) => quoted(text),
            Arg::Int(Some(n)) => n.to_string(),
            Arg::Bool(Some(b)) => b.to_string(),
            Arg::Timestamp(Some(at)) => quoted(&at.to_rfc3339_opts(SecondsFormat::Micros, true)),
            _ => "null".to_owned(),
        }
    }
}

/// A Rust value that can be bound to a statement.
pub trait Bind: Sized {
    fn arg(self) -> Arg;
    /// NULL of this value's kind.
    fn null() -> Arg;
}

impl<T: Bind> Bind for Option<T> {
    fn arg(self) -> Arg {
        self.map_or_else(T::null, Bind::arg)
    }
    fn null() -> Arg {
        T::null()
    }
}

impl<T: Bind + Clone> Bind for &T {
    fn arg(self) -> Arg {
        self.clone().arg()
    }
    fn null() -> Arg {
        T::null()
    }
}

macro_rules! bind_as {
    ($variant:ident: $($ty:ty => $convert:expr),+ $(,)?) => {
        $(impl Bind for $ty {
            fn arg(self) -> Arg {
                let convert: fn($ty) -> _ = $convert;
                Arg::$variant(Some(convert(self)))
            }
            fn null() -> Arg {
                Arg::$variant(None)
            }
        })+
    };
}

bind_as!(Uuid:
    Uuid => |id| id,
    VolumeId => VolumeId::uuid,
    AttachmentId => AttachmentId::uuid,
    VolumeTypeId => VolumeTypeId::uuid,
    MessageId => MessageId::uuid,
    ServiceId => ServiceId::uuid,
    QosSpecsId => QosSpecsId::uuid,
    SnapshotId => SnapshotId::uuid,
    TransferId => TransferId::uuid,
);
bind_as!(Text:
    String => |text| text,
    &str => str::to_owned,
    VolumeStatus => |s| s.as_str().to_owned(),
    SnapshotStatus => |s| s.as_str().to_owned(),
    AttachStatus => |s| s.as_str().to_owned(),
    AttachMode => |m| m.as_str().to_owned(),
    MigrationStatus => |s| s.as_str().to_owned(),
);
bind_as!(Int: i64 => |n| n);
bind_as!(Bool: bool => |b| b);
bind_as!(Timestamp: DateTime<Utc> => |at| at);

/// SQL text and its arguments. Statements written out in full are `&'static str`
/// constants next to the code that runs them; `push` builds the others.
#[derive(Debug, Clone)]
pub struct Sql {
    text: Cow<'static, str>,
    args: Vec<Arg>,
}

impl Sql {
    /// A statement whose `$1`, `$2`, … are bound, in order, by `bind`.
    pub fn new(text: &'static str) -> Self {
        Sql {
            text: Cow::Borrowed(text),
            args: Vec::new(),
        }
    }

    /// `text` followed by a row-lock clause (`D::FOR_UPDATE`, empty for SQLite).
    pub fn locking(text: &'static str, lock: &'static str) -> Self {
        let text = match lock {
            "" => Cow::Borrowed(text),
            lock => Cow::Owned(format!("{text}{lock}")),
        };
        Sql {
            text,
            args: Vec::new(),
        }
    }

    pub fn bind(mut self, value: impl Bind) -> Self {
        self.args.push(value.arg());
        self
    }

    /// Appends SQL text (never a value: values go through `push_bind`).
    pub fn push(&mut self, text: &str) -> &mut Self {
        self.text.to_mut().push_str(text);
        self
    }

    /// Appends a placeholder for `value`.
    pub fn push_bind(&mut self, value: impl Bind) -> &mut Self {
        self.args.push(value.arg());
        let placeholder = format!("${}", self.args.len());
        self.push(&placeholder)
    }

    /// Appends `$a, $b, …`, one placeholder per value.
    pub fn push_list<B: Bind>(&mut self, values: impl IntoIterator<Item = B>) -> &mut Self {
        for (i, value) in values.into_iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.push_bind(value);
        }
        self
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn args(&self) -> &[Arg] {
        &self.args
    }

    /// Logs the statement at trace level (target `cinder_attach::sql`), with its
    /// arguments as a JSON list of SQL literals (`RUST_LOG=cinder_attach::sql=trace`
    /// shows every statement; `bench/cycle.sql` is made from these).
    pub fn trace(&self) {
        tracing::trace!(
            target: "cinder_attach::sql",
            sql = %self.text,
            args = %serde_json::Value::from(self.args.iter().map(Arg::literal).collect::<Vec<_>>()),
            "statement"
        );
    }
}

/// Logs a transaction boundary (`begin`, `commit`) the way `Sql::trace` logs statements.
pub fn trace_control(statement: &str) {
    tracing::trace!(target: "cinder_attach::sql", sql = statement, args = "[]", "statement");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_follow_the_bound_values() {
        let mut sql = Sql::new("select 1 from t where a = $1").bind("x");
        sql.push(" and b in (").push_list([1_i64, 2]).push(")");
        assert_eq!(sql.text(), "select 1 from t where a = $1 and b in ($2, $3)");
        assert_eq!(
            sql.args(),
            [
                Arg::Text(Some("x".into())),
                Arg::Int(Some(1)),
                Arg::Int(Some(2))
            ]
        );
    }

    #[test]
    fn nulls_keep_their_kind() {
        assert_eq!(None::<String>.arg(), Arg::Text(None));
        assert_eq!(None::<VolumeId>.arg(), Arg::Uuid(None));
        assert_eq!(
            Some(VolumeStatus::InUse).arg(),
            Arg::Text(Some("in-use".into()))
        );
        assert_eq!((&Some("a".to_owned())).arg(), Arg::Text(Some("a".into())));
    }

    #[test]
    fn locking_adds_the_clause_only_where_there_is_one() {
        assert_eq!(Sql::locking("select 1", "").text(), "select 1");
        assert_eq!(
            Sql::locking("select 1", " for update").text(),
            "select 1 for update"
        );
    }

    #[test]
    fn literals_are_quoted() {
        assert_eq!(Arg::Text(Some("it's".into())).literal(), "'it''s'");
        assert_eq!(Arg::Int(None).literal(), "null");
    }
}
