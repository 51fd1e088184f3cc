//! `rbd`: each volume is an RBD image `volume-<id>` in a Ceph pool, reached in the
//! process through librados and librbd (`ceph.rs`), as Cinder's RBD driver keeps them:
//! a snapshot is the RBD snapshot `snapshot-<id>` of its volume's image (protected, so
//! clones can hang off it), a volume from a snapshot is a copy-on-write clone of it, and
//! a clone of a volume is a clone of a snapshot `volume-<new>.clone_snap` taken for it.
//! A clone chain longer than `max_clone_depth` is flattened, and a raw image that Glance
//! keeps in the same cluster is the parent of the volumes made from it (`images.rs`).
//! Hosts reach the images over the network either with the backend's cephx identity
//! (`credentials=shared`, Cinder's way: connection info names it and the libvirt secret
//! that holds its key) or with an identity of their own per volume and mode
//! (`credentials=per-attachment`, `access.rs`), which follows the database: decided there
//! first, applied to the cluster after, under a turn per volume that every process takes
//! in the database, and reconciled every few seconds. With shared credentials, a host
//! whose attachment ends has its clients of the volume blocklisted (`host_fences.rs`).

mod access;
mod backup_reads;
pub mod ceph;
mod cluster_info;
mod group_snapshots;
mod host_fences;
mod identities;
mod images;
mod names;
mod options;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};
use tokio::sync::OnceCell;

use super::data::ZeroBlocks;
use super::{
    AccessRecords, AccessTurn, Backend, BackendError, Capabilities, ChangedChunks, Connector,
    DataIn, DataOut, DataSource, DriverConnection,
};
use crate::domain::ids::{BackupId, SnapshotId, VolumeId};
use access::ChainCache;
use ceph::{CephError, Cluster, Io};
use cluster_info::{pool_capacity_gb, secret_uuid_of, Monitors};
use identities::{host_of, Scope};
pub use options::{Credentials, RbdOptions};

use images::{
    clone_from_glance, delete_image, image_name, snapshot_name, StoredImage, IMAGE_FEATURES,
};

const GIB: u64 = 1024 * 1024 * 1024;

/// How often the pool's capacity is read again (it moves little: images are thin).
const CAPACITY_REFRESH: Duration = Duration::from_secs(30);

/// How often per-attachment identities are compared with the database.
const IDENTITY_REFRESH: Duration = Duration::from_secs(5);

pub struct RbdBackend {
    name: String,
    options: RbdOptions,
    records: Arc<dyn AccessRecords>,
    monitors: std::sync::Mutex<Option<Arc<Monitors>>>,
    chains: ChainCache,
    /// This backend's identities as last listed, with this process's changes since.
    known: Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
    cluster: OnceCell<Arc<Cluster>>,
    /// The pool's size in GiB as last read from the cluster (f64 bits; 0: not read yet).
    capacity: AtomicU64,
    /// The ids of images whose watchers a fence listed (`host_fences`).
    image_ids: Arc<ceph::ImageIds>,
    /// The pool's context for listing watchers without a blocking thread (`None`: this
    /// librados cannot; the blocking listing is used).
    watch_listing: OnceCell<Option<Arc<ceph::WatchListing>>>,
}

impl RbdBackend {
    pub fn new(name: String, options: RbdOptions, records: Arc<dyn AccessRecords>) -> Self {
        RbdBackend {
            name,
            options,
            records,
            monitors: std::sync::Mutex::new(None),
            chains: ChainCache::default(),
            known: Arc::default(),
            cluster: OnceCell::new(),
            capacity: AtomicU64::new(0),
            image_ids: Arc::default(),
            watch_listing: OnceCell::new(),
        }
    }

    fn failed(&self, what: &str, err: impl std::fmt::Display) -> BackendError {
        BackendError::Failed(format!(
            "The rbd backend {} could not {what}: {err}.",
            self.name
        ))
    }

    /// The connected cluster (connecting on first use; a failed connection is tried
    /// again by the next call).
    async fn cluster(&self) -> Result<Arc<Cluster>, BackendError> {
        let client = self.options.client.clone();
        self.cluster
            .get_or_try_init(|| async move {
                tokio::task::spawn_blocking(move || Cluster::connect(&client).map(Arc::new))
                    .await
                    .map_err(|e| CephError {
                        errno: 5,
                        what: format!("the connecting thread failed: {e}"),
                        status: String::new(),
                    })?
            })
            .await
            .cloned()
            .map_err(|e| self.failed("reach its Ceph cluster", e))
    }

