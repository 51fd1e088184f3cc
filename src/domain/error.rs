//! Errors a use case can end with. Each says what went wrong, with the facts a message
//! needs; how it looks on the wire (status, fault name, Cinder's exact text) is decided in
//! one place, `api::faults`.

use super::attachment::AttachmentCall;
use super::ids::{AttachmentId, QosSpecsId, SnapshotId, VolumeId, VolumeTypeId};
use super::legacy_connect::{LegacyStep, LegacyWhy};
use super::snapshot::SnapshotStatus;
use super::volume::VolumeStatus;

/// What can go wrong with volume types, their specs, access lists and projects' defaults.
#[derive(Debug, thiserror::Error)]
pub enum TypeError {
    #[error("volume type {0} exists")]
    Exists(String),
    /// Specs of a type that volumes use cannot change.
    #[error("volume type in use")]
    InUse,
    /// A type that volumes use cannot be deleted.
    #[error("volume type still in use")]
    StillInUse,
    #[error("empty volume type name")]
    NameEmpty,
    #[error("nothing to update")]
    UpdateEmpty,
    #[error("volume type {0} is the default")]
    DefaultUndeletable(VolumeTypeId),
    /// A project's default named a type that is not one (Cinder answers 400 with the
    /// type lookup's own words).
    #[error("default type: {0}")]
    DefaultNotAType(Box<DomainError>),
    #[error("project {0} has no default type of its own")]
    ProjectDefaultNotFound(String),
    #[error("cacheable with multiattach")]
    CacheableWithMultiattach,
    #[error("extra spec {key} must be {expected}")]
    InvalidExtraSpec {
        key: &'static str,
        value: Option<String>,
        expected: &'static str,
    },
    #[error("project {project} may already use volume type {volume_type}")]
    AccessExists {
        volume_type: VolumeTypeId,
        project: String,
    },
    #[error("project {project} has no access to volume type {volume_type}")]
    AccessNotFound {
        volume_type: VolumeTypeId,
        project: String,
    },
    /// Access lists belong to private types only.
    #[error("public volume types have no access list")]
    AccessOfPublicType { listing: bool },
}

/// What can go wrong with groups and group types (ids as the caller wrote them).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    #[error("group type {0} not found")]
    TypeNotFound(String),
    /// A group type asked for by a name (not an id) that no live type has.
    #[error("group type named {0} not found")]
    TypeNameNotFound(String),
    /// `GET /group_types/default` with no default group type configured.
    #[error("no default group type")]
    NoDefaultType,
    #[error("group type {0} exists")]
    TypeExists(String),
    /// A spec asked for by key (`show`) that the type does not have.
    #[error("group type {type_id} has no spec {key}")]
    SpecNotShown { type_id: String, key: String },
    /// A spec to delete that the type does not have.
    #[error("group type {type_id} has no spec {key} to delete")]
    SpecNotFound { type_id: String, key: String },
    /// An update that Cinder's checks refuse, with their words.
    #[error("{0}")]
    InvalidTypeUpdate(&'static str),
    /// `PUT .../group_specs/{key}` whose body names another key.
    #[error("request body and URI mismatch")]
    SpecBodyMismatch,
    #[error("group type {0} is in use")]
    TypeInUse(String),
    #[error("group {0} not found")]
    NotFound(String),
    /// Cinder's `InvalidGroup`, with its reason.
    #[error("invalid group: {0}")]
    Invalid(String),
    /// Cinder's `InvalidVolume` of a membership change, with its reason.
    #[error("invalid volume: {0}")]
    InvalidMember(String),
    /// Cinder's `InvalidGroupStatus`, with its reason.
    #[error("invalid group status: {0}")]
    InvalidStatus(String),
    #[error("group snapshot {0} not found")]
    SnapshotNotFound(String),
    /// Cinder's `InvalidGroupSnapshot`, with its reason.
    #[error("invalid group snapshot: {0}")]
    InvalidSnapshot(String),
    /// Cinder's `InvalidGroupSnapshotStatus`, with its reason.
    #[error("invalid group snapshot status: {0}")]
    InvalidSnapshotStatus(String),
    /// Cinder's `InvalidInput` of a volume created in a group.
    #[error("invalid input: {0}")]
    InvalidInput(String),
}

