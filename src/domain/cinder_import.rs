//! Moving in from Cinder: what `import-cinder` takes from a Cinder 29 database and why it
//! refuses the rest. Pure: Cinder's live rows come in read (`store::cinder_source`), with
//! what the configured backends hold and which types this database already has; the plan
//! goes out to the store (`store::cinder_import`), which writes what is not there yet.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::attachment::{AttachMode, AttachStatus, Connector};
use super::ids::{AttachmentId, QosSpecsId, ServiceId, SnapshotId, VolumeId, VolumeTypeId};
use super::qos::Consumer;
use super::quota;
use super::volume::VolumeStatus;
use volumes::{take_snapshots, take_volumes};

mod volumes;

/// The schema revisions (alembic's `version_num`) this import knows: Cinder 29's.
pub const KNOWN_REVISIONS: &[&str] = &["9c74c1c6971f"];

/// Key-value rows (specs, metadata), as Cinder keeps them.
pub type Pairs = BTreeMap<String, Option<String>>;

/// The live rows of a Cinder database that the import looks at.
#[derive(Debug, Clone, Default)]
pub struct CinderDatabase {
    pub revision: String,
    pub types: Vec<CinderType>,
    pub qos: Vec<CinderQos>,
    /// `(project, resource, limit)`.
    pub quotas: Vec<(String, String, i64)>,
    /// `(class, resource, limit)`.
    pub quota_classes: Vec<(String, String, i64)>,
    pub volumes: Vec<CinderVolume>,
    pub snapshots: Vec<CinderSnapshot>,
    pub attachments: Vec<CinderAttachment>,
}

#[derive(Debug, Clone)]
pub struct CinderType {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub is_public: bool,
    pub qos_specs_id: Option<String>,
    pub specs: Pairs,
    pub projects: Vec<String>,
    /// An encryption row names the type.
    pub encrypted: bool,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone)]
pub struct CinderQos {
    pub id: String,
    pub name: String,
    pub consumer: Option<String>,
    pub specs: BTreeMap<String, String>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone)]
pub struct CinderVolume {
    pub id: String,
    pub user_id: Option<String>,
    pub project_id: Option<String>,
    pub host: Option<String>,
    pub size: i64,
    pub availability_zone: Option<String>,
    pub status: String,
    pub display_name: Option<String>,
    pub display_description: Option<String>,
    pub volume_type_id: String,
    pub bootable: bool,
    pub multiattach: bool,
    pub encryption_key_id: Option<String>,
    pub snapshot_id: Option<String>,
    pub source_volid: Option<String>,
    /// Set after a migration: the storage is named after this id, not the volume's.
    pub name_id: Option<String>,
    pub group_id: Option<String>,
    pub consistencygroup_id: Option<String>,
    pub migration_status: Option<String>,
    /// False for a migration's temporary volume.
    pub use_quota: bool,
    pub metadata: Pairs,
    pub admin_metadata: Pairs,
    pub image_metadata: Pairs,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone)]
pub struct CinderSnapshot {
    pub id: String,
    pub volume_id: String,
    pub user_id: Option<String>,
    pub project_id: Option<String>,
    pub status: String,
    pub volume_size: i64,
    pub display_name: Option<String>,
    pub display_description: Option<String>,
    pub group_snapshot_id: Option<String>,
    pub metadata: Pairs,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone)]
pub struct CinderAttachment {
    pub id: String,
    pub volume_id: String,
    pub instance_uuid: Option<String>,
    pub attached_host: Option<String>,
    pub mountpoint: Option<String>,
    pub attach_time: Option<DateTime<Utc>>,
    pub attach_mode: Option<String>,
    pub attach_status: String,
    pub connection_info: Option<String>,
    /// The connector as Cinder 29 keeps it (JSON), else its older `attachment_specs`.
    pub connector: Option<String>,
    pub specs: Pairs,
    pub created_at: DateTime<Utc>,
}

/// A backend of this service that Cinder's volumes are taken onto.
#[derive(Debug, Clone)]
pub struct Destination {
    /// `host@backend#pool`, what the taken volumes' `host` becomes.
    pub volume_host: String,
    pub service_uuid: ServiceId,
    pub availability_zone: String,
    /// The backend serves an attachment made elsewhere as it is (file; rbd with shared
    /// credentials); others keep per-attachment records an outside attach never made.
    pub takes_live_attachments: bool,
    /// What the backend reports for Nova's per-host lock (`shared_targets`).
    pub shared_targets: Option<bool>,
    pub volumes: BTreeSet<VolumeId>,
    pub snapshots: BTreeSet<SnapshotId>,
}

