//! Store conformance: the same cases against SQLite and Postgres.

mod schema;
mod services;