    /// Runs blocking librados/librbd work on the pool, off the async threads.
    async fn on_pool<T: Send + 'static>(
        &self,
        what: &'static str,
        work: impl FnOnce(&Io<'_>) -> Result<T, CephError> + Send + 'static,
    ) -> Result<T, BackendError> {
        let cluster = self.cluster().await?;
        let pool = self.options.pool.clone();
        let result = tokio::task::spawn_blocking(move || {
            let io = cluster.io(&pool, None)?;
            work(&io)
        })
        .await
        .map_err(|e| self.failed(what, e))?;
        result.map_err(|e| match e.errno {
            ceph::EBUSY | ceph::ENOTEMPTY => BackendError::Busy(format!(
                "The rbd backend {} could not {what}: it is in use ({e}).",
                self.name
            )),
            _ => self.failed(what, e),
        })
    }

    /// Reads the pool's size (what it stores and what it may still take) from `ceph df`.
    async fn refresh_capacity(&self) {
        let Ok(cluster) = self.cluster().await else {
            return;
        };
        let pool = self.options.pool.clone();
        let read = tokio::task::spawn_blocking(move || {
            let (out, _) = cluster.mon_command(&json!({"prefix": "df", "format": "json"}), None)?;
            Ok::<_, CephError>(pool_capacity_gb(&out, &pool))
        })
        .await;
        if let Ok(Ok(Some(gb))) = read {
            self.capacity.store(gb.to_bits(), Ordering::Relaxed);
        }
    }
}

#[async_trait]
impl Backend for RbdBackend {
    fn capabilities(&self) -> Capabilities {
        let read = f64::from_bits(self.capacity.load(Ordering::Relaxed));
        let total_capacity_gb = self
            .options
            .capacity_gb
            .or_else(|| (read > 0.0).then_some(read));
        Capabilities {
            driver: "rbd",
            multiattach: self.options.multiattach,
            shared_targets: Some(false),
            pool_name: self.options.pool_name.clone(),
            total_capacity_gb,
            storage_protocol: "ceph",
            thin_provisioning: true,
        }
    }

    async fn create_volume(&self, volume_id: VolumeId, size_gib: u64) -> Result<(), BackendError> {
        let name = image_name(volume_id);
        self.on_pool("create the volume", move |io| {
            io.create_image(&name, size_gib * GIB, IMAGE_FEATURES)
        })
        .await
    }

    async fn extend_volume(
        &self,
        volume_id: VolumeId,
        new_size_gib: u64,
    ) -> Result<(), BackendError> {
        let name = image_name(volume_id);
        self.on_pool("extend the volume", move |io| {
            let image = io.open(&name, None, false)?;
            if image.size()? < new_size_gib * GIB {
                image.resize(new_size_gib * GIB)?;
            }
            Ok(())
        })
        .await
    }

    async fn delete_volume(&self, volume_id: VolumeId) -> Result<(), BackendError> {
        let name = image_name(volume_id);
        self.on_pool("delete the volume", move |io| delete_image(io, &name))
            .await?;
        if let Ok(mut chains) = self.chains.lock() {
            chains.remove(&volume_id);
        }
        Ok(())
    }

    async fn create_snapshot(
        &self,
        volume_id: VolumeId,
        snapshot_id: SnapshotId,
    ) -> Result<(), BackendError> {
        let (image, snapshot) = (image_name(volume_id), snapshot_name(snapshot_id));
        self.on_pool("snapshot the volume", move |io| {
            let opened = io.open(&image, None, false)?;
            opened.snap_create(&snapshot)?;
            if let Err(e) = opened.snap_protect(&snapshot) {
                let _ = opened.snap_remove(&snapshot);
                return Err(e);
            }
            Ok(())
        })
        .await
    }

    fn consistent_group_snapshots(&self) -> bool {
        true
    }

    async fn create_consistent_snapshots(
        &self,
        members: &[(VolumeId, SnapshotId)],
    ) -> Result<(), BackendError> {
        let members = members.to_vec();
        self.on_pool("snapshot the group's volumes together", move |io| {
            group_snapshots::snapshot_together(io, &members)
        })
        .await
    }

