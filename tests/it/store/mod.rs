//! Store conformance: the same cases against SQLite and Postgres.

mod cycle_sql;
mod purge;
mod schema;
mod services;
