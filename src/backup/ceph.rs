//! Backups on a Ceph pool, as Cinder's `ceph` backup driver keeps them: in the pool the
//! backup's container names (`backup_ceph_pool` by default), each backup is an RBD image
//! `volume-<volume id>.backup-<backup id>` with a protected snapshot `backup` of what it
//! held, and a RADOS object `<image>.manifest` beside it, written last: a backup
//! without its manifest was never finished.
//!
//! An incremental backup is a copy-on-write clone of its parent's snapshot into which
//! only the chunks that differ from the parent's are written (the way `rbd export-diff`
//! and `import-diff` carry changes), so the cluster stores only those. The images' objects
//! are one chunk each, so a changed chunk costs one object, not a 4 MiB one. Data is
//! stored as it is (the pool may compress it); every chunk is checksummed and checked on
//! restore as the posix repository's are.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use tokio::sync::mpsc;

use super::chunks::{each_batch, known_chunks, send_volume, Prepared};
use super::manifest::{ChunkRef, Manifest, VolumeRecord, CHUNK};
use super::{Location, VolumeData, Watch, Written};
use crate::backend::rbd::ceph::{self, features, CephError, ClientConfig, Cluster, Io};

/// The snapshot of a backup's image that restores and clones read.
const SNAPSHOT: &str = "backup";

/// Objects of 2^18 bytes: one per chunk.
const ORDER: i32 = 18;
const _: () = assert!(1 << ORDER == CHUNK);

/// Bytes a restore reads at once.
const READ_AHEAD: u64 = 8 << 20;

/// How a new image grows while data arrives (it is cut to the volume's size at the end).
const GROWTH: u64 = 1 << 30;

/// The pool and the identity backups are kept with; connected on first use.
pub struct CephStore {
    client: ClientConfig,
    pool: String,
    cluster: Mutex<Option<Arc<Cluster>>>,
}

impl std::fmt::Debug for CephStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CephStore")
            .field("client", &self.client)
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

fn failed(err: CephError) -> String {
    err.to_string()
}

/// `volume-<volume id>.backup-<backup id>` (the prefix stays the first backup's when a
/// record is imported under another id, so the record points at the same image).
fn image_name(location: &Location) -> String {
    format!("volume-{}.{}", location.volume_id, location.prefix)
}

fn manifest_name(location: &Location) -> String {
    format!("{}.manifest", image_name(location))
}

fn gone(result: Result<(), CephError>) -> Result<(), String> {
    match result {
        Err(e) if e.errno != ceph::ENOENT => Err(failed(e)),
        _ => Ok(()),
    }
}

impl CephStore {
    pub fn new(client: ClientConfig, pool: String) -> Self {
        CephStore {
            client,
            pool,
            cluster: Mutex::new(None),
        }
    }

    /// The pool a backup goes to when its request names no container.
    pub fn pool(&self) -> &str {
        &self.pool
    }

    /// The connected cluster (blocking: connects on first use).
    fn cluster(&self) -> Result<Arc<Cluster>, String> {
        let mut cached = self.cluster.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cluster) = cached.as_ref() {
            return Ok(cluster.clone());
        }
        let cluster = Arc::new(Cluster::connect(&self.client).map_err(failed)?);
        *cached = Some(cluster.clone());
        Ok(cluster)
    }

    /// The cluster answers and the pool backups go to by default exists.
    pub(super) fn check_setup(&self) -> Result<(), String> {
        let cluster = self.cluster()?;
        let io = cluster.io(&self.pool, None);
        io.map(drop)
            .map_err(|e| format!("the pool {:?}: {e}", self.pool))
    }

    pub(super) fn read_manifest(&self, location: &Location) -> Result<Manifest, String> {
        let cluster = self.cluster()?;
        let io = cluster.io(&location.container, None).map_err(failed)?;
        let name = manifest_name(location);
        let text = io
            .read_object(&name)
            .map_err(|e| format!("could not read the manifest: {e}"))?;
        let manifest: Manifest = serde_json::from_slice(&text)
            .map_err(|e| format!("the manifest {name} is not readable: {e}"))?;
        manifest.check()?;
        Ok(manifest)
    }

    /// Makes the backup's image (a clone of `parent`'s when given) and writes into it the
    /// chunks the parent does not hold; then its snapshot and manifest. On error nothing
    /// of this backup is left.
    pub(super) fn write_backup(
        &self,
        location: &Location,
        parent: Option<&Location>,
        data: VolumeData,
        record: VolumeRecord,
        watch: Watch<'_>,
    ) -> Result<Written, String> {
        let parent = match parent {
            Some(at) => Some((at, self.read_manifest(at)?)),
            None => None,
        };
        let cluster = self.cluster()?;
        let io = cluster.io(&location.container, None).map_err(failed)?;
        let written = write_image(&io, location, parent, data, record, watch);
        if written.is_err() {
            if let Err(err) = self.remove_backup(location) {
                tracing::warn!(error = %err, "could not remove a failed backup's image");
            }
        }
        written
    }

    /// Sends the data of the backup `manifest` describes into `sink`, in order.
    pub(super) fn read_backup(
        &self,
        manifest: &Manifest,
        sink: mpsc::Sender<Bytes>,
        done: &AtomicU64,
    ) -> Result<(), String> {
        let (pool, name) = manifest.objects[0]
            .split_once('/')
            .ok_or_else(|| format!("the manifest names no pool: {}", manifest.objects[0]))?;
        let cluster = self.cluster()?;
        let io = cluster.io(pool, None).map_err(failed)?;
        let image = io.open(name, Some(SNAPSHOT), true).map_err(failed)?;
        // One read of READ_AHEAD bytes at a time: librbd reads its objects in parallel,
        // where a read per chunk would wait for each object in turn.
        let (mut start, mut window) = (0u64, Vec::new());
        send_volume(manifest, sink, done, |chunk| {
            let end = chunk.offset + u64::from(chunk.length);
            if chunk.offset < start || end > start + window.len() as u64 {
                start = chunk.offset;
                let length = READ_AHEAD.min(manifest.size_bytes.saturating_sub(start));
                window = image
                    .read(start, length.max(end - start) as usize)
                    .map_err(failed)?;
            }
            let from = (chunk.offset - start) as usize;
            Ok(window[from..(from + chunk.length as usize).min(window.len())].to_vec())
        })
    }

    /// Removes the backup's image and manifest; what is already gone is fine. Refused by
    /// the cluster (EBUSY) while an incremental backup is a clone of it.
    pub(super) fn remove_backup(&self, location: &Location) -> Result<(), String> {
        let cluster = self.cluster()?;
        let io = cluster.io(&location.container, None).map_err(failed)?;
        let name = image_name(location);
        match io.open(&name, None, false) {
            Ok(image) => {
                if image
                    .snapshots()
                    .map_err(failed)?
                    .iter()
                    .any(|s| s == SNAPSHOT)
                {
                    match image.snap_unprotect(SNAPSHOT) {
                        Err(e) if e.errno == ceph::EBUSY => {
                            return Err(format!(
                                "backup {} has incremental backups built on it",
                                location.backup_id
                            ))
                        }
                        // EINVAL: it was never protected (a write that failed early).
                        Err(e) if e.errno != ceph::EINVAL_ERRNO => return Err(failed(e)),
                        _ => {}
                    }
                    gone(image.snap_remove(SNAPSHOT))?;
                }
                drop(image);
                gone(io.remove_image(&name))?;
            }
            Err(e) if e.errno == ceph::ENOENT => {}
            Err(e) => return Err(failed(e)),
        }
        gone(io.remove_object(&manifest_name(location)))
    }
}

