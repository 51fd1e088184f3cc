//! The images, as Cinder's RBD driver keeps them: names, clones (flattened past the
//! clone depth) and the order in which snapshots and images are removed.

use super::ceph::{self, features, CephError, Cluster, Io};
pub(super) use super::names::{image_name, snapshot_name};
use super::names::{is_backup_snapshot, member_image};
use crate::domain::ids::{SnapshotId, VolumeId};

/// Images are made with layering (clones) and deep-flatten, without exclusive-lock and
/// the features that need it (object-map, fast-diff, journaling): two writers of a
/// multi-attached volume would hand the lock back and forth on every write (about ten
/// times slower), and whether a volume is multi-attached can change by retype.
pub(super) const IMAGE_FEATURES: u64 = features::LAYERING | features::DEEP_FLATTEN;

/// The snapshot a clone of a volume hangs off (Cinder's name for it).
pub(super) const CLONE_SNAP_SUFFIX: &str = ".clone_snap";

/// The image a snapshot's data hangs off: its own copy for a member of a group
/// snapshot (`group_snapshots`), else the volume's image.
pub(super) fn snapshot_parent(
    io: &Io<'_>,
    volume: VolumeId,
    snapshot: SnapshotId,
) -> Result<String, CephError> {
    let copy = member_image(volume, snapshot);
    match io.open(&copy, None, true) {
        Ok(_) => Ok(copy),
        Err(e) if e.errno == ceph::ENOENT => Ok(image_name(volume)),
        Err(e) => Err(e),
    }
}

/// The volumes whose images (`volume-<id>`) the pool holds.
pub(super) fn volume_ids(io: &Io<'_>) -> Result<Vec<VolumeId>, CephError> {
    Ok(io
        .list_images()?
        .iter()
        .filter_map(|name| name.strip_prefix("volume-"))
        .filter_map(|id| uuid::Uuid::parse_str(id).ok())
        .map(VolumeId::from)
        .collect())
}

/// Volume image `child` of `size` bytes holding `source`'s data: a clone of the snapshot
/// (flattened when `options.0`), or of a snapshot taken of the source volume for it;
/// clones deeper than `options.1` are flattened.
pub(super) fn create_from(
    io: &Io<'_>,
    source: crate::backend::DataSource,
    child: &str,
    size: u64,
    options: (bool, u32),
) -> Result<(), CephError> {
    use crate::backend::DataSource;
    let (flatten_snapshots, max_depth) = options;
    match source {
        DataSource::Snapshot(snapshot, volume) => clone_to(
            io,
            &snapshot_parent(io, volume, snapshot)?,
            &snapshot_name(snapshot),
            child,
            size,
            flatten_snapshots,
            max_depth,
        )
        .map(drop),
        DataSource::Volume(source) => {
            let parent = image_name(source);
            let snapshot = format!("{child}{CLONE_SNAP_SUFFIX}");
            let opened = io.open(&parent, None, false)?;
            opened.snap_create(&snapshot)?;
            opened.snap_protect(&snapshot)?;
            drop(opened);
            let made = clone_to(io, &parent, &snapshot, child, size, false, max_depth);
            // A flattened clone (or none) needs the snapshot no more.
            if !matches!(made, Ok(false)) {
                let _ = remove_snapshot(io, &parent, &snapshot);
            }
            made.map(drop)
        }
    }
}

/// The size of image `name`; `None` when there is none.
pub(super) fn size_of(io: &Io<'_>, name: &str) -> Result<Option<u64>, CephError> {
    match io.open(name, None, true) {
        Ok(image) => image.size().map(Some),
        Err(e) if e.errno == ceph::ENOENT => Ok(None),
        Err(e) => Err(e),
    }
}

/// Image `name` becomes volume `volume`'s image, grown to `size` bytes (manage).
pub(super) fn take_as(
    io: &Io<'_>,
    name: &str,
    volume: VolumeId,
    size: u64,
) -> Result<(), CephError> {
    let to = image_name(volume);
    io.rename_image(name, &to)?;
    let image = io.open(&to, None, false)?;
    if image.size()? < size {
        image.resize(size)?;
    }
    Ok(())
}

/// Volume `volume`'s image is renamed `unmanaged-volume-<id>` (unmanage); none is fine.
pub(super) fn let_go(io: &Io<'_>, volume: VolumeId) -> Result<(), CephError> {
    let to = crate::backend::manage::unmanaged_name(volume);
    match io.rename_image(&image_name(volume), &to) {
        Err(e) if e.errno == ceph::ENOENT => Ok(()),
        other => other,
    }
}

