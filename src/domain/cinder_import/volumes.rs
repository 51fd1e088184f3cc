//! Volumes, their attachments and snapshots: taken only where the storage is where this
//! service looks for it, and the status is one the attachments make.

use std::collections::BTreeMap;

use super::{
    backend_of, refuse, CinderAttachment, CinderDatabase, CinderVolume, Destination, ImportPlan,
    TakenAttachment, TakenSnapshot, TakenVolume, TAKEN_ATTACH_STATUSES, TAKEN_VOLUME_STATUSES,
};
use crate::domain::attach::{status_consistent, status_of, Hold};
use crate::domain::attachment::{AttachMode, AttachStatus, Connector};
use crate::domain::ids::{AttachmentId, SnapshotId, VolumeId, VolumeTypeId};
use crate::domain::snapshot::SnapshotStatus;
use crate::domain::volume::VolumeStatus;

/// Takes what it can; the ids taken, with the destination each went to.
pub(super) fn take_volumes<'a>(
    cinder: &CinderDatabase,
    types: &BTreeMap<String, (VolumeTypeId, String)>,
    destination: &impl Fn(&str) -> Option<&'a Destination>,
    plan: &mut ImportPlan,
) -> BTreeMap<String, &'a Destination> {
    let mut by_volume: BTreeMap<&str, Vec<&CinderAttachment>> = BTreeMap::new();
    for a in &cinder.attachments {
        by_volume.entry(a.volume_id.as_str()).or_default().push(a);
    }
    let mut taken = BTreeMap::new();
    for v in &cinder.volumes {
        let attachments = by_volume.remove(v.id.as_str()).unwrap_or_default();
        match take_volume(v, &attachments, types, destination) {
            Ok((volume, attached, to)) => {
                taken.insert(v.id.clone(), to);
                plan.volumes.push(volume);
                plan.attachments.extend(attached);
            }
            Err(why) => {
                for a in &attachments {
                    let reason = format!("its volume {} is not taken", v.id);
                    refuse(plan, "attachment", &a.id, None, reason);
                }
                refuse(plan, "volume", &v.id, v.display_name.as_deref(), why);
            }
        }
    }
    for (volume, attachments) in by_volume {
        for a in attachments {
            let why = format!("its volume {volume} is not a live volume");
            refuse(plan, "attachment", &a.id, None, why);
        }
    }
    taken
}

type TakenWithAttachments<'a> = (TakenVolume, Vec<TakenAttachment>, &'a Destination);