fn write_image(
    io: &Io<'_>,
    location: &Location,
    parent: Option<(&Location, Manifest)>,
    data: VolumeData,
    record: VolumeRecord,
    watch: Watch<'_>,
) -> Result<Written, String> {
    let name = image_name(location);
    match &parent {
        None => io
            .create_image_of_order(&name, GROWTH, features::LAYERING, ORDER)
            .map_err(failed)?,
        Some((at, _)) => {
            let parent_io = io.sibling(&at.container).map_err(failed)?;
            let parent_image = image_name(at);
            parent_io
                .clone_image_of_order(
                    &parent_image,
                    SNAPSHOT,
                    io,
                    &name,
                    features::LAYERING,
                    ORDER,
                )
                .map_err(failed)?
        }
    }
    let image = io.open(&name, None, false).map_err(failed)?;
    // librbd's cache writes through until the first flush (`rbd_cache_writethrough_until_
    // flush`); flushing the empty image lets it gather writes, the final flush commits.
    image.flush().map_err(failed)?;
    let mut size = image.size().map_err(failed)?;
    let known = known_chunks(parent.as_ref().map(|(_, m)| m));
    let zeros = vec![0u8; CHUNK];
    let (mut chunks, mut stored, mut new_chunks) = (Vec::new(), 0u64, 0u64);
    let total = each_batch(data, &known, false, &watch, |read, pieces| {
        if read > size {
            size = read.next_multiple_of(GROWTH);
            image.resize(size).map_err(failed)?;
        }
        for (index, length, prepared) in pieces {
            let offset = index * CHUNK as u64;
            match prepared {
                // Zeros where the parent held data: the clone must not read through.
                Prepared::Zeros if known.contains_key(&index) => {
                    image.write(offset, &zeros[..length]).map_err(failed)?
                }
                Prepared::Zeros => {}
                Prepared::Known(same) => chunks.push(ChunkRef {
                    object: 0,
                    offset,
                    ..same
                }),
                Prepared::New { sha256, bytes, .. } => {
                    image.write(offset, &bytes).map_err(failed)?;
                    stored += bytes.len() as u64;
                    new_chunks += 1;
                    chunks.push(ChunkRef {
                        index,
                        object: 0,
                        offset,
                        length: length as u32,
                        zlib: false,
                        sha256,
                    });
                }
            }
        }
        Ok(())
    })?;
    if size != total {
        image.resize(total).map_err(failed)?;
    }
    image.flush().map_err(failed)?;
    image.snap_create(SNAPSHOT).map_err(failed)?;
    image.snap_protect(SNAPSHOT).map_err(failed)?;
    let objects = vec![format!("{}/{name}", location.container)];
    let manifest = Manifest::new(location, total, objects, chunks, record);
    let text = serde_json::to_vec(&manifest).map_err(|e| e.to_string())?;
    io.write_object(&manifest_name(location), &text)
        .map_err(failed)?;
    Ok(Written {
        object_count: 2,
        stored_bytes: stored,
        new_chunks,
        volume_bytes: total,
    })
}
