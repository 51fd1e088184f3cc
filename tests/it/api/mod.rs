//! API behaviour over `oneshot`, per store.

mod attachments;
mod auth;
mod faults;
mod routing;
mod types;
mod versions;
mod volume_actions;
mod volume_races;
mod volumes;
