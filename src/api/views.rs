//! Response bodies: how domain values look on the wire (never the store's rows).

use serde::Serialize;

use crate::domain::attach::LiveAttachment;
use crate::domain::attachment::Attachment;
use crate::domain::time::format_timestamp;

/// `GET /attachments` item.
#[derive(Debug, Serialize)]
pub struct AttachmentSummary {
    pub id: String,
    pub status: &'static str,
    pub instance: Option<String>,
    pub volume_id: String,
}

/// `GET /attachments/detail` item and the body of single-attachment responses.
#[derive(Debug, Serialize)]
pub struct AttachmentDetail {
    #[serde(flatten)]
    pub summary: AttachmentSummary,
    /// Cinder shows an unset time as `""`, not null.
    pub attached_at: String,
    pub detached_at: String,
    pub attach_mode: Option<&'static str>,
    pub connection_info: Option<serde_json::Value>,
    /// Not in Cinder: the other attachments of the volume connected from the same host.
    pub shared_connections: Vec<String>,
}

impl From<&Attachment> for AttachmentSummary {
    fn from(a: &Attachment) -> Self {
        AttachmentSummary {
            id: a.id.to_string(),
            status: a.attach_status.as_str(),
            instance: a.instance_uuid.clone(),
            volume_id: a.volume_id.to_string(),
        }
    }
}

/// What a detach answers for each attachment the volume keeps.
impl From<&LiveAttachment> for AttachmentSummary {
    fn from(a: &LiveAttachment) -> Self {
        AttachmentSummary {
            id: a.id.to_string(),
            status: a.attach_status.as_str(),
            instance: a.instance_uuid.clone(),
            volume_id: a.volume_id.to_string(),
        }
    }
}

