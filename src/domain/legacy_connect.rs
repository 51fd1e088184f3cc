//! The rest of the attach flow from before attachments existed: `os-initialize_connection`,
//! `os-attach`, `os-terminate_connection` and `os-detach` (the admin's `os-force_detach`
//! is a terminate followed by a detach). They keep the same attachment rows as the
//! attachments API, so either flow sees what the other did:
//! - a host's connection is a live attachment connected from that host; the first
//!   `os-initialize_connection` from a host adds one (`attaching`, no instance yet), a
//!   later one from the same host refreshes it;
//! - `os-attach` completes the consumer's own attachment, else claims a host's
//!   connection that no instance holds yet, else adds an attachment of its own;
//! - `os-terminate_connection` ends a host's connection: attachments that never
//!   completed go, completed ones stay attached without a connection until `os-detach`.
//!
//! The volume's status is the aggregator's, as for every attachment event.

use serde_json::Value;

use super::attach::{
    aggregate, connection_info, sharing_limits, single_writer, statuses, ConnectionExtras, Hold,
    LiveAttachment, Transition,
};
use super::attachment::{AttachMode, AttachStatus, DriverConnection};
use super::ids::AttachmentId;
use super::refusal::LegacyConnectRefusal;
pub use super::refusal::LegacyWhy;
use super::volume::{LockedVolume, VolumeState, VolumeStatus};

/// Which legacy action a refusal answers: Cinder words each differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegacyStep {
    Initialize,
    Attach,
    Detach,
}

/// Statuses in which a legacy action may add an attachment.
pub const OPEN_STATUSES: &[VolumeStatus] = &[
    VolumeStatus::Available,
    VolumeStatus::Reserved,
    VolumeStatus::Attaching,
    VolumeStatus::InUse,
    VolumeStatus::Detaching,
];

fn refuse<T>(why: LegacyWhy) -> Result<T, LegacyConnectRefusal> {
    Err(LegacyConnectRefusal::Legacy(why))
}

/// The access an attachment's stored mode grants (rows without one, and Cinder's
/// `"null"`, write).
pub fn effective(mode: Option<AttachMode>) -> AttachMode {
    match mode {
        Some(AttachMode::ReadOnly) => AttachMode::ReadOnly,
        _ => AttachMode::ReadWrite,
    }
}

/// Cinder's `sanitize_hostname` for `os-attach`'s `host_name`: spaces and underscores
/// become `-`, other characters than letters, digits, `.` and `-` go, lower case, no
/// leading or trailing `.`/`-`.
pub fn sanitize_hostname(name: &str) -> String {
    let kept: String = name
        .chars()
        .filter(|c| (*c as u32) < 256)
        .map(|c| if c == ' ' || c == '_' { '-' } else { c })
        .filter(|c| c.is_alphanumeric() || *c == '.' || *c == '-')
        .flat_map(char::to_lowercase)
        .collect();
    kept.trim_matches(|c| c == '.' || c == '-').to_owned()
}

/// The live attachment holding `host`'s connection: the oldest from that host that is
/// attaching or attached.
pub fn connection_of<'a>(live: &'a [LiveAttachment], host: &str) -> Option<&'a LiveAttachment> {
    live.iter().find(|a| {
        a.attached_host.as_deref() == Some(host)
            && matches!(
                a.attach_status,
                AttachStatus::Attaching | AttachStatus::Attached
            )
    })
}

/// What `os-initialize_connection` asks for.
#[derive(Debug, Clone)]
pub struct HostConnect<'a> {
    pub host: &'a str,
    /// The id of the attachment to add when the host holds none.
    pub new_id: AttachmentId,
    /// The mode the backend exported for: the host's existing attachment's, else the
    /// volume's (read-only volumes `ro`), else the connector's, else `rw`.
    pub mode: AttachMode,
    pub default_max_attachments: Option<u32>,
    pub enforce_multipath: bool,
}

/// What `os-initialize_connection` records.
#[derive(Debug, Clone, PartialEq)]
pub struct HostConnected {
    pub attachment_id: AttachmentId,
    /// The host already had an attachment (refreshed, its status kept); otherwise a new
    /// one is added, `attaching`.
    pub existing: bool,
    pub volume: Option<VolumeState>,
    /// The flat connection info the attachment stores.
    pub info: Value,
}

