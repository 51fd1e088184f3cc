//! The writes that end a transaction, after its lock and its decision, when none of
//! them needs what another wrote: on PostgreSQL they go as one statement, each write a
//! data-modifying CTE of it (one round trip instead of one per write, all seeing the
//! rows as they were before it); on SQLite, in process, one after another in the order
//! given. On PostgreSQL the writes of one statement run in no set order: two whose order
//! shows (two outbox rows, numbered as they are inserted) must be one write. A write that
//! must see the others' rows (events whose payload the database builds after a change)
//! runs on its own afterwards.

use super::db::error::StoreError;
use super::db::row::FromRow;
use super::db::sql::Sql;
use super::db::{Database, Executor};
use super::{SqlStore, StoreKind};

#[derive(Default)]
pub(super) struct Writes {
    statements: Vec<Sql>,
}

impl Writes {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a write (nothing for `None`).
    pub fn push(&mut self, sql: impl Into<Option<Sql>>) -> &mut Self {
        self.statements.extend(sql.into());
        self
    }

    pub fn extend(&mut self, sqls: impl IntoIterator<Item = Sql>) -> &mut Self {
        self.statements.extend(sqls);
        self
    }
}

impl<D: Database> SqlStore<D> {
    /// Runs `writes`.
    pub(super) async fn apply(tx: &mut D::Tx, writes: Writes) -> Result<(), StoreError> {
        let mut statements = writes.statements;
        if D::KIND == StoreKind::Sqlite || statements.len() < 2 {
            for sql in statements {
                tx.execute(sql).await?;
            }
            return Ok(());
        }
        // The main statement of a WITH cannot start a WITH of its own.
        let main = match statements
            .iter()
            .rposition(|s| !s.text().starts_with("with "))
        {
            Some(at) => statements.remove(at),
            None => Sql::new("select 1"),
        };
        tx.execute(Sql::with_writes(statements, main)).await?;
        Ok(())
    }

    /// Runs `returning` and `writes` (on SQLite `returning` first, so the writes may refer
    /// to the row it adds); the row `returning` gives back.
    pub(super) async fn apply_returning<T: FromRow + Send>(
        tx: &mut D::Tx,
        returning: Sql,
        writes: Writes,
    ) -> Result<Option<T>, StoreError> {
        if D::KIND == StoreKind::Sqlite {
            let row = tx.fetch_optional(returning).await?;
            Self::apply(tx, writes).await?;
            return Ok(row);
        }
        tx.fetch_optional(Sql::with_writes(writes.statements, returning))
            .await
    }
}
