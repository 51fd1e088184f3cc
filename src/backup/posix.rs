//! The repository's files (Cinder's `posix` backup driver): under a container directory,
//! a backup is `<prefix>.data` (its new chunks, each compressed, one after another) and
//! `<prefix>.manifest`. Both are written under a temporary name, synced and renamed, the
//! manifest last: a backup without its manifest was never finished.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use axum::body::Bytes;
use flate2::write::{ZlibDecoder, ZlibEncoder};
use flate2::Compression;
use tokio::sync::mpsc;

use super::manifest::{ChunkRef, Manifest, VolumeRecord, CHUNK, FORMAT};
use super::{Location, Written};

fn io_failed(what: &str, path: &Path, err: std::io::Error) -> String {
    format!("could not {what} {}: {err}", path.display())
}

fn sha256_hex(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn is_zero(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| *b == 0)
}

/// Bytes compressed at the start of a chunk to see whether the chunk compresses at all.
const PROBE: usize = 8192;

fn deflate(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut encoder = ZlibEncoder::new(Vec::with_capacity(bytes.len() / 2), Compression::fast());
    encoder
        .write_all(bytes)
        .and_then(|()| encoder.finish())
        .map_err(|e| format!("could not compress: {e}"))
}

/// The chunk as stored: compressed when that makes it smaller. A chunk whose first
/// `PROBE` bytes do not shrink by a tenth (random or encrypted data) is stored as it is
/// without compressing the rest: compressing it would cost most of a backup's time.
fn pack(chunk: &[u8]) -> Result<(Vec<u8>, bool), String> {
    if chunk.len() > PROBE && deflate(&chunk[..PROBE])?.len() * 10 >= PROBE * 9 {
        return Ok((chunk.to_vec(), false));
    }
    let compressed = deflate(chunk)?;
    if compressed.len() < chunk.len() {
        Ok((compressed, true))
    } else {
        Ok((chunk.to_vec(), false))
    }
}

/// What a chunk of the volume becomes in a backup.
enum Prepared {
    Zeros,
    /// The parent holds the same bytes at the same place.
    Known(ChunkRef),
    New {
        sha256: String,
        bytes: Vec<u8>,
        zlib: bool,
    },
}

fn prepare(index: u64, chunk: &[u8], known: &HashMap<u64, &ChunkRef>) -> Result<Prepared, String> {
    if is_zero(chunk) {
        return Ok(Prepared::Zeros);
    }
    let sha256 = sha256_hex(chunk);
    if let Some(same) = known.get(&index).filter(|c| c.sha256 == sha256) {
        return Ok(Prepared::Known((*same).clone()));
    }
    let (bytes, zlib) = pack(chunk)?;
    Ok(Prepared::New {
        sha256,
        bytes,
        zlib,
    })
}

/// Chunks read before they are checksummed and compressed together, a share per core.
const BATCH: usize = 8;

/// `prepare` of each `(index, chunk)`, in order, spread over the machine's cores.
fn prepare_batch(
    batch: &[(u64, Vec<u8>)],
    known: &HashMap<u64, &ChunkRef>,
) -> Result<Vec<Prepared>, String> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let share = batch.len().div_ceil(workers).max(1);
    std::thread::scope(|scope| {
        let parts: Vec<_> = batch
            .chunks(share)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|(index, chunk)| prepare(*index, chunk, known))
                        .collect::<Result<Vec<_>, String>>()
                })
            })
            .collect();
        let mut prepared = Vec::with_capacity(batch.len());
        for part in parts {
            let done = part
                .join()
                .map_err(|_| "a backup worker stopped".to_owned())??;
            prepared.extend(done);
        }
        Ok(prepared)
    })
}

fn unpack(stored: Vec<u8>, zlib: bool) -> Result<Vec<u8>, String> {
    if !zlib {
        return Ok(stored);
    }
    let mut decoder = ZlibDecoder::new(Vec::with_capacity(CHUNK));
    decoder
        .write_all(&stored)
        .and_then(|()| decoder.finish())
        .map_err(|e| format!("could not decompress a chunk: {e}"))
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
    let path = root.join(location.manifest_object());
    let text = fs::read(&path).map_err(|e| io_failed("read", &path, e))?;
    let manifest: Manifest = serde_json::from_slice(&text)
        .map_err(|e| format!("the manifest {} is not readable: {e}", path.display()))?;
    manifest.check()?;
    Ok(manifest)
}

/// What a backup being written is told from outside.
pub(super) struct Watch<'a> {
    /// Bytes of the volume read so far.
    pub done: &'a AtomicU64,
    /// Set to stop early (the backup was deleted meanwhile).
    pub cancelled: &'a AtomicBool,
}