/// `os-initialize_connection`: refreshes the host's connection, or adds one within the
/// sharing limits. Cinder refuses only a volume in maintenance; a new connection also
/// needs a status the attach flow owns.
pub fn initialize(
    volume: &LockedVolume,
    live: &[LiveAttachment],
    request: &HostConnect<'_>,
    driver: &DriverConnection,
) -> Result<HostConnected, LegacyConnectRefusal> {
    if volume.status == VolumeStatus::Maintenance {
        return refuse(LegacyWhy::Maintenance);
    }
    let hold = Hold::of(volume.status, statuses(live));
    let (attachment_id, existing, after): (_, _, Vec<AttachStatus>) =
        match connection_of(live, request.host) {
            Some(found) => {
                // The backend was asked for the mode read before the lock; a change since
                // then would hand the host the wrong target.
                if effective(found.attach_mode) != request.mode {
                    return refuse(LegacyWhy::DifferentMode);
                }
                (found.id, true, statuses(live).collect())
            }
            None => {
                if !OPEN_STATUSES.contains(&volume.status) {
                    return refuse(LegacyWhy::Status(volume.status));
                }
                sharing_limits(volume, live, request.mode, request.default_max_attachments)?;
                let after = statuses(live).chain([AttachStatus::Attaching]).collect();
                (request.new_id, false, after)
            }
        };
    let extras = ConnectionExtras {
        attachment_id,
        access_mode: request.mode,
        encrypted: volume.encrypted,
        cacheable: volume.type_cacheable,
        enforce_multipath: request.enforce_multipath,
    };
    Ok(HostConnected {
        attachment_id,
        existing,
        volume: Transition::towards(volume, aggregate(volume, hold, after)).volume,
        info: connection_info(driver, &extras),
    })
}

/// What `os-attach` asks for.
#[derive(Debug, Clone)]
pub struct AttachRequest<'a> {
    pub instance_uuid: Option<&'a str>,
    /// Used when no instance is given: the consumer is the host itself.
    pub host_name: Option<&'a str>,
    pub mode: AttachMode,
    /// The id of the attachment to add when there is none to complete.
    pub new_id: AttachmentId,
    pub default_max_attachments: Option<u32>,
}

/// Which row `os-attach` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachRow {
    /// The consumer's attachment is attached already: nothing to write.
    Already(AttachmentId),
    /// An existing attachment (the consumer's own, or a host's connection it claims)
    /// becomes `attached`.
    Complete(AttachmentId),
    /// A new `attached` attachment, without a connection.
    New(AttachmentId),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attached {
    pub row: AttachRow,
    pub volume: Option<VolumeState>,
}

/// `os-attach`. Cinder's rule for a volume without multiattach (no second consumer unless
/// it is being migrated) holds for every other live consumer here, not only an attached
/// one: two consumers of a single-attach volume are what the consistency checker reports.
pub fn attach(
    volume: &LockedVolume,
    live: &[LiveAttachment],
    request: &AttachRequest<'_>,
) -> Result<Attached, LegacyConnectRefusal> {
    if volume.status == VolumeStatus::Maintenance {
        return refuse(LegacyWhy::Maintenance);
    }
    let own = live.iter().find(|a| match request.instance_uuid {
        Some(instance) => a.instance_uuid.as_deref() == Some(instance),
        None => a.instance_uuid.is_none() && a.attached_host.as_deref() == request.host_name,
    });
    if let Some(own) = own.filter(|a| a.attach_status == AttachStatus::Attached) {
        return Ok(Attached {
            row: AttachRow::Already(own.id),
            volume: None,
        });
    }
    let own = own.filter(|a| !a.attach_status.is_error());
    // A host's connection no instance holds yet: the one `os-initialize_connection` made.
    let unclaimed = || {
        live.iter().find(|a| {
            request.instance_uuid.is_some()
                && a.instance_uuid.is_none()
                && a.attach_status == AttachStatus::Attaching
                && a.connected
        })
    };
    let target = own.or_else(unclaimed);
    let others = live
        .iter()
        .filter(|a| Some(a.id) != target.map(|t| t.id) && !a.attach_status.is_error());
    if !volume.multiattach && !volume.migrating() && others.clone().next().is_some() {
        return refuse(LegacyWhy::AttachedElsewhere);
    }
    let hold = Hold::None;
    match target {
        Some(target) => {
            if target.connected && effective(target.attach_mode) != request.mode {
                return refuse(LegacyWhy::DifferentMode);
            }
            single_writer(volume, live, Some(target.id), request.mode)?;
            let after = live.iter().map(|a| {
                if a.id == target.id {
                    AttachStatus::Attached
                } else {
                    a.attach_status
                }
            });
            Ok(Attached {
                row: AttachRow::Complete(target.id),
                volume: Transition::towards(volume, aggregate(volume, hold, after)).volume,
            })
        }
        None => {
            if !OPEN_STATUSES.contains(&volume.status) {
                return refuse(LegacyWhy::Status(volume.status));
            }
            sharing_limits(volume, live, request.mode, request.default_max_attachments)?;
            let after = statuses(live).chain([AttachStatus::Attached]);
            Ok(Attached {
                row: AttachRow::New(request.new_id),
                volume: Transition::towards(volume, aggregate(volume, hold, after)).volume,
            })
        }
    }
}

