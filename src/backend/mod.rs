//! Storage backends: where volume data lives and how hosts connect to it. Each backend is
//! configured by name (`--backend NAME=DRIVER,key=value,...`) and registered as a
//! service with a stable `service_uuid`.

pub mod data;
mod file;
mod iscsi_sim;
pub mod manage;
pub mod rbd;
mod spec;
pub mod tgt;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use crate::domain::attachment::{Connector, DriverConnection};
use crate::domain::export::{AccessGrant, HostGrant, TargetExport};
use crate::domain::host_fence::{FenceReport, HostFence};
use crate::domain::ids::{BackupId, ServiceId, SnapshotId, VolumeId};
use async_trait::async_trait;

pub use data::{ChangedChunks, DataIn, DataOut};
pub use file::FileBackend;
pub use iscsi_sim::IscsiSimBackend;
pub use manage::{Manageable, ManageableSnapshot};
pub use rbd::RbdBackend;
pub use spec::{BackendIdentity, BackendSpec, DriverKind, EXTRA_CAPABILITY_PREFIX};
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
    /// The `ip` each live, connected attachment of the volume connects from.
    async fn connected_ips(&self, volume: VolumeId) -> Result<Vec<String>, String>;
    /// Keeps a fence's record.
    async fn record_fence(&self, report: FenceReport) -> Result<(), String>;
    /// This backend's fences that failed and were not tried again since.
    async fn failed_fences(&self) -> Result<Vec<HostFence>, String>;
    /// A failed fence was tried again.
    async fn settle_fence(&self, id: uuid::Uuid) -> Result<(), String>;
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
    async fn connected_ips(&self, _: VolumeId) -> Result<Vec<String>, String> {
        Ok(Vec::new())
    }
    async fn record_fence(&self, _: FenceReport) -> Result<(), String> {
        Ok(())
    }
    async fn failed_fences(&self) -> Result<Vec<HostFence>, String> {
        Ok(Vec::new())
    }
    async fn settle_fence(&self, _: uuid::Uuid) -> Result<(), String> {
        Ok(())
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

    /// Whether `create_consistent_snapshots` holds writes across volumes (Cinder's
    /// `consistent_group_snapshot_enabled` capability).
    fn consistent_group_snapshots(&self) -> bool {
        false
    }

    /// Snapshots every `(volume, snapshot)` at one point in time, so that no write lands
    /// in one member's snapshot and not in another's. Must not leave anything behind on
    /// error. Only called where `consistent_group_snapshots` is true.
    async fn create_consistent_snapshots(
        &self,
        _members: &[(VolumeId, SnapshotId)],
    ) -> Result<(), BackendError> {
        Err(BackendError::Failed(
            "this backend cannot take consistent group snapshots".to_owned(),
        ))
    }

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

    /// Creates volume `volume_id` of `size_gib` GiB as a copy-on-write clone of a raw
    /// image stored at one of `locations` (Glance's `direct_url` and `locations`), when
    /// one is storage this backend reaches; `Ok(false)` when none is, and the image's
    /// data must be copied in. Must not leave anything behind on error.
    async fn clone_image(
        &self,
        _volume_id: VolumeId,
        _locations: &[String],
        _size_gib: u64,
    ) -> Result<bool, BackendError> {
        Ok(false)
    }

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

    /// Starts reading volume `volume_id` for backup `backup`. A backend that can keep the
    /// volume as it is now (rbd: a snapshot `backup.<id>.snap.<time>`, as Cinder's RBD
    /// driver takes for its Ceph backups) does, and when it still keeps the copy it made
    /// for backup `since` (the parent), says which chunks of `chunk` bytes changed since.
    /// `None`: the whole volume is read, live.
    async fn begin_backup_read(
        &self,
        _volume_id: VolumeId,
        _backup: BackupId,
        _since: Option<BackupId>,
        _chunk: u64,
    ) -> Result<Option<ChangedChunks>, BackendError> {
        Ok(None)
    }

    /// Sends the volume's data as `begin_backup_read` kept it, in order, into `sink`:
    /// only the chunks `changed` names, when it is given.
    async fn read_backup_data(
        &self,
        volume_id: VolumeId,
        _backup: BackupId,
        _changed: Option<Arc<ChangedChunks>>,
        sink: DataOut,
    ) -> Result<(), BackendError> {
        self.read_data(volume_id, sink).await
    }

    /// Ends backup `backup`'s read: what was kept for it stays when the backup was
    /// `stored` (and what was kept for earlier ones goes), else it goes.
    async fn end_backup_read(
        &self,
        _volume_id: VolumeId,
        _backup: BackupId,
        _stored: bool,
    ) -> Result<(), BackendError> {
        Ok(())
    }

    /// Sends the whole data of snapshot `snapshot_id` of `volume_id`, in order, into
    /// `sink` (a backup of a snapshot).
    async fn read_snapshot_data(
        &self,
        _volume_id: VolumeId,
        _snapshot_id: SnapshotId,
        _sink: DataOut,
    ) -> Result<(), BackendError> {
        Err(BackendError::Failed(
            "this backend cannot read a snapshot's data out".to_owned(),
        ))
    }

    /// Replaces the data of an existing volume with what arrives in order on `data`
    /// (a restore): unlike `write_data`, blocks of zeros are cleared, not skipped, as
    /// the volume may hold older data there. Returns how many bytes came.
    async fn overwrite_data(
        &self,
        _volume_id: VolumeId,
        _data: DataIn,
    ) -> Result<u64, BackendError> {
        Err(BackendError::Failed(
            "this backend cannot write a backup's data into a volume".to_owned(),
        ))
    }

    /// Puts the data of snapshot `snapshot_id` back into volume `volume_id` (Cinder's
    /// `revert_to_snapshot`): by default the snapshot is read out and written over the
    /// volume, blocks of zeros cleared.
    async fn revert_to_snapshot(
        self: Arc<Self>,
        volume_id: VolumeId,
        snapshot_id: SnapshotId,
    ) -> Result<(), BackendError> {
        let (reader, writer) = (self.clone(), self);
        data::relay(
            move |sink| async move {
                reader
                    .read_snapshot_data(volume_id, snapshot_id, sink)
                    .await
            },
            move |data| async move { writer.overwrite_data(volume_id, data).await },
        )
        .await
        .map(drop)
    }

    /// Whether an attachment made by another service (Cinder, before `import-cinder`)
    /// can be served and ended here as it is: true where connecting leaves nothing
    /// behind that the attach must have recorded (no export, no per-host identity).
    fn takes_live_attachments(&self) -> bool {
        false
    }

    /// The file storage under a backend that keeps its volumes as files of a directory
    /// (`tgt`, `iscsi-sim`): the adoption methods below go to it.
    fn file_storage(&self) -> Option<&dyn Backend> {
        None
    }

    /// Storage of this backend that no volume of the service is: what `manage_volume`
    /// may take (Cinder's `get_manageable_volumes`).
    async fn manageable_volumes(&self) -> Result<Vec<Manageable>, BackendError> {
        match self.file_storage() {
            Some(files) => files.manageable_volumes().await,
            None => Ok(Vec::new()),
        }
    }

    /// The size in bytes of the storage object `name` (a manage request's
    /// `source-name`); `None` when there is none.
    async fn existing_volume_size(&self, name: &str) -> Result<Option<u64>, BackendError> {
        match self.file_storage() {
            Some(files) => files.existing_volume_size(name).await,
            None => Err(cannot("manage existing storage")),
        }
    }

    /// Takes the storage object `name` as volume `volume_id`: renamed to the volume's
    /// name and grown to `size_gib` GiB (Cinder's `manage_existing`).
    async fn manage_volume(
        &self,
        volume_id: VolumeId,
        name: &str,
        size_gib: u64,
    ) -> Result<(), BackendError> {
        match self.file_storage() {
            Some(files) => files.manage_volume(volume_id, name, size_gib).await,
            None => Err(cannot("manage existing storage")),
        }
    }

    /// Lets go of a volume's storage without removing it (Cinder's `unmanage`): it is
    /// renamed `unmanaged-volume-<id>`, and can be managed again under that name.
    async fn unmanage_volume(&self, volume_id: VolumeId) -> Result<(), BackendError> {
        match self.file_storage() {
            Some(files) => files.unmanage_volume(volume_id).await,
            None => Err(cannot("unmanage volumes")),
        }
    }

    /// Snapshots of this backend's volumes that no snapshot of the service is: what
    /// `manage_snapshot` may take (Cinder's `get_manageable_snapshots`).
    async fn manageable_snapshots(&self) -> Result<Vec<ManageableSnapshot>, BackendError> {
        match self.file_storage() {
            Some(files) => files.manageable_snapshots().await,
            None => Ok(Vec::new()),
        }
    }

    /// The size in bytes of snapshot object `name` of volume `volume_id`; `None` when
    /// there is none.
    async fn existing_snapshot_size(
        &self,
        volume_id: VolumeId,
        name: &str,
    ) -> Result<Option<u64>, BackendError> {
        match self.file_storage() {
            Some(files) => files.existing_snapshot_size(volume_id, name).await,
            None => Err(cannot("manage existing snapshots")),
        }
    }

    /// Takes snapshot object `name` of volume `volume_id` as snapshot `snapshot_id`,
    /// renamed to the snapshot's name (Cinder's `manage_existing_snapshot`).
    async fn manage_snapshot(
        &self,
        volume_id: VolumeId,
        snapshot_id: SnapshotId,
        name: &str,
    ) -> Result<(), BackendError> {
        match self.file_storage() {
            Some(files) => files.manage_snapshot(volume_id, snapshot_id, name).await,
            None => Err(cannot("manage existing snapshots")),
        }
    }

    /// Lets go of a snapshot's data without removing it: renamed
    /// `unmanaged-snapshot-<id>`, under which it can be managed again.
    async fn unmanage_snapshot(
        &self,
        volume_id: VolumeId,
        snapshot_id: SnapshotId,
    ) -> Result<(), BackendError> {
        match self.file_storage() {
            Some(files) => files.unmanage_snapshot(volume_id, snapshot_id).await,
            None => Err(cannot("unmanage snapshots")),
        }
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

/// What a backend answers for an adoption it does not do.
fn cannot(what: &str) -> BackendError {
    BackendError::Failed(format!("this backend cannot {what}"))
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
