//! Storage that is on a backend but no volume of the service's (adoption: Cinder's
//! `manage`/`unmanage`): what may be taken, and the file backends' way of taking it and
//! letting it go. A managed object is renamed to the volume's own name; an unmanaged
//! volume's storage is renamed `unmanaged-volume-<id>`, so that nothing the service
//! reads as a volume is left behind, and it can be managed again under that name. Only
//! regular files of the directory itself are taken: a symbolic link is never followed,
//! so nothing outside the directory is read, grown, renamed or removed.

use std::io::ErrorKind;
use std::path::Path;

use super::{snapshot_file_name, volume_file_name, BackendError};
use crate::domain::ids::{SnapshotId, VolumeId};

const GIB: u64 = 1 << 30;

/// A storage object no volume is: its name (a manage request's `source-name`) and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manageable {
    pub name: String,
    pub size_bytes: u64,
}

/// A snapshot object no snapshot is: its name, its size and the name of the volume
/// storage it belongs to (Cinder's `source_reference`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManageableSnapshot {
    pub name: String,
    pub size_bytes: u64,
    pub volume_name: String,
}

/// The name an unmanaged snapshot's data takes.
pub fn unmanaged_snapshot_name(snapshot_id: SnapshotId) -> String {
    format!("unmanaged-{}", snapshot_file_name(snapshot_id))
}

/// The name an unmanaged volume's storage takes.
pub fn unmanaged_name(volume_id: VolumeId) -> String {
    format!("unmanaged-{}", volume_file_name(volume_id))
}

/// Whether `name` is storage the service keeps for its own: volumes and snapshots, the
/// work files of other operations, the snapshot a volume's last backup keeps
/// (`backup.<id>.snap.<time>`), hidden files.
pub fn is_own(name: &str) -> bool {
    name.starts_with('.')
        || name.starts_with("snapshot-")
        || name.ends_with(".part")
        || name.contains(".gsnap-")
        || name.contains(".clone_snap")
        || (name.starts_with("backup.") && name.contains(".snap."))
}

/// A `source-name` the file backends take: one plain file name of the directory.
pub fn check_source_name(name: &str) -> Result<(), BackendError> {
    let plain = !name.is_empty() && !name.contains('/') && name != ".." && !name.starts_with('.');
    if plain && !is_own(name) {
        Ok(())
    } else {
        Err(BackendError::Failed(format!(
            "{name:?} is not the name of a file of this backend that can be managed"
        )))
    }
}

fn failed(what: &str, err: std::io::Error) -> BackendError {
    BackendError::Failed(format!("could not {what}: {err}"))
}

