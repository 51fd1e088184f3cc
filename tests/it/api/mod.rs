//! API behaviour over `oneshot`, per store.

mod attachment_create;
mod attachment_delete;
mod attachment_list;
mod attachment_races;
mod attachment_update;
mod attachments;
mod auth;
mod faults;
mod health;
mod hostile;
mod legacy_attach;
mod metrics;
mod multiattach;
mod qos_specs;
mod quotas;
mod routing;
mod service_info;
mod sharing;
mod snapshots;
mod trusted_headers;
mod types;
mod versions;
mod volume_actions;
mod volume_metadata;
mod volume_races;
mod volumes;