/// What `os-terminate_connection` changes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Terminated {
    pub volume: Option<VolumeState>,
    /// Attachments of the host that never completed: they go.
    pub removed: Vec<AttachmentId>,
    /// Completed attachments of the host: they stay attached, without a connection.
    pub disconnected: Vec<AttachmentId>,
}

/// `os-terminate_connection` for `host` (`None`: the connector named none, which is
/// taken to mean the volume's only connected host). Cinder then unreserves the volume,
/// so an `os-reserve` hold ends too.
pub fn terminate(
    volume: &LockedVolume,
    live: &[LiveAttachment],
    host: Option<&str>,
) -> Result<Terminated, LegacyConnectRefusal> {
    let host = match host {
        Some(host) => Some(host),
        None => {
            let mut hosts: Vec<&str> = live
                .iter()
                .filter(|a| a.connected)
                .filter_map(|a| a.attached_host.as_deref())
                .collect();
            hosts.sort_unstable();
            hosts.dedup();
            if hosts.len() > 1 {
                return refuse(LegacyWhy::HostNeeded);
            }
            hosts.first().copied()
        }
    };
    let on_host = |a: &&LiveAttachment| host.is_some() && a.attached_host.as_deref() == host;
    let removed: Vec<AttachmentId> = live
        .iter()
        .filter(on_host)
        .filter(|a| a.attach_status == AttachStatus::Attaching)
        .map(|a| a.id)
        .collect();
    let disconnected = live
        .iter()
        .filter(on_host)
        .filter(|a| a.attach_status != AttachStatus::Attaching && a.connected)
        .map(|a| a.id)
        .collect();
    let hold = match Hold::of(volume.status, statuses(live)) {
        Hold::Attaching => Hold::None,
        other => other,
    };
    let after = live
        .iter()
        .filter(|a| !removed.contains(&a.id))
        .map(|a| a.attach_status);
    Ok(Terminated {
        volume: Transition::towards(volume, aggregate(volume, hold, after)).volume,
        removed,
        disconnected,
    })
}

/// `os-detach`: removes the given attachment, or the volume's only one. An id that is
/// not among the volume's live attachments removes nothing, and the volume is
/// recomputed from what it has (Cinder's answer to a detach that already happened).
pub fn detach(
    volume: &LockedVolume,
    live: &[LiveAttachment],
    id: Option<AttachmentId>,
) -> Result<Transition, LegacyConnectRefusal> {
    if volume.status == VolumeStatus::Maintenance {
        return refuse(LegacyWhy::Maintenance);
    }
    let target = match id {
        Some(id) => live.iter().find(|a| a.id == id),
        None if live.len() > 1 => return refuse(LegacyWhy::SeveralAttachments),
        None => live.first(),
    };
    Ok(match target {
        Some(target) => super::attach::detach(volume, live, target),
        None => Transition::towards(volume, aggregate(volume, Hold::None, statuses(live))),
    })
}

#[cfg(test)]
mod tests;