/// The images of the pool that are not the service's own (`volume-<id>` are listed: the
/// service tells which ids are its volumes).
pub(super) fn manageable(io: &Io<'_>) -> Result<Vec<crate::backend::Manageable>, CephError> {
    let mut found = Vec::new();
    for name in io.list_images()? {
        if crate::backend::manage::is_own(&name) {
            continue;
        }
        match io.open(&name, None, true) {
            Ok(image) => found.push(crate::backend::Manageable {
                size_bytes: image.size()?,
                name,
            }),
            Err(e) if e.errno == ceph::ENOENT => continue,
            Err(e) => return Err(e),
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// The snapshots of the volume images that are not the service's work (clone and group
/// snapshots): `snapshot-<id>` are listed, the service tells which are its snapshots.
pub(super) fn manageable_snapshots(
    io: &Io<'_>,
) -> Result<Vec<crate::backend::ManageableSnapshot>, CephError> {
    let mut found = Vec::new();
    for image in io.list_images()? {
        if !image.starts_with("volume-") {
            continue;
        }
        let opened = match io.open(&image, None, true) {
            Err(e) if e.errno == ceph::ENOENT => continue,
            other => other?,
        };
        let listed = match opened.snapshot_list() {
            // Removed since it was opened.
            Err(e) if e.errno == ceph::ENOENT => continue,
            other => other?,
        };
        for (_, name, size_bytes) in listed {
            if name.starts_with("snapshot-") || !crate::backend::manage::is_own(&name) {
                found.push(crate::backend::ManageableSnapshot {
                    name,
                    size_bytes,
                    volume_name: image.clone(),
                });
            }
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// The size of snapshot `name` of volume `volume`'s image; `None` without either.
pub(super) fn snapshot_size_of(
    io: &Io<'_>,
    volume: VolumeId,
    name: &str,
) -> Result<Option<u64>, CephError> {
    match io.open(&image_name(volume), None, true) {
        Ok(image) => image.snapshot_size(name),
        Err(e) if e.errno == ceph::ENOENT => Ok(None),
        Err(e) => Err(e),
    }
}

/// Snapshot `name` of volume `volume`'s image becomes snapshot `snapshot`: renamed and
/// protected, as the service's own snapshots are (clones hang off them).
pub(super) fn take_snapshot_as(
    io: &Io<'_>,
    volume: VolumeId,
    name: &str,
    snapshot: SnapshotId,
) -> Result<(), CephError> {
    let image = io.open(&image_name(volume), None, false)?;
    let to = snapshot_name(snapshot);
    image.snap_rename(name, &to)?;
    match image.snap_protect(&to) {
        Err(e) if e.errno == ceph::EBUSY => Ok(()), // protected already
        other => other,
    }
}

/// Snapshot `snapshot` is renamed `unmanaged-snapshot-<id>` and unprotected unless clones
/// hang off it (Cinder's RBD driver unprotects it too); none is fine.
pub(super) fn let_snapshot_go(
    io: &Io<'_>,
    volume: VolumeId,
    snapshot: SnapshotId,
) -> Result<(), CephError> {
    let image = match io.open(&image_name(volume), None, false) {
        Err(e) if e.errno == ceph::ENOENT => return Ok(()),
        other => other?,
    };
    let to = crate::backend::manage::unmanaged_snapshot_name(snapshot);
    match image.snap_rename(&snapshot_name(snapshot), &to) {
        Err(e) if e.errno == ceph::ENOENT => return Ok(()),
        other => other?,
    }
    match image.snap_unprotect(&to) {
        Err(e) if e.errno == ceph::EBUSY || e.errno == ceph::EINVAL_ERRNO => Ok(()),
        other => other,
    }
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
    let mut depth = 0;
    let mut parent = io.open(image, None, true)?.parent()?;
    while let Some(p) = parent {
        depth += 1;
        parent = io.sibling(&p.pool)?.open(&p.image, None, true)?.parent()?;
    }
    Ok(depth)
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
/// its own `.clone_snap` snapshots and the snapshot its last backup kept removed when
/// nothing hangs off them, and the snapshot it was cloned from (when it was a clone of a
/// volume) removed after it.
pub(super) fn delete_image(io: &Io<'_>, image: &str) -> Result<(), CephError> {
    let opened = match io.open(image, None, false) {
        Err(e) if e.errno == ceph::ENOENT => return Ok(()),
        other => other?,
    };
    let parent = opened.parent()?;
    for snapshot in opened.snapshots()? {
        let own = snapshot.ends_with(CLONE_SNAP_SUFFIX) || is_backup_snapshot(&snapshot);
        if !own {
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
    zeros: crate::backend::data::ZeroBlocks,
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
        let clear = zeros == crate::backend::data::ZeroBlocks::Clear;
        if clear || !crate::backend::data::is_zero(&block) {
            image.write(offset, &block)?;
        }
        offset = end;
    }
    image.flush()?;
    Ok(offset)
}

/// Sends image `name`'s whole data (at `snapshot`, when given) into `sink`, block by
/// block. Runs on a blocking thread.
pub(super) fn read_into(
    io: &Io<'_>,
    name: &str,
    snapshot: Option<&str>,
    sink: crate::backend::DataOut,
) -> Result<(), CephError> {
    let image = io.open(name, snapshot, true)?;
    send_ranges(&image, &[(0, image.size()?)], &sink)
}

/// Sends the bytes of `image` in `ranges` (`(offset, length)`, in order) into `sink`, a
/// block at a time; a read that comes back short is an error.
pub(super) fn send_ranges(
    image: &ceph::Image,
    ranges: &[(u64, u64)],
    sink: &crate::backend::DataOut,
) -> Result<(), CephError> {
    for &(start, length) in ranges {
        let mut offset = start;
        while offset < start + length {
            let len = (start + length - offset).min(crate::backend::data::BLOCK as u64) as usize;
            let block = image.read(offset, len)?;
            if block.len() != len {
                return Err(CephError {
                    errno: ceph::EIO,
                    what: format!("an image gave {} bytes at {offset}, not {len}", block.len()),
                    status: String::new(),
                });
            }
            offset += len as u64;
            if sink.blocking_send(Ok(block.into())).is_err() {
                return Err(CephError {
                    errno: ceph::EPIPE,
                    what: "the reader of the volume's data went away".to_owned(),
                    status: String::new(),
                });
            }
        }
    }
    Ok(())
}

/// Where Glance's rbd store keeps an image: `rbd://<fsid>/<pool>/<image>/<snapshot>`,
/// each part percent-encoded (what Cinder's `_parse_location` takes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StoredImage {
    pub fsid: String,
    pub pool: String,
    pub image: String,
    pub snapshot: String,
}

impl StoredImage {
    pub(super) fn parse(url: &str) -> Option<StoredImage> {
        let parts: Vec<String> = url
            .strip_prefix("rbd://")?
            .split('/')
            .map(|p| {
                percent_encoding::percent_decode_str(p)
                    .decode_utf8_lossy()
                    .into_owned()
            })
            .collect();
        match <[String; 4]>::try_from(parts) {
            Ok([fsid, pool, image, snapshot])
                if ![&fsid, &pool, &image, &snapshot]
                    .iter()
                    .any(|p| p.is_empty()) =>
            {
                Some(StoredImage {
                    fsid,
                    pool,
                    image,
                    snapshot,
                })
            }
            _ => None,
        }
    }
}

/// Makes `child` (in `pool`, `size` bytes at least) a copy-on-write clone of the first
/// of `stored` that is in this cluster and readable here; `Ok(false)`: none is.
pub(super) fn clone_from_glance(
    cluster: &Cluster,
    pool: &str,
    child: &str,
    stored: &[StoredImage],
    size: u64,
) -> Result<bool, CephError> {
    let (out, _) = cluster.mon_command(
        &serde_json::json!({"prefix": "fsid", "format": "json"}),
        None,
    )?;
    let fsid = super::cluster_info::fsid(&out);
    let io = cluster.io(pool, None)?;
    for place in stored {
        if clone_stored_image(&io, &fsid, place, child, size)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Makes `child` (in `io`, `size` bytes at least) a copy-on-write clone of `stored`
/// when it is in this cluster (`fsid`) and readable here, as Cinder's RBD driver does
/// (`_is_cloneable`, then `_clone` and `_resize`). `Ok(false)`: it is not, copy instead.
fn clone_stored_image(
    io: &Io<'_>,
    fsid: &str,
    stored: &StoredImage,
    child: &str,
    size: u64,
) -> Result<bool, CephError> {
    if stored.fsid != fsid {
        tracing::debug!(image = %stored.image, fsid = %stored.fsid, "the image is in another Ceph cluster");
        return Ok(false);
    }
    let source = match io.sibling(&stored.pool).and_then(|source| {
        source.open(&stored.image, Some(&stored.snapshot), true)?;
        Ok(source)
    }) {
        Ok(source) => source,
        Err(e) => {
            tracing::debug!(image = %stored.image, pool = %stored.pool, error = %e, "the image cannot be opened here");
            return Ok(false);
        }
    };
    source.clone_image(&stored.image, &stored.snapshot, io, child, IMAGE_FEATURES)?;
    let grown = (|| {
        let image = io.open(child, None, false)?;
        if image.size()? < size {
            image.resize(size)?;
        }
        Ok(true)
    })();
    if grown.is_err() {
        // Nothing half-made is left behind.
        let _ = io.remove_image(child);
    }
    grown
}

#[cfg(test)]
mod tests {
    use super::StoredImage;

    #[test]
    fn glance_locations_parse_as_cinder_reads_them() {
        let parsed = StoredImage::parse("rbd://f5a4/images/5d0e%2D8c29/snap").unwrap();
        assert_eq!(
            parsed,
            StoredImage {
                fsid: "f5a4".into(),
                pool: "images".into(),
                image: "5d0e-8c29".into(),
                snapshot: "snap".into(),
            }
        );
        for refused in [
            "file:///var/lib/glance/images/5d0e",
            "rbd://f5a4/images/5d0e",
            "rbd://f5a4/images//snap",
            "rbd://f5a4/images/5d0e/snap/more",
        ] {
            assert_eq!(StoredImage::parse(refused), None, "{refused}");
        }
    }
}
