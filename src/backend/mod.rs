//! Storage backends: where volume data lives and how hosts connect to it. Each backend is
//! configured by name (`--backend NAME=DRIVER,key=value,...`) and registered as a
//! service with a stable `service_uuid`.

pub mod data;
mod file;
mod iscsi_sim;
pub mod rbd;
pub mod tgt;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

pub use crate::domain::attachment::{Connector, DriverConnection};
use crate::domain::export::{AccessGrant, HostGrant, TargetExport};
use crate::domain::ids::{ServiceId, SnapshotId, VolumeId};
use async_trait::async_trait;

pub use data::{DataIn, DataOut};
pub use file::FileBackend;
pub use iscsi_sim::IscsiSimBackend;
pub use rbd::RbdBackend;
pub use tgt::TgtBackend;

/// What a backend that enforces access reads from the database (and records in it):
/// its volumes' exports and who may log in to them. The service implements it over the
/// store; errors come back as text safe to show.
#[async_trait]
pub trait AccessRecords: Send + Sync {
    /// Records the volume's export with a number no other volume of this backend has.
    async fn record_export(
        &self,
        volume_id: VolumeId,
        auth_username: &str,
        auth_password: &str,
    ) -> Result<TargetExport, String>;
    async fn export_of(&self, volume_id: VolumeId) -> Result<Option<TargetExport>, String>;
    /// The volume's export and its grants, read together.
    async fn export_with_grants(
        &self,
        volume_id: VolumeId,
    ) -> Result<Option<(TargetExport, Vec<AccessGrant>)>, String>;
    async fn exports(&self) -> Result<Vec<TargetExport>, String>;
    async fn forget_export(&self, volume_id: VolumeId) -> Result<(), String>;
    /// Initiators of live, connected attachments of every exported volume.
    async fn grants(&self) -> Result<Vec<AccessGrant>, String>;
    /// Hosts of live, connected attachments of this backend's volumes (of one, when
    /// given), with the keyring each was given.
    async fn host_grants(&self, volume: Option<VolumeId>) -> Result<Vec<HostGrant>, String>;
    /// The volume's turn at changing who may reach it, taken in the database so that
    /// every process serving the backend, on any machine, takes turns with the others.
    async fn access_turn(&self, volume: VolumeId) -> Result<AccessTurn, String>;
}

/// Records for drivers built without a database (fuzz targets, unit tests): nothing is
/// exported, nothing recorded.
pub struct NoRecords;

#[async_trait]
impl AccessRecords for NoRecords {
    async fn record_export(&self, _: VolumeId, _: &str, _: &str) -> Result<TargetExport, String> {
        Err("no database to record exports in".into())
    }
    async fn export_of(&self, _: VolumeId) -> Result<Option<TargetExport>, String> {
        Ok(None)
    }
    async fn export_with_grants(
        &self,
        _: VolumeId,
    ) -> Result<Option<(TargetExport, Vec<AccessGrant>)>, String> {
        Ok(None)
    }
    async fn exports(&self) -> Result<Vec<TargetExport>, String> {
        Ok(Vec::new())
    }
    async fn forget_export(&self, _: VolumeId) -> Result<(), String> {
        Ok(())
    }
    async fn grants(&self) -> Result<Vec<AccessGrant>, String> {
        Ok(Vec::new())
    }
    async fn host_grants(&self, _: Option<VolumeId>) -> Result<Vec<HostGrant>, String> {
        Ok(Vec::new())
    }
    /// Without a database there is nothing to take turns at.
    async fn access_turn(&self, _: VolumeId) -> Result<AccessTurn, String> {
        Ok(AccessTurn::new(()))
    }
}

