//! The backup repository: where backups keep a volume's data, apart from its backend.
//! A POSIX directory, as Cinder's `posix` driver uses one (a local disk, or an NFS or
//! CephFS mount shared by every host of the service), or a Ceph pool, as Cinder's `ceph`
//! driver. A volume is cut into chunks of `manifest::CHUNK` bytes; each chunk is
//! checksummed (SHA-256) and stored (compressed, in a directory) unless it is all zeros,
//! or, for an incremental backup, unless the parent holds the same bytes at the same
//! place. A restore checks every chunk it reads.

mod ceph;
mod chunks;
pub mod manifest;
mod posix;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use axum::body::Bytes;
use tokio::sync::mpsc;

pub use manifest::{Manifest, VolumeRecord};

use crate::backend::rbd::ceph::ClientConfig;
use crate::backend::ChangedChunks;
use crate::domain::backup as rules;
use crate::domain::ids::VolumeId;

/// Where one backup's objects are: a directory under the repository, and the name its
/// objects start with there (`container` and `service_metadata` of its record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub container: String,
    pub prefix: String,
    pub backup_id: String,
    pub volume_id: String,
}

impl Location {
    pub fn data_object(&self) -> String {
        format!("{}/{}.data", self.container, self.prefix)
    }

    pub fn manifest_object(&self) -> String {
        format!("{}/{}.manifest", self.container, self.prefix)
    }
}

/// A volume's data on its way into a backup: in order, until the sender closes it; only
/// the `changed` chunks when the backend could tell which changed since the parent.
pub struct VolumeData {
    pub data: mpsc::Receiver<Result<Bytes, std::io::Error>>,
    pub changed: Option<Arc<ChangedChunks>>,
}

/// What writing a backup stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Objects of its own (its data and its manifest).
    pub object_count: i64,
    /// Bytes of its own data object.
    pub stored_bytes: u64,
    /// Chunks it stored (the others are zeros, or its parent's).
    pub new_chunks: u64,
    /// Bytes of the volume it read.
    pub volume_bytes: u64,
}

/// How far a backup or restore is, shared with whoever reports it.
#[derive(Debug, Default)]
pub struct Progress {
    /// Bytes of the volume read (a backup) or written (a restore) so far.
    pub done: AtomicU64,
    /// Set to stop a backup early.
    pub cancelled: AtomicBool,
}

/// What a backup being written is told from outside.
struct Watch<'a> {
    /// Bytes of the volume read so far.
    done: &'a AtomicU64,
    /// Set to stop early (the backup was deleted meanwhile).
    cancelled: &'a AtomicBool,
}

/// Where backups are kept: a directory, or a Ceph pool.
#[derive(Debug, Clone)]
pub struct Repository {
    store: Store,
}

#[derive(Debug, Clone)]
enum Store {
    Posix(PathBuf),
    Ceph(Arc<ceph::CephStore>),
}

fn interrupted(err: tokio::task::JoinError) -> String {
    format!("the backup work was interrupted: {err}")
}

impl Repository {
    /// A repository on the directory `root` (Cinder's `posix` driver).
    pub fn new(root: PathBuf) -> Self {
        Repository {
            store: Store::Posix(root),
        }
    }

    /// A repository on the cluster `client` reaches, in `pool` unless a backup's
    /// container names another (Cinder's `ceph` driver).
    pub fn ceph(client: ClientConfig, pool: String) -> Self {
        Repository {
            store: Store::Ceph(Arc::new(ceph::CephStore::new(client, pool))),
        }
    }

    /// The driver `export_record` names, and the only one `import_record` takes.
    pub fn driver(&self) -> &'static str {
        match &self.store {
            Store::Posix(_) => rules::POSIX_SERVICE,
            Store::Ceph(_) => rules::CEPH_SERVICE,
        }
    }

    /// The container of a backup whose request names none: a directory made from the
    /// volume's id, or the pool.
    pub fn default_container(&self, volume: VolumeId) -> String {
        match &self.store {
            Store::Posix(_) => rules::default_container(volume),
            Store::Ceph(store) => store.pool().to_owned(),
        }
    }

    /// Checks a container a request names: a relative path, or a pool's name.
    pub fn check_container(&self, container: &str) -> Result<(), String> {
        match &self.store {
            Store::Posix(_) => rules::check_container(container),
            Store::Ceph(_) => rules::check_pool_container(container),
        }
    }

    /// Cinder's `check_for_setup_error`: on Ceph, the cluster answers and the default
    /// pool exists; a directory is made when the first backup needs it (as Cinder's
    /// posix driver checks nothing).
    pub async fn check_setup(&self) -> Result<(), String> {
        self.blocking(|store| match store {
            Store::Posix(_) => Ok(()),
            Store::Ceph(ceph) => ceph.check_setup(),
        })
        .await
    }

    /// Runs `work` on the repository off the async threads.
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Store) -> Result<T, String> + Send + 'static,
    ) -> Result<T, String> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || work(&store))
            .await
            .map_err(interrupted)?
    }

    /// Stores the volume's `data` at `location`, with `record`; only chunks that differ
    /// from `parent`'s are stored. Nothing of it is left on error.
    pub async fn write(
        &self,
        location: Location,
        parent: Option<Location>,
        data: VolumeData,
        record: VolumeRecord,
        progress: Arc<Progress>,
    ) -> Result<Written, String> {
        self.blocking(move |store| {
            let watch = Watch {
                done: &progress.done,
                cancelled: &progress.cancelled,
            };
            match store {
                Store::Posix(root) => {
                    posix::write_backup(root, &location, parent.as_ref(), data, record, watch)
                }
                Store::Ceph(ceph) => {
                    ceph.write_backup(&location, parent.as_ref(), data, record, watch)
                }
            }
        })
        .await
    }

    /// The manifest of the backup at `location`.
    pub async fn manifest(&self, location: Location) -> Result<Manifest, String> {
        self.blocking(move |store| match store {
            Store::Posix(root) => posix::read_manifest(root, &location),
            Store::Ceph(ceph) => ceph.read_manifest(&location),
        })
        .await
    }

    /// Sends the data of the backup described by `manifest` into `sink`, in order.
    pub async fn read(
        &self,
        manifest: Arc<Manifest>,
        sink: mpsc::Sender<Bytes>,
        progress: Arc<Progress>,
    ) -> Result<(), String> {
        self.blocking(move |store| match store {
            Store::Posix(root) => posix::read_backup(root, &manifest, sink, &progress.done),
            Store::Ceph(ceph) => ceph.read_backup(&manifest, sink, &progress.done),
        })
        .await
    }

    /// Removes the backup's own objects.
    pub async fn remove(&self, location: Location) -> Result<(), String> {
        self.blocking(move |store| match store {
            Store::Posix(root) => posix::remove_backup_files(root, &location),
            Store::Ceph(ceph) => ceph.remove_backup(&location),
        })
        .await
    }
}

#[cfg(test)]
mod tests;
