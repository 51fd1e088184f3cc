//! Why a write was refused: one type per kind of write, holding only what that write can
//! refuse, so the service answers each with an exhaustive match (a new reason does not
//! compile until someone says what the caller hears). Writes that cannot be refused use
//! `std::convert::Infallible`.
//!
//! The families, in the order of the use cases: attaching (new flow and legacy actions),
//! volumes, snapshots, types and QoS, quotas and transfers.

use super::ids::{AttachmentId, QosSpecsId, SnapshotId, VolumeId};
use super::quota::OverQuota;
use super::snapshot::SnapshotStatus;
use super::volume::VolumeStatus;

// --- Attaching -------------------------------------------------------------------------

/// A reservation, connection or completion of an attachment (`domain::attach`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachRefusal {
    /// The volume's status does not allow a new reservation (for the multiattach flag the
    /// caller read).
    Reservation {
        status: VolumeStatus,
        multiattach: bool,
    },
    /// Nothing attaches to (or updates an attachment of) a volume in an error state.
    VolumeInError(VolumeStatus),
    /// A volume without multiattach already has a connected attachment.
    DuplicateConnector,
    /// The volume already has `limit` live attachments (the cap of its type, or the
    /// service's default).
    AttachmentLimit { limit: u32, from_type: bool },
    /// A multiattach volume is being migrated.
    Migrating,
    /// A single-writer volume: `holder` already has write access.
    WriterHeld { holder: AttachmentId },
}

/// `os-initialize_connection`, `os-attach`, `os-terminate_connection`, `os-detach`
/// (`domain::legacy_connect`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LegacyConnectRefusal {
    /// The sharing limits every new attachment meets.
    Sharing(AttachRefusal),
    /// A rule of the legacy flow itself.
    Legacy(LegacyWhy),
}

impl From<AttachRefusal> for LegacyConnectRefusal {
    fn from(refusal: AttachRefusal) -> Self {
        Self::Sharing(refusal)
    }
}

/// Why a legacy action is refused (besides the sharing limits every new attachment meets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegacyWhy {
    /// The volume is in `maintenance`.
    Maintenance,
    /// A new attachment on a volume whose status the attach flow does not own
    /// (`creating`, `error`, `deleting`, ...).
    Status(VolumeStatus),
    /// A volume without multiattach already has another consumer.
    AttachedElsewhere,
    /// `os-attach` of a connection made for the other mode.
    DifferentMode,
    /// `os-detach` without an attachment id on a volume with several attachments.
    SeveralAttachments,
    /// `os-terminate_connection` without a host while several hosts are connected.
    HostNeeded,
}

/// `os-reserve`, `os-unreserve`, `os-begin_detaching`, `os-roll_detaching`
/// (`domain::legacy_attach`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LegacyActionRefusal {
    /// `os-reserve`: the volume must be `available` (or `in-use` when multiattach).
    Reserve {
        status: VolumeStatus,
        multiattach: bool,
    },
    /// `os-begin_detaching`: the volume is not `in-use` and attached.
    NotAttached,
}

// --- Volumes ---------------------------------------------------------------------------

/// The volume's status forbids the change (a status transition, the readonly flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VolumeStatusRefusal(pub VolumeStatus);

/// A new volume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VolumeCreateRefusal {
    /// The backend has no room left for the volume (another create took it).
    NoCapacity,
    OverQuota(OverQuota),
    /// The source (snapshot or volume) is no longer in a status it can be read in, or is
    /// gone.
    SourceUnavailable,
    /// The type's encryption was added or removed after the create read it.
    EncryptionChanged,
    /// The group to create the volume in is gone (`None`) or in a status that takes no
    /// new volumes.
    GroupUnavailable(Option<crate::domain::group::GroupStatus>),
}

/// A change to a volume type's encryption (Cinder's volume type encryption API).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncryptionRefusal {
    /// Live volumes have the type: its encryption is frozen.
    TypeInUse,
    /// The type has encryption already.
    Exists,
    /// The type has no encryption.
    NotFound,
}

/// The start of a volume's delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VolumeDeleteRefusal {
    /// Cinder's delete conditions (status, migration, attachment, group, snapshots) do
    /// not hold.
    Undeletable,
    /// Volume `0` is being created from this volume.
    SourceOfCreating(VolumeId),
}