/// A turn at changing who may reach one volume, held from the backend's change until
/// the database records the decision behind it (released when dropped).
pub struct AccessTurn(#[allow(dead_code)] Box<dyn std::any::Any + Send + Sync>);

impl AccessTurn {
    pub fn new(held: impl std::any::Any + Send + Sync) -> Self {
        AccessTurn(Box::new(held))
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Capabilities {
    pub driver: &'static str,
    pub multiattach: bool,
    /// Whether several volumes share one target (hosts must serialise attach/detach);
    /// `None` is Cinder's "always lock".
    pub shared_targets: Option<bool>,
    pub pool_name: String,
    /// The size of the pool (`None`: not limited). What is free follows from what the
    /// database holds on the backend, not from the driver.
    pub total_capacity_gb: Option<f64>,
    /// Cinder's `storage_protocol`: how hosts reach the data (`iSCSI`, `NFS`, `local`).
    pub storage_protocol: &'static str,
    /// Volumes take space as data is written (sparse files).
    pub thin_provisioning: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// The connector lacks what this backend needs (400 to the caller).
    #[error("the connector lacks {0}")]
    InvalidConnector(String),
    /// The backend could not do the work; the text is safe to show a user.
    #[error("{0}")]
    Failed(String),
    /// The object is in use on the backend (a snapshot with clones, an image still held
    /// open): nothing was removed, the object is as it was (Cinder's `VolumeIsBusy` and
    /// `SnapshotIsBusy`).
    #[error("{0}")]
    Busy(String),
}

/// Where a new volume's data comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataSource {
    /// A snapshot, and the volume it was taken of.
    Snapshot(SnapshotId, VolumeId),
    Volume(VolumeId),
}

#[async_trait]
pub trait Backend: Send + Sync + 'static {
    fn capabilities(&self) -> Capabilities;

    /// Creates the volume's storage, `size_gib` GiB. Must not leave anything behind on error.
    async fn create_volume(&self, volume_id: VolumeId, size_gib: u64) -> Result<(), BackendError>;

    /// Grows the volume's storage to `new_size_gib` GiB (never shrinks it).
    async fn extend_volume(
        &self,
        volume_id: VolumeId,
        new_size_gib: u64,
    ) -> Result<(), BackendError>;

    /// Removes the volume's storage; a volume that is already gone is not an error.
    async fn delete_volume(&self, volume_id: VolumeId) -> Result<(), BackendError>;

    /// Copies the volume's data as it is now into snapshot `snapshot_id`. Must not leave
    /// anything behind on error.
    async fn create_snapshot(
        &self,
        volume_id: VolumeId,
        snapshot_id: SnapshotId,
    ) -> Result<(), BackendError>;

    /// Removes the data of a snapshot of `volume_id`; a snapshot that is already gone is
    /// not an error.
    async fn delete_snapshot(
        &self,
        volume_id: VolumeId,
        snapshot_id: SnapshotId,
    ) -> Result<(), BackendError>;

    /// Creates volume `volume_id` of `size_gib` GiB holding `source`'s data (a volume made
    /// from a snapshot, or a clone). Must not leave anything behind on error.
    async fn create_volume_from(
        &self,
        volume_id: VolumeId,
        source: DataSource,
        size_gib: u64,
    ) -> Result<(), BackendError>;

    /// Fills the new volume `volume_id` with a raw image arriving in order on `data`,
    /// until the sender closes it; returns how many bytes came. Backends with no data
    /// path of their own refuse.
    async fn write_data(&self, _volume_id: VolumeId, _data: DataIn) -> Result<u64, BackendError> {
        Err(BackendError::Failed(
            "this backend cannot write image data into a volume".to_owned(),
        ))
    }

    /// The volume's data as a file on this machine (file-backed backends), for tools
    /// that write it in place (`qemu-img convert`); `None` elsewhere.
    fn local_path(&self, _volume_id: VolumeId) -> Option<PathBuf> {
        None
    }

    /// Sends the volume's whole data, in order, into `sink`.
    async fn read_data(&self, _volume_id: VolumeId, _sink: DataOut) -> Result<(), BackendError> {
        Err(BackendError::Failed(
            "this backend cannot read a volume's data out".to_owned(),
        ))
    }

    /// Whether the volume's storage exists (for consistency checks).
    async fn volume_exists(&self, volume_id: VolumeId) -> Result<bool, BackendError>;

    /// Every volume whose storage this backend holds (for consistency checks).
    async fn list_volumes(&self) -> Result<Vec<VolumeId>, BackendError>;

    /// Every snapshot whose data this backend holds (for consistency checks).
    async fn list_snapshots(&self) -> Result<Vec<SnapshotId>, BackendError>;

    /// Checks a connector before anything is reserved.
    fn validate_connector(&self, connector: &Connector) -> Result<(), BackendError>;

    /// Exports the volume to the connector's host.
    async fn initialize_connection(
        &self,
        volume_id: VolumeId,
        connector: &Connector,
    ) -> Result<DriverConnection, BackendError>;

    /// Ends an export made by `initialize_connection`.
    async fn terminate_connection(
        &self,
        volume_id: VolumeId,
        connector: &Connector,
    ) -> Result<(), BackendError>;

    /// For backends whose access follows the database: the volume's turn, to hold across
    /// `initialize_connection`/`terminate_connection` and the database write around them.
    /// Others have none.
    async fn access_turn(&self, _volume_id: VolumeId) -> Result<Option<AccessTurn>, BackendError> {
        Ok(None)
    }

    /// How often `reconcile` should run (`None`: never).
    fn reconcile_interval(&self) -> Option<Duration> {
        None
    }

    /// Compares what the backend exports with what the database holds and returns each
    /// difference; with `repair`, puts back what the database holds and removes the rest
    /// (and returns what it still had to change).
    async fn reconcile(&self, _repair: bool) -> Result<Vec<String>, BackendError> {
        Ok(Vec::new())
    }
}

/// The file name a volume's data has in a backend directory; derived from the uuid only,
/// so no request can steer it elsewhere.
/// The file name of a snapshot's data (not `volume-`, so volume listings skip it).
pub fn snapshot_file_name(snapshot_id: SnapshotId) -> String {
    format!("snapshot-{snapshot_id}")
}

pub fn volume_file_name(volume_id: VolumeId) -> String {
    format!("volume-{volume_id}")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriverKind {
    File,
    IscsiSim,
    Tgt,
    Rbd,
}

impl DriverKind {
    pub fn name(self) -> &'static str {
        match self {
            DriverKind::File => "file",
            DriverKind::IscsiSim => "iscsi-sim",
            DriverKind::Tgt => "tgt",
            DriverKind::Rbd => "rbd",
        }
    }
}

/// One `--backend` flag: `NAME=DRIVER[,key=value...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendSpec {
    pub name: String,
    pub driver: DriverKind,
    pub options: BTreeMap<String, String>,
}