/// Backup errors, as Cinder's backup API raises them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackupError {
    #[error("backup {0} not found")]
    NotFound(String),
    /// `InvalidBackup`, with its reason.
    #[error("invalid backup: {0}")]
    Invalid(String),
    /// `InvalidVolume` of a backup or restore, with its reason.
    #[error("invalid volume: {0}")]
    InvalidVolume(String),
    /// `InvalidSnapshot` of a backup of a snapshot, with its reason.
    #[error("invalid snapshot: {0}")]
    InvalidSnapshot(String),
    /// `InvalidInput`, with its reason.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// `InvalidParameterValue`: the whole text.
    #[error("{0}")]
    InvalidParameter(String),
    /// No backup service runs (no repository configured): Cinder's 503.
    #[error("no backup service")]
    NoService,
}

/// Errors of adopting existing storage (`manage`), as Cinder raises them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManageError {
    /// `InvalidInput` (a bad reference, an unknown host), with its reason.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// `InvalidVolume`, with its reason.
    #[error("invalid volume: {0}")]
    InvalidVolume(String),
    /// `InvalidVolumeType`, with its reason.
    #[error("invalid volume type: {0}")]
    InvalidVolumeType(String),
    /// The backend could not list its storage.
    #[error("{0}")]
    BackendFailed(String),
}

/// Errors of the actions that move a volume's data or its place (revert, migration,
/// re-image, the completions Nova calls), as Cinder raises them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RevertError {
    #[error("volume {0} has no snapshots")]
    NoSnapshots(VolumeId),
    /// The snapshot named (as written, `None` when missing) is not the latest.
    #[error("snapshot {snapshot} is not the latest of volume {volume}")]
    NotLatest { snapshot: String, volume: VolumeId },
    #[error("volume {volume} and snapshot {snapshot} differ in size")]
    SizeDiffers {
        snapshot: SnapshotId,
        volume: VolumeId,
    },
    #[error("revert of volume {volume} refused: {refusal:?}")]
    Refused {
        refusal: super::revert::RevertRefusal,
        snapshot: SnapshotId,
        volume: VolumeId,
    },
}

/// Errors of `os-reimage`, as Cinder raises them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReimageError {
    #[error("the volume is attached to more than one server")]
    SeveralServers,
    #[error("volume {volume} is {status}")]
    Status {
        volume: VolumeId,
        status: VolumeStatus,
        reserved_allowed: bool,
    },
}

/// Errors of moving a volume to another backend, as Cinder raises them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigrationError {
    /// No backend of this process has that host (Cinder's `InvalidHost`).
    #[error("no available service named {0}")]
    NoService(String),
    #[error("volume {volume} cannot move: {refusal:?}")]
    Refused {
        volume: VolumeId,
        refusal: super::migration::MigrationRefusal,
    },
    /// The destination already holds storage under the volume's id.
    #[error("{0} already holds the volume's storage")]
    DestinationHolds(String),
    /// The destination could not be asked.
    #[error("the destination backend: {0}")]
    Backend(String),
    /// `os-migrate_volume_completion` naming a volume not mid-migration ("Source" or
    /// "Destination").
    #[error("{0} volume not mid-migration")]
    NotMidMigration(&'static str),
    /// `os-migrate_volume_completion` naming a destination of another migration.
    #[error("destination has migration_status {found}, expected {expected}")]
    UnexpectedTarget { found: String, expected: String },
}

