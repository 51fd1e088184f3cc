//! The subcommands of the binary: `serve` (the default), `migrate`, `check` and `policy`.

pub mod check;
pub mod connections;
mod events;
mod healthcheck;
pub mod import_cinder;
mod migrate;
mod policy;
mod purge;
mod serve;

use std::net::SocketAddr;

pub use events::print_events;
pub use healthcheck::healthcheck;
pub use migrate::{check as check_migrations, migrate};
pub use policy::print_policy;
pub use purge::purge;
pub use serve::{run, serve};

use crate::cli::DatabaseArgs;
use crate::policy::file::PolicyFileError;
use crate::service::RegisterError;
use crate::store::{self, ConnectOptions, SchemaUse};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] store::ConnectError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "refusing to serve noauth on the non-loopback address {0}: anyone could act as admin. \
         Use --listen 127.0.0.1:PORT, another --auth-strategy, or --allow-insecure-noauth"
    )]
    InsecureNoauth(SocketAddr),
    #[error("server error: {0}")]
    Serve(#[source] std::io::Error),
    #[error("configuration: {0}")]
    Config(String),
    #[error("purge stopped: {0} (what was purged before stays purged; run it again)")]
    Purge(#[source] store::StoreError),
    #[error("reading events: {0}")]
    Events(#[source] store::StoreError),
    #[error("policy file: {0}")]
    Policy(#[source] PolicyFileError),
    #[error(transparent)]
    Register(#[from] RegisterError),
}

fn connect_options(db: &DatabaseArgs, migrate: bool, upkeep: bool) -> ConnectOptions {
    ConnectOptions {
        url: db.database_url.clone(),
        max_connections: db.db_max_connections,
        acquire_timeout: db.acquire_timeout(),
        schema: if migrate {
            SchemaUse::Migrate
        } else {
            SchemaUse::Require
        },
        upkeep,
        record_events: true,
        // A serving or migrating process waits for the database to come (as Cinder's
        // services and `cinder-manage db sync` do); a one-off command fails at once.
        start_wait: if upkeep || migrate {
            db.start_wait()
        } else {
            crate::store::StartWait::ONCE
        },
    }
}
