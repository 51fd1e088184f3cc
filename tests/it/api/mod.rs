//! API behaviour over `oneshot`, per store.

mod attachments;
mod auth;
mod faults;
mod routing;
mod versions;
