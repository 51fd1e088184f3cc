//! The images, as Cinder's RBD driver keeps them: names, clones (flattened past the
//! clone depth) and the order in which snapshots and images are removed.

use super::access;
use super::ceph::{self, features, CephError, Io};
use crate::domain::ids::{SnapshotId, VolumeId};

/// Images are made with layering (clones) and deep-flatten, without exclusive-lock and
/// the features that need it (object-map, fast-diff, journaling): two writers of a
/// multi-attached volume would hand the lock back and forth on every write (about ten
/// times slower), and whether a volume is multi-attached can change by retype.
pub(super) const IMAGE_FEATURES: u64 = features::LAYERING | features::DEEP_FLATTEN;

/// The snapshot a clone of a volume hangs off (Cinder's name for it).
pub(super) const CLONE_SNAP_SUFFIX: &str = ".clone_snap";

pub(super) fn image_name(volume: VolumeId) -> String {
    format!("volume-{volume}")
}

pub(super) fn snapshot_name(snapshot: SnapshotId) -> String {
    format!("snapshot-{snapshot}")
}

/// The snapshots (`snapshot-<id>`) of every volume image, sorted.
pub(super) fn snapshot_ids(io: &Io<'_>) -> Result<Vec<SnapshotId>, CephError> {
    let mut ids = Vec::new();
    for image in io.list_images()? {
        if !image.starts_with("volume-") {
            continue;
        }
        let opened = match io.open(&image, None, true) {
            // Deleted since it was listed.
            Err(e) if e.errno == ceph::ENOENT => continue,
            other => other?,
        };
        ids.extend(
            opened
                .snapshots()?
                .iter()
                .filter_map(|name| name.strip_prefix("snapshot-"))
                .filter_map(|id| uuid::Uuid::parse_str(id).ok())
                .map(SnapshotId::from),
        );
    }
    ids.sort();
    Ok(ids)
}

/// How many clones stand behind `image` (Cinder's `_get_clone_depth`).
pub(super) fn clone_depth(io: &Io<'_>, image: &str) -> Result<u32, CephError> {
    let (_, ancestors) = access::image_chain(io, image)?;
    Ok(ancestors.len() as u32)
}

/// Creates `child` as a clone of `parent@snapshot`, grown to `size` bytes, and flattened
/// when `flatten` or when its chain would pass `max_depth`. Whether it was flattened.
pub(super) fn clone_to(
    io: &Io<'_>,
    parent: &str,
    snapshot: &str,
    child: &str,
    size: u64,
    flatten: bool,
    max_depth: u32,
) -> Result<bool, CephError> {
    let depth = clone_depth(io, parent)?;
    io.clone_image(parent, snapshot, io, child, IMAGE_FEATURES)?;
    let made = (|| {
        let image = io.open(child, None, false)?;
        if image.size()? < size {
            image.resize(size)?;
        }
        let flattened = flatten || depth + 1 > max_depth;
        if flattened {
            image.flatten()?;
        }
        Ok(flattened)
    })();
    if made.is_err() {
        // Nothing half-made is left behind.
        let _ = io.remove_image(child);
    }
    made
}

/// Removes `image`'s own snapshot `snapshot`, unprotecting it first; `EBUSY` while it
/// still has clones.
pub(super) fn remove_snapshot(io: &Io<'_>, image: &str, snapshot: &str) -> Result<(), CephError> {
    let opened = match io.open(image, None, false) {
        Err(e) if e.errno == ceph::ENOENT => return Ok(()),
        other => other?,
    };
    if !opened.snapshots()?.iter().any(|s| s == snapshot) {
        return Ok(());
    }
    match opened.snap_unprotect(snapshot) {
        // Never protected (EINVAL), or protected no more.
        Err(e) if e.errno != 22 => return Err(e),
        _ => {}
    }
    opened.snap_remove(snapshot)
}

/// Deletes `image` (Cinder's order): refused while it has snapshots that clones need,
/// its own `.clone_snap` snapshots removed when nothing hangs off them, and the snapshot
/// it was cloned from (when it was a clone of a volume) removed after it.
pub(super) fn delete_image(io: &Io<'_>, image: &str) -> Result<(), CephError> {
    let opened = match io.open(image, None, false) {
        Err(e) if e.errno == ceph::ENOENT => return Ok(()),
        other => other?,
    };
    let parent = opened.parent()?;
    for snapshot in opened.snapshots()? {
        if !snapshot.ends_with(CLONE_SNAP_SUFFIX) {
            return Err(CephError {
                errno: ceph::EBUSY,
                what: format!("image {image} has snapshot {snapshot}"),
                status: String::new(),
            });
        }
        match opened.snap_unprotect(&snapshot) {
            Err(e) if e.errno != 22 => return Err(e),
            _ => opened.snap_remove(&snapshot)?,
        }
    }
    drop(opened);
    match io.remove_image(image) {
        Err(e) if e.errno == ceph::ENOENT => {}
        other => other?,
    }
    if let Some(parent) = parent.filter(|p| p.snapshot.ends_with(CLONE_SNAP_SUFFIX)) {
        match remove_snapshot(io, &parent.image, &parent.snapshot) {
            // Another clone of the same snapshot still needs it.
            Err(e) if e.errno == ceph::EBUSY => {}
            other => other?,
        }
    }
    Ok(())
}

/// Fills image `name` from `data` (blocks of zeros skipped: a new image reads zeros);
/// returns how many bytes came. Runs on a blocking thread.
pub(super) fn write_from(
    io: &Io<'_>,
    name: &str,
    data: crate::backend::DataIn,
) -> Result<u64, CephError> {
    let image = io.open(name, None, false)?;
    let capacity = image.size()?;
    let mut blocks = crate::backend::data::Blocks::new(data);
    let mut offset = 0u64;
    while let Some(block) = blocks.blocking_next() {
        let end = offset + block.len() as u64;
        if end > capacity {
            return Err(CephError {
                errno: ceph::EFBIG,
                what: format!("the image holds more than the volume's {capacity} bytes"),
                status: String::new(),
            });
        }
        if !crate::backend::data::is_zero(&block) {
            image.write(offset, &block)?;
        }
        offset = end;
    }
    image.flush()?;
    Ok(offset)
}

/// Sends image `name`'s whole data into `sink`, block by block. Runs on a blocking thread.
pub(super) fn read_into(
    io: &Io<'_>,
    name: &str,
    sink: crate::backend::DataOut,
) -> Result<(), CephError> {
    let image = io.open(name, None, true)?;
    let size = image.size()?;
    let mut offset = 0u64;
    while offset < size {
        let len = (size - offset).min(crate::backend::data::BLOCK as u64) as usize;
        let block = image.read(offset, len)?;
        if block.is_empty() {
            break;
        }
        offset += block.len() as u64;
        if sink.blocking_send(Ok(block.into())).is_err() {
            return Err(CephError {
                errno: ceph::EPIPE,
                what: "the reader of the volume's data went away".to_owned(),
                status: String::new(),
            });
        }
    }
    Ok(())
}
