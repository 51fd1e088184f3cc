//! A statement and its arguments, the same for both databases: SQL text with `$N`
//! placeholders and values each database binds its own way (`Arg`).

use std::borrow::Cow;

use chrono::{DateTime, SecondsFormat, Utc};
use uuid::Uuid;

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
    GroupTypeId => GroupTypeId::uuid,
    GroupId => GroupId::uuid,
    GroupSnapshotId => GroupSnapshotId::uuid,
    BackupId => BackupId::uuid,
    ComputeCallId => ComputeCallId::uuid,
    SnapshotId => SnapshotId::uuid,
    TransferId => TransferId::uuid,
);
bind_as!(Text:
    String => |text| text,
    &str => str::to_owned,
    VolumeStatus => |s| s.as_str().to_owned(),
    SnapshotStatus => |s| s.as_str().to_owned(),
    GroupStatus => |s| s.as_str().to_owned(),
    GroupSnapshotStatus => |s| s.as_str().to_owned(),
    BackupStatus => |s| s.as_str().to_owned(),
    AttachStatus => |s| s.as_str().to_owned(),
    AttachMode => |m| m.as_str().to_owned(),
    MigrationStatus => |s| s.as_str().to_owned(),
    ComputeCallKind => |k| k.as_str().to_owned(),
    ComputeCallStatus => |s| s.as_str().to_owned(),
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

    /// One PostgreSQL statement that runs `writes`, each as a data-modifying CTE, and
    /// then `main`: one round trip. Every part sees the rows as they were before the
    /// statement (none sees another's changes), so only writes that need nothing from one
    /// another belong together; a part may itself start with `with`, but not `main`.
    pub fn with_writes(writes: Vec<Sql>, main: Sql) -> Sql {
        if writes.is_empty() {
            return main;
        }
        debug_assert!(
            !main.text.starts_with("with "),
            "`main` cannot start a WITH"
        );
        let mut text = String::from("with ");
        let mut args = Vec::new();
        for (i, write) in writes.into_iter().enumerate() {
            if i > 0 {
                text.push_str(", ");
            }
            text.push_str(&format!("w{i} as ("));
            push_renumbered(&mut text, &write.text, args.len());
            text.push(')');
            args.extend(write.args);
        }
        text.push(' ');
        push_renumbered(&mut text, &main.text, args.len());
        args.extend(main.args);
        Sql {
            text: Cow::Owned(text),
            args,
        }
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

/// Appends `text` with each placeholder `$N` made `$(N + offset)`.
fn push_renumbered(out: &mut String, text: &str, offset: usize) {
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        match rest[..digits].parse::<usize>() {
            Ok(n) => out.push_str(&(n + offset).to_string()),
            Err(_) => out.push_str(&rest[..digits]),
        }
        rest = &rest[digits..];
    }
    out.push_str(rest);
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
    fn combined_writes_keep_each_statement_with_its_values() {
        let first = Sql::new("update a set x = $1 where id = $2")
            .bind(1_i64)
            .bind(2_i64);
        let second = Sql::new("with p as (select $1 as v) insert into b select v from p").bind("y");
        let main = Sql::new("update c set z = $2 where id = $1 and w = $10")
            .bind(3_i64)
            .bind(4_i64);
        let combined = Sql::with_writes(vec![first, second], main);
        assert_eq!(
            combined.text(),
            "with w0 as (update a set x = $1 where id = $2), \
             w1 as (with p as (select $3 as v) insert into b select v from p) \
             update c set z = $5 where id = $4 and w = $13"
        );
        assert_eq!(combined.args().len(), 5);
        assert_eq!(combined.args()[2], Arg::Text(Some("y".into())));
        let alone = Sql::with_writes(Vec::new(), Sql::new("select $1").bind(1_i64));
        assert_eq!(alone.text(), "select $1");
    }

    #[test]
    fn literals_are_quoted() {
        assert_eq!(Arg::Text(Some("it's".into())).literal(), "'it''s'");
        assert_eq!(Arg::Int(None).literal(), "null");
    }
}
