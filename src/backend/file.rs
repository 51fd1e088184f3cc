//! `file`: each volume is a sparse raw file `volume-<id>` in a directory, exported to
//! hosts as a local path (os-brick's local connector) or through an NFS export of that
//! directory.

use std::io::ErrorKind;
use std::path::PathBuf;

use async_trait::async_trait;
use serde_json::{json, Map};
use uuid::Uuid;

use super::data::ZeroBlocks;
use super::{
    snapshot_file_name, volume_file_name, Backend, BackendError, Capabilities, Connector, DataIn,
    DataOut, DataSource, DriverConnection,
};
use crate::domain::ids::{SnapshotId, VolumeId};

const GIB: u64 = 1024 * 1024 * 1024;

pub struct FileBackend {
    dir: PathBuf,
    pool: String,
    multiattach: bool,
    shared_targets: Option<bool>,
    capacity_gb: Option<f64>,
    nfs_export: Option<String>,
}

impl FileBackend {
    pub fn new(
        dir: PathBuf,
        pool: String,
        multiattach: bool,
        shared_targets: Option<bool>,
        capacity_gb: Option<f64>,
    ) -> Self {
        // Absolute, so connection info means the same thing wherever it is read.
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        FileBackend {
            dir,
            pool,
            multiattach,
            shared_targets,
            capacity_gb,
            nfs_export: None,
        }
    }

    pub fn with_nfs_export(mut self, export: Option<String>) -> Self {
        self.nfs_export = export;
        self
    }

    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// The uuids of the files in the directory named `prefix<uuid>`, sorted.
    async fn ids_named(&self, prefix: &str) -> Result<Vec<Uuid>, BackendError> {
        let mut entries = match tokio::fs::read_dir(&self.dir).await {
            Ok(entries) => entries,
            // No directory yet: nothing was ever created here.
            Err(err) if err.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(Self::failed("list the volume directory", err)),
        };
        let mut ids = Vec::new();
        while let Some(entry) = entries
            .next_entry()
            .await
            .map_err(|err| Self::failed("list the volume directory", err))?
        {
            let name = entry.file_name();
            let id = name
                .to_str()
                .and_then(|n| n.strip_prefix(prefix))
                .and_then(|n| Uuid::parse_str(n).ok());
            ids.extend(id);
        }
        ids.sort();
        Ok(ids)
    }

    pub fn path_of(&self, volume_id: VolumeId) -> PathBuf {
        self.dir.join(volume_file_name(volume_id))
    }

    pub fn path_of_snapshot(&self, snapshot_id: SnapshotId) -> PathBuf {
        self.dir.join(snapshot_file_name(snapshot_id))
    }

    /// Copies `from` to the new file `to`, keeping holes (`cp --sparse=always`, which
    /// finds them with SEEK_DATA rather than reading them), then grows it to `size` bytes
    /// when given. A failed copy leaves no file.
    async fn copy_sparse(
        &self,
        from: PathBuf,
        to: PathBuf,
        size: Option<u64>,
    ) -> Result<(), BackendError> {
        if tokio::fs::try_exists(&to).await.unwrap_or(false) {
            return Err(BackendError::Failed(format!(
                "The file backend could not copy to {}: it exists.",
                to.display()
            )));
        }
        let (source, target) = (from.clone(), to.clone());
        let copied = tokio::task::spawn_blocking(move || {
            std::process::Command::new("cp")
                .args(["--sparse=always", "--reflink=auto", "--"])
                .arg(&source)
                .arg(&target)
                .output()
        })
        .await
        .map_err(|e| {
            BackendError::Failed(format!("The file backend's copy was interrupted: {e}."))
        })?;
        let result = match copied {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => Err(BackendError::Failed(format!(
                "The file backend could not copy {}: {}",
                from.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ))),
            Err(err) => Err(Self::failed("run cp", err)),
        };
        let grown = match (result, size) {
            (Ok(()), Some(wanted)) => self.grow(&to, wanted).await,
            (other, _) => other,
        };
        if grown.is_err() {
            let _ = tokio::fs::remove_file(&to).await;
        }
        grown
    }

    /// Grows a file to `wanted` bytes (never shrinks it); still sparse.
    async fn grow(&self, path: &std::path::Path, wanted: u64) -> Result<(), BackendError> {
        let file = tokio::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .await
            .map_err(|e| Self::failed("open the volume file", e))?;
        let current = file
            .metadata()
            .await
            .map_err(|e| Self::failed("inspect the volume file", e))?
            .len();
        if wanted > current {
            file.set_len(wanted)
                .await
                .map_err(|e| Self::failed("grow the volume file", e))?;
        }
        Ok(())
    }

    fn failed(action: &str, err: std::io::Error) -> BackendError {
        BackendError::Failed(format!("The file backend could not {action}: {err}."))
    }
}