/// The start of an extend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtendRefusal {
    OverQuota(OverQuota),
    /// The new size is not larger than `current`.
    NotLarger {
        current: i64,
    },
    /// The volume is not `available` (`in-use` for an attached extend).
    Status(VolumeStatus),
}

/// A retype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetypeRefusal {
    OverQuota(OverQuota),
    /// A change of multiattach needs an `available` volume.
    Multiattach(VolumeStatus),
    /// A change into or out of single-writer needs an `available` volume.
    SingleWriter(VolumeStatus),
    /// Cinder's retype conditions (status, migration, group, a different type) do not hold.
    Unretypable,
    /// The new type's encryption is not the volume's (as the types are when it commits).
    EncryptionChanges,
    /// The new type is both encrypted and multi-attach.
    EncryptedMultiattach,
}

/// A change of a volume's or snapshot's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataRefusal {
    /// The object would hold this many items, more than it may.
    TooManyItems(usize),
    /// The key to remove does not exist.
    NoSuchKey(String),
}

/// A change of a volume's name, description or metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VolumeUpdateRefusal {
    /// The volume's status forbids changes (`maintenance`).
    Status(VolumeStatus),
    Metadata(MetadataRefusal),
}

impl From<VolumeStatusRefusal> for VolumeUpdateRefusal {
    fn from(VolumeStatusRefusal(status): VolumeStatusRefusal) -> Self {
        Self::Status(status)
    }
}

impl From<MetadataRefusal> for VolumeUpdateRefusal {
    fn from(refusal: MetadataRefusal) -> Self {
        Self::Metadata(refusal)
    }
}

// --- Snapshots -------------------------------------------------------------------------

/// A new snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotCreateRefusal {
    /// The volume's status does not allow a snapshot now.
    VolumeStatus(VolumeStatus),
    OverQuota(OverQuota),
}

/// A change of a snapshot's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotStatusRefusal {
    /// The snapshot's status forbids this change.
    Status(SnapshotStatus),
    /// `os-update_snapshot_status` may not go from `current` to `requested`.
    Change {
        current: SnapshotStatus,
        requested: SnapshotStatus,
    },
}

/// The start of a snapshot's delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotDeleteRefusal {
    /// The snapshot's status forbids a delete (without force).
    Status(SnapshotStatus),
    /// Volume `0` is being created from the snapshot.
    SourceOfCreating(VolumeId),
}

// --- Volume types and QoS --------------------------------------------------------------

/// Volumes use the type (its delete, or a change of its public flag or name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeInUse;

/// The delete of a volume type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeDeleteRefusal {
    /// Volumes or groups use it.
    InUse,
    /// A project has it as its own default (`/default-types`).
    ProjectDefault,
}

impl From<TypeInUse> for TypeDeleteRefusal {
    fn from(TypeInUse: TypeInUse) -> Self {
        Self::InUse
    }
}

/// New or changed extra specs of a type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtraSpecsRefusal {
    /// Volumes use the type.
    TypeInUse,
    /// `cacheable` and `multiattach` would both be on.
    CacheableWithMultiattach,
}

impl From<TypeInUse> for ExtraSpecsRefusal {
    fn from(TypeInUse: TypeInUse) -> Self {
        Self::TypeInUse
    }
}

/// The removal of one extra spec of a type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecRemovalRefusal {
    /// Volumes use the type.
    TypeInUse,
    /// The type has no spec with that key.
    NoSuchKey,
}

impl From<TypeInUse> for SpecRemovalRefusal {
    fn from(TypeInUse: TypeInUse) -> Self {
        Self::TypeInUse
    }
}

/// A spec to remove that is not there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecMissing;

/// A change of who may use a private type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeAccessRefusal {
    /// The project may already use the type.
    Exists,
    /// The project had no access to the type.
    Missing,
}

/// QoS specs have no item with this key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosKeyMissing(pub String);

/// Volume types use the QoS specs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QosInUse;

/// A change of which QoS specs a volume type has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QosAssociationRefusal {
    /// The volume type does not exist.
    NoSuchType,
    /// The volume type has other QoS specs.
    TypeTaken(QosSpecsId),
}

// --- Transfers -------------------------------------------------------------------------

/// An offer of a volume to another project, or its acceptance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransferRefusal {
    /// The volume is not in the status the step needs.
    VolumeStatus(VolumeStatus),
    /// A snapshot of the volume is not `available`.
    SnapshotNotAvailable(SnapshotId),
    /// The receiving project would go over its quota.
    OverQuota(OverQuota),
}
