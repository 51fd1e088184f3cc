//! What each domain error looks like on the wire: its status and Cinder's exact text.
//! Every such text lives here; the layers below only say what went wrong.

use super::error::{ApiError, IN_DOUBT};
use crate::domain::attach::reserve_statuses;
use crate::domain::attachment::AttachmentCall;
use crate::domain::legacy_connect::{LegacyStep, LegacyWhy, OPEN_STATUSES};
use crate::domain::quota::OverQuota;
use crate::domain::snapshot::snapshot_statuses;
use crate::domain::volume::MAX_METADATA_ITEMS;
use crate::domain::volume_rules::DELETABLE_STATUSES;
use crate::domain::DomainError;

/// Cinder's prefix for `InvalidInput` (400).
fn invalid_input(reason: impl std::fmt::Display) -> ApiError {
    ApiError::BadRequest(format!("Invalid input received: {reason}"))
}

/// Cinder's prefix for `InvalidVolume` (400).
fn invalid_volume(reason: impl std::fmt::Display) -> ApiError {
    ApiError::BadRequest(format!("Invalid volume: {reason}"))
}

fn error_state(
    verb: &str,
    volume: impl std::fmt::Display,
    status: impl std::fmt::Display,
) -> String {
    format!(
        "Volume attachments can not be {verb} if the volume is in an error state. \
         The Volume {volume} currently has a status of: {status} "
    )
}

/// Cinder's refusal text for a delete, with or without `force`.
fn delete_refusal(force: bool) -> String {
    // With force the status clause is empty, which leaves Cinder's double space.
    let statuses = if force {
        String::new()
    } else {
        let names: Vec<&str> = DELETABLE_STATUSES.iter().map(|s| s.as_str()).collect();
        format!("status must be {} and", names.join(" or "))
    };
    format!(
        "Volume {statuses} must not be migrating, attached, belong to a group, have snapshots, \
         awaiting a transfer, or be disassociated from snapshots after volume transfer."
    )
}

const RETYPE_REFUSAL: &str = "Retype needs volume to be in available or in-use state, not be \
part of an active migration or a consistency group, requested type has to be different that \
the one from the volume, and for in-use volumes front-end qos specs cannot change.";

/// A legacy attach action's refusal. Cinder's volume manager refuses some of them, and
/// its API wraps those in "Error attaching/detaching volume - InvalidVolume: ...".
fn legacy_refusal(step: LegacyStep, why: LegacyWhy) -> ApiError {
    let from_manager = |action: &str, reason: String| {
        ApiError::BadRequest(format!(
            "Error {action} volume - InvalidVolume: Invalid volume: {reason}"
        ))
    };
    let statuses: Vec<&str> = OPEN_STATUSES.iter().map(|s| s.as_str()).collect();
    let statuses = statuses.join(", ");
    match (step, why) {
        (LegacyStep::Initialize, LegacyWhy::Maintenance) => {
            invalid_volume("The volume connection cannot be initialized in maintenance mode.")
        }
        (LegacyStep::Attach, LegacyWhy::Maintenance) => {
            invalid_volume("The volume cannot be attached in maintenance mode.")
        }
        (LegacyStep::Detach, LegacyWhy::Maintenance) => {
            invalid_volume("The volume cannot be detached in maintenance mode.")
        }
        (LegacyStep::Initialize, LegacyWhy::Status(status)) => invalid_volume(format!(
            "Volume status must be one of {statuses} to initialize a connection, but the \
             status is {status}."
        )),
        (LegacyStep::Initialize, LegacyWhy::DifferentMode) => {
            invalid_volume("being attached by different mode")
        }
        (_, LegacyWhy::Status(status)) => from_manager(
            "attaching",
            format!(
                "Volume status must be one of {statuses} to attach, but the status is {status}."
            ),
        ),
        (_, LegacyWhy::AttachedElsewhere) => from_manager(
            "attaching",
            "volume is already attached and multiple attachments are not enabled".to_owned(),
        ),
        (_, LegacyWhy::DifferentMode) => {
            from_manager("attaching", "being attached by different mode".to_owned())
        }
        (_, LegacyWhy::SeveralAttachments) => from_manager(
            "detaching",
            "Detach volume failed: More than one attachment, but no attachment_id provided."
                .to_owned(),
        ),
        (_, LegacyWhy::HostNeeded) => {
            invalid_input("Connector doesn't have required information: host")
        }
    }
}

