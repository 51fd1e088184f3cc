//! What the service offers: `/os-availability-zone` (the zones of the configured
//! backends) and `/extensions` (the Cinder API extensions this service implements).
//! Any authenticated caller may read both, as in Cinder.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::context::Ctx;
use super::endpoint::Endpoint;
use super::error::ApiError;
use crate::api::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/os-availability-zone", get(list_zones))
        .route("/extensions", get(list_extensions))
        .route("/extensions/{alias}", get(show_extension))
}

async fn list_zones(State(state): State<AppState>, ctx: Ctx) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::AvailabilityZoneList)?;
    let zones: Vec<Value> = state
        .service
        .availability_zones()
        .into_iter()
        .map(|zone| json!({"zoneName": zone, "zoneState": {"available": true}}))
        .collect();
    Ok(Json(json!({"availabilityZoneInfo": zones})))
}

/// `(name, alias, description, updated)` of each Cinder extension whose API is served
/// here, as Cinder's extension descriptors state them.
const EXTENSIONS: &[(&str, &str, &str, &str)] = &[
    (
        "AdminActions",
        "os-admin-actions",
        "Enable admin actions.",
        "2012-08-25T00:00:00+00:00",
    ),
    (
        "AvailabilityZones",
        "os-availability-zone",
        "Describe Availability Zones.",
        "2013-06-27T00:00:00+00:00",
    ),
    (
        "Backups",
        "backups",
        "Backups support.",
        "2012-12-12T00:00:00+00:00",
    ),
    (
        "Capabilities",
        "capabilities",
        "Capabilities support.",
        "2015-08-31T00:00:00+00:00",
    ),
    (
        "ExtendedServices",
        "os-extended-services",
        "Extended services support.",
        "2014-01-10T00:00:00-00:00",
    ),
    (
        "ExtendedSnapshotAttributes",
        "os-extended-snapshot-attributes",
        "Extended SnapshotAttributes support.",
        "2012-06-19T00:00:00+00:00",
    ),
    (
        "Hosts",
        "os-hosts",
        "Admin-only host administration.",
        "2011-06-29T00:00:00+00:00",
    ),
    (
        "Qos_specs_manage",
        "qos-specs",
        "QoS specs support.",
        "2013-08-02T00:00:00+00:00",
    ),
    (
        "QuotaClasses",
        "os-quota-class-sets",
        "Quota classes management support.",
        "2012-03-12T00:00:00+00:00",
    ),
    (
        "Quotas",
        "os-quota-sets",
        "Quota management support.",
        "2011-08-08T00:00:00+00:00",
    ),
    (
        "Scheduler_stats",
        "scheduler-stats",
        "Scheduler stats support.",
        "2014-09-07T00:00:00+00:00",
    ),
    (
        "Services",
        "os-services",
        "Services support.",
        "2012-10-28T00:00:00-00:00",
    ),
    (
        "SnapshotActions",
        "os-snapshot-actions",
        "Enable snapshot manager actions.",
        "2013-07-16T00:00:00+00:00",
    ),
    (
        "SnapshotManage",
        "os-snapshot-manage",
        "Allows existing backend storage to be 'managed' by Cinder.",
        "2014-12-31T00:00:00+00:00",
    ),
    (
        "SnapshotUnmanage",
        "os-snapshot-unmanage",
        "Enable volume unmanage operation.",
        "2014-12-31T00:00:00+00:00",
    ),
    (
        "TypesExtraSpecs",
        "os-types-extra-specs",
        "Type extra specs support.",
        "2011-08-24T00:00:00+00:00",
    ),
    (
        "TypesManage",
        "os-types-manage",
        "Types manage support.",
        "2011-08-24T00:00:00+00:00",
    ),
    (
        "UsedLimits",
        "os-used-limits",
        "Provide data on limited resources that are being used.",
        "2013-10-03T00:00:00+00:00",
    ),
    (
        "VolumeActions",
        "os-volume-actions",
        "Enable volume actions.",
        "2012-05-31T00:00:00+00:00",
    ),
    (
        "VolumeEncryptionMetadata",
        "os-volume-encryption-metadata",
        "Volume encryption metadata retrieval support.",
        "2013-07-10T00:00:00+00:00",
    ),
    (
        "VolumeHostAttribute",
        "os-vol-host-attr",
        "Expose host as an attribute of a volume.",
        "2011-11-03T00:00:00+00:00",
    ),
    (
        "VolumeImageMetadata",
        "os-vol-image-meta",
        "Show image metadata associated with the volume.",
        "2012-12-07T00:00:00+00:00",
    ),
    (
        "VolumeManage",
        "os-volume-manage",
        "Allows existing backend storage to be 'managed' by Cinder.",
        "2014-02-10T00:00:00+00:00",
    ),
    (
        "VolumeMigStatusAttribute",
        "os-vol-mig-status-attr",
        "Expose migration_status as an attribute of a volume.",
        "2013-08-08T00:00:00+00:00",
    ),
    (
        "VolumeTenantAttribute",
        "os-vol-tenant-attr",
        "Expose the internal project_id as an attribute of a volume.",
        "2011-11-03T00:00:00+00:00",
    ),
    (
        "VolumeTransfer",
        "os-volume-transfer",
        "Volume transfer management support.",
        "2013-05-29T00:00:00+00:00",
    ),
    (
        "VolumeTypeAccess",
        "os-volume-type-access",
        "Volume type access support.",
        "2014-06-26T00:00:00Z",
    ),
    (
        "VolumeTypeEncryption",
        "encryption",
        "Encryption support for volume types.",
        "2013-07-01T00:00:00+00:00",
    ),
    (
        "VolumeUnmanage",
        "os-volume-unmanage",
        "Enable volume unmanage operation.",
        "2012-05-31T00:00:00+00:00",
    ),
];

fn extension(entry: &(&str, &str, &str, &str)) -> Value {
    let (name, alias, description, updated) = entry;
    json!({"name": name, "alias": alias, "description": description, "updated": updated, "links": []})
}

async fn list_extensions(ctx: Ctx) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::ExtensionList)?;
    let extensions: Vec<Value> = EXTENSIONS.iter().map(extension).collect();
    Ok(Json(json!({"extensions": extensions})))
}

#[derive(Deserialize)]
struct ExtensionPath {
    alias: String,
}

async fn show_extension(
    ctx: Ctx,
    Path(path): Path<ExtensionPath>,
) -> Result<Json<Value>, ApiError> {
    ctx.require(Endpoint::ExtensionShow)?;
    EXTENSIONS
        .iter()
        .find(|(_, alias, _, _)| *alias == path.alias)
        .map(|entry| Json(json!({"extension": extension(entry)})))
        .ok_or_else(ApiError::not_found)
}