#[async_trait]
impl Backend for FileBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            driver: "file",
            multiattach: self.multiattach,
            shared_targets: self.shared_targets,
            pool_name: self.pool.clone(),
            total_capacity_gb: self.capacity_gb,
            storage_protocol: if self.nfs_export.is_some() {
                "NFS"
            } else {
                "local"
            },
            thin_provisioning: true,
        }
    }

    async fn create_volume(&self, volume_id: VolumeId, size_gib: u64) -> Result<(), BackendError> {
        tokio::fs::create_dir_all(&self.dir)
            .await
            .map_err(|e| Self::failed("create its directory", e))?;
        let path = self.path_of(volume_id);
        let file = tokio::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .await
            .map_err(|e| Self::failed("create the volume file", e))?;
        // set_len makes a sparse file: no data is written.
        if let Err(err) = file.set_len(size_gib * GIB).await {
            drop(file);
            let _ = tokio::fs::remove_file(&path).await;
            return Err(Self::failed("size the volume file", err));
        }
        Ok(())
    }

    async fn extend_volume(
        &self,
        volume_id: VolumeId,
        new_size_gib: u64,
    ) -> Result<(), BackendError> {
        self.grow(&self.path_of(volume_id), new_size_gib * GIB)
            .await
    }

    async fn create_snapshot(
        &self,
        volume_id: VolumeId,
        snapshot_id: SnapshotId,
    ) -> Result<(), BackendError> {
        let (from, to) = (self.path_of(volume_id), self.path_of_snapshot(snapshot_id));
        self.copy_sparse(from, to, None).await
    }

    async fn delete_snapshot(
        &self,
        _volume_id: VolumeId,
        snapshot_id: SnapshotId,
    ) -> Result<(), BackendError> {
        match tokio::fs::remove_file(self.path_of_snapshot(snapshot_id)).await {
            Ok(()) => Ok(()),
            Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                Ok(())
            }
            Err(err) => Err(Self::failed("remove the snapshot file", err)),
        }
    }

    async fn create_volume_from(
        &self,
        volume_id: VolumeId,
        source: DataSource,
        size_gib: u64,
    ) -> Result<(), BackendError> {
        let from = match source {
            DataSource::Snapshot(id, _) => self.path_of_snapshot(id),
            DataSource::Volume(id) => self.path_of(id),
        };
        self.copy_sparse(from, self.path_of(volume_id), Some(size_gib * GIB))
            .await
    }

    async fn delete_volume(&self, volume_id: VolumeId) -> Result<(), BackendError> {
        match tokio::fs::remove_file(self.path_of(volume_id)).await {
            Ok(()) => Ok(()),
            // No directory, no file: the volume is already gone.
            Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                Ok(())
            }
            Err(err) => Err(Self::failed("remove the volume file", err)),
        }
    }

    async fn write_data(&self, volume_id: VolumeId, data: DataIn) -> Result<u64, BackendError> {
        let path = self.path_of(volume_id);
        super::data::write_file(&path, data, ZeroBlocks::Skip).await
    }

    async fn overwrite_data(&self, volume_id: VolumeId, data: DataIn) -> Result<u64, BackendError> {
        let path = self.path_of(volume_id);
        super::data::write_file(&path, data, ZeroBlocks::Clear).await
    }

    async fn manageable_volumes(&self) -> Result<Vec<super::Manageable>, BackendError> {
        super::manage::files_of(&self.dir).await
    }

    async fn existing_volume_size(&self, name: &str) -> Result<Option<u64>, BackendError> {
        super::manage::file_size(&self.dir, name).await
    }

    async fn manage_volume(
        &self,
        volume_id: VolumeId,
        name: &str,
        size_gib: u64,
    ) -> Result<(), BackendError> {
        super::manage::manage_file(&self.dir, name, volume_id, size_gib).await
    }

    async fn unmanage_volume(&self, volume_id: VolumeId) -> Result<(), BackendError> {
        super::manage::unmanage_file(&self.dir, volume_id).await
    }

    async fn existing_snapshot_size(
        &self,
        _volume_id: VolumeId,
        name: &str,
    ) -> Result<Option<u64>, BackendError> {
        super::manage::file_size(&self.dir, name).await
    }

    async fn manage_snapshot(
        &self,
        _volume_id: VolumeId,
        snapshot_id: SnapshotId,
        name: &str,
    ) -> Result<(), BackendError> {
        super::manage::manage_snapshot_file(&self.dir, name, snapshot_id).await
    }

    async fn unmanage_snapshot(
        &self,
        _volume_id: VolumeId,
        snapshot_id: SnapshotId,
    ) -> Result<(), BackendError> {
        super::manage::unmanage_snapshot_file(&self.dir, snapshot_id).await
    }

    async fn read_snapshot_data(
        &self,
        _volume_id: VolumeId,
        snapshot_id: SnapshotId,
        sink: DataOut,
    ) -> Result<(), BackendError> {
        super::data::read_file(&self.path_of_snapshot(snapshot_id), sink).await
    }

    fn local_path(&self, volume_id: VolumeId) -> Option<PathBuf> {
        Some(self.path_of(volume_id))
    }

    async fn read_data(&self, volume_id: VolumeId, sink: DataOut) -> Result<(), BackendError> {
        super::data::read_file(&self.path_of(volume_id), sink).await
    }

    async fn volume_exists(&self, volume_id: VolumeId) -> Result<bool, BackendError> {
        // Asked on every attach: a stat of a local file takes microseconds, less than
        // handing it to tokio's blocking pool and back.
        match std::fs::metadata(self.path_of(volume_id)) {
            Ok(meta) => Ok(meta.is_file()),
            Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                Ok(false)
            }
            Err(err) => Err(Self::failed("inspect the volume file", err)),
        }
    }

    async fn list_volumes(&self) -> Result<Vec<VolumeId>, BackendError> {
        Ok(self
            .ids_named("volume-")
            .await?
            .into_iter()
            .map(VolumeId::from)
            .collect())
    }

    fn takes_live_attachments(&self) -> bool {
        true
    }

    async fn list_snapshots(&self) -> Result<Vec<SnapshotId>, BackendError> {
        Ok(self
            .ids_named("snapshot-")
            .await?
            .into_iter()
            .map(SnapshotId::from)
            .collect())
    }

    fn validate_connector(&self, _connector: &Connector) -> Result<(), BackendError> {
        Ok(())
    }

    async fn initialize_connection(
        &self,
        volume_id: VolumeId,
        _connector: &Connector,
    ) -> Result<DriverConnection, BackendError> {
        if !self.volume_exists(volume_id).await? {
            return Err(BackendError::Failed(format!(
                "Volume {volume_id} has no data on its backend."
            )));
        }
        let (driver_volume_type, data) = match &self.nfs_export {
            Some(export) => (
                "nfs",
                json!({"export": export, "name": volume_file_name(volume_id), "format": "raw"}),
            ),
            None => (
                "local",
                json!({"device_path": self.path_of(volume_id).display().to_string()}),
            ),
        };
        Ok(DriverConnection {
            driver_volume_type: driver_volume_type.to_owned(),
            data: match data {
                serde_json::Value::Object(map) => map,
                _ => Map::new(),
            },
        })
    }

    async fn terminate_connection(
        &self,
        _volume_id: VolumeId,
        _connector: &Connector,
    ) -> Result<(), BackendError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend(dir: &std::path::Path) -> FileBackend {
        FileBackend::new(
            dir.to_path_buf(),
            "pool".into(),
            true,
            Some(false),
            Some(10.0),
        )
    }

    #[tokio::test]
    async fn sparse_file_lifecycle() {
        let dir = std::env::temp_dir().join(format!("file-backend-{}", Uuid::new_v4()));
        let b = backend(&dir);
        let id = VolumeId::generate();
        b.create_volume(id, 2).await.unwrap();
        let meta = std::fs::metadata(b.path_of(id)).unwrap();
        assert_eq!(meta.len(), 2 * GIB);
        assert!(b.volume_exists(id).await.unwrap());
        assert_eq!(b.capabilities().total_capacity_gb, Some(10.0));
        assert_eq!(b.capabilities().storage_protocol, "local");
        assert!(b.create_volume(id, 1).await.is_err(), "never overwrites");
        let info = b
            .initialize_connection(id, &Connector::default())
            .await
            .unwrap();
        assert_eq!(info.driver_volume_type, "local");
        assert!(info.data["device_path"]
            .as_str()
            .unwrap()
            .ends_with(&volume_file_name(id)));
        b.delete_volume(id).await.unwrap();
        assert!(!b.volume_exists(id).await.unwrap());
        b.delete_volume(id).await.unwrap();
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn unusable_directory_fails_cleanly() {
        let file = std::env::temp_dir().join(format!("not-a-dir-{}", Uuid::new_v4()));
        std::fs::write(&file, b"x").unwrap();
        let b = backend(&file);
        let err = b.create_volume(VolumeId::generate(), 1).await.unwrap_err();
        assert!(matches!(err, BackendError::Failed(_)));
        let _ = std::fs::remove_file(file);
    }

    #[tokio::test]
    async fn nfs_export_changes_the_connection() {
        let dir = std::env::temp_dir().join(format!("file-backend-{}", Uuid::new_v4()));
        let b = backend(&dir).with_nfs_export(Some("10.0.0.2:/srv/vols".into()));
        let id = VolumeId::generate();
        b.create_volume(id, 1).await.unwrap();
        let info = b
            .initialize_connection(id, &Connector::default())
            .await
            .unwrap();
        assert_eq!(info.driver_volume_type, "nfs");
        assert_eq!(info.data["export"], "10.0.0.2:/srv/vols");
        assert_eq!(info.data["format"], "raw");
        let _ = std::fs::remove_dir_all(dir);
    }
}