/// Cinder's `QuotaError` texts.
fn over_quota_text(over: &OverQuota) -> String {
    match over {
        OverQuota::SizeExceedsLimit { size, limit } => {
            format!("Requested volume size {size}G is larger than maximum allowed limit {limit}G.")
        }
        OverQuota::Gigabytes {
            name,
            requested,
            quota,
            consumed,
        } => format!(
            "Requested volume or snapshot exceeds allowed {name} quota. Requested {requested}G, \
             quota is {quota}G and {consumed}G has been consumed."
        ),
        OverQuota::Snapshots { allowed } => {
            format!("Maximum number of snapshots allowed ({allowed}) exceeded")
        }
        OverQuota::Groups { allowed } => {
            format!("Maximum number of groups allowed ({allowed}) exceeded")
        }
        OverQuota::Backups { allowed } => {
            format!("Maximum number of backups allowed ({allowed}) exceeded")
        }
        OverQuota::BackupGigabytes {
            requested,
            quota,
            consumed,
        } => format!(
            "Requested backup exceeds allowed Backup gigabytes quota. Requested {requested}G, \
             quota is {quota}G and {consumed}G has been consumed."
        ),
        OverQuota::Volumes { name, allowed } => {
            format!("Maximum number of volumes allowed ({allowed}) exceeded for quota '{name}'.")
        }
    }
}

/// The message of a failure that is shown (500s with Cinder's own text).
fn failure_text(err: &DomainError) -> String {
    match err {
        DomainError::ConnectFailed(message) => {
            format!("Bad or unexpected response from the storage volume backend API: {message}")
        }
        DomainError::BackendNotConfigured { host, volume } => {
            format!("The backend {host} of volume {volume} is not configured here.")
        }
        DomainError::AttachmentFailed { call, cause } => {
            let cause = failure_text(cause);
            match call {
                AttachmentCall::Update => format!("Unable to update attachment ({cause})."),
                AttachmentCall::Create => {
                    format!("Unable to create attachment for volume ({cause}).")
                }
            }
        }
        DomainError::Interrupted { what, detail } => format!("{what} was interrupted: {detail}"),
        other => other.to_string(),
    }
}

