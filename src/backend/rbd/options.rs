//! What an `rbd` backend is configured with (from `--backend NAME=rbd,...` or the
//! `rbd_*` options of its cinder.conf section).

use super::ceph::ClientConfig;

/// How hosts are given access to a volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credentials {
    /// The backend's own identity and libvirt secret, as Cinder's RBD driver gives them.
    Shared,
    /// An identity per host, volume and mode, its key in the connection info.
    PerAttachment,
}

/// Where an `rbd` backend's cluster is and how it keeps volumes.
#[derive(Debug, Clone)]
pub struct RbdOptions {
    /// The name volumes' `host` ends with and capabilities report.
    pub pool_name: String,
    pub client: ClientConfig,
    /// The RADOS pool of the images (`rbd_pool`).
    pub pool: String,
    /// `rbd_user`: `None` connects as `client.admin` and tells hosts that auth is off.
    pub user: Option<String>,
    /// `rbd_secret_uuid`: the libvirt secret holding the user's key on hypervisors.
    pub secret_uuid: Option<String>,
    pub flatten_volume_from_snapshot: bool,
    pub max_clone_depth: u32,
    /// `report_discard_supported`.
    pub discard: bool,
    pub credentials: Credentials,
    /// With shared credentials, whether a host's clients of a volume are blocklisted
    /// when its attachment ends (`fence=on`, the default); `off` is Cinder's way.
    pub fence: bool,
    /// How long a fenced client's address stays blocklisted.
    pub fence_seconds: u32,
    pub multiattach: bool,
    /// An operator's bound on the pool's size; else the cluster's own figure.
    pub capacity_gb: Option<f64>,
}