    async fn delete_snapshot(
        &self,
        volume_id: VolumeId,
        snapshot_id: SnapshotId,
    ) -> Result<(), BackendError> {
        self.on_pool("delete the snapshot", move |io| {
            group_snapshots::remove_snapshot_data(io, volume_id, snapshot_id)
        })
        .await
    }

    async fn create_volume_from(
        &self,
        volume_id: VolumeId,
        source: DataSource,
        size_gib: u64,
    ) -> Result<(), BackendError> {
        let child = image_name(volume_id);
        let options = (
            self.options.flatten_volume_from_snapshot,
            self.options.max_clone_depth,
        );
        self.on_pool("create the volume from its source", move |io| {
            images::create_from(io, source, &child, size_gib * GIB, options)
        })
        .await
    }

    async fn clone_image(
        &self,
        volume_id: VolumeId,
        locations: &[String],
        size_gib: u64,
    ) -> Result<bool, BackendError> {
        let stored: Vec<StoredImage> = locations
            .iter()
            .filter_map(|u| StoredImage::parse(u))
            .collect();
        if stored.is_empty() {
            return Ok(false);
        }
        let what = "clone the volume from its image";
        let cluster = self.cluster().await?;
        let (pool, child) = (self.options.pool.clone(), image_name(volume_id));
        tokio::task::spawn_blocking(move || {
            clone_from_glance(&cluster, &pool, &child, &stored, size_gib * GIB)
        })
        .await
        .map_err(|e| self.failed(what, e))?
        .map_err(|e| self.failed(what, e))
    }

    async fn write_data(&self, volume_id: VolumeId, data: DataIn) -> Result<u64, BackendError> {
        let name = image_name(volume_id);
        self.on_pool("write the volume's data", move |io| {
            images::write_from(io, &name, data, ZeroBlocks::Skip)
        })
        .await
    }

    async fn overwrite_data(&self, volume_id: VolumeId, data: DataIn) -> Result<u64, BackendError> {
        let name = image_name(volume_id);
        self.on_pool("write the backup's data", move |io| {
            images::write_from(io, &name, data, ZeroBlocks::Clear)
        })
        .await
    }

    async fn read_data(&self, volume_id: VolumeId, sink: DataOut) -> Result<(), BackendError> {
        let name = image_name(volume_id);
        self.on_pool("read the volume's data", move |io| {
            images::read_into(io, &name, None, sink)
        })
        .await
    }

    async fn begin_backup_read(
        &self,
        volume_id: VolumeId,
        backup: BackupId,
        since: Option<BackupId>,
        chunk: u64,
    ) -> Result<Option<ChangedChunks>, BackendError> {
        self.on_pool("snapshot the volume for its backup", move |io| {
            backup_reads::begin(io, volume_id, backup, since, chunk)
        })
        .await
    }

    async fn read_backup_data(
        &self,
        volume_id: VolumeId,
        backup: BackupId,
        changed: Option<Arc<ChangedChunks>>,
        sink: DataOut,
    ) -> Result<(), BackendError> {
        self.on_pool("read the volume's data", move |io| {
            backup_reads::read(io, volume_id, backup, changed, sink)
        })
        .await
    }

    async fn end_backup_read(
        &self,
        volume_id: VolumeId,
        backup: BackupId,
        stored: bool,
    ) -> Result<(), BackendError> {
        self.on_pool("remove the volume's older backup snapshots", move |io| {
            backup_reads::end(io, volume_id, backup, stored)
        })
        .await
    }

    async fn manageable_volumes(&self) -> Result<Vec<super::Manageable>, BackendError> {
        self.on_pool("list the images", images::manageable).await
    }

    async fn existing_volume_size(&self, name: &str) -> Result<Option<u64>, BackendError> {
        super::manage::check_source_name(name)?;
        let name = name.to_owned();
        self.on_pool("look for the image", move |io| images::size_of(io, &name))
            .await
    }

    async fn manage_volume(&self, id: VolumeId, name: &str, gib: u64) -> Result<(), BackendError> {
        super::manage::check_source_name(name)?;
        let name = name.to_owned();
        self.on_pool("manage the image", move |io| {
            images::take_as(io, &name, id, gib * GIB)
        })
        .await
    }

    async fn unmanage_volume(&self, id: VolumeId) -> Result<(), BackendError> {
        self.on_pool("unmanage the image", move |io| images::let_go(io, id))
            .await
    }

    async fn manageable_snapshots(&self) -> Result<Vec<super::ManageableSnapshot>, BackendError> {
        let listed = images::manageable_snapshots;
        self.on_pool("list the snapshots", listed).await
    }

