//! Store conformance: the same cases against SQLite and Postgres.

mod access_turns;
mod cycle_sql;
mod purge;
mod schema;
mod services;
