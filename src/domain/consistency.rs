//! The model's invariants, checked over a snapshot of the database (`cinder-attach check`).
//! Pure: the store reads the snapshot, the backends list their objects, this module
//! judges.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::attach::status_consistent;
use super::attachment::AttachStatus;
use super::ids::{AttachmentId, SnapshotId, VolumeId};
use super::quota::{self, QuotaRows, Usage};
use super::volume::VolumeStatus;

/// A live volume row as the checker needs it.
#[derive(Debug, Clone)]
pub struct VolumeFacts {
    pub id: VolumeId,
    /// What its backend names its storage by (`Volume::storage_id`).
    pub storage: VolumeId,
    pub status: VolumeStatus,
    pub multiattach: bool,
    pub host: Option<String>,
    /// Gigabytes reserved for an extend in flight.
    pub reserved_growth: i64,
}

/// A project's stored limits (no configured defaults) and its usage, as quota checks
/// count it.
#[derive(Debug, Clone)]
pub struct ProjectQuota {
    pub project_id: String,
    pub rows: QuotaRows,
    pub usage: Usage,
}

/// A live (not soft-deleted) attachment.
#[derive(Debug, Clone)]
pub struct AttachmentFacts {
    pub id: AttachmentId,
    pub volume_id: VolumeId,
    pub instance_uuid: Option<String>,
    pub attach_status: AttachStatus,
}

/// What the database holds, read in one consistent snapshot.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Every live volume.
    pub volumes: Vec<VolumeFacts>,
    pub attachments: Vec<AttachmentFacts>,
    /// Live connector rows whose attachment is deleted: (attachment, key).
    pub specs_of_deleted_attachments: Vec<(AttachmentId, String)>,
    /// Every project that has volumes, snapshots or limits of its own.
    pub quotas: Vec<ProjectQuota>,
    /// Every live snapshot: `(snapshot, its volume)`.
    pub snapshots: Vec<(SnapshotId, VolumeId)>,
}