impl FromStr for BackendSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let mut parts = text.split(',');
        let head = parts.next().unwrap_or_default();
        let (name, driver) = head
            .split_once('=')
            .ok_or_else(|| format!("backend {text:?} must look like NAME=DRIVER[,key=value...]"))?;
        let name = name.trim();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(format!(
                "backend name {name:?} may only use letters, digits, '-' and '_'"
            ));
        }
        let driver = match driver.trim() {
            "file" => DriverKind::File,
            "iscsi-sim" => DriverKind::IscsiSim,
            "tgt" => DriverKind::Tgt,
            "rbd" => DriverKind::Rbd,
            other => {
                return Err(format!(
                    "unknown backend driver {other:?} (known: file, iscsi-sim, tgt, rbd)"
                ))
            }
        };
        let mut options = BTreeMap::new();
        for part in parts {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| format!("backend option {part:?} must look like key=value"))?;
            options.insert(key.trim().to_owned(), value.trim().to_owned());
        }
        Ok(BackendSpec {
            name: name.to_owned(),
            driver,
            options,
        })
    }
}

/// Options every driver reads.
struct CommonOptions {
    dir: PathBuf,
    pool: String,
    availability_zone: String,
    multiattach: bool,
    shared_targets: Option<bool>,
    capacity_gb: Option<f64>,
}

fn parse_bool(key: &str, value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(format!("backend option {key}={value:?} is not a boolean")),
    }
}

/// Options `capabilities.<name>=<value>` add `<name>` to what the backend reports (as
/// Cinder's `extra_capabilities` do), for volume types to ask for.
pub const EXTRA_CAPABILITY_PREFIX: &str = "capabilities.";

/// What a backend reports about itself beyond what its driver knows: the names Cinder's
/// scheduler and admin views show, and the operator's own capabilities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendIdentity {
    pub volume_backend_name: String,
    pub vendor_name: String,
    pub extra: BTreeMap<String, String>,
}