/// What this database holds already, that the plan must agree with.
#[derive(Debug, Clone, Default)]
pub struct Present {
    /// Live types by name: id and specs.
    pub types: BTreeMap<String, (VolumeTypeId, Pairs)>,
}

#[derive(Debug, Clone)]
pub struct TakenType {
    pub id: VolumeTypeId,
    pub source: CinderType,
    pub qos_specs_id: Option<QosSpecsId>,
}

#[derive(Debug, Clone)]
pub struct TakenQos {
    pub id: QosSpecsId,
    pub name: String,
    pub consumer: Consumer,
    pub specs: BTreeMap<String, String>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone)]
pub struct TakenVolume {
    pub id: VolumeId,
    pub source: CinderVolume,
    pub project_id: String,
    pub host: String,
    pub service_uuid: ServiceId,
    pub availability_zone: String,
    pub shared_targets: Option<bool>,
    pub volume_type_id: VolumeTypeId,
    pub status: VolumeStatus,
    pub attach_status: AttachStatus,
}

#[derive(Debug, Clone)]
pub struct TakenSnapshot {
    pub id: SnapshotId,
    pub volume_id: VolumeId,
    pub project_id: String,
    pub source: CinderSnapshot,
}

#[derive(Debug, Clone)]
pub struct TakenAttachment {
    pub id: AttachmentId,
    pub volume_id: VolumeId,
    pub attach_status: AttachStatus,
    pub attach_mode: AttachMode,
    pub connection_info: Option<serde_json::Value>,
    pub connector: Connector,
    pub source: CinderAttachment,
}

/// One row left behind, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refused {
    pub kind: &'static str,
    pub id: String,
    pub name: Option<String>,
    pub reason: String,
}

/// Everything one run would write, and what it leaves behind.
#[derive(Debug, Clone, Default)]
pub struct ImportPlan {
    pub qos: Vec<TakenQos>,
    pub types: Vec<TakenType>,
    /// `(project, resource, limit)`.
    pub quotas: Vec<(String, String, i64)>,
    /// `(class, resource, limit)`.
    pub quota_classes: Vec<(String, String, i64)>,
    pub volumes: Vec<TakenVolume>,
    pub snapshots: Vec<TakenSnapshot>,
    pub attachments: Vec<TakenAttachment>,
    /// Cinder types taken as this database's type of the same name: `(name, id here)`.
    pub mapped_types: Vec<(String, VolumeTypeId)>,
    pub refused: Vec<Refused>,
}

/// The statuses a volume is taken in: at rest, or held only by its attachments.
const TAKEN_VOLUME_STATUSES: &[VolumeStatus] = &[
    VolumeStatus::Available,
    VolumeStatus::InUse,
    VolumeStatus::Reserved,
    VolumeStatus::Attaching,
];

/// The attachment statuses taken: the live ones of Cinder's attach flow.
const TAKEN_ATTACH_STATUSES: &[AttachStatus] = &[
    AttachStatus::Reserved,
    AttachStatus::Attaching,
    AttachStatus::Attached,
];

/// The Cinder backend name of a volume host `host@backend#pool`.
pub fn backend_of(host: &str) -> &str {
    let backend = host.split('#').next().unwrap_or(host);
    backend.split_once('@').map_or(backend, |(_, name)| name)
}

/// Decides, row by row, what is taken. `destination` maps a Cinder backend name to the
/// backend here that its volumes go to (`None`: not configured).
pub fn plan<'a>(
    cinder: &CinderDatabase,
    present: &Present,
    destination: impl Fn(&str) -> Option<&'a Destination>,
) -> ImportPlan {
    let mut plan = ImportPlan::default();
    let qos_ids = take_qos(cinder, &mut plan);
    let type_ids = take_types(cinder, present, &qos_ids, &mut plan);
    take_quotas(cinder, &type_ids, &mut plan);
    let volumes = take_volumes(cinder, &type_ids, &destination, &mut plan);
    take_snapshots(cinder, &volumes, &mut plan);
    plan
}