fn take_volume<'a>(
    v: &CinderVolume,
    attachments: &[&CinderAttachment],
    types: &BTreeMap<String, (VolumeTypeId, String)>,
    destination: &impl Fn(&str) -> Option<&'a Destination>,
) -> Result<TakenWithAttachments<'a>, String> {
    let id = VolumeId::parse(&v.id).ok_or("its id is not a UUID")?;
    let status = VolumeStatus::parse(&v.status)
        .filter(|s| TAKEN_VOLUME_STATUSES.contains(s))
        .ok_or_else(|| {
            format!(
                "its status is {}: only available, in-use, reserved and attaching volumes \
                 are taken (let Cinder finish, or reset it there, and run the import again)",
                v.status
            )
        })?;
    let project_id = v.project_id.clone().ok_or("it has no project")?;
    if let Some(name_id) = &v.name_id {
        return Err(format!(
            "its storage is named after {name_id} (a migration's left-over name); \
             the import takes only volumes whose storage is named after their own id"
        ));
    }
    if v.group_id.is_some() || v.consistencygroup_id.is_some() {
        return Err("it belongs to a group, and groups are not imported".into());
    }
    if v.encryption_key_id.is_some() {
        return Err("it is encrypted, and its key stays in Cinder's key manager".into());
    }
    if !v.use_quota {
        return Err("it is a temporary volume of a migration".into());
    }
    if v.migration_status
        .as_deref()
        .is_some_and(|m| m != "success")
    {
        return Err("it is being migrated".into());
    }
    let (volume_type_id, _) = types
        .get(&v.volume_type_id)
        .ok_or_else(|| format!("its type {} is not taken", v.volume_type_id))?;
    let host = v.host.as_deref().ok_or("it has no host")?;
    let backend = backend_of(host);
    let to = destination(backend)
        .ok_or_else(|| format!("its backend {backend:?} maps to no backend here"))?;
    if !to.volumes.contains(&id) {
        return Err(format!(
            "{} holds no volume-{id}: its storage must be where this service looks for it",
            to.volume_host
        ));
    }
    let attached = attachments
        .iter()
        .map(|a| take_attachment(id, a))
        .collect::<Result<Vec<_>, _>>()?;
    if !attached.is_empty() && !to.takes_live_attachments {
        return Err(format!(
            "it is attached, and {} keeps per-attachment records an attach made by Cinder \
             never made; detach it in Cinder first",
            to.volume_host
        ));
    }
    let live: Vec<AttachStatus> = attached.iter().map(|a| a.attach_status).collect();
    if !status_consistent(status, &live) {
        return Err(format!(
            "its status {} does not follow from its attachments ({})",
            v.status,
            live.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    // Cinder leaves `attach_status` `detached` beside a reservation; here it follows the
    // attachments as every write keeps it.
    let state = status_of(status, false, Hold::None, live.iter().copied());
    let volume = TakenVolume {
        id,
        source: v.clone(),
        project_id,
        host: to.volume_host.clone(),
        service_uuid: to.service_uuid,
        availability_zone: v
            .availability_zone
            .clone()
            .unwrap_or_else(|| to.availability_zone.clone()),
        shared_targets: to.shared_targets,
        volume_type_id: *volume_type_id,
        status: state.status,
        attach_status: state.attach_status,
    };
    Ok((volume, attached, to))
}

fn take_attachment(volume_id: VolumeId, a: &CinderAttachment) -> Result<TakenAttachment, String> {
    let id = AttachmentId::parse(&a.id)
        .ok_or_else(|| format!("attachment {}: its id is not a UUID", a.id))?;
    let attach_status = AttachStatus::parse(&a.attach_status)
        .filter(|s| TAKEN_ATTACH_STATUSES.contains(s))
        .ok_or_else(|| {
            format!(
                "attachment {} is {}: only reserved, attaching and attached ones are taken",
                a.id, a.attach_status
            )
        })?;
    let attach_mode = match a.attach_mode.as_deref() {
        None | Some("null") => AttachMode::ReadWrite,
        Some(mode) => AttachMode::parse(mode)
            .ok_or_else(|| format!("attachment {}: mode {mode:?} is not rw or ro", a.id))?,
    };
    let connection_info = match a.connection_info.as_deref() {
        None | Some("") | Some("{}") => None,
        Some(text) => Some(
            serde_json::from_str(text)
                .map_err(|e| format!("attachment {}: connection_info is not JSON: {e}", a.id))?,
        ),
    };
    let connector: Connector = match a.connector.as_deref() {
        Some(text) if !text.is_empty() && text != "null" => {
            serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text)
                .map_err(|e| {
                    format!(
                        "attachment {}: its connector is not a JSON object: {e}",
                        a.id
                    )
                })?
                .into_iter()
                .collect()
        }
        _ => a
            .specs
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.clone().map_or(serde_json::Value::Null, Into::into),
                )
            })
            .collect(),
    };
    Ok(TakenAttachment {
        id,
        volume_id,
        attach_status,
        attach_mode,
        connection_info,
        connector,
        source: a.clone(),
    })
}

pub(super) fn take_snapshots(
    cinder: &CinderDatabase,
    volumes: &BTreeMap<String, &Destination>,
    plan: &mut ImportPlan,
) {
    let projects: BTreeMap<VolumeId, String> = plan
        .volumes
        .iter()
        .map(|v| (v.id, v.project_id.clone()))
        .collect();
    for s in &cinder.snapshots {
        let name = s.display_name.as_deref();
        let checked = (|| {
            let id = SnapshotId::parse(&s.id).ok_or("its id is not a UUID")?;
            let to = volumes
                .get(&s.volume_id)
                .ok_or_else(|| format!("its volume {} is not taken", s.volume_id))?;
            let volume_id = VolumeId::parse(&s.volume_id).ok_or("its volume id is bad")?;
            if SnapshotStatus::parse(&s.status) != Some(SnapshotStatus::Available) {
                return Err(format!(
                    "its status is {}: only available snapshots are taken",
                    s.status
                ));
            }
            if s.group_snapshot_id.is_some() {
                return Err("it belongs to a group snapshot, and those are not imported".into());
            }
            if !to.snapshots.contains(&id) {
                return Err(format!("{} holds no snapshot-{id}", to.volume_host));
            }
            let project_id = s
                .project_id
                .clone()
                .or_else(|| projects.get(&volume_id).cloned())
                .ok_or("it has no project")?;
            Ok(TakenSnapshot {
                id,
                volume_id,
                project_id,
                source: s.clone(),
            })
        })();
        match checked {
            Ok(taken) => plan.snapshots.push(taken),
            Err(why) => refuse(plan, "snapshot", &s.id, name, why),
        }
    }
}