impl BackendSpec {
    /// The names this backend reports (`volume_backend_name` defaults to the backend's
    /// name, `vendor_name` to LVM's "Open Source"), and its extra capabilities.
    pub fn identity(&self) -> BackendIdentity {
        BackendIdentity {
            volume_backend_name: self
                .options
                .get("volume_backend_name")
                .cloned()
                .unwrap_or_else(|| self.name.clone()),
            vendor_name: self
                .options
                .get("vendor_name")
                .cloned()
                .unwrap_or_else(|| "Open Source".to_owned()),
            extra: self
                .options
                .iter()
                .filter_map(|(key, value)| {
                    let name = key.strip_prefix(EXTRA_CAPABILITY_PREFIX)?;
                    Some((name.to_owned(), value.clone()))
                })
                .collect(),
        }
    }

    fn common(
        &self,
        default_shared_targets: Option<bool>,
        known: &[&str],
    ) -> Result<CommonOptions, String> {
        for key in self.options.keys() {
            let shared = [
                "dir",
                "pool",
                "availability_zone",
                "multiattach",
                "shared_targets",
                "volume_backend_name",
                "vendor_name",
                "capacity_gb",
            ];
            let extra_capability = key
                .strip_prefix(EXTRA_CAPABILITY_PREFIX)
                .is_some_and(|name| !name.is_empty());
            if !shared.contains(&key.as_str())
                && !known.contains(&key.as_str())
                && !extra_capability
            {
                return Err(format!("backend {}: unknown option {key:?}", self.name));
            }
        }
        let get = |key: &str| self.options.get(key).map(String::as_str);
        let shared_targets = match get("shared_targets") {
            None => default_shared_targets,
            Some("none" | "null") => None,
            Some(value) => Some(parse_bool("shared_targets", value)?),
        };
        let capacity_gb = match get("capacity_gb") {
            None => None,
            Some(v) => match v.parse::<f64>() {
                Ok(gb) if gb.is_finite() && gb >= 0.0 => Some(gb),
                _ => {
                    return Err(format!(
                        "backend {}: capacity_gb={v:?} is not a size in GiB",
                        self.name
                    ))
                }
            },
        };
        Ok(CommonOptions {
            capacity_gb,
            dir: PathBuf::from(
                get("dir")
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("data/volumes/{}", self.name)),
            ),
            pool: get("pool").unwrap_or(&self.name).to_owned(),
            availability_zone: get("availability_zone").unwrap_or("nova").to_owned(),
            multiattach: get("multiattach")
                .map(|v| parse_bool("multiattach", v))
                .transpose()?
                .unwrap_or(true),
            shared_targets,
        })
    }

    /// Builds the driver this spec describes; `records` is how a driver that enforces
    /// access reads the database (the others ignore it).
    pub fn build(
        &self,
        records: Arc<dyn AccessRecords>,
    ) -> Result<(Arc<dyn Backend>, String), String> {
        match self.driver {
            DriverKind::File => {
                let common = self.common(Some(false), &["nfs_export"])?;
                let zone = common.availability_zone.clone();
                let backend = FileBackend::new(
                    common.dir,
                    common.pool,
                    common.multiattach,
                    common.shared_targets,
                    common.capacity_gb,
                )
                .with_nfs_export(self.options.get("nfs_export").cloned());
                Ok((Arc::new(backend), zone))
            }
            DriverKind::IscsiSim => {
                let common = self.common(Some(true), &["portal", "iqn_prefix"])?;
                let zone = common.availability_zone.clone();
                let backend = IscsiSimBackend::new(
                    FileBackend::new(
                        common.dir,
                        common.pool,
                        common.multiattach,
                        common.shared_targets,
                        common.capacity_gb,
                    ),
                    self.options
                        .get("portal")
                        .cloned()
                        .unwrap_or_else(|| "127.0.0.1:3260".to_owned()),
                    self.options
                        .get("iqn_prefix")
                        .cloned()
                        .unwrap_or_else(|| "iqn.2010-10.org.openstack".to_owned()),
                );
                Ok((Arc::new(backend), zone))
            }
            DriverKind::Tgt => self.build_tgt(records),
            DriverKind::Rbd => self.build_rbd(records),
        }
    }

    /// `rbd`: `conf` (ceph.conf), `pool` (the RADOS pool, `rbd` by default), `user`
    /// (`client.<user>`; none: `client.admin`, auth off for hosts), `keyring`,
    /// `secret_uuid`, `cluster_name`, `flatten_volume_from_snapshot`, `max_clone_depth`
    /// (5), `report_discard_supported`, `credentials` (`shared`), and the common options;
    /// Cinder's `rbd_*` names are read from cinder.conf into these.
    fn build_rbd(
        &self,
        records: Arc<dyn AccessRecords>,
    ) -> Result<(Arc<dyn Backend>, String), String> {
        let known = [
            "conf",
            "user",
            "keyring",
            "secret_uuid",
            "cluster_name",
            "flatten_volume_from_snapshot",
            "max_clone_depth",
            "report_discard_supported",
            "credentials",
            "connect_timeout",
        ];
        let common = self.common(Some(false), &known)?;
        let get = |key: &str| self.options.get(key).map(String::as_str);
        let flag = |key: &str, default: bool| get(key).map_or(Ok(default), |v| parse_bool(key, v));
        let number = |key: &str, default: u32| -> Result<u32, String> {
            get(key).map_or(Ok(default), |v| {
                v.parse()
                    .map_err(|_| format!("backend {}: {key}={v:?} is not a number", self.name))
            })
        };
        let credentials = match get("credentials").unwrap_or("shared") {
            "shared" => rbd::Credentials::Shared,
            "per-attachment" => rbd::Credentials::PerAttachment,
            other => {
                return Err(format!(
                    "backend {}: credentials={other:?} is neither shared nor per-attachment",
                    self.name
                ))
            }
        };
        let pool = get("pool").unwrap_or("rbd").to_owned();
        let user = get("user").filter(|u| !u.is_empty()).map(str::to_owned);
        let timeout = number("connect_timeout", 10)?.max(1).to_string();
        let client = rbd::ceph::ClientConfig {
            conf_file: Some(get("conf").unwrap_or("/etc/ceph/ceph.conf").to_owned()),
            cluster_name: get("cluster_name").unwrap_or("ceph").to_owned(),
            user: user.clone().unwrap_or_else(|| "admin".to_owned()),
            keyring: get("keyring").map(str::to_owned),
            key: None,
            options: vec![
                ("rados_mon_op_timeout".into(), timeout.clone()),
                ("rados_osd_op_timeout".into(), timeout.clone()),
                ("client_mount_timeout".into(), timeout),
            ],
        };
        let options = rbd::RbdOptions {
            // As Cinder's scheduler names a backend that reports no pools: its
            // volume_backend_name (`host@ceph#ceph`), never the RADOS pool.
            pool_name: self.identity().volume_backend_name,
            client,
            pool,
            user,
            secret_uuid: get("secret_uuid").map(str::to_owned),
            flatten_volume_from_snapshot: flag("flatten_volume_from_snapshot", false)?,
            max_clone_depth: number("max_clone_depth", 5)?,
            discard: flag("report_discard_supported", false)?,
            credentials,
            multiattach: common.multiattach,
            capacity_gb: common.capacity_gb,
        };
        let backend = RbdBackend::new(self.name.clone(), options, records);
        Ok((Arc::new(backend), common.availability_zone))
    }

    fn build_tgt(
        &self,
        records: Arc<dyn AccessRecords>,
    ) -> Result<(Arc<dyn Backend>, String), String> {
        let known = [
            "portal",
            "iqn_prefix",
            "control_port",
            "ipc_socket",
            "reconcile_seconds",
        ];
        let common = self.common(Some(false), &known)?;
        let get = |key: &str| self.options.get(key).map(String::as_str);
        let number = |key: &str, default: u64| -> Result<u64, String> {
            get(key).map_or(Ok(default), |v| {
                v.parse()
                    .map_err(|_| format!("backend {}: {key}={v:?} is not a number", self.name))
            })
        };
        let control_port = u16::try_from(number("control_port", 0)?)
            .map_err(|_| format!("backend {}: control_port is out of range", self.name))?;
        let reconcile_seconds = number("reconcile_seconds", 2)?.max(1);
        let portal = get("portal").unwrap_or("127.0.0.1:3260").to_owned();
        if !portal.contains(':') {
            return Err(format!(
                "backend {}: portal={portal:?} must look like HOST:PORT",
                self.name
            ));
        }
        let options = tgt::TgtOptions {
            portal,
            iqn_prefix: get("iqn_prefix")
                .unwrap_or("iqn.2010-10.org.openstack")
                .to_owned(),
            control: tgt::Control::new(
                get("ipc_socket").unwrap_or("/var/run/tgtd/socket"),
                control_port,
            ),
            reconcile_every: Duration::from_secs(reconcile_seconds),
        };
        let zone = common.availability_zone.clone();
        let storage = FileBackend::new(
            common.dir,
            common.pool,
            common.multiattach,
            common.shared_targets,
            common.capacity_gb,
        );
        let backend = TgtBackend::new(self.name.clone(), storage, options, records);
        Ok((Arc::new(backend), zone))
    }
}