impl From<&Attachment> for AttachmentDetail {
    fn from(a: &Attachment) -> Self {
        let time = |t: &Option<chrono::DateTime<chrono::Utc>>| {
            t.as_ref().map(format_timestamp).unwrap_or_default()
        };
        AttachmentDetail {
            summary: AttachmentSummary::from(a),
            attached_at: time(&a.attach_time),
            detached_at: time(&a.detach_time),
            attach_mode: a.attach_mode.map(|m| m.as_str()),
            connection_info: a.connection_info.clone(),
            shared_connections: a
                .shared_connections
                .iter()
                .map(ToString::to_string)
                .collect(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct AttachmentList<T> {
    pub attachments: Vec<T>,
}

use serde_json::{json, Map, Value};

use super::links::resource_links;
use super::microversion::ApiVersion;
use crate::domain::message::Message;
use crate::domain::volume::{Volume, VolumeStatus};
use crate::domain::volume_type::{ExtraSpecs, VolumeType};
use crate::service::types::SpecVisibility;
use crate::service::volumes::VolumeViewRights;

/// Where links point and what the caller may see.
pub struct ViewContext<'a> {
    pub base: &'a str,
    pub project_id: &'a str,
    pub version: ApiVersion,
}

fn time(at: &Option<chrono::DateTime<chrono::Utc>>) -> Value {
    at.as_ref()
        .map(|t| Value::String(format_timestamp(t)))
        .unwrap_or(Value::Null)
}

/// The status a volume shows (Cinder hides its managing states behind public ones).
fn shown_status(status: VolumeStatus) -> &'static str {
    match status {
        VolumeStatus::Managing => "creating",
        VolumeStatus::ErrorManaging => "error",
        other => other.as_str(),
    }
}

/// `GET /volumes` item: id, name, links.
pub fn volume_summary(ctx: &ViewContext<'_>, volume: &Volume) -> Value {
    let id = volume.id.to_string();
    json!({
        "id": id,
        "name": volume.name,
        "links": resource_links(ctx.base, ctx.project_id, "volumes", &id),
    })
}

/// The detailed volume view, field by field as Cinder builds it per microversion.
pub fn volume_detail(ctx: &ViewContext<'_>, volume: &Volume, rights: VolumeViewRights) -> Value {
    let v = ctx.version;
    let id = volume.id.to_string();
    let mut metadata: Map<String, Value> = volume
        .metadata
        .iter()
        .map(|(k, val)| (k.clone(), Value::String(val.clone())))
        .collect();
    for key in ["readonly", "attached_mode"] {
        if let Some(value) = volume.admin_metadata.get(key) {
            metadata.insert(key.to_owned(), Value::String(value.clone()));
        }
    }
    let attachments: Vec<Value> = volume
        .attachments
        .iter()
        .filter(|a| a.attach_status == crate::domain::attachment::AttachStatus::Attached)
        .map(|a| {
            json!({
                "id": id,
                "attachment_id": a.id.to_string(),
                "volume_id": id,
                "server_id": a.instance_uuid,
                "host_name": if rights.attachment_host { json!(a.attached_host) } else { Value::Null },
                "device": a.mountpoint,
                "attached_at": time(&a.attach_time),
            })
        })
        .collect();
    let type_name = json!(volume.volume_type_name);
    let mut view = json!({
        "id": id,
        "status": shown_status(volume.status),
        "size": volume.size,
        "availability_zone": volume.availability_zone,
        "created_at": format_timestamp(&volume.created_at),
        "updated_at": time(&volume.updated_at),
        "name": volume.name,
        "description": volume.description,
        "volume_type": type_name,
        "snapshot_id": volume.snapshot_id,
        "source_volid": volume.source_volid,
        "metadata": metadata,
        "links": resource_links(ctx.base, ctx.project_id, "volumes", &id),
        "user_id": volume.user_id,
        "bootable": if volume.bootable { "true" } else { "false" },
        "encrypted": volume.encryption_key_id.is_some(),
        "replication_status": null,
        "consistencygroup_id": volume.consistencygroup_id,
        "multiattach": volume.multiattach,
        "attachments": attachments,
    });
    let fields = view.as_object_mut().expect("an object");
    if rights.is_admin {
        fields.insert("migration_status".into(), json!(volume.migration_status));
    }
    if v.at_least(3, 13) {
        fields.insert("group_id".into(), json!(volume.group_id));
    }
    if rights.is_admin && v.at_least(3, 21) {
        fields.insert("provider_id".into(), json!(volume.provider_id));
    }
    if v.at_least(3, 48) {
        // Below 3.69 a stored "always lock" (null) is shown as true.
        let shared = match volume.shared_targets {
            None if !v.at_least(3, 69) => Some(true),
            other => other,
        };
        fields.insert("shared_targets".into(), json!(shared));
        fields.insert(
            "service_uuid".into(),
            json!(volume.service_uuid.map(|u| u.to_string())),
        );
    }
    if rights.is_admin && v.at_least(3, 61) {
        fields.insert("cluster_name".into(), Value::Null);
    }
    if v.at_least(3, 63) {
        fields.insert(
            "volume_type_id".into(),
            json!(volume.volume_type_id.to_string()),
        );
    }
    if v.at_least(3, 64) {
        let key = crate::keys::shown_key_id(volume.encryption_key_id.as_deref());
        if let Some(key) = key {
            fields.insert("encryption_key_id".into(), json!(key));
        }
    }
    if v.at_least(3, 65) {
        fields.insert("consumes_quota".into(), Value::Bool(true));
    }
    if rights.image_metadata && !volume.image_metadata.is_empty() {
        fields.insert("volume_image_metadata".into(), json!(volume.image_metadata));
    }
    if rights.tenant_attribute {
        fields.insert(
            "os-vol-tenant-attr:tenant_id".into(),
            json!(volume.project_id),
        );
    }
    if rights.host_attribute {
        fields.insert("os-vol-host-attr:host".into(), json!(volume.host));
    }
    if rights.migration_attribute {
        fields.insert(
            "os-vol-mig-status-attr:migstat".into(),
            json!(volume.migration_status),
        );
        fields.insert(
            "os-vol-mig-status-attr:name_id".into(),
            json!(volume.name_id),
        );
    }
    view
}

/// What of a type the caller may see.
#[derive(Debug, Clone, Copy)]
pub struct TypeViewRights {
    pub specs: SpecVisibility,
    pub qos_specs_id: bool,
}

pub fn volume_type(t: &VolumeType, rights: TypeViewRights) -> Value {
    let mut view = json!({
        "id": t.id.to_string(),
        "name": t.name,
        "is_public": t.is_public,
        "description": t.description,
        "os-volume-type-access:is_public": t.is_public,
    });
    let fields = view.as_object_mut().expect("an object");
    if let Some(specs) = rights.specs.filter(&t.extra_specs) {
        fields.insert("extra_specs".into(), specs_json(&specs));
    }
    if rights.qos_specs_id {
        fields.insert("qos_specs_id".into(), json!(t.qos_specs_id));
    }
    view
}

/// What type create and update answer (Cinder's older `types_manage` view): every extra
/// spec, no `qos_specs_id`; the access extension adds `os-volume-type-access:is_public`
/// to creates only.
pub fn managed_volume_type(t: &VolumeType, created: bool) -> Value {
    let mut view = json!({
        "id": t.id.to_string(),
        "name": t.name,
        "is_public": t.is_public,
        "description": t.description,
        "extra_specs": specs_json(&t.extra_specs),
    });
    if created {
        view["os-volume-type-access:is_public"] = json!(t.is_public);
    }
    view
}

pub fn specs_json(specs: &ExtraSpecs) -> Value {
    Value::Object(specs.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
}

pub fn message(ctx: &ViewContext<'_>, m: &Message) -> Value {
    let id = m.id.to_string();
    let mut view = json!({
        "id": id,
        "event_id": m.event_id,
        "user_message": m.user_message,
        "message_level": m.message_level,
        "created_at": format_timestamp(&m.created_at),
        "guaranteed_until": time(&m.expires_at),
        "request_id": m.request_id,
        "links": resource_links(ctx.base, ctx.project_id, "messages", &id),
    });
    let fields = view.as_object_mut().expect("an object");
    fields.insert("resource_type".into(), json!(m.resource_type));
    if let Some(uuid) = &m.resource_uuid {
        fields.insert("resource_uuid".into(), json!(uuid));
    }
    view
}
