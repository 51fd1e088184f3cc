//! Use cases. `Service` carries what they need (store, policy, backends, clock); each
//! file adds the methods of one resource. Methods take the caller first and return
//! domain values or a `DomainError`.

pub mod attachments;
mod backends;
mod backup_keys;
mod backup_records;
mod backup_work;
pub mod backups;
mod compute_relay;
mod default_types;
mod detach_guard;
pub mod encryption;
pub mod events;
pub mod exports;
mod group_members;
pub mod group_snapshots;
pub mod group_sources;
pub mod group_types;
pub mod groups;
mod image_download;
pub mod image_upload;
pub mod legacy_attachments;
pub mod messages;
mod placement;
pub mod qos_specs;
pub mod quotas;
pub mod service_views;
pub mod snapshot_manage;
pub mod snapshots;
mod transfer_keys;
pub mod transfers;
pub mod types;
mod volume_actions;
pub mod volume_gates;
pub mod volume_manage;
pub mod volume_metadata;
pub mod volume_migrations;
mod volume_reimages;
mod volume_reverts;
mod volume_sources;
mod volume_swaps;
pub mod volumes;
pub mod workers;

pub use backends::{build_backends, keep_reporting, register_backends, RegisterError};

use std::sync::Arc;

use crate::backend::Backends;
use crate::clock::Clock;
use crate::policy::PolicyEngine;
use crate::store::Store;

#[derive(Clone)]
pub struct Service {
    pub store: Arc<dyn Store>,
    pub policy: Arc<PolicyEngine>,
    pub backends: Arc<Backends>,
    pub clock: Arc<dyn Clock>,
    pub settings: Arc<Settings>,
    /// Attachment writes to one volume take turns in this process.
    pub gates: Arc<volume_gates::VolumeGates>,
}

/// Deployment choices the use cases follow.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Name of the type used when a volume is created without one.
    pub default_volume_type: String,
    /// Cap on a volume's live attachments when its type sets none (`None`: no cap).
    pub max_attachments_per_volume: Option<u32>,
    /// Quota defaults under the `default` quota class (cinder.conf's `quota_*`).
    pub quota_defaults: crate::domain::quota::QuotaDefaults,
    /// Where volumes of encrypted types get their key ids.
    pub key_manager: crate::keys::KeyManager,
    /// The image service (`[glance] api_servers`); without one, image requests are refused.
    pub glance: Option<Arc<crate::image::Glance>>,
    /// Where images that are not raw are converted (`image_conversion_dir`).
    pub image_conversion_dir: std::path::PathBuf,
    /// How long one `qemu-img convert` may run.
    pub image_conversion_timeout: std::time::Duration,
    /// `enable_force_upload`: whether `force` lets an `in-use` volume be uploaded.
    pub enable_force_upload: bool,
    /// Which images are taken and which properties an upload leaves out
    /// (`vmdk_allowed_types`, `image_conversion_disable`, `reserved_image_namespaces`).
    pub image_rules: crate::image::inspect::ImageRules,
    /// Nova, for the calls Cinder makes to it (`[nova]`); without it none is made.
    pub nova: Option<Arc<crate::compute::Nova>>,
    /// How long a call owed to Nova is tried while Nova does not answer.
    pub nova_retry_for: chrono::Duration,
    /// The backup service (`backup_posix_path`); without one, backups are refused.
    pub backups: Option<BackupSettings>,
    /// How long volume work goes unchanged before it counts as stopped half-way (what a
    /// restart and `workers/cleanup` finish): longer than any request may run.
    pub interrupted_after: chrono::Duration,
}

/// Where backups are kept and who keeps them.
#[derive(Debug, Clone)]
pub struct BackupSettings {
    pub repository: crate::backup::Repository,
    /// The backup service's host (`backups.host`): recovery looks after its backups.
    pub host: String,
    /// How long a backup or restore may go untouched before it counts as stopped
    /// (a running one is touched several times as often).
    pub stale_after: std::time::Duration,
    /// Whether the repository passed its set-up check (`keep_setting_backups_up`);
    /// until then this host's `cinder-backup` takes no requests.
    pub ready: Arc<std::sync::atomic::AtomicBool>,
}

/// `--image-conversion-timeout` when not given.
pub const DEFAULT_CONVERSION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);

/// `--max-attachments-per-volume` when not given.
pub const DEFAULT_MAX_ATTACHMENTS: u32 = 128;

impl Settings {
    /// The cap as the command line gives it: 0 means none.
    pub fn attachment_cap(flag: u32) -> Option<u32> {
        (flag > 0).then_some(flag)
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            default_volume_type: crate::domain::volume_type::DEFAULT_TYPE_NAME.to_owned(),
            max_attachments_per_volume: Some(DEFAULT_MAX_ATTACHMENTS),
            quota_defaults: Default::default(),
            key_manager: Default::default(),
            glance: None,
            image_conversion_dir: std::env::temp_dir().join("cinder-attach-conversion"),
            image_conversion_timeout: DEFAULT_CONVERSION_TIMEOUT,
            enable_force_upload: false,
            image_rules: Default::default(),
            nova: None,
            nova_retry_for: chrono::Duration::minutes(10),
            backups: None,
            interrupted_after: chrono::Duration::minutes(2),
        }
    }
}

#[cfg(test)]
mod tests;

/// Cinder's 404 for a volume that is not there (or not visible to the caller).
/// A listing's marker must name a row the listing could show: one that exists (`owner`,
/// its project) in the listed project (`None`: any). Cinder answers "marker not found".
pub(super) fn check_marker(
    marker: uuid::Uuid,
    owner: Option<&str>,
    listed_project: Option<&String>,
) -> Result<(), crate::domain::DomainError> {
    match owner {
        Some(owner) if listed_project.is_none_or(|p| p == owner) => Ok(()),
        _ => Err(crate::domain::DomainError::MarkerNotFound(
            marker.to_string(),
        )),
    }
}

pub(super) fn volume_not_found(id: crate::domain::ids::VolumeId) -> crate::domain::DomainError {
    crate::domain::DomainError::VolumeNotFound(id.to_string())
}
