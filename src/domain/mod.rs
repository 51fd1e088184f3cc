//! The rules of the service, free of HTTP and SQL.

pub mod attach;
pub mod attachment;
pub mod backup;
pub mod cinder_import;
pub mod consistency;
pub mod context;
pub mod encryption;
pub mod error;
pub mod event;
pub mod export;
pub mod group;
pub mod group_snapshot;
pub mod group_type;
pub mod ids;
pub mod image_properties;
pub mod legacy_attach;
pub mod legacy_connect;
pub mod message;
pub mod outcome;
pub mod paging;
pub mod placement;
pub mod qos;
pub mod quota;
pub mod refusal;
pub mod service_record;
pub mod snapshot;
pub mod snapshot_rules;
mod string_enum;
pub mod time;
pub mod transfer;
pub mod volume;
pub mod volume_rules;
pub mod volume_type;

pub use context::RequestContext;
pub use error::DomainError;
pub use outcome::Outcome;