fn refuse(plan: &mut ImportPlan, kind: &'static str, id: &str, name: Option<&str>, why: String) {
    plan.refused.push(Refused {
        kind,
        id: id.to_owned(),
        name: name.map(str::to_owned),
        reason: why,
    });
}

fn take_qos(cinder: &CinderDatabase, plan: &mut ImportPlan) -> BTreeSet<String> {
    let mut taken = BTreeSet::new();
    for qos in &cinder.qos {
        let Some(id) = QosSpecsId::parse(&qos.id) else {
            refuse(
                plan,
                "qos_specs",
                &qos.id,
                Some(&qos.name),
                "its id is not a UUID".into(),
            );
            continue;
        };
        let consumer = qos.consumer.as_deref().unwrap_or("back-end");
        let Some(consumer) = Consumer::parse(consumer) else {
            let why = format!("its consumer {consumer:?} is not front-end, back-end or both");
            refuse(plan, "qos_specs", &qos.id, Some(&qos.name), why);
            continue;
        };
        taken.insert(qos.id.clone());
        plan.qos.push(TakenQos {
            id,
            name: qos.name.clone(),
            consumer,
            specs: qos.specs.clone(),
            created_at: qos.created_at,
        });
    }
    taken
}

/// Cinder type id → the id volumes of it get here.
fn take_types(
    cinder: &CinderDatabase,
    present: &Present,
    qos: &BTreeSet<String>,
    plan: &mut ImportPlan,
) -> BTreeMap<String, (VolumeTypeId, String)> {
    let mut ids = BTreeMap::new();
    for t in &cinder.types {
        let Some(id) = VolumeTypeId::parse(&t.id) else {
            refuse(
                plan,
                "volume_type",
                &t.id,
                Some(&t.name),
                "its id is not a UUID".into(),
            );
            continue;
        };
        if let Some((here, specs)) = present.types.get(&t.name) {
            if *here != id {
                if *specs == t.specs {
                    // Cinder's `__DEFAULT__` (or a type made alike on both sides).
                    plan.mapped_types.push((t.name.clone(), *here));
                    ids.insert(t.id.clone(), (*here, t.name.clone()));
                } else {
                    let why = format!(
                        "a type named {:?} with other extra specs exists here ({here})",
                        t.name
                    );
                    refuse(plan, "volume_type", &t.id, Some(&t.name), why);
                }
                continue;
            }
        }
        if t.encrypted {
            let why = "an encrypted type: its volumes' keys stay in Cinder's key manager".into();
            refuse(plan, "volume_type", &t.id, Some(&t.name), why);
            continue;
        }
        let qos_specs_id = match &t.qos_specs_id {
            Some(q) if !qos.contains(q) => {
                let why = format!("its QoS specs {q} are not taken");
                refuse(plan, "volume_type", &t.id, Some(&t.name), why);
                continue;
            }
            Some(q) => QosSpecsId::parse(q),
            None => None,
        };
        ids.insert(t.id.clone(), (id, t.name.clone()));
        plan.types.push(TakenType {
            id,
            source: t.clone(),
            qos_specs_id,
        });
    }
    ids
}

fn take_quotas(
    cinder: &CinderDatabase,
    types: &BTreeMap<String, (VolumeTypeId, String)>,
    plan: &mut ImportPlan,
) {
    let known: BTreeSet<String> =
        quota::resource_names(types.values().map(|(_, name)| name.as_str()))
            .into_iter()
            .collect();
    for (owner, resource, limit) in &cinder.quotas {
        if known.contains(resource) {
            plan.quotas.push((owner.clone(), resource.clone(), *limit));
        } else {
            let why = format!("quota {resource:?} names no resource here");
            refuse(plan, "quota", owner, Some(resource), why);
        }
    }
    for (class, resource, limit) in &cinder.quota_classes {
        if class != quota::DEFAULT_CLASS {
            let why = "only the default quota class is used by Cinder and here".into();
            refuse(plan, "quota_class", class, Some(resource), why);
        } else if known.contains(resource) {
            plan.quota_classes
                .push((class.clone(), resource.clone(), *limit));
        } else {
            let why = format!("quota {resource:?} names no resource here");
            refuse(plan, "quota_class", class, Some(resource), why);
        }
    }
}

#[cfg(test)]
mod tests;
