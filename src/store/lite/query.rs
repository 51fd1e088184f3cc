//! Statements: `query`, `query_as` and `QueryBuilder`, run on a connection the caller
//! holds, on the read pool, or on the writer.

use std::fmt::Display;
use std::marker::PhantomData;

use rusqlite::types::Value;
use rusqlite::{Connection, Statement};

use super::super::StoreError;
use super::pool::ReadPool;
use super::values::{Bind, FromRow};
use super::writer::Writer;
/// Binds `args` to the statement's `$N` / `?N` parameters by number (so one value can be
/// used twice and numbers need not appear in order), plain `?` in sequence.
fn bind_args(stmt: &mut Statement<'_>, args: &[Value]) -> Result<(), StoreError> {
    let mut sequential = 0;
    for index in 1..=stmt.parameter_count() {
        let number = match stmt.parameter_name(index) {
            Some(name) => name
                .strip_prefix(['$', '?'])
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| StoreError::Other(format!("unsupported parameter {name}").into()))?,
            None => {
                sequential += 1;
                sequential
            }
        };
        // As in sqlx, a parameter without a value is NULL.
        let value = number
            .checked_sub(1)
            .and_then(|i| args.get(i))
            .unwrap_or(&Value::Null);
        stmt.raw_bind_parameter(index, value)?;
    }
    Ok(())
}

fn fetch<T: FromRow>(
    conn: &Connection,
    sql: &str,
    args: &[Value],
    limit: usize,
) -> Result<Vec<T>, StoreError> {
    let mut stmt = conn.prepare_cached(sql)?;
    bind_args(&mut stmt, args)?;
    let at = T::locate(&stmt.column_names())?;
    let mut rows = stmt.raw_query();
    let mut found = Vec::new();
    while found.len() < limit {
        let Some(row) = rows.next()? else { break };
        found.push(T::from_row(row, &at)?);
    }
    Ok(found)
}

/// `BEGIN`, `COMMIT` and the like, from the statement cache.
pub(super) fn control(conn: &Connection, sql: &str) -> Result<(), rusqlite::Error> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

fn execute(conn: &Connection, sql: &str, args: &[Value]) -> Result<Done, StoreError> {
    let mut stmt = conn.prepare_cached(sql)?;
    bind_args(&mut stmt, args)?;
    let writes = !stmt.readonly();
    let mut rows = stmt.raw_query();
    while rows.next()?.is_some() {}
    let rows_affected = if writes { conn.changes() } else { 0 };
    Ok(Done { rows_affected })
}

/// What `execute` reports.
pub struct Done {
    rows_affected: u64,
}

impl Done {
    pub fn rows_affected(&self) -> u64 {
        self.rows_affected
    }
}

/// Where a statement runs: a connection the caller holds (a transaction), the read pool,
/// or the writer (a statement there is its own write transaction).
pub enum Target<'a> {
    Connection(&'a mut Connection),
    Pool(&'a ReadPool),
    Writer(&'a Writer),
}

impl<'a> From<&'a mut Connection> for Target<'a> {
    fn from(conn: &'a mut Connection) -> Self {
        Target::Connection(conn)
    }
}

impl<'a> From<&'a ReadPool> for Target<'a> {
    fn from(pool: &'a ReadPool) -> Self {
        Target::Pool(pool)
    }
}

impl<'a> From<&'a Writer> for Target<'a> {
    fn from(writer: &'a Writer) -> Self {
        Target::Writer(writer)
    }
}

impl Target<'_> {
    async fn run<R>(
        self,
        work: impl FnOnce(&Connection) -> Result<R, StoreError> + Send,
    ) -> Result<R, StoreError> {
        match self {
            Target::Connection(conn) => work(conn),
            Target::Pool(pool) => work(&*pool.acquire().await?),
            Target::Writer(writer) => {
                let tx = writer.begin().await?;
                let result = work(&tx)?;
                tx.commit().await?;
                Ok(result)
            }
        }
    }
}

/// A statement and its arguments.
pub struct Query<'q> {
    sql: &'q str,
    args: Vec<Value>,
}

pub fn query(sql: &str) -> Query<'_> {
    Query {
        sql,
        args: Vec::new(),
    }
}