/// A configured backend as the service uses it.
pub struct ConfiguredBackend {
    pub name: String,
    /// `<hostname>@<name>`: the service's host; volumes get `<host>#<pool>`.
    pub host: String,
    pub service_uuid: ServiceId,
    pub availability_zone: String,
    pub identity: BackendIdentity,
    pub driver: Arc<dyn Backend>,
}

impl ConfiguredBackend {
    pub fn volume_host(&self) -> String {
        format!("{}#{}", self.host, self.driver.capabilities().pool_name)
    }
}

impl std::fmt::Debug for ConfiguredBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfiguredBackend")
            .field("host", &self.host)
            .field("service_uuid", &self.service_uuid)
            .finish()
    }
}

/// Every configured backend, in configuration order.
#[derive(Debug, Default)]
pub struct Backends {
    list: Vec<ConfiguredBackend>,
    /// The host of this process's `cinder-scheduler` service, once registered.
    scheduler_host: Option<String>,
}

impl Backends {
    pub fn new(list: Vec<ConfiguredBackend>) -> Self {
        Backends {
            list,
            scheduler_host: None,
        }
    }

    pub fn with_scheduler_host(mut self, host: String) -> Self {
        self.scheduler_host = Some(host);
        self
    }

    /// The hosts of every service this process runs.
    pub fn service_hosts(&self) -> Vec<String> {
        let backends = self.list.iter().map(|b| b.host.clone());
        backends.chain(self.scheduler_host.clone()).collect()
    }

