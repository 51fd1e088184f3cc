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
    VolumeList,
    VolumeListDetail,
    VolumeShow,
    VolumeCreate,
    VolumeDelete,
    VolumeUpdate,
    VolumeSummary,
    VolumeAction,
    VolumeMetadataList,
    VolumeMetadataCreate,
    VolumeMetadataReplace,
    VolumeMetadataShow,
    VolumeMetadataUpdate,
    VolumeMetadataDelete,
    TypeList,
    TypeShow,
    TypeCreate,
    TypeUpdate,
    TypeDelete,
    ExtraSpecsList,
    ExtraSpecShow,
    ExtraSpecsCreate,
    ExtraSpecUpdate,
    ExtraSpecDelete,
    TypeAction,
    TypeAccessList,
    EncryptionTypeShow,
    EncryptionTypeCreate,
    EncryptionTypeUpdate,
    EncryptionTypeDelete,
    VolumeEncryptionShow,
    QuotaShow,
    QuotaDefaults,
    QuotaUpdate,
    QuotaDelete,
    QuotaClassShow,
    QuotaClassUpdate,
    LimitsShow,
    SnapshotList,
    SnapshotCreate,
    SnapshotShow,
    SnapshotUpdate,
    SnapshotDelete,
    SnapshotAction,
    SnapshotMetadata,
    QosList,
    QosCreate,
    QosShow,
    QosUpdate,
    QosDelete,
    QosDeleteKeys,
    QosAssociations,
    QosAssociate,
    QosDisassociate,
    QosDisassociateAll,
    MessageList,
    MessageShow,
    MessageDelete,
    DefaultTypeList,
    DefaultTypeShow,
    DefaultTypeSet,
    DefaultTypeUnset,
    ResourceFilterList,
    WorkersCleanup,
    AvailabilityZoneList,
    ExtensionList,
    ExtensionShow,
    ServiceList,
    EventList,
    ServiceUpdate,
    PoolList,
    CapabilitiesShow,
    HostList,
    HostShow,
    HostUpdate,
    GroupTypeList,
    GroupTypeShow,
    GroupTypeCreate,
    GroupTypeUpdate,
    GroupTypeDelete,
    GroupSpecsList,
    GroupSpecShow,
    GroupSpecsCreate,
    GroupSpecUpdate,
    GroupSpecDelete,
    GroupList,
    GroupListDetail,
    GroupShow,
    GroupCreate,
    GroupUpdate,
    GroupAction,
    GroupCreateFromSource,
    GroupSnapshotList,
    GroupSnapshotListDetail,
    GroupSnapshotShow,
    GroupSnapshotCreate,
    GroupSnapshotDelete,
    GroupSnapshotAction,
    BackupList,
    BackupListDetail,
    BackupShow,
    BackupCreate,
    BackupUpdate,
    BackupDelete,
    BackupRestore,
    BackupExport,
    BackupImport,
    BackupAction,
    VolumeManage,
    ManageableVolumeCreate,
    ManageableVolumeList,
    SnapshotManage,
    ManageableSnapshotCreate,
    ManageableSnapshotList,
    /// `os-volume-transfer` (every version).
    Transfers,
    /// `volume-transfers` (3.55+).
    VolumeTransfers,
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
            Endpoint::VolumeList => "VolumeList",
            Endpoint::VolumeListDetail => "VolumeListDetail",
            Endpoint::VolumeShow => "VolumeShow",
            Endpoint::VolumeCreate => "VolumeCreate",
            Endpoint::VolumeDelete => "VolumeDelete",
            Endpoint::VolumeUpdate => "VolumeUpdate",
            Endpoint::VolumeSummary => "VolumeSummary",
            Endpoint::VolumeAction => "VolumeAction",
            Endpoint::VolumeMetadataList => "VolumeMetadataList",
            Endpoint::VolumeMetadataCreate => "VolumeMetadataCreate",
            Endpoint::VolumeMetadataReplace => "VolumeMetadataReplace",
            Endpoint::VolumeMetadataShow => "VolumeMetadataShow",
            Endpoint::VolumeMetadataUpdate => "VolumeMetadataUpdate",
            Endpoint::VolumeMetadataDelete => "VolumeMetadataDelete",
            Endpoint::TypeList => "TypeList",
            Endpoint::TypeShow => "TypeShow",
            Endpoint::TypeCreate => "TypeCreate",
            Endpoint::TypeUpdate => "TypeUpdate",
            Endpoint::TypeDelete => "TypeDelete",
            Endpoint::ExtraSpecsList => "ExtraSpecsList",
            Endpoint::ExtraSpecShow => "ExtraSpecShow",
            Endpoint::ExtraSpecsCreate => "ExtraSpecsCreate",
            Endpoint::ExtraSpecUpdate => "ExtraSpecUpdate",
            Endpoint::ExtraSpecDelete => "ExtraSpecDelete",
            Endpoint::TypeAction => "TypeAction",
            Endpoint::TypeAccessList => "TypeAccessList",
            Endpoint::EncryptionTypeShow => "EncryptionTypeShow",
            Endpoint::EncryptionTypeCreate => "EncryptionTypeCreate",
            Endpoint::EncryptionTypeUpdate => "EncryptionTypeUpdate",
            Endpoint::EncryptionTypeDelete => "EncryptionTypeDelete",
            Endpoint::VolumeEncryptionShow => "VolumeEncryptionShow",
            Endpoint::QuotaShow => "QuotaShow",
            Endpoint::QuotaDefaults => "QuotaDefaults",
            Endpoint::QuotaUpdate => "QuotaUpdate",
            Endpoint::QuotaDelete => "QuotaDelete",
            Endpoint::QuotaClassShow => "QuotaClassShow",
            Endpoint::QuotaClassUpdate => "QuotaClassUpdate",
            Endpoint::LimitsShow => "LimitsShow",
            Endpoint::SnapshotList => "SnapshotList",
            Endpoint::SnapshotCreate => "SnapshotCreate",
            Endpoint::SnapshotShow => "SnapshotShow",
            Endpoint::SnapshotUpdate => "SnapshotUpdate",
            Endpoint::SnapshotDelete => "SnapshotDelete",
            Endpoint::SnapshotAction => "SnapshotAction",
            Endpoint::SnapshotMetadata => "SnapshotMetadata",
            Endpoint::QosList => "QosList",
            Endpoint::QosCreate => "QosCreate",
            Endpoint::QosShow => "QosShow",
            Endpoint::QosUpdate => "QosUpdate",
            Endpoint::QosDelete => "QosDelete",
            Endpoint::QosDeleteKeys => "QosDeleteKeys",
            Endpoint::QosAssociations => "QosAssociations",
            Endpoint::QosAssociate => "QosAssociate",
            Endpoint::QosDisassociate => "QosDisassociate",
            Endpoint::QosDisassociateAll => "QosDisassociateAll",
            Endpoint::MessageList => "MessageList",
            Endpoint::MessageShow => "MessageShow",
            Endpoint::MessageDelete => "MessageDelete",
            Endpoint::DefaultTypeList => "DefaultTypeList",
            Endpoint::DefaultTypeShow => "DefaultTypeShow",
            Endpoint::DefaultTypeSet => "DefaultTypeSet",
            Endpoint::DefaultTypeUnset => "DefaultTypeUnset",
            Endpoint::ResourceFilterList => "ResourceFilterList",
            Endpoint::WorkersCleanup => "WorkersCleanup",
            Endpoint::AvailabilityZoneList => "AvailabilityZoneList",
            Endpoint::ExtensionList => "ExtensionList",
            Endpoint::ExtensionShow => "ExtensionShow",
            Endpoint::ServiceList => "ServiceList",
            Endpoint::EventList => "EventList",
            Endpoint::ServiceUpdate => "ServiceUpdate",
            Endpoint::PoolList => "PoolList",
            Endpoint::CapabilitiesShow => "CapabilitiesShow",
            Endpoint::HostList => "HostList",
            Endpoint::HostShow => "HostShow",
            Endpoint::HostUpdate => "HostUpdate",
            Endpoint::GroupTypeList => "GroupTypeList",
            Endpoint::GroupTypeShow => "GroupTypeShow",
            Endpoint::GroupTypeCreate => "GroupTypeCreate",
            Endpoint::GroupTypeUpdate => "GroupTypeUpdate",
            Endpoint::GroupTypeDelete => "GroupTypeDelete",
            Endpoint::GroupSpecsList => "GroupSpecsList",
            Endpoint::GroupSpecShow => "GroupSpecShow",
            Endpoint::GroupSpecsCreate => "GroupSpecsCreate",
            Endpoint::GroupSpecUpdate => "GroupSpecUpdate",
            Endpoint::GroupSpecDelete => "GroupSpecDelete",
            Endpoint::GroupList => "GroupList",
            Endpoint::GroupListDetail => "GroupListDetail",
            Endpoint::GroupShow => "GroupShow",
            Endpoint::GroupCreate => "GroupCreate",
            Endpoint::GroupUpdate => "GroupUpdate",
            Endpoint::GroupAction => "GroupAction",
            Endpoint::GroupCreateFromSource => "GroupCreateFromSource",
            Endpoint::GroupSnapshotList => "GroupSnapshotList",
            Endpoint::GroupSnapshotListDetail => "GroupSnapshotListDetail",
            Endpoint::GroupSnapshotShow => "GroupSnapshotShow",
            Endpoint::GroupSnapshotCreate => "GroupSnapshotCreate",
            Endpoint::GroupSnapshotDelete => "GroupSnapshotDelete",
            Endpoint::GroupSnapshotAction => "GroupSnapshotAction",
            Endpoint::BackupList => "BackupList",
            Endpoint::BackupListDetail => "BackupListDetail",
            Endpoint::BackupShow => "BackupShow",
            Endpoint::BackupCreate => "BackupCreate",
            Endpoint::BackupUpdate => "BackupUpdate",
            Endpoint::BackupDelete => "BackupDelete",
            Endpoint::BackupRestore => "BackupRestore",
            Endpoint::BackupExport => "BackupExport",
            Endpoint::BackupImport => "BackupImport",
            Endpoint::BackupAction => "BackupAction",
            Endpoint::VolumeManage => "VolumeManage",
            Endpoint::ManageableVolumeCreate => "ManageableVolumeCreate",
            Endpoint::ManageableVolumeList => "ManageableVolumeList",
            Endpoint::SnapshotManage => "SnapshotManage",
            Endpoint::ManageableSnapshotCreate => "ManageableSnapshotCreate",
            Endpoint::ManageableSnapshotList => "ManageableSnapshotList",
            Endpoint::Transfers => "Transfers",
            Endpoint::VolumeTransfers => "VolumeTransfers",
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
            Endpoint::DefaultTypeList
            | Endpoint::DefaultTypeShow
            | Endpoint::DefaultTypeSet
            | Endpoint::DefaultTypeUnset => ApiVersion::new(3, 62),
            Endpoint::ResourceFilterList => ApiVersion::new(3, 33),
            Endpoint::WorkersCleanup => ApiVersion::new(3, 24),
            Endpoint::MessageList | Endpoint::MessageShow | Endpoint::MessageDelete => {
                ApiVersion::new(3, 3)
            }
            Endpoint::VolumeSummary => ApiVersion::new(3, 12),
            Endpoint::VolumeTransfers => ApiVersion::new(3, 55),
            Endpoint::GroupTypeList
            | Endpoint::GroupTypeShow
            | Endpoint::GroupTypeCreate
            | Endpoint::GroupTypeUpdate
            | Endpoint::GroupTypeDelete
            | Endpoint::GroupSpecsList
            | Endpoint::GroupSpecShow
            | Endpoint::GroupSpecsCreate
            | Endpoint::GroupSpecUpdate
            | Endpoint::GroupSpecDelete => ApiVersion::new(3, 11),
            Endpoint::GroupList
            | Endpoint::GroupListDetail
            | Endpoint::GroupShow
            | Endpoint::GroupCreate
            | Endpoint::GroupUpdate
            | Endpoint::GroupAction => ApiVersion::new(3, 13),
            Endpoint::GroupCreateFromSource
            | Endpoint::GroupSnapshotList
            | Endpoint::GroupSnapshotListDetail
            | Endpoint::GroupSnapshotShow
            | Endpoint::GroupSnapshotCreate
            | Endpoint::GroupSnapshotDelete => ApiVersion::new(3, 14),
            Endpoint::GroupSnapshotAction => ApiVersion::new(3, 19),
            Endpoint::BackupUpdate => ApiVersion::new(3, 9),
            Endpoint::ManageableVolumeCreate
            | Endpoint::ManageableVolumeList
            | Endpoint::ManageableSnapshotCreate
            | Endpoint::ManageableSnapshotList => ApiVersion::new(3, 8),
            _ => ApiVersion::MIN,
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
pub const UNIMPLEMENTED_COLLECTIONS: &[&str] =
    &["clusters", "consistencygroups", "cgsnapshots", "workers"];
