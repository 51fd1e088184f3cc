//! What both repositories do with a volume's data: cut it into chunks of `CHUNK` bytes as
//! it arrives, and checksum each, compressing it for a repository that stores it so,
//! unless it is all zeros or the parent holds the same bytes at the same place.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use flate2::write::{ZlibDecoder, ZlibEncoder};
use flate2::Compression;
use tokio::sync::mpsc;

use super::manifest::{ChunkRef, Manifest, CHUNK};
use super::{VolumeData, Watch};
use crate::backend::data::is_zero;
use crate::backend::ChangedChunks;

fn sha256_hex(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
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
pub(super) enum Prepared {
    Zeros,
    /// The parent holds the same bytes at the same place.
    Known(ChunkRef),
    New {
        sha256: String,
        bytes: Vec<u8>,
        zlib: bool,
    },
}

fn prepare(
    index: u64,
    chunk: &[u8],
    known: &HashMap<u64, &ChunkRef>,
    compress: bool,
) -> Result<Prepared, String> {
    if is_zero(chunk) {
        return Ok(Prepared::Zeros);
    }
    let sha256 = sha256_hex(chunk);
    if let Some(same) = known.get(&index).filter(|c| c.sha256 == sha256) {
        return Ok(Prepared::Known((*same).clone()));
    }
    let (bytes, zlib) = match compress {
        true => pack(chunk)?,
        false => (chunk.to_vec(), false),
    };
    Ok(Prepared::New {
        sha256,
        bytes,
        zlib,
    })
}

/// Chunks read before they are checksummed and compressed together, a share per core.
const BATCH: usize = 8;

/// `prepare` of each chunk, in order, spread over the machine's cores; new chunks are
/// compressed when `compress`. An unchanged chunk is the parent's (zeros where it held
/// none).
fn prepare_batch(
    batch: &[(u64, Slot)],
    known: &HashMap<u64, &ChunkRef>,
    compress: bool,
) -> Result<Vec<Prepared>, String> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let share = batch.len().div_ceil(workers).max(1);
    std::thread::scope(|scope| {
        let parts: Vec<_> = batch
            .chunks(share)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|(index, slot)| match slot {
                            Slot::Read(chunk) => prepare(*index, chunk, known, compress),
                            Slot::Unchanged(_) => Ok(match known.get(index) {
                                Some(same) => Prepared::Known((*same).clone()),
                                None => Prepared::Zeros,
                            }),
                        })
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

pub(super) fn unpack(stored: Vec<u8>, zlib: bool) -> Result<Vec<u8>, String> {
    if !zlib {
        return Ok(stored);
    }
    let mut decoder = ZlibDecoder::new(Vec::with_capacity(CHUNK));
    decoder
        .write_all(&stored)
        .and_then(|()| decoder.finish())
        .map_err(|e| format!("could not decompress a chunk: {e}"))
}

/// A chunk of the volume as it arrives: its bytes, or only its length where the backend
/// said it has not changed since the parent (`ChangedChunks`), so it was not read.
enum Slot {
    Read(Vec<u8>),
    Unchanged(usize),
}

/// The volume's data arriving in order, handed out a batch of whole chunks at a time.
struct Chunks {
    data: mpsc::Receiver<Result<Bytes, std::io::Error>>,
    /// Only these chunks arrive; the others are the parent's.
    changed: Option<Arc<ChangedChunks>>,
    pending: Vec<u8>,
    ended: bool,
    next_index: u64,
    /// Bytes handed out so far.
    total: u64,
}

impl Chunks {
    fn new(
        data: mpsc::Receiver<Result<Bytes, std::io::Error>>,
        changed: Option<Arc<ChangedChunks>>,
    ) -> Self {
        Chunks {
            data,
            changed,
            pending: Vec::with_capacity(CHUNK),
            ended: false,
            next_index: 0,
            total: 0,
        }
    }

    /// Up to `BATCH` chunks (blocking until they arrive); empty at the end. Only the
    /// volume's last chunk may be short.
    fn next_batch(&mut self) -> Result<Vec<(u64, Slot)>, String> {
        let Some(changed) = self.changed.clone() else {
            let read = self.next_read_batch()?;
            return Ok(read.into_iter().map(|(i, b)| (i, Slot::Read(b))).collect());
        };
        let mut batch = Vec::with_capacity(BATCH);
        while batch.len() < BATCH && self.next_index < changed.chunk_count() {
            let index = self.next_index;
            let length = (changed.size_bytes - index * CHUNK as u64).min(CHUNK as u64) as usize;
            let slot = match changed.contains(index) {
                true => Slot::Read(self.take(length)?),
                false => Slot::Unchanged(length),
            };
            self.total += length as u64;
            self.next_index += 1;
            batch.push((index, slot));
        }
        if batch.is_empty() && self.take(1).is_ok() {
            return Err("the volume sent more than the chunks that changed".to_owned());
        }
        Ok(batch)
    }

    /// The next `length` bytes of the stream (a changed chunk).
    fn take(&mut self, length: usize) -> Result<Vec<u8>, String> {
        while self.pending.len() < length {
            match self.data.blocking_recv() {
                Some(Ok(bytes)) => self.pending.extend_from_slice(&bytes),
                Some(Err(e)) => return Err(format!("could not read the volume: {e}")),
                None => return Err("the volume's changed chunks ended early".to_owned()),
            }
        }
        let rest = self.pending.split_off(length);
        Ok(std::mem::replace(&mut self.pending, rest))
    }

    /// Up to `BATCH` chunks `(index, bytes)` of a volume sent whole.
    fn next_read_batch(&mut self) -> Result<Vec<(u64, Vec<u8>)>, String> {
        let mut batch = Vec::with_capacity(BATCH);
        while batch.len() < BATCH && (!self.ended || !self.pending.is_empty()) {
            while !self.ended && self.pending.len() < CHUNK {
                match self.data.blocking_recv() {
                    Some(Ok(bytes)) => self.pending.extend_from_slice(&bytes),
                    Some(Err(e)) => return Err(format!("could not read the volume: {e}")),
                    None => self.ended = true,
                }
            }
            if self.pending.is_empty() {
                break;
            }
            let rest = self.pending.split_off(self.pending.len().min(CHUNK));
            let chunk = std::mem::replace(&mut self.pending, rest);
            self.total += chunk.len() as u64;
            batch.push((self.next_index, chunk));
            self.next_index += 1;
        }
        Ok(batch)
    }
}

/// Sends the volume a manifest describes into `sink`, in order: each chunk as `read`
/// gives it, checked against its checksum, and zeros where no chunk is stored.
pub(super) fn send_volume(
    manifest: &Manifest,
    sink: mpsc::Sender<Bytes>,
    done: &AtomicU64,
    mut read: impl FnMut(&ChunkRef) -> Result<Vec<u8>, String>,
) -> Result<(), String> {
    let mut chunks = manifest.chunks.iter().peekable();
    let zeros = Bytes::from(vec![0u8; CHUNK]);
    let mut sent = 0u64;
    for index in 0..manifest.chunk_count() {
        let length = (manifest.size_bytes - sent).min(CHUNK as u64) as usize;
        let bytes = match chunks.next_if(|c| c.index == index) {
            Some(chunk) => {
                let bytes = read(chunk)?;
                if bytes.len() != length {
                    return Err(format!("chunk {index} of the backup has the wrong length"));
                }
                if sha256_hex(&bytes) != chunk.sha256 {
                    return Err(format!(
                        "chunk {index} of the backup does not match its checksum"
                    ));
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

/// The chunks of `parent` by index: what an incremental backup need not store again.
pub(super) fn known_chunks(parent: Option<&Manifest>) -> HashMap<u64, &ChunkRef> {
    parent
        .map(|p| p.chunks.iter().map(|c| (c.index, c)).collect())
        .unwrap_or_default()
}

/// One chunk of a batch: its index, its length, and what it becomes.
pub(super) type Piece = (u64, usize, Prepared);

/// Hands the volume arriving on `data` to `store` a batch of chunks at a time (new ones
/// compressed when `compress`), with the bytes read so far, until the end or until the
/// backup is cancelled; the volume's size.
pub(super) fn each_batch(
    data: VolumeData,
    known: &HashMap<u64, &ChunkRef>,
    compress: bool,
    watch: &Watch<'_>,
    mut store: impl FnMut(u64, Vec<Piece>) -> Result<(), String>,
) -> Result<u64, String> {
    let mut volume = Chunks::new(data.data, data.changed);
    loop {
        if watch.cancelled.load(Ordering::Relaxed) {
            return Err("the backup was deleted while it was being written".to_owned());
        }
        let batch = volume.next_batch()?;
        if batch.is_empty() {
            return Ok(volume.total);
        }
        let prepared = prepare_batch(&batch, known, compress)?;
        let pieces = batch
            .iter()
            .zip(prepared)
            .map(|((index, slot), prepared)| {
                let length = match slot {
                    Slot::Read(chunk) => chunk.len(),
                    Slot::Unchanged(length) => *length,
                };
                (*index, length, prepared)
            })
            .collect();
        store(volume.total, pieces)?;
        watch.done.store(volume.total, Ordering::Relaxed);
    }
}
