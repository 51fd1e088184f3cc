//! Store conformance: the same cases against SQLite and Postgres.

mod cycle_sql;
mod schema;
mod services;