    pub fn get(&self, index: usize) -> Option<&ConfiguredBackend> {
        self.list.get(index)
    }

    pub fn iter(&self) -> impl Iterator<Item = &ConfiguredBackend> {
        self.list.iter()
    }

    /// The backend serving a volume, from the volume's `host` (`host@backend#pool`).
    pub fn for_host(&self, volume_host: &str) -> Option<&ConfiguredBackend> {
        let backend_host = volume_host.split('#').next().unwrap_or(volume_host);
        self.list.iter().find(|b| b.host == backend_host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(spec: &BackendSpec) -> Result<(Arc<dyn Backend>, String), String> {
        spec.build(Arc::new(NoRecords))
    }

    #[test]
    fn tgt_specs() {
        let spec: BackendSpec = "t=tgt,portal=127.0.0.1:3261,control_port=3,dir=/tmp/x"
            .parse()
            .unwrap();
        let (driver, _) = build(&spec).unwrap();
        assert_eq!(driver.capabilities().driver, "tgt");
        assert_eq!(driver.capabilities().shared_targets, Some(false));
        assert_eq!(driver.reconcile_interval(), Some(Duration::from_secs(2)));
        for bad in [
            "t=tgt,control_port=70000",
            "t=tgt,portal=nowhere",
            "t=tgt,reconcile_seconds=soon",
            "t=tgt,chap=off",
        ] {
            assert!(build(&bad.parse().unwrap()).is_err(), "{bad}");
        }
    }

    #[test]
    fn backend_specs() {
        let spec: BackendSpec = "fast=iscsi-sim,portal=10.0.0.1:3260,shared_targets=false"
            .parse()
            .unwrap();
        assert_eq!(spec.name, "fast");
        assert_eq!(spec.driver, DriverKind::IscsiSim);
        assert_eq!(spec.options["portal"], "10.0.0.1:3260");
        assert!("x".parse::<BackendSpec>().is_err());
        assert!("a b=file".parse::<BackendSpec>().is_err());
        assert!("a=nfs".parse::<BackendSpec>().is_err());
        assert!("a=file,oops".parse::<BackendSpec>().is_err());
        let unknown: BackendSpec = "a=file,colour=blue".parse().unwrap();
        assert!(build(&unknown).is_err());
        let bad_bool: BackendSpec = "a=file,multiattach=maybe".parse().unwrap();
        assert!(build(&bad_bool).is_err());
    }
}
