//! The repository's files (Cinder's `posix` backup driver): under a container directory,
//! a backup is `<prefix>.data` (its new chunks, each compressed, one after another) and
//! `<prefix>.manifest`. Both are written under a temporary name, synced and renamed, the
//! manifest last: a backup without its manifest was never finished.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

use axum::body::Bytes;
use tokio::sync::mpsc;

use super::chunks::{each_batch, known_chunks, send_volume, unpack, Prepared};
use super::manifest::{ChunkRef, Manifest, VolumeRecord};
use super::{Location, VolumeData, Watch, Written};

/// The path of repository object `object` (`container/name`), only if it stays under
/// `root`: plain names, no `..`, no absolute path, no NUL.
fn inside(root: &Path, object: &str) -> Result<PathBuf, String> {
    use std::path::Component;
    let relative = Path::new(object);
    let plain = !object.is_empty()
        && !object.contains('\0')
        && relative
            .components()
            .all(|part| matches!(part, Component::Normal(_)));
    if plain {
        Ok(root.join(relative))
    } else {
        Err(format!(
            "the backup object {object:?} is not a path inside the repository"
        ))
    }
}

fn io_failed(what: &str, path: &Path, err: std::io::Error) -> String {
    format!("could not {what} {}: {err}", path.display())
}

/// Writes `bytes` to `path` through a temporary file, synced, then renamed over it.
fn write_durably(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let part = part_of(path);
    let mut file = File::create(&part).map_err(|e| io_failed("create", &part, e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| io_failed("write", &part, e))?;
    fs::rename(&part, path).map_err(|e| io_failed("rename", &part, e))
}

fn part_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".part");
    PathBuf::from(name)
}

fn sync_dir(dir: &Path) -> Result<(), String> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_failed("sync", dir, e))
}

pub(super) fn read_manifest(root: &Path, location: &Location) -> Result<Manifest, String> {
    let path = inside(root, &location.manifest_object())?;
    let text = fs::read(&path).map_err(|e| io_failed("read", &path, e))?;
    let manifest: Manifest = serde_json::from_slice(&text)
        .map_err(|e| format!("the manifest {} is not readable: {e}", path.display()))?;
    manifest.check()?;
    Ok(manifest)
}

/// Receives the volume's data in order and stores each chunk the parent does not hold
/// as it is; then the manifest. On error nothing of this backup is left.
pub(super) fn write_backup(
    root: &Path,
    location: &Location,
    parent: Option<&Location>,
    data: VolumeData,
    record: VolumeRecord,
    watch: Watch<'_>,
) -> Result<Written, String> {
    let parent = match parent {
        Some(at) => Some(read_manifest(root, at)?),
        None => None,
    };
    let dir = inside(root, &location.container)?;
    fs::create_dir_all(&dir).map_err(|e| io_failed("create", &dir, e))?;
    let written = write_objects(root, location, parent.as_ref(), data, record, watch);
    if written.is_err() {
        if let Err(err) = remove_backup_files(root, location) {
            tracing::warn!(error = %err, "could not remove a failed backup's objects");
        }
    }
    written
}

fn write_objects(
    root: &Path,
    location: &Location,
    parent: Option<&Manifest>,
    data: VolumeData,
    record: VolumeRecord,
    watch: Watch<'_>,
) -> Result<Written, String> {
    let data_path = inside(root, &location.data_object())?;
    let part = part_of(&data_path);
    let pack_file = File::create(&part).map_err(|e| io_failed("create", &part, e))?;
    let mut objects = parent.map(|p| p.objects.clone()).unwrap_or_default();
    objects.push(location.data_object());
    let own = (objects.len() - 1) as u32;
    let known = known_chunks(parent);
    let mut chunks = Vec::new();
    let mut stored = 0u64;
    let total = each_batch(data, &known, true, &watch, |_, pieces| {
        for (index, _, prepared) in pieces {
            match prepared {
                Prepared::Zeros => {}
                Prepared::Known(chunk) => chunks.push(chunk),
                Prepared::New {
                    sha256,
                    bytes,
                    zlib,
                } => {
                    pack_file
                        .write_all_at(&bytes, stored)
                        .map_err(|e| io_failed("write", &part, e))?;
                    chunks.push(ChunkRef {
                        index,
                        object: own,
                        offset: stored,
                        length: bytes.len() as u32,
                        zlib,
                        sha256,
                    });
                    stored += bytes.len() as u64;
                }
            }
        }
        Ok(())
    })?;
    pack_file
        .sync_all()
        .map_err(|e| io_failed("sync", &part, e))?;
    fs::rename(&part, &data_path).map_err(|e| io_failed("rename", &part, e))?;
    let new_chunks = chunks.iter().filter(|c| c.object == own).count() as u64;
    let manifest = Manifest::new(location, total, objects, chunks, record);
    let text = serde_json::to_vec(&manifest).map_err(|e| e.to_string())?;
    let manifest_path = inside(root, &location.manifest_object())?;
    write_durably(&manifest_path, &text)?;
    sync_dir(&inside(root, &location.container)?)?;
    Ok(Written {
        object_count: 2,
        stored_bytes: stored,
        new_chunks,
        volume_bytes: total,
    })
}

/// Sends the backed-up volume's data, in order, into `sink`, checking each chunk's
/// checksum.
pub(super) fn read_backup(
    root: &Path,
    manifest: &Manifest,
    sink: mpsc::Sender<Bytes>,
    done: &AtomicU64,
) -> Result<(), String> {
    let mut files: HashMap<u32, File> = HashMap::new();
    send_volume(manifest, sink, done, |chunk| {
        read_chunk(root, manifest, chunk, &mut files)
    })
}

fn read_chunk(
    root: &Path,
    manifest: &Manifest,
    chunk: &ChunkRef,
    files: &mut HashMap<u32, File>,
) -> Result<Vec<u8>, String> {
    let path = inside(root, &manifest.objects[chunk.object as usize])?;
    let file = match files.entry(chunk.object) {
        std::collections::hash_map::Entry::Occupied(open) => open.into_mut(),
        std::collections::hash_map::Entry::Vacant(slot) => {
            slot.insert(File::open(&path).map_err(|e| io_failed("open", &path, e))?)
        }
    };
    let mut stored = vec![0u8; chunk.length as usize];
    file.read_exact_at(&mut stored, chunk.offset)
        .map_err(|e| io_failed("read", &path, e))?;
    unpack(stored, chunk.zlib)
}

/// Removes this backup's own objects (not its parent's); what is already gone is fine.
pub(super) fn remove_backup_files(root: &Path, location: &Location) -> Result<(), String> {
    for object in [location.manifest_object(), location.data_object()] {
        let path = inside(root, &object)?;
        for path in [part_of(&path), path] {
            match fs::remove_file(&path) {
                Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io_failed("remove", &path, err))
                }
                _ => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_stay_inside_the_repository() {
        let root = Path::new("/repo");
        assert_eq!(
            inside(root, "ab/cd/vol/backup-1.data").unwrap(),
            Path::new("/repo/ab/cd/vol/backup-1.data")
        );
        for escape in [
            "../../tmp/x.data",
            "c/../../x",
            "/tmp/x",
            "",
            "c/x\0.data",
            "..",
        ] {
            assert!(inside(root, escape).is_err(), "{escape:?}");
        }
    }
}
