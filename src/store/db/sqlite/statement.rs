//! Running one statement on a connection the caller holds.

use rusqlite::{Connection, Statement};

use super::super::error::StoreError;
use super::super::row::{Columns, FromRow};
use super::super::sql::Sql;
use super::values::{value, LiteRow};

/// Binds the arguments to the statement's `$N` parameters by number (so one value may
/// be used twice and numbers need not appear in order).
fn bind_args(stmt: &mut Statement<'_>, sql: &Sql) -> Result<(), StoreError> {
    for index in 1..=stmt.parameter_count() {
        let name = stmt.parameter_name(index).unwrap_or("?");
        let number = name
            .strip_prefix('$')
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| StoreError::Other(format!("unsupported parameter {name}").into()))?;
        // As in sqlx, a parameter without a value is NULL.
        let bound = number
            .checked_sub(1)
            .and_then(|i| sql.args().get(i))
            .map(value)
            .unwrap_or(rusqlite::types::Value::Null);
        stmt.raw_bind_parameter(index, bound)?;
    }
    Ok(())
}

/// Up to `limit` rows of `sql`, read as `T`.
pub(super) fn fetch<T: FromRow>(
    conn: &Connection,
    sql: &Sql,
    limit: usize,
) -> Result<Vec<T>, StoreError> {
    sql.trace();
    let mut stmt = conn.prepare_cached(sql.text())?;
    bind_args(&mut stmt, sql)?;
    let mut rows = stmt.raw_query();
    let mut found = Vec::new();
    while found.len() < limit {
        let Some(row) = rows.next()? else { break };
        found.push(T::from_row(&mut Columns::new(&LiteRow(row)))?);
    }
    Ok(found)
}

/// Runs `sql`; the number of rows it changed.
pub(super) fn execute(conn: &Connection, sql: &Sql) -> Result<u64, StoreError> {
    sql.trace();
    let mut stmt = conn.prepare_cached(sql.text())?;
    bind_args(&mut stmt, sql)?;
    let writes = !stmt.readonly();
    let mut rows = stmt.raw_query();
    while rows.next()?.is_some() {}
    Ok(if writes { conn.changes() } else { 0 })
}

/// `BEGIN`, `COMMIT` and the like, from the statement cache.
pub(super) fn control(conn: &Connection, statement: &str) -> Result<(), rusqlite::Error> {
    super::super::sql::trace_control(statement);
    conn.prepare_cached(statement)?.execute([]).map(drop)
}
