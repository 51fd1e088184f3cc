//! How a write ended. Every store write locks what it changes, asks the domain's rules,
//! and applies what they decided; it answers with one `Outcome`, so a caller never has
//! to read again to learn why nothing happened.

use super::ids::AttachmentId;
use super::volume::VolumeStatus;

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    /// Written; what the write returns.
    Done(T),
    /// The object to change does not exist (or no longer does).
    Gone,
    /// The rules refused; nothing was written.
    Refused(Refusal),
}

/// Why a rule refused a write, with what the answer to the caller needs to say so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The volume's status does not allow a new reservation (for the multiattach flag the
    /// caller read).
    Reservation {
        status: VolumeStatus,
        multiattach: bool,
    },
    /// Attachment updates are refused while the volume is in an error state.
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
    /// `os-reserve`: the volume must be `available` (or `in-use` when multiattach).
    LegacyReserve {
        status: VolumeStatus,
        multiattach: bool,
    },
    /// `os-begin_detaching`: the volume is not `in-use` and attached.
    NotAttached,
    /// `os-initialize_connection`, `os-attach`, `os-terminate_connection`, `os-detach`.
    Legacy(LegacyWhy),
    /// The volume's status forbids this change.
    VolumeStatus(VolumeStatus),
    /// An extend to a size that is not larger than `current`.
    NotLarger { current: i64 },
    /// Cinder's delete conditions (status, migration, attachment, group) do not hold.
    Undeletable,
    /// A retype that would change multiattach needs an `available` volume.
    MultiattachRetype(VolumeStatus),
    /// A retype into or out of single-writer needs an `available` volume.
    SingleWriterRetype(VolumeStatus),
    /// Cinder's retype conditions (status, migration, group, a different type) do not hold.
    Unretypable,
    /// The key to remove does not exist.
    NoSuchKey,
    /// Volumes use the type.
    TypeInUse,
    /// `cacheable` and `multiattach` would both be on.
    CacheableWithMultiattach,
    /// A volume would hold this many metadata items, more than it may.
    TooManyMetadataItems(usize),
    /// The change would take the project over its quota.
    OverQuota(super::quota::OverQuota),
    /// A new limit below what the project already uses.
    QuotaBelowUsage(super::quota::BelowUsage),
    /// The snapshot's status forbids this change.
    SnapshotStatus(super::snapshot::SnapshotStatus),
    /// `os-update_snapshot_status` may not go from `current` to `requested`.
    SnapshotStatusChange {
        current: super::snapshot::SnapshotStatus,
        requested: super::snapshot::SnapshotStatus,
    },
    /// QoS specs have no item with this key.
    NoSuchQosKey(String),
    /// Volume types use the QoS specs.
    QosInUse,
    /// The volume type has other QoS specs.
    QosTypeTaken(super::ids::QosSpecsId),
    /// The volume type does not exist.
    NoSuchType,
    /// The project may already use the private type.
    AccessExists,
    /// The project had no access to the private type.
    NoSuchAccess,
    /// A snapshot of the volume to transfer is not `available`.
    SnapshotNotAvailable(super::ids::SnapshotId),
    /// The backend has no room left for the volume (another create took it).
    NoCapacity,
    /// A new volume's source (snapshot or volume) is no longer in a status it can be read
    /// in, or is gone.
    SourceUnavailable,
    /// Volume `0` is being created from what the change would remove.
    SourceOfCreating(super::ids::VolumeId),
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
