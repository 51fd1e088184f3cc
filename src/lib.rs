//! cinder-attach: a block-storage control plane that speaks the OpenStack Cinder v3 API.
//!
//! Layers, outermost first: `api` translates HTTP to calls into `service`, which holds the
//! use cases and asks `domain` for the rules; `store` owns every SQL statement.

pub mod api;
pub mod auth;
pub mod backend;
pub mod backup;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod commit_watch;
pub mod compute;
pub mod domain;
pub mod image;
pub mod keys;
pub mod metrics;
pub mod notify;
pub mod origin;
pub mod policy;
pub mod service;
pub mod store;
pub mod telemetry;
pub mod tls_client;
pub mod upstream;

pub use api::{build_app, AppState};