    async fn existing_snapshot_size(
        &self,
        volume: VolumeId,
        name: &str,
    ) -> Result<Option<u64>, BackendError> {
        super::manage::check_source_name(name)?;
        let name = name.to_owned();
        let find = move |io: &Io<'_>| images::snapshot_size_of(io, volume, &name);
        self.on_pool("look for the snapshot", find).await
    }

    async fn manage_snapshot(
        &self,
        volume: VolumeId,
        snapshot: SnapshotId,
        name: &str,
    ) -> Result<(), BackendError> {
        super::manage::check_source_name(name)?;
        let name = name.to_owned();
        let take = move |io: &Io<'_>| images::take_snapshot_as(io, volume, &name, snapshot);
        self.on_pool("manage the snapshot", take).await
    }

    async fn unmanage_snapshot(
        &self,
        volume: VolumeId,
        snapshot: SnapshotId,
    ) -> Result<(), BackendError> {
        let go = move |io: &Io<'_>| images::let_snapshot_go(io, volume, snapshot);
        self.on_pool("unmanage the snapshot", go).await
    }

    async fn read_snapshot_data(
        &self,
        volume_id: VolumeId,
        snapshot_id: SnapshotId,
        sink: DataOut,
    ) -> Result<(), BackendError> {
        self.on_pool("read the snapshot's data", move |io| {
            let image = images::snapshot_parent(io, volume_id, snapshot_id)?;
            images::read_into(io, &image, Some(&snapshot_name(snapshot_id)), sink)
        })
        .await
    }

    async fn volume_exists(&self, volume_id: VolumeId) -> Result<bool, BackendError> {
        let name = image_name(volume_id);
        self.on_pool("look for the volume", move |io| {
            match io.open(&name, None, true) {
                Ok(_) => Ok(true),
                Err(e) if e.errno == ceph::ENOENT => Ok(false),
                Err(e) => Err(e),
            }
        })
        .await
    }

    async fn list_volumes(&self) -> Result<Vec<VolumeId>, BackendError> {
        self.on_pool("list the volumes", images::volume_ids).await
    }

    /// Shared credentials are Cinder's own way: its attachments go on as they are.
    fn takes_live_attachments(&self) -> bool {
        self.options.credentials == Credentials::Shared
    }

    async fn list_snapshots(&self) -> Result<Vec<SnapshotId>, BackendError> {
        self.on_pool("list the snapshots", images::snapshot_ids)
            .await
    }

    fn validate_connector(&self, connector: &Connector) -> Result<(), BackendError> {
        // Hosts reach the cluster over the network; their own identity is named after
        // the host.
        if self.options.credentials == Credentials::PerAttachment {
            host_of(connector)?;
        }
        Ok(())
    }

    async fn access_turn(&self, volume_id: VolumeId) -> Result<Option<AccessTurn>, BackendError> {
        match self.options.credentials {
            // A fence needs none (`host_fences`).
            Credentials::Shared => Ok(None),
            Credentials::PerAttachment => Ok(Some(self.turn(volume_id).await?)),
        }
    }

    /// Shared: Cinder's connection info. Per attachment: the host's own identity is made
    /// (after every identity of the volume that no attachment backs is fenced, so a new
    /// writer never writes beside an old one) and its keyring goes in the connection
    /// info. The caller holds the volume's turn and records the attachment before
    /// releasing it.
    async fn initialize_connection(
        &self,
        volume_id: VolumeId,
        connector: &Connector,
    ) -> Result<DriverConnection, BackendError> {
        let monitors = self.monitors().await?;
        let (hosts, ports) = (&monitors.hosts, &monitors.ports);
        let options = &self.options;
        let (user, secret_uuid, keyring) = match options.credentials {
            Credentials::Shared => (options.user.clone(), options.secret_uuid.clone(), None),
            Credentials::PerAttachment => {
                let identity = self.identity_for(volume_id, connector)?;
                // Who else the database backs matters only when there is someone else to
                // fence (usually not: a volume's first attach, or its host's again).
                let wanted = if self.knows_others_of(volume_id, &identity) {
                    self.wanted(Some(volume_id)).await?
                } else {
                    Vec::new()
                };
                let (changes, keyring) = self
                    .sync_volume(volume_id, Scope::Known, wanted, Some(identity.clone()))
                    .await?;
                for change in changes {
                    tracing::info!(backend = %self.name, "{change}");
                }
                let secret = secret_uuid_of(&identity);
                (Some(identity), Some(secret), keyring)
            }
        };
        let mut data = json!({
            "name": format!("{}/{}", options.pool, image_name(volume_id)),
            "hosts": hosts,
            "ports": ports,
            "cluster_name": if options.client.cluster_name.is_empty() {
                "ceph"
            } else {
                options.client.cluster_name.as_str()
            },
            "auth_enabled": user.is_some(),
            "auth_username": user,
            "secret_type": "ceph",
            "secret_uuid": secret_uuid,
            "volume_id": volume_id.to_string(),
            "discard": options.discard,
        });
        if let Some(keyring) = keyring {
            data["keyring"] = Value::String(keyring);
        }
        Ok(DriverConnection {
            driver_volume_type: "rbd".to_owned(),
            data: data.as_object().cloned().unwrap_or_default(),
        })
    }

