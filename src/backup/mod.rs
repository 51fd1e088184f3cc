//! The backup repository: where backups keep a volume's data, apart from its backend.
//! A POSIX directory, as Cinder's `posix` driver uses one (a local disk, or an NFS or
//! CephFS mount shared by every host of the service). A volume is cut into chunks of
//! `manifest::CHUNK` bytes; each chunk is checksummed (SHA-256) and stored compressed
//! (zlib) unless it is all zeros, or, for an incremental backup, unless the parent holds
//! the same bytes at the same place. A restore checks every chunk it reads.

pub mod manifest;
mod posix;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use axum::body::Bytes;
use tokio::sync::mpsc;

pub use manifest::{Manifest, VolumeRecord};

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

/// A repository on a directory.
#[derive(Debug, Clone)]
pub struct Repository {
    root: PathBuf,
}

fn interrupted(err: tokio::task::JoinError) -> String {
    format!("the backup work was interrupted: {err}")
}

impl Repository {
    pub fn new(root: PathBuf) -> Self {
        Repository { root }
    }

    pub fn root(&self) -> &std::path::Path {
        &self.root
    }

    /// Stores the volume's data arriving on `data` (in order, until the sender closes
    /// it) at `location`, with `record`; only chunks that differ from `parent`'s are
    /// stored. Nothing of it is left on error.
    pub async fn write(
        &self,
        location: Location,
        parent: Option<Location>,
        data: mpsc::Receiver<Result<Bytes, std::io::Error>>,
        record: VolumeRecord,
        progress: Arc<Progress>,
    ) -> Result<Written, String> {
        let root = self.root.clone();
        tokio::task::spawn_blocking(move || {
            let parent = match &parent {
                Some(parent) => Some(posix::read_manifest(&root, parent)?),
                None => None,
            };
            let watch = posix::Watch {
                done: &progress.done,
                cancelled: &progress.cancelled,
            };
            posix::write_backup(&root, &location, parent.as_ref(), data, record, watch)
        })
        .await
        .map_err(interrupted)?
    }

    /// The manifest of the backup at `location`.
    pub async fn manifest(&self, location: Location) -> Result<Manifest, String> {
        let root = self.root.clone();
        tokio::task::spawn_blocking(move || posix::read_manifest(&root, &location))
            .await
            .map_err(interrupted)?
    }

    /// Sends the data of the backup described by `manifest` into `sink`, in order.
    pub async fn read(
        &self,
        manifest: Arc<Manifest>,
        sink: mpsc::Sender<Bytes>,
        progress: Arc<Progress>,
    ) -> Result<(), String> {
        let root = self.root.clone();
        tokio::task::spawn_blocking(move || {
            posix::read_backup(&root, &manifest, sink, &progress.done)
        })
        .await
        .map_err(interrupted)?
    }

    /// Removes the backup's own objects.
    pub async fn remove(&self, location: Location) -> Result<(), String> {
        let root = self.root.clone();
        tokio::task::spawn_blocking(move || posix::remove_backup_files(&root, &location))
            .await
            .map_err(interrupted)?
    }
}

#[cfg(test)]
mod tests;