/// The cause behind an unavailable or broken database (kept for the log, never shown).
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    // --- not found; ids as the caller wrote them
    #[error("volume {0} not found")]
    VolumeNotFound(String),
    #[error("attachment {0} not found")]
    AttachmentNotFound(String),
    #[error("volume type {0} not found")]
    VolumeTypeNotFound(String),
    #[error("volume type named {0} not found")]
    VolumeTypeNameNotFound(String),
    #[error("message {0} not found")]
    MessageNotFound(String),
    #[error("marker {0} not found")]
    MarkerNotFound(String),
    #[error("volume {volume} has no metadata key {key}")]
    MetadataKeyNotFound { volume: VolumeId, key: String },
    #[error("volume type {volume_type} has no extra spec {key}")]
    ExtraSpecNotFound { volume_type: String, key: String },

    // --- attachments
    #[error("volume {volume} in {status} cannot be reserved")]
    ReservationRefused {
        volume: VolumeId,
        status: VolumeStatus,
        multiattach: bool,
    },
    /// Creating or updating (`call`) an attachment of a volume in an error state.
    #[error("volume {volume} is in {status}")]
    VolumeInError {
        volume: VolumeId,
        status: VolumeStatus,
        call: AttachmentCall,
    },
    #[error("duplicate connectors on volume {0}")]
    DuplicateConnector(VolumeId),
    /// The volume holds as many live attachments as it may (`from_type`: the type's
    /// `attach:max_attachments`, else the service's default).
    #[error("volume {volume} has reached its limit of {limit} attachments")]
    AttachmentLimitReached {
        volume: VolumeId,
        limit: u32,
        from_type: bool,
    },
    #[error("volume {0} is being migrated")]
    MigratingVolume(VolumeId),
    /// A single-writer volume already has a writer.
    #[error("attachment {holder} holds write access to volume {volume}")]
    WriterHeld {
        volume: VolumeId,
        holder: AttachmentId,
    },
    #[error("the connector lacks {0}")]
    ConnectorMissing(String),
    /// The backend could not export the volume; its text is safe to show.
    #[error("the backend could not connect: {0}")]
    ConnectFailed(String),
    /// `os-initialize_connection` failed in the backend (its reason is logged; Cinder's
    /// answer does not carry it).
    #[error("Unable to fetch connection information from backend.")]
    ConnectionInfoUnavailable,
    /// An attachment create or update (`call`) that failed on its way.
    #[error("attachment work failed: {cause}")]
    AttachmentFailed {
        call: AttachmentCall,
        cause: Box<DomainError>,
    },
    #[error("os-reserve refused in {status}")]
    LegacyReserveRefused {
        status: VolumeStatus,
        multiattach: bool,
    },
    #[error("os-begin_detaching refused: not attached")]
    NotAttached,
    /// `os-initialize_connection`, `os-attach` or `os-detach` refused.
    #[error("{step:?} refused: {why:?}")]
    LegacyRefused { step: LegacyStep, why: LegacyWhy },
    /// `os-attach` asking a read-only volume for write access.
    #[error("attach mode {mode} refused for read-only volume {volume}")]
    InvalidAttachMode {
        volume: VolumeId,
        mode: &'static str,
    },
    /// `os-detach` naming an attachment of another volume.
    #[error("the attachment belongs to another volume")]
    MismatchedAttachment,
    /// A user (no service token) ending an attachment server `.0` may still use: it
    /// must be detached through Nova (`.0` empty when no single attachment is meant).
    #[error("server {0:?} may still use the attachment")]
    NovaUsesAttachment(String),
    /// Nova could not say whether server `.0` still uses the attachment.
    #[error("Nova could not be asked about server {0}")]
    NovaUnreachable(String),

    // --- volumes
    #[error("invalid size {0:?}")]
    InvalidSize(Option<i64>),
    #[error("invalid availability zone {0}")]
    InvalidAvailabilityZone(String),
    #[error("the backend {host} of volume {volume} is not configured here")]
    BackendNotConfigured { host: String, volume: VolumeId },
    #[error("delete refused (force: {force})")]
    DeleteRefused { force: bool },
    #[error("extend of volume {volume} refused in {status}")]
    ExtendRefused {
        volume: VolumeId,
        status: VolumeStatus,
        /// The extend was of an attached volume (which must be `in-use`).
        attached: bool,
    },
    #[error("extend to {requested} is not larger than {current}")]
    ExtendNotLarger { current: i64, requested: i64 },
    #[error("readonly flag of volume {volume} refused in {status}")]
    ReadonlyRefused {
        volume: VolumeId,
        status: VolumeStatus,
    },
    #[error("retype refused")]
    RetypeRefused,
    #[error("a multiattach retype needs an available volume, not {0}")]
    MultiattachRetypeRefused(VolumeStatus),
    #[error("a single-writer retype needs an available volume, not {0}")]
    SingleWriterRetypeRefused(VolumeStatus),
    #[error("the volume is in maintenance")]
    UpdateDuringMaintenance,
    #[error("metadata change refused in {status}")]
    MetadataChangeRefused {
        removing: bool,
        status: VolumeStatus,
    },
    /// `os-extend_volume_completion` with no extend left for Nova to finish (`extending`:
    /// whether the volume was being extended at all).
    #[error("no extend to complete")]
    ExtendCompletionRefused { extending: bool },
    /// A non-admin's image metadata naming a property the service reserves.
    #[error("image property {0} is reserved")]
    ReservedImageProperty(String),
    #[error("cannot reset the status to deleting")]
    ResetToDeleting,
    #[error("cannot reset to in-use without attachments")]
    ResetToInUseWithoutAttachments,
    /// Work that must finish was cut short (a task that panicked or was aborted).
    #[error("{what} was interrupted: {detail}")]
    Interrupted { what: &'static str, detail: String },

    // --- groups, group types
    #[error(transparent)]
    Group(#[from] GroupError),
    #[error(transparent)]
    Backup(#[from] BackupError),
    #[error(transparent)]
    Manage(#[from] ManageError),
    #[error(transparent)]
    Revert(#[from] RevertError),
    #[error(transparent)]
    Migration(#[from] MigrationError),
    #[error(transparent)]
    Reimage(#[from] ReimageError),

    // --- volume types
    #[error(transparent)]
    Type(#[from] TypeError),
    #[error("no resource {0} pending cleanup")]
    NothingPendingCleanup(uuid::Uuid),
    /// More than `MAX_METADATA_ITEMS` metadata items on one volume.
    #[error("{0} metadata items")]
    TooManyMetadataItems(usize),

    // --- snapshots
    #[error("snapshot {0} not found")]
    SnapshotNotFound(String),
    #[error("snapshot metadata key {key} not found")]
    SnapshotMetadataKeyNotFound { snapshot: SnapshotId, key: String },
    #[error("volume {volume} cannot be snapshotted in {status}")]
    SnapshotRefused {
        volume: VolumeId,
        status: VolumeStatus,
        in_use_allowed: bool,
    },
    /// `os-force_detach` names an attachment that does not exist (as written).
    #[error("no attachment {0} to force-detach")]
    ForceDetachNotFound(String),
    #[error("snapshot cannot be deleted")]
    SnapshotDeleteRefused,
    /// A snapshot (`snapshot` set) or volume cannot go while volume `creating` is being
    /// made from it.
    #[error("volume {creating} is being created from it")]
    SourceOfCreatingVolume {
        snapshot: Option<SnapshotId>,
        volume: VolumeId,
        creating: VolumeId,
    },
    /// `os-update_snapshot_status` refused: from this status at all (`requested` None),
    /// or to `requested`.
    #[error("snapshot status {current} cannot be updated")]
    SnapshotStatusUpdate {
        current: SnapshotStatus,
        requested: Option<SnapshotStatus>,
    },
    /// `force=false` at 3.66+.
    #[error("force flag invalid")]
    SnapshotForceFlag,
    /// A volume made from a snapshot that is not `available`.
    #[error("source snapshot not available")]
    SourceSnapshotUnavailable,
    /// A clone of a volume that is not `available` or `in-use`.
    #[error("source volume unavailable")]
    SourceVolumeUnavailable,
    /// A volume made from a snapshot or cloned must stay in its source's zone.
    #[error("zone differs from the source's")]
    ZoneOfSource { from_snapshot: bool },
    /// A new volume smaller than its source.
    #[error("size {size} below source {source_size}")]
    SmallerThanSource {
        size: i64,
        source_size: i64,
        from_snapshot: bool,
    },

    #[error("volume {0} has no such image metadata")]
    ImageMetadataNotFound(VolumeId),

    // --- encryption
    /// `create`, `update` or `delete` of a type's encryption while volumes have the type.
    #[error("volume type in use: cannot {0} its encryption")]
    EncryptionTypeInUse(&'static str),
    #[error("volume type {0} has encryption already")]
    EncryptionExists(String),
    #[error("volume type {0} has no encryption")]
    EncryptionNotFound(String),
    #[error("encrypted multiattach volume")]
    EncryptedMultiattach,
    #[error("retype to an encrypted multiattach type")]
    EncryptedMultiattachRetype,
    /// A volume of an encrypted type, and no key manager to give it a key.
    #[error("volume type {0} is encrypted and no key manager is configured")]
    NoKeyManager(String),
    /// The key manager failed to make or copy a volume's key (what it said is logged).
    #[error("key manager error")]
    KeyManagerFailed,
    /// An encrypted type without a cipher: no key algorithm to ask for.
    #[error("invalid encryption spec")]
    InvalidEncryptionSpec,
    #[error("the type's encryption changed during the create")]
    EncryptionChangedDuringCreate,
    /// A retype that would change whether (or how) the volume is encrypted.
    #[error("retype changes encryption")]
    RetypeChangesEncryption,

    // --- QoS specs
    #[error("QoS specs {0} not found")]
    QosSpecsNotFound(String),
    #[error("QoS specs {0} exist")]
    QosSpecsExists(String),
    #[error("QoS specs name empty")]
    QosNameEmpty,
    #[error("QoS consumer {0:?}")]
    InvalidQosConsumer(String),
    #[error("QoS specs in use")]
    QosSpecsInUse,
    #[error("QoS specs {specs} have no key {key}")]
    QosKeyNotFound { specs: QosSpecsId, key: String },
    #[error("volume type {volume_type} has QoS specs {specs}")]
    QosTypeTaken {
        volume_type: String,
        specs: QosSpecsId,
    },

    // --- quotas
    #[error("over quota: {0:?}")]
    OverQuota(crate::domain::quota::OverQuota),
    #[error("quota {} below usage", .0.resource)]
    QuotaBelowUsage(crate::domain::quota::BelowUsage),
    /// A quota-set body naming resources that do not exist.
    #[error("bad quota keys {keys:?}")]
    BadQuotaKeys { keys: Vec<String>, class: bool },
    /// A limit that is not an integer from -1 to `MAX_LIMIT`.
    #[error("bad quota value for {key}")]
    BadQuotaValue { key: String, why: &'static str },

    // --- services and transfers
    #[error("no service {binary} on host {host}")]
    ServiceNotFound { host: String, binary: String },
    #[error("no volume service on {0}")]
    NoVolumeServiceOn(String),
    #[error("no backend {0} to report capabilities of")]
    CapabilitiesNotFound(String),
    #[error("retype needs a migration")]
    RetypeNeedsMigration,
    /// A retype of a volume that is not `available` would change QoS specs a host applies
    /// (consumer `front-end` or `both`): the host cannot be told.
    #[error("retype cannot change front-end qos specs of volume {0}")]
    RetypeChangesFrontEndQos(VolumeId),
    #[error("the volume's backend is frozen")]
    BackendFrozen,
    #[error("host {0} not found")]
    HostNotFound(String),
    #[error("transfer {0} not found")]
    TransferNotFound(String),
    /// A transfer change refused, with Cinder's whole reason.
    #[error("transfer refused: {0}")]
    TransferRefused(String),
    /// An image request refused (the image cannot be used, Glance refused, a bad
    /// upload), with the whole reason shown to the caller.
    #[error("image request refused: {0}")]
    ImageRefused(String),
    /// `imageRef` names several images the caller can see (Cinder's 409).
    #[error("several images are named {0}")]
    ImageNameAmbiguous(String),
    #[error("wrong key for transfer {0}")]
    InvalidAuthKey(String),

    // --- access and infrastructure
    #[error("policy does not allow {0}")]
    PolicyDenied(&'static str),
    #[error("database unavailable: {0}")]
    Unavailable(#[source] Cause),
    /// The database went away while the change was being committed and did not answer
    /// again in time to tell whether it was stored.
    #[error("commit outcome unknown: {0}")]
    InDoubt(#[source] Cause),
    /// A write met a row that only one of its kind may be (a unique constraint): another
    /// change of the same resource got there first. Nothing was written.
    #[error("conflicting change: {0}")]
    Conflict(#[source] Cause),
    #[error("internal error: {0}")]
    Internal(#[source] Cause),
}

impl DomainError {
    /// Failures of work that should have succeeded (shown as 500 with their text).
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            DomainError::ConnectFailed(_)
                | DomainError::ConnectionInfoUnavailable
                | DomainError::BackendNotConfigured { .. }
                | DomainError::AttachmentFailed { .. }
                | DomainError::Interrupted { .. }
        )
    }
}