    /// Shared: the host's clients of the volume are fenced (`fence=off`: nothing, as
    /// Cinder's driver). Per attachment: once no live, connected attachment of the
    /// volume backs the host's identity, it is fenced.
    async fn terminate_connection(
        &self,
        volume_id: VolumeId,
        connector: &Connector,
    ) -> Result<(), BackendError> {
        if self.options.credentials == Credentials::Shared {
            if self.options.fence {
                return self.fence_host(volume_id, connector).await;
            }
            return Ok(());
        }
        let identity = self.identity_for(volume_id, connector)?;
        let wanted = self.wanted(Some(volume_id)).await?;
        let scope = Scope::Identity(identity);
        let (changes, _) = self.sync_volume(volume_id, scope, wanted, None).await?;
        for change in changes {
            tracing::info!(backend = %self.name, "{change}");
        }
        Ok(())
    }

    fn reconcile_interval(&self) -> Option<Duration> {
        Some(match self.options.credentials {
            Credentials::Shared => CAPACITY_REFRESH,
            Credentials::PerAttachment => IDENTITY_REFRESH,
        })
    }

    /// Keeps the pool's capacity fresh (connecting at start) and, per attachment, makes
    /// the cluster's identities what the database holds: missing ones put back with the
    /// keys their hosts hold, others fenced and removed. A volume that differs is
    /// repaired inside its turn, with the database read again there (an attach or detach
    /// in flight holds the turn until it is recorded).
    async fn reconcile(&self, repair: bool) -> Result<Vec<String>, BackendError> {
        self.refresh_capacity().await;
        // Best effort: connection info keeps the monitors last read until they answer.
        let _ = self.refresh_monitors().await;
        if self.options.credentials == Credentials::Shared {
            if !self.options.fence {
                return Ok(Vec::new());
            }
            return self.retry_failed_fences(repair).await;
        }
        let wanted = self.wanted(None).await?;
        let cluster = self.cluster().await?;
        let backend = self.name.clone();
        let present = tokio::task::spawn_blocking(move || access::identities(&cluster, &backend))
            .await
            .map_err(|e| self.failed("list its identities", e))?
            .map_err(|e| self.failed("list its identities", e))?;
        if let Ok(mut known) = self.known.lock() {
            *known = present.keys().cloned().collect();
        }
        let mut drifting = std::collections::BTreeSet::new();
        let mut drift = Vec::new();
        for (id, grant) in &wanted {
            if !present.contains_key(id) {
                drifting.insert(grant.volume_id);
                drift.push(format!(
                    "volume {}: identity client.{id} is missing",
                    grant.volume_id
                ));
            }
        }
        for id in present.keys() {
            if !wanted.iter().any(|(w, _)| w == id) {
                let volume = access::volume_of(&self.name, id)
                    .and_then(|v| uuid::Uuid::parse_str(&v).ok())
                    .map(VolumeId::from);
                if let Some(volume) = volume {
                    drifting.insert(volume);
                }
                drift.push(format!("identity client.{id} is backed by no attachment"));
            }
        }
        if !repair {
            return Ok(drift);
        }
        let mut repaired = Vec::new();
        for volume in drifting {
            let _turn = self.turn(volume).await?;
            let wanted = self.wanted(Some(volume)).await?;
            let (changes, _) = self
                .sync_volume(volume, Scope::Listed, wanted, None)
                .await?;
            repaired.extend(changes);
        }
        Ok(repaired)
    }
}