impl From<DomainError> for ApiError {
    fn from(err: DomainError) -> Self {
        use DomainError as E;
        match err {
            E::VolumeNotFound(id) => ApiError::NotFound(format!("Volume {id} could not be found.")),
            E::AttachmentNotFound(id) => ApiError::NotFound(format!(
                "Volume attachment could not be found with filter: attachment_id = {id}."
            )),
            E::VolumeTypeNotFound(id) => {
                ApiError::NotFound(format!("Volume type {id} could not be found."))
            }
            E::VolumeTypeNameNotFound(name) => {
                ApiError::NotFound(format!("Volume type with name {name} could not be found."))
            }
            E::MessageNotFound(id) => {
                ApiError::NotFound(format!("Message {id} could not be found."))
            }
            E::MarkerNotFound(id) => ApiError::NotFound(format!("Marker {id} could not be found.")),
            E::MetadataKeyNotFound { volume, key } => {
                ApiError::NotFound(format!("Volume {volume} has no metadata with key {key}."))
            }
            E::ExtraSpecNotFound { volume_type, key } => ApiError::NotFound(format!(
                "Volume Type {volume_type} has no extra specs with key {key}."
            )),
            E::ReservationRefused {
                volume,
                status,
                multiattach,
            } => {
                let allowed: Vec<&str> = reserve_statuses(multiattach)
                    .iter()
                    .map(|s| s.as_str())
                    .collect();
                invalid_volume(format!(
                    "Volume {volume} status must be {} to reserve, but the current status is \
                     {status}.",
                    allowed.join(" or ")
                ))
            }
            E::VolumeInError {
                volume,
                status,
                call: AttachmentCall::Create,
            } => invalid_volume(error_state("created", volume, status)),
            E::VolumeInError {
                volume,
                status,
                call: AttachmentCall::Update,
            } => ApiError::Conflict(format!(
                "Resource conflict: {}",
                error_state("updated", volume, status)
            )),
            E::DuplicateConnector(volume) => ApiError::Conflict(format!(
                "Resource conflict: duplicate connectors detected on volume {volume}"
            )),
            E::AttachmentLimitReached {
                volume,
                limit,
                from_type,
            } => invalid_volume(format!(
                "Volume {volume} already has {limit} attachments, the most {}.",
                if from_type {
                    "its volume type allows (attach:max_attachments)"
                } else {
                    "this service allows per volume (max_attachments_per_volume)"
                }
            )),
            E::MigratingVolume(volume) => invalid_volume(format!(
                "Volume {volume} is being migrated; a multiattach volume takes no new \
                 attachment until its migration ends."
            )),
            E::WriterHeld { volume, holder } => invalid_volume(format!(
                "Volume {volume} is single-writer (attach:single_writer) and attachment \
                 {holder} holds write access; attach it read-only (mode ro) or detach that \
                 attachment first."
            )),
            E::ConnectorMissing(key) => invalid_input(format!(
                "Connector doesn't have required information: {key}"
            )),
            E::LegacyReserveRefused {
                status,
                multiattach,
            } => {
                let expected = if multiattach {
                    "available or in-use"
                } else {
                    "available"
                };
                invalid_volume(format!(
                    "Volume status must be {expected} to reserve, but the status is {status}."
                ))
            }
            E::LegacyRefused { step, why } => legacy_refusal(step, why),
            E::InvalidAttachMode { volume, mode } => ApiError::BadRequest(format!(
                "Invalid attaching mode '{mode}' for volume {volume}."
            )),
            E::ForceDetachNotFound(id) => ApiError::BadRequest(format!(
                "Error force detaching volume - VolumeAttachmentNotFound: Volume attachment \
                 could not be found with filter: attachment_id = {id}."
            )),
            E::MismatchedAttachment => invalid_input("Mismatched volume and attachment"),
            E::NovaUsesAttachment(server) => ApiError::Conflict(format!(
                "Detach volume from instance {server} using the Compute API"
            )),
            E::NovaUnreachable(server) => ApiError::ServiceUnavailable(format!(
                "The compute service could not say whether instance {server} still uses the \
                 attachment; it is kept. Try again later."
            )),
            E::NotAttached => invalid_volume(
                "Unable to detach volume. Volume status must be 'in-use' and attach_status must \
                 be 'attached' to detach.",
            ),
            E::InvalidSize(size) => {
                let shown = size.map_or_else(|| "None".to_owned(), |s| s.to_string());
                invalid_input(format!(
                    "Volume size '{shown}' must be an integer and greater than 0"
                ))
            }
            E::InvalidAvailabilityZone(zone) => {
                invalid_input(format!("Availability zone '{zone}' is invalid."))
            }
            E::DeleteRefused { force } => invalid_volume(delete_refusal(force)),
            E::ExtendRefused {
                volume,
                status,
                attached,
            } => invalid_volume(format!(
                "Volume {volume} status must be '{}' to extend, currently {status}.",
                if attached { "in-use" } else { "available" }
            )),
            E::ExtendNotLarger { current, requested } => invalid_input(format!(
                "New size for extend must be greater than current size. (current: {current}, \
                 extended: {requested})."
            )),
            E::ReadonlyRefused { volume, status } => invalid_volume(format!(
                "Volume {volume} status must be available to update readonly flag, but current \
                 status is: {status}."
            )),
            E::RetypeRefused => invalid_volume(RETYPE_REFUSAL),
            E::MultiattachRetypeRefused(status) => invalid_input(format!(
                "Invalid volume_type passed, retypes affecting multiattach are only allowed on \
                 available volumes, the specified volume however currently has a status of: \
                 {status}."
            )),
            E::SingleWriterRetypeRefused(status) => invalid_input(format!(
                "Invalid volume_type passed, retypes affecting single-writer \
                 (attach:single_writer) are only allowed on available volumes, the specified \
                 volume however currently has a status of: {status}."
            )),
            E::UpdateDuringMaintenance => {
                invalid_volume("The volume cannot be updated during maintenance.")
            }
            E::MetadataChangeRefused { removing, status } => {
                let verb = if removing { "Deleting" } else { "Updating" };
                invalid_volume(format!(
                    "{verb} volume metadata is not allowed for volumes in {status} status."
                ))
            }
            E::ExtendCompletionRefused { extending } => invalid_volume(if extending {
                "Required volume admin metadata is malformed or missing."
            } else {
                "Volume is not being extended."
            }),
            E::ReservedImageProperty(key) => invalid_input(format!(
                "The image property '{key}' is reserved: only the service or an administrator \
                 may set it."
            )),
            E::ResetToDeleting => ApiError::BadRequest("Cannot reset-state to deleting".to_owned()),
            E::ResetToInUseWithoutAttachments => ApiError::BadRequest(
                "Cannot reset-state to in-use because volume does not have any attachments."
                    .to_owned(),
            ),
            E::NothingPendingCleanup(id) => invalid_input(format!(
                "There is no resource with UUID {id} pending cleanup."
            )),
            E::SnapshotNotFound(id) => {
                ApiError::NotFound(format!("Snapshot {id} could not be found."))
            }
            E::SnapshotMetadataKeyNotFound { snapshot, key } => ApiError::NotFound(format!(
                "Snapshot {snapshot} has no metadata with key {key}."
            )),
            E::SnapshotRefused {
                volume,
                status,
                in_use_allowed,
            } => {
                let allowed: Vec<&str> = snapshot_statuses(in_use_allowed)
                    .iter()
                    .map(|s| s.as_str())
                    .collect();
                invalid_volume(format!(
                    "Volume {volume} status must be {}, but current status is: {status}.",
                    allowed.join(", ")
                ))
            }
            E::SnapshotDeleteRefused => ApiError::BadRequest(
                "Invalid snapshot: Snapshot status must be available or error and must not be \
                 part of a group."
                    .to_owned(),
            ),
            E::SnapshotStatusUpdate {
                current,
                requested: None,
            } => ApiError::BadRequest(format!(
                "Snapshot status {current} not allowed for update_snapshot_status"
            )),
            E::SnapshotStatusUpdate {
                current,
                requested: Some(requested),
            } => ApiError::BadRequest(format!(
                "Provided snapshot status {requested} not allowed for snapshot with status \
                 {current}."
            )),
            E::SnapshotForceFlag => ApiError::BadRequest(
                "Since microversion 3.66 the 'force' flag is invalid for this request.  For \
                 backward compatability, however, when the 'force' flag is passed with a value \
                 evaluating to True, it is silently ignored."
                    .to_owned(),
            ),
            E::SourceOfCreatingVolume {
                snapshot: Some(snapshot),
                creating,
                ..
            } => ApiError::BadRequest(format!(
                "Invalid snapshot: Snapshot {snapshot} is the source of volume {creating}, which \
                 is being created; delete it once that volume is made."
            )),
            E::SourceOfCreatingVolume {
                snapshot: None,
                volume,
                creating,
            } => invalid_volume(format!(
                "Volume {volume} is the source of volume {creating}, which is being created; \
                 delete it once that volume is made."
            )),
            E::SourceSnapshotUnavailable => ApiError::BadRequest(
                "Invalid snapshot: Originating snapshot status must be one of 'available' values"
                    .to_owned(),
            ),
            E::SourceVolumeUnavailable => invalid_volume(
                "Originating source volume status must be one of 'available, in-use' values",
            ),
            E::ZoneOfSource { from_snapshot } => invalid_input(if from_snapshot {
                "Volume must be in the same availability zone as the snapshot"
            } else {
                "Volume must be in the same availability zone as the source volume"
            }),
            E::SmallerThanSource {
                size,
                source_size,
                from_snapshot: true,
            } => invalid_input(format!(
                "Volume size '{size}'GB cannot be smaller than the snapshot size \
                 {source_size}GB. They must be >= original snapshot size."
            )),
            E::SmallerThanSource {
                size,
                source_size,
                from_snapshot: false,
            } => invalid_input(format!(
                "Volume size '{size}'GB cannot be smaller than original volume size  \
                 {source_size}GB. They must be >= original volume size."
            )),
            E::ServiceNotFound { host, binary } => {
                ApiError::NotFound(format!("Could not find binary {binary} on host {host}."))
            }
            E::NoVolumeServiceOn(host) => ApiError::BadRequest(format!(
                "Invalid input received: Service {host} could not be found."
            )),
            E::CapabilitiesNotFound(host) => {
                ApiError::NotFound(format!("Can't find service: {host}"))
            }
            E::RetypeNeedsMigration => ApiError::BadRequest(
                "Invalid volume: Retype requires migration but is not allowed.".to_owned(),
            ),
            E::RetypeChangesFrontEndQos(volume) => invalid_input(format!(
                "Retype cannot change front-end qos specs for in-use volume: {volume}."
            )),
            E::BackendFrozen => ApiError::BadRequest(
                "Invalid input received: Modification operations are not allowed on frozen \
                 storage backends."
                    .to_owned(),
            ),
            E::HostNotFound(host) => ApiError::NotFound(format!("Host {host} could not be found.")),
            E::TransferNotFound(id) => {
                ApiError::NotFound(format!("Transfer {id} could not be found."))
            }
            E::TransferRefused(reason) => ApiError::BadRequest(reason),
            E::ImageRefused(reason) => ApiError::BadRequest(reason),
            E::ImageNameAmbiguous(name) => ApiError::Conflict(format!(
                "Multiple matches found for '{name}', use an ID to be more specific."
            )),
            E::InvalidAuthKey(id) => ApiError::BadRequest(format!(
                "Invalid auth key: Attempt to transfer {id} with invalid auth key."
            )),
            E::ImageMetadataNotFound(id) => ApiError::NotFound(format!(
                "Glance metadata for volume/snapshot {id} cannot be found."
            )),
            E::EncryptionTypeInUse(action) => ApiError::BadRequest(format!(
                "Cannot {action} encryption specs. Volume type in use."
            )),
            E::EncryptionExists(type_id) => ApiError::BadRequest(format!(
                "Volume type encryption for type {type_id} already exists."
            )),
            E::EncryptionNotFound(type_id) => ApiError::NotFound(format!(
                "Volume type encryption for type {type_id} does not exist."
            )),
            E::EncryptedMultiattach => ApiError::BadRequest(
                "Invalid volume: Multiattach cannot be used with encrypted volumes.".into(),
            ),
            E::EncryptedMultiattachRetype => ApiError::BadRequest(
                "Invalid input received: Retype requested both encryption and multi-attach, \
                 which is not supported."
                    .into(),
            ),
            E::NoKeyManager(name) => ApiError::BadRequest(format!(
                "Invalid volume type: {name} is encrypted, and no key manager is configured \
                 to hold its volumes' keys ([key_manager] backend = barbican, or \
                 fixed_key)."
            )),
            E::KeyManagerFailed => ApiError::BadRequest("Key manager error".into()),
            E::InvalidEncryptionSpec => ApiError::BadRequest("Invalid encryption spec".into()),
            E::EncryptionChangedDuringCreate => ApiError::Conflict(
                "The volume type's encryption changed while the volume was being created; \
                 try again."
                    .into(),
            ),
            E::RetypeChangesEncryption => ApiError::BadRequest(
                "Invalid input received: Retype cannot change encryption requirements.".into(),
            ),
            E::QosSpecsNotFound(id) => ApiError::NotFound(format!("No such QoS spec {id}.")),
            E::QosSpecsExists(name) => {
                ApiError::Conflict(format!("QoS Specs {name} already exists."))
            }
            E::QosNameEmpty => ApiError::BadRequest("Name has to be a non-empty string.".into()),
            E::InvalidQosConsumer(value) => ApiError::BadRequest(format!(
                "Invalid qos specs: consumer must be one of front-end, back-end, both, not \
                 '{value}'."
            )),
            E::QosSpecsInUse => ApiError::BadRequest("Qos specs still in use.".to_owned()),
            E::QosKeyNotFound { specs, key } => {
                ApiError::NotFound(format!("QoS spec {specs} has no spec with key {key}."))
            }
            E::QosTypeTaken { volume_type, specs } => ApiError::BadRequest(format!(
                "Invalid volume type: Type {volume_type} is already associated with another qos \
                 specs: {specs}"
            )),
            E::TooManyMetadataItems(count) => ApiError::BadRequest(format!(
                "Invalid metadata: a volume holds at most {MAX_METADATA_ITEMS} metadata items; \
                 this request would leave it with {count}."
            )),
            E::OverQuota(over) => ApiError::OverLimit(over_quota_text(&over)),
            E::QuotaBelowUsage(below) => ApiError::BadRequest(format!(
                "Quota {} limit must be equal or greater than existing resources. Current usage \
                 is {} and the requested limit is {}.",
                below.resource, below.usage, below.limit
            )),
            E::BadQuotaKeys { keys, class } => invalid_input(format!(
                "Bad key(s) in quota {}set: {}",
                if class { "class " } else { "" },
                keys.join(", ")
            )),
            E::BadQuotaValue { key, why } => ApiError::BadRequest(format!("{key} {why}")),
            E::PolicyDenied(rule) => {
                ApiError::Forbidden(format!("Policy doesn't allow {rule} to be performed."))
            }
            E::Unavailable(source) => {
                tracing::warn!(error = %source, "database unavailable");
                ApiError::ServiceUnavailable(
                    "The database is unavailable; try again later.".to_owned(),
                )
            }
            E::InDoubt(source) => {
                tracing::warn!(error = %source, "commit outcome unknown");
                ApiError::OutcomeUnknown(IN_DOUBT.to_owned())
            }
            E::Group(group) => groups::fault(group),
            E::Type(error) => types::fault(error),
            E::Backup(backup) => backups::fault(backup),
            E::Manage(manage) => backups::manage_fault(manage),
            E::Revert(revert) => moves::revert_fault(revert),
            E::Migration(migration) => moves::migration_fault(migration),
            E::Reimage(reimage) => moves::reimage_fault(reimage),
            E::Conflict(source) => {
                // The constraint's text names tables and columns: logged, not shown.
                tracing::info!(error = %source, "write refused by a unique constraint");
                ApiError::Conflict(
                    "Resource conflict: another change of the same resource came first; \
                     nothing was changed. Read it again before retrying."
                        .to_owned(),
                )
            }
            E::Internal(source) => ApiError::Internal(error_chain(source.as_ref())),
            failure @ (E::ConnectFailed(_)
            | E::ConnectionInfoUnavailable
            | E::BackendNotConfigured { .. }
            | E::AttachmentFailed { .. }
            | E::Interrupted { .. }) => ApiError::Failed(failure_text(&failure)),
        }
    }
}

/// The error and all its causes on one line, for logs.
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

mod backups;
mod groups;
mod moves;
#[cfg(test)]
mod tests;
mod types;