/// What one backend holds: the volumes whose data it stores.
#[derive(Debug, Clone)]
pub struct BackendObjects {
    /// `hostname@backend`, the prefix of its volumes' `host`.
    pub host: String,
    pub volume_ids: BTreeSet<VolumeId>,
    /// The snapshots whose data it stores.
    pub snapshot_ids: BTreeSet<SnapshotId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Finding {
    /// The volume's status is not what its live attachments make it.
    StatusMismatch {
        volume_id: VolumeId,
        status: String,
        attachment_statuses: Vec<String>,
    },
    AttachmentOfDeletedVolume {
        attachment_id: AttachmentId,
        volume_id: VolumeId,
    },
    SpecsOfDeletedAttachment {
        attachment_id: AttachmentId,
        keys: Vec<String>,
    },
    /// A volume without multiattach holds live attachments for several instances.
    SeveralInstancesWithoutMultiattach {
        volume_id: VolumeId,
        instances: Vec<String>,
    },
    BackendObjectMissing {
        volume_id: VolumeId,
        host: String,
    },
    BackendObjectWithoutVolume {
        volume_id: VolumeId,
        backend_host: String,
    },
    /// Snapshot data on a backend that no live snapshot of one of its volumes owns:
    /// left behind by a delete that lost its record, or written by hand.
    SnapshotDataWithoutRecord {
        snapshot_id: SnapshotId,
        backend_host: String,
    },
    /// What a backend exports (targets, accounts, who may log in) differs from what the
    /// database holds.
    ExportDrift {
        backend_host: String,
        detail: String,
    },
    /// A project uses (with what it has reserved) more of a resource than the limit set
    /// for it: every write that adds usage, and every new project limit, is checked
    /// against it. (A quota class's limit may be lowered below what projects use, as in
    /// Cinder: not a finding.)
    OverQuota {
        project_id: String,
        resource: String,
        consumed: i64,
        limit: i64,
    },
    /// A live snapshot whose volume is deleted (or never was): it can be neither used
    /// nor deleted through its volume, and its project's quota keeps counting it.
    SnapshotOfDeletedVolume {
        snapshot_id: SnapshotId,
        volume_id: VolumeId,
    },
    /// A project's usage of a resource is below zero: some record counts negative (an
    /// imported backup's size, say), so later requests pass limits they should not.
    NegativeUsage {
        project_id: String,
        resource: String,
        consumed: i64,
    },
    /// Growth is reserved for a volume that is not extending: the project's usage counts
    /// gigabytes no resource holds.
    StaleReservation {
        volume_id: VolumeId,
        status: String,
        reserved_gb: i64,
    },
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finding::StatusMismatch {
                volume_id,
                status,
                attachment_statuses,
            } => write!(
                f,
                "volume {volume_id} is {status} but its live attachments are [{}]",
                attachment_statuses.join(", ")
            ),
            Finding::AttachmentOfDeletedVolume {
                attachment_id,
                volume_id,
            } => write!(
                f,
                "attachment {attachment_id} is live but its volume {volume_id} is deleted"
            ),
            Finding::SpecsOfDeletedAttachment {
                attachment_id,
                keys,
            } => write!(
                f,
                "attachment {attachment_id} is deleted but its connector keys [{}] are not",
                keys.join(", ")
            ),
            Finding::SeveralInstancesWithoutMultiattach {
                volume_id,
                instances,
            } => write!(
                f,
                "volume {volume_id} is not multiattach but is attached to instances [{}]",
                instances.join(", ")
            ),
            Finding::BackendObjectMissing { volume_id, host } => {
                write!(f, "volume {volume_id} has no data on its backend {host}")
            }
            Finding::BackendObjectWithoutVolume {
                volume_id,
                backend_host,
            } => write!(
                f,
                "backend {backend_host} holds data for volume {volume_id}, which is not a live volume"
            ),
            Finding::SnapshotDataWithoutRecord {
                snapshot_id,
                backend_host,
            } => write!(
                f,
                "backend {backend_host} holds data for snapshot {snapshot_id}, which is not a live snapshot of its volumes"
            ),
            Finding::ExportDrift {
                backend_host,
                detail,
            } => write!(f, "backend {backend_host} differs from the database: {detail}"),
            Finding::OverQuota {
                project_id,
                resource,
                consumed,
                limit,
            } => write!(
                f,
                "project {project_id} uses {consumed} of {resource}, over its limit of {limit}"
            ),
            Finding::SnapshotOfDeletedVolume {
                snapshot_id,
                volume_id,
            } => write!(
                f,
                "snapshot {snapshot_id} is live but its volume {volume_id} is deleted"
            ),
            Finding::NegativeUsage {
                project_id,
                resource,
                consumed,
            } => write!(f, "project {project_id} uses {consumed} of {resource}, below zero"),
            Finding::StaleReservation {
                volume_id,
                status,
                reserved_gb,
            } => write!(
                f,
                "volume {volume_id} is {status} but still reserves {reserved_gb} GiB of growth"
            ),
        }
    }
}

/// Attachments that still hold (or are about to hold) the volume.
fn holds_volume(status: AttachStatus) -> bool {
    !matches!(
        status,
        AttachStatus::Detached
            | AttachStatus::Deleted
            | AttachStatus::ErrorAttaching
            | AttachStatus::ErrorDetaching
    )
}

/// Statuses in which a volume's data need not exist: it is being made or removed, or
/// making it failed.
fn data_optional(status: VolumeStatus) -> bool {
    matches!(
        status,
        VolumeStatus::Creating
            | VolumeStatus::Deleting
            | VolumeStatus::Error
            | VolumeStatus::ErrorDeleting
            | VolumeStatus::ErrorManaging
            | VolumeStatus::Managing
    )
}