impl<'q> Query<'q> {
    pub fn bind(mut self, value: impl Bind) -> Self {
        self.args.push(value.into_value());
        self
    }

    pub async fn execute<'e>(self, target: impl Into<Target<'e>>) -> Result<Done, StoreError> {
        target
            .into()
            .run(|conn| execute(conn, self.sql, &self.args))
            .await
    }
}

/// A statement whose rows are read as `T`.
pub struct QueryAs<'q, T> {
    query: Query<'q>,
    row: PhantomData<fn() -> T>,
}

pub fn query_as<T: FromRow>(sql: &str) -> QueryAs<'_, T> {
    QueryAs {
        query: query(sql),
        row: PhantomData,
    }
}

impl<T: FromRow + Send> QueryAs<'_, T> {
    pub fn bind(mut self, value: impl Bind) -> Self {
        self.query.args.push(value.into_value());
        self
    }

    async fn fetch<'e>(
        self,
        target: impl Into<Target<'e>>,
        limit: usize,
    ) -> Result<Vec<T>, StoreError> {
        let Query { sql, args } = self.query;
        target
            .into()
            .run(|conn| fetch(conn, sql, &args, limit))
            .await
    }

    pub async fn fetch_all<'e>(self, target: impl Into<Target<'e>>) -> Result<Vec<T>, StoreError> {
        self.fetch(target, usize::MAX).await
    }

    pub async fn fetch_optional<'e>(
        self,
        target: impl Into<Target<'e>>,
    ) -> Result<Option<T>, StoreError> {
        Ok(self.fetch(target, 1).await?.pop())
    }

    pub async fn fetch_one<'e>(self, target: impl Into<Target<'e>>) -> Result<T, StoreError> {
        self.fetch_optional(target)
            .await?
            .ok_or(StoreError::NotFound)
    }
}

/// Builds a statement piece by piece; bound values become numbered parameters.
pub struct QueryBuilder<'a, D> {
    sql: String,
    args: Vec<Value>,
    dialect: PhantomData<(&'a (), D)>,
}

impl<'a, D> QueryBuilder<'a, D> {
    pub fn new(start: impl Into<String>) -> Self {
        QueryBuilder {
            sql: start.into(),
            args: Vec::new(),
            dialect: PhantomData,
        }
    }

    pub fn push(&mut self, sql: impl Display) -> &mut Self {
        use std::fmt::Write;
        let _ = write!(self.sql, "{sql}");
        self
    }

    pub fn push_bind(&mut self, value: impl Bind) -> &mut Self {
        self.args.push(value.into_value());
        let number = self.args.len();
        self.push(format_args!("${number}"))
    }

    pub fn separated(&mut self, separator: &'static str) -> Separated<'_, 'a, D> {
        Separated {
            builder: self,
            separator,
            first: true,
        }
    }

    /// `values (…), (…)`: one parenthesised row per item, its values written by `row`.
    pub fn push_values<I>(
        &mut self,
        items: impl IntoIterator<Item = I>,
        mut row: impl FnMut(Separated<'_, 'a, D>, I),
    ) -> &mut Self {
        self.push("values ");
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.push("(");
            row(self.separated(", "), item);
            self.push(")");
        }
        self
    }

    pub fn build(&mut self) -> Query<'_> {
        Query {
            sql: &self.sql,
            args: std::mem::take(&mut self.args),
        }
    }

    pub fn build_query_as<T: FromRow>(&mut self) -> QueryAs<'_, T> {
        QueryAs {
            query: self.build(),
            row: PhantomData,
        }
    }
}

/// A list inside a `QueryBuilder`: every push after the first is preceded by the separator.
pub struct Separated<'b, 'a, D> {
    builder: &'b mut QueryBuilder<'a, D>,
    separator: &'static str,
    first: bool,
}

impl<D> Separated<'_, '_, D> {
    fn separate(&mut self) {
        if !std::mem::take(&mut self.first) {
            self.builder.push(self.separator);
        }
    }

    pub fn push(&mut self, sql: impl Display) -> &mut Self {
        self.separate();
        self.builder.push(sql);
        self
    }

    pub fn push_bind(&mut self, value: impl Bind) -> &mut Self {
        self.separate();
        self.builder.push_bind(value);
        self
    }
}