/// Receives the volume's data in order and stores each chunk the parent does not hold
/// as it is; then the manifest. On error nothing of this backup is left.
pub(super) fn write_backup(
    root: &Path,
    location: &Location,
    parent: Option<&Manifest>,
    data: mpsc::Receiver<Result<Bytes, std::io::Error>>,
    record: VolumeRecord,
    watch: Watch<'_>,
) -> Result<Written, String> {
    let dir = root.join(&location.container);
    fs::create_dir_all(&dir).map_err(|e| io_failed("create", &dir, e))?;
    let written = write_objects(root, location, parent, data, record, watch);
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
    mut data: mpsc::Receiver<Result<Bytes, std::io::Error>>,
    record: VolumeRecord,
    watch: Watch<'_>,
) -> Result<Written, String> {
    let data_path = root.join(location.data_object());
    let part = part_of(&data_path);
    let pack_file = File::create(&part).map_err(|e| io_failed("create", &part, e))?;
    let mut objects = parent.map(|p| p.objects.clone()).unwrap_or_default();
    objects.push(location.data_object());
    let own = (objects.len() - 1) as u32;
    let known: HashMap<u64, &ChunkRef> = parent
        .map(|p| p.chunks.iter().map(|c| (c.index, c)).collect())
        .unwrap_or_default();
    let mut chunks = Vec::new();
    let (mut stored, mut index, mut total) = (0u64, 0u64, 0u64);
    let mut pending = Vec::with_capacity(CHUNK);
    let mut ended = false;
    while !ended || !pending.is_empty() {
        if watch.cancelled.load(Ordering::Relaxed) {
            return Err("the backup was deleted while it was being written".to_owned());
        }
        let mut batch = Vec::with_capacity(BATCH);
        while batch.len() < BATCH && (!ended || !pending.is_empty()) {
            while !ended && pending.len() < CHUNK {
                match data.blocking_recv() {
                    Some(Ok(bytes)) => pending.extend_from_slice(&bytes),
                    Some(Err(e)) => return Err(format!("could not read the volume: {e}")),
                    None => ended = true,
                }
            }
            if pending.is_empty() {
                break;
            }
            let rest = pending.split_off(pending.len().min(CHUNK));
            let chunk = std::mem::replace(&mut pending, rest);
            total += chunk.len() as u64;
            batch.push((index, chunk));
            index += 1;
        }
        for ((index, _), prepared) in batch.iter().zip(prepare_batch(&batch, &known)?) {
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
                        index: *index,
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
        watch.done.store(total, Ordering::Relaxed);
    }
    pack_file
        .sync_all()
        .map_err(|e| io_failed("sync", &part, e))?;
    fs::rename(&part, &data_path).map_err(|e| io_failed("rename", &part, e))?;
    let new_chunks = chunks.iter().filter(|c| c.object == own).count() as u64;
    let manifest = Manifest {
        format: FORMAT.to_owned(),
        backup_id: location.backup_id.clone(),
        volume_id: location.volume_id.clone(),
        size_bytes: total,
        chunk_size: CHUNK as u64,
        objects,
        chunks,
        volume: record,
    };
    let text = serde_json::to_vec(&manifest).map_err(|e| e.to_string())?;
    let manifest_path = root.join(location.manifest_object());
    write_durably(&manifest_path, &text)?;
    sync_dir(&root.join(&location.container))?;
    Ok(Written {
        object_count: 2,
        stored_bytes: stored,
        new_chunks,
        volume_bytes: total,
    })
}

/// Sends the backed-up volume's data, in order, into `sink`, checking each chunk's
/// checksum; the volume's details at the end.
pub(super) fn read_backup(
    root: &Path,
    manifest: &Manifest,
    sink: mpsc::Sender<Bytes>,
    done: &AtomicU64,
) -> Result<(), String> {
    let mut files: HashMap<u32, File> = HashMap::new();
    let mut chunks = manifest.chunks.iter().peekable();
    let zeros = Bytes::from(vec![0u8; CHUNK]);
    let mut sent = 0u64;
    for index in 0..manifest.chunk_count() {
        let length = (manifest.size_bytes - sent).min(CHUNK as u64) as usize;
        let bytes = match chunks.next_if(|c| c.index == index) {
            Some(chunk) => {
                let bytes = read_chunk(root, manifest, chunk, &mut files)?;
                if bytes.len() != length {
                    return Err(format!("chunk {index} of the backup has the wrong length"));
                }
                Bytes::from(bytes)
            }
            None => zeros.slice(..length),
        };
        sent += length as u64;
        if sink.blocking_send(bytes).is_err() {
            return Err("the volume being restored stopped taking data".to_owned());
        }
        done.store(sent, Ordering::Relaxed);
    }
    Ok(())
}

fn read_chunk(
    root: &Path,
    manifest: &Manifest,
    chunk: &ChunkRef,
    files: &mut HashMap<u32, File>,
) -> Result<Vec<u8>, String> {
    let path = root.join(&manifest.objects[chunk.object as usize]);
    let file = match files.entry(chunk.object) {
        std::collections::hash_map::Entry::Occupied(open) => open.into_mut(),
        std::collections::hash_map::Entry::Vacant(slot) => {
            slot.insert(File::open(&path).map_err(|e| io_failed("open", &path, e))?)
        }
    };
    let mut stored = vec![0u8; chunk.length as usize];
    file.read_exact_at(&mut stored, chunk.offset)
        .map_err(|e| io_failed("read", &path, e))?;
    let bytes = unpack(stored, chunk.zlib)?;
    if sha256_hex(&bytes) != chunk.sha256 {
        return Err(format!(
            "chunk {} of the backup does not match its checksum",
            chunk.index
        ));
    }
    Ok(bytes)
}

/// Removes this backup's own objects (not its parent's); what is already gone is fine.
pub(super) fn remove_backup_files(root: &Path, location: &Location) -> Result<(), String> {
    for object in [location.manifest_object(), location.data_object()] {
        let path = root.join(object);
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
