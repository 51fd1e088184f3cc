//! Every Cinder operation we route, by name: used for log spans, the minimum microversion,
//! and the `notImplemented` fault of operations not built yet.

use super::error::ApiError;
use super::microversion::ApiVersion;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    VersionShow,
    AttachmentList,
    AttachmentListDetail,
    AttachmentShow,
    AttachmentCreate,
    AttachmentUpdate,
    AttachmentDelete,
    AttachmentComplete,
    /// A whole Cinder collection that this service does not offer (yet), by its URL name.
    Unimplemented(&'static str),
}

impl Endpoint {
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::VersionShow => "VersionShow",
            Endpoint::AttachmentList => "AttachmentList",
            Endpoint::AttachmentListDetail => "AttachmentListDetail",
            Endpoint::AttachmentShow => "AttachmentShow",
            Endpoint::AttachmentCreate => "AttachmentCreate",
            Endpoint::AttachmentUpdate => "AttachmentUpdate",
            Endpoint::AttachmentDelete => "AttachmentDelete",
            Endpoint::AttachmentComplete => "AttachmentComplete",
            Endpoint::Unimplemented(collection) => collection,
        }
    }

    /// The lowest microversion at which Cinder routes this operation; below it, 404.
    pub fn min_version(self) -> ApiVersion {
        match self {
            Endpoint::AttachmentList
            | Endpoint::AttachmentListDetail
            | Endpoint::AttachmentShow
            | Endpoint::AttachmentCreate
            | Endpoint::AttachmentUpdate
            | Endpoint::AttachmentDelete => ApiVersion::new(3, 27),
            Endpoint::AttachmentComplete => ApiVersion::new(3, 44),
            Endpoint::VersionShow | Endpoint::Unimplemented(_) => ApiVersion::MIN,
        }
    }

    /// The fault for an operation that is routed but not built.
    pub fn not_implemented(self) -> ApiError {
        ApiError::NotImplemented(format!(
            "{} is not implemented by cinder-attach.",
            self.name()
        ))
    }
}

/// Cinder v3 collections (core and extensions) that are not served here; any request
/// under them gets `501 notImplemented` instead of a bare 404.
pub const UNIMPLEMENTED_COLLECTIONS: &[&str] = &[
    "volumes",
    "types",
    "snapshots",
    "backups",
    "messages",
    "clusters",
    "group_types",
    "groups",
    "group_snapshots",
    "limits",
    "consistencygroups",
    "cgsnapshots",
    "manageable_volumes",
    "manageable_snapshots",
    "workers",
    "resource_filters",
    "volume-transfers",
    "os-volume-transfer",
    "default-types",
    "os-services",
    "os-hosts",
    "os-availability-zone",
    "extensions",
    "qos-specs",
    "os-quota-sets",
    "os-quota-class-sets",
    "scheduler-stats",
    "capabilities",
    "os-snapshot-manage",
    "os-volume-manage",
];