/// Every invariant the snapshot breaks. `backends` lists what each checked backend
/// holds; volumes on hosts not in the list are not checked against storage.
pub fn check(snapshot: &Snapshot, backends: &[BackendObjects]) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut by_volume: BTreeMap<VolumeId, Vec<&AttachmentFacts>> = BTreeMap::new();
    for attachment in &snapshot.attachments {
        by_volume
            .entry(attachment.volume_id)
            .or_default()
            .push(attachment);
    }
    for volume in &snapshot.volumes {
        let attachments = by_volume.remove(&volume.id).unwrap_or_default();
        let statuses: Vec<AttachStatus> = attachments.iter().map(|a| a.attach_status).collect();
        if !status_consistent(volume.status, &statuses) {
            findings.push(Finding::StatusMismatch {
                volume_id: volume.id,
                status: volume.status.as_str().to_owned(),
                attachment_statuses: statuses.iter().map(|s| s.as_str().to_owned()).collect(),
            });
        }
        let instances: BTreeSet<String> = attachments
            .iter()
            .filter(|a| holds_volume(a.attach_status))
            .filter_map(|a| a.instance_uuid.clone())
            .collect();
        if !volume.multiattach && instances.len() > 1 {
            findings.push(Finding::SeveralInstancesWithoutMultiattach {
                volume_id: volume.id,
                instances: instances.into_iter().collect(),
            });
        }
    }
    // What is left are live attachments of volumes that are deleted (or never existed).
    for (volume_id, attachments) in by_volume {
        findings.extend(
            attachments
                .iter()
                .map(|a| Finding::AttachmentOfDeletedVolume {
                    attachment_id: a.id,
                    volume_id,
                }),
        );
    }
    let mut specs: BTreeMap<AttachmentId, Vec<String>> = BTreeMap::new();
    for (attachment_id, key) in &snapshot.specs_of_deleted_attachments {
        specs.entry(*attachment_id).or_default().push(key.clone());
    }
    findings.extend(specs.into_iter().map(|(attachment_id, keys)| {
        Finding::SpecsOfDeletedAttachment {
            attachment_id,
            keys,
        }
    }));
    let live: BTreeSet<VolumeId> = snapshot.volumes.iter().map(|v| v.id).collect();
    findings.extend(
        snapshot
            .snapshots
            .iter()
            .filter(|(_, volume)| !live.contains(volume))
            .map(
                |&(snapshot_id, volume_id)| Finding::SnapshotOfDeletedVolume {
                    snapshot_id,
                    volume_id,
                },
            ),
    );
    findings.extend(check_storage(snapshot, backends));
    findings.extend(check_quotas(snapshot));
    findings
}

/// Usage over a project's own limit, and reservations no extend holds.
fn check_quotas(snapshot: &Snapshot) -> Vec<Finding> {
    let mut findings: Vec<Finding> = snapshot
        .volumes
        .iter()
        .filter(|v| v.reserved_growth != 0 && v.status != VolumeStatus::Extending)
        .map(|v| Finding::StaleReservation {
            volume_id: v.id,
            status: v.status.as_str().to_owned(),
            reserved_gb: v.reserved_growth,
        })
        .collect();
    for project in &snapshot.quotas {
        let types = project.usage.by_type.keys().map(String::as_str);
        for resource in quota::resource_names(types) {
            let consumed = project.usage.consumed(&resource);
            if consumed < 0 {
                findings.push(Finding::NegativeUsage {
                    project_id: project.project_id.clone(),
                    resource: resource.clone(),
                    consumed,
                });
            }
            let Some(&limit) = project.rows.project.get(&resource) else {
                continue;
            };
            if limit >= 0 && consumed > limit && resource != "per_volume_gigabytes" {
                findings.push(Finding::OverQuota {
                    project_id: project.project_id.clone(),
                    resource,
                    consumed,
                    limit,
                });
            }
        }
    }
    findings
}

fn backend_host(volume_host: &str) -> &str {
    volume_host.split('#').next().unwrap_or(volume_host)
}

fn check_storage(snapshot: &Snapshot, backends: &[BackendObjects]) -> Vec<Finding> {
    let mut findings = Vec::new();
    for backend in backends {
        let live: BTreeMap<VolumeId, &VolumeFacts> = snapshot
            .volumes
            .iter()
            .filter(|v| v.host.as_deref().map(backend_host) == Some(backend.host.as_str()))
            .map(|v| (v.id, v))
            .collect();
        let stored: BTreeSet<VolumeId> = live.values().map(|v| v.storage).collect();
        for (id, volume) in &live {
            if !data_optional(volume.status) && !backend.volume_ids.contains(&volume.storage) {
                findings.push(Finding::BackendObjectMissing {
                    volume_id: *id,
                    host: volume.host.clone().unwrap_or_default(),
                });
            }
        }
        for id in &backend.volume_ids {
            if !stored.contains(id) {
                findings.push(Finding::BackendObjectWithoutVolume {
                    volume_id: *id,
                    backend_host: backend.host.clone(),
                });
            }
        }
        let owned: BTreeSet<SnapshotId> = snapshot
            .snapshots
            .iter()
            .filter(|(_, volume)| live.contains_key(volume))
            .map(|(id, _)| *id)
            .collect();
        for id in backend.snapshot_ids.difference(&owned) {
            findings.push(Finding::SnapshotDataWithoutRecord {
                snapshot_id: *id,
                backend_host: backend.host.clone(),
            });
        }
    }
    findings
}

#[cfg(test)]
mod tests;