/// The regular files of `dir` that are not the service's own, by name.
pub async fn files_of(dir: &Path) -> Result<Vec<Manageable>, BackendError> {
    let mut entries = match tokio::fs::read_dir(dir).await {
        Ok(entries) => entries,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(failed("list the volume directory", err)),
    };
    let mut found = Vec::new();
    while let Some(entry) = entries
        .next_entry()
        .await
        .map_err(|e| failed("list the volume directory", e))?
    {
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        // `file_type` and `metadata` of an entry do not follow a link: a link is no file.
        let regular = entry.file_type().await.is_ok_and(|t| t.is_file());
        let meta = entry
            .metadata()
            .await
            .ok()
            .filter(|m| regular && m.is_file());
        if let Some(meta) = meta {
            if !is_own(&name) {
                found.push(Manageable {
                    name,
                    size_bytes: meta.len(),
                });
            }
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// The size of file `name` of `dir`; `None` when there is no such file. A link or
/// anything else that is not a regular file is refused.
pub async fn file_size(dir: &Path, name: &str) -> Result<Option<u64>, BackendError> {
    check_source_name(name)?;
    match tokio::fs::symlink_metadata(dir.join(name)).await {
        Ok(meta) if meta.is_file() => Ok(Some(meta.len())),
        Ok(_) => Err(not_a_regular_file(name)),
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(None),
        Err(err) => Err(failed("inspect the file", err)),
    }
}

fn not_a_regular_file(name: &str) -> BackendError {
    BackendError::Failed(format!(
        "{name:?} is not a regular file of this backend (links are not followed)"
    ))
}

/// Checks that `path` is a regular file itself, not a link to one.
async fn regular_file(path: &Path, name: &str) -> Result<(), BackendError> {
    match tokio::fs::symlink_metadata(path).await {
        Ok(meta) if meta.is_file() => Ok(()),
        Ok(_) => Err(not_a_regular_file(name)),
        Err(err) => Err(failed("inspect the file", err)),
    }
}

/// File `name` of `dir` becomes volume `volume_id`'s file, grown to `size_gib` GiB.
pub async fn manage_file(
    dir: &Path,
    name: &str,
    volume_id: VolumeId,
    size_gib: u64,
) -> Result<(), BackendError> {
    check_source_name(name)?;
    let (from, to) = (dir.join(name), dir.join(volume_file_name(volume_id)));
    if tokio::fs::symlink_metadata(&to).await.is_ok() {
        return Err(BackendError::Failed(format!(
            "the volume's file {} exists already",
            to.display()
        )));
    }
    regular_file(&from, name).await?;
    tokio::fs::rename(&from, &to)
        .await
        .map_err(|e| failed("rename the file", e))?;
    // Opened without following a link, in case one took the file's place meanwhile.
    let opened = tokio::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&to)
        .await;
    let file = match opened {
        Ok(file) => file,
        Err(err) => {
            let _ = tokio::fs::rename(&to, &from).await;
            return Err(failed("open the file", err));
        }
    };
    let meta = file
        .metadata()
        .await
        .map_err(|e| failed("open the file", e))?;
    if !meta.is_file() {
        let _ = tokio::fs::rename(&to, &from).await;
        return Err(not_a_regular_file(name));
    }
    let size = meta.len();
    if size < size_gib * GIB {
        file.set_len(size_gib * GIB)
            .await
            .map_err(|e| failed("grow the file to whole GiB", e))?;
    }
    Ok(())
}

/// Volume `volume_id`'s file is renamed `unmanaged-volume-<id>`; no file is fine.
pub async fn unmanage_file(dir: &Path, volume_id: VolumeId) -> Result<(), BackendError> {
    let from = dir.join(volume_file_name(volume_id));
    match tokio::fs::rename(&from, dir.join(unmanaged_name(volume_id))).await {
        Err(err) if err.kind() != ErrorKind::NotFound => Err(failed("rename the file", err)),
        _ => Ok(()),
    }
}

/// File `name` of `dir` becomes snapshot `snapshot_id`'s file (a file backend's
/// snapshot is a whole copy of its volume; nothing ties the file to the volume).
pub async fn manage_snapshot_file(
    dir: &Path,
    name: &str,
    snapshot_id: SnapshotId,
) -> Result<(), BackendError> {
    check_source_name(name)?;
    let to = dir.join(snapshot_file_name(snapshot_id));
    if tokio::fs::symlink_metadata(&to).await.is_ok() {
        return Err(BackendError::Failed(format!(
            "the snapshot's file {} exists already",
            to.display()
        )));
    }
    let from = dir.join(name);
    regular_file(&from, name).await?;
    tokio::fs::rename(&from, &to)
        .await
        .map_err(|e| failed("rename the file", e))
}

/// Snapshot `snapshot_id`'s file is renamed `unmanaged-snapshot-<id>`; none is fine.
pub async fn unmanage_snapshot_file(
    dir: &Path,
    snapshot_id: SnapshotId,
) -> Result<(), BackendError> {
    let from = dir.join(snapshot_file_name(snapshot_id));
    let to = dir.join(unmanaged_snapshot_name(snapshot_id));
    match tokio::fs::rename(&from, to).await {
        Err(err) if err.kind() != ErrorKind::NotFound => Err(failed("rename the file", err)),
        _ => Ok(()),
    }
}

/// GiB that hold `bytes` (a managed object's size, rounded up as Cinder's drivers do).
pub fn whole_gib(bytes: u64) -> u64 {
    bytes.div_ceil(GIB).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("manage-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[tokio::test]
    async fn links_are_neither_listed_nor_taken() {
        let (dir, outside) = (dir(), dir());
        let target = outside.join("host-file");
        std::fs::write(&target, b"not the backend's").unwrap();
        std::os::unix::fs::symlink(&target, dir.join("link")).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("dirlink")).unwrap();
        std::fs::write(dir.join("plain"), b"x").unwrap();
        let names: Vec<String> = files_of(&dir)
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.name)
            .collect();
        assert_eq!(names, ["plain"]);
        assert!(file_size(&dir, "link").await.is_err());
        let volume = VolumeId::generate();
        assert!(manage_file(&dir, "link", volume, 1).await.is_err());
        assert!(manage_snapshot_file(&dir, "link", SnapshotId::generate())
            .await
            .is_err());
        // The link stays where it was, and its target is as it was.
        assert!(std::fs::symlink_metadata(dir.join("link"))
            .unwrap()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"not the backend's");
        assert!(!dir.join(volume_file_name(volume)).exists());
        manage_file(&dir, "plain", volume, 1).await.unwrap();
        assert_eq!(
            std::fs::metadata(dir.join(volume_file_name(volume)))
                .unwrap()
                .len(),
            GIB
        );
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&outside).unwrap();
    }
}
