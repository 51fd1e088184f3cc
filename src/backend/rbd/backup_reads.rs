//! Reading a volume for a backup as Cinder's RBD driver gives it to its Ceph backup
//! driver: the image is snapshotted first (`backup.<backup id>.snap.<time>`), the backup
//! reads that snapshot (one point in time, even while a host writes), and the snapshot
//! stays until the next backup of the volume is stored, so that one reads only the
//! chunks that changed since (`rbd export-diff --from-snap`). Only the newest such
//! snapshot is kept; a volume's deletion removes it (`images::delete_image`).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::ceph::{self, CephError, Io};
use super::images::send_ranges;
use super::names::{image_name, is_backup_snapshot};
use crate::backend::{ChangedChunks, DataOut};
use crate::domain::ids::{BackupId, VolumeId};

fn prefix_of(backup: BackupId) -> String {
    format!("backup.{backup}.snap.")
}

/// The snapshot kept for `backup` on `image`, if any.
fn kept_for(image: &ceph::Image, backup: BackupId) -> Result<Option<String>, CephError> {
    let prefix = prefix_of(backup);
    Ok(image
        .snapshots()?
        .into_iter()
        .find(|s| s.starts_with(&prefix)))
}

/// Snapshots the volume's image for `backup`; the chunks changed since the snapshot kept
/// for `since`, when there is one.
pub(super) fn begin(
    io: &Io<'_>,
    volume: VolumeId,
    backup: BackupId,
    since: Option<BackupId>,
    chunk: u64,
) -> Result<Option<ChangedChunks>, CephError> {
    let name = image_name(volume);
    let image = io.open(&name, None, false)?;
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let snapshot = format!("{}{seconds:.6}", prefix_of(backup));
    image.snap_create(&snapshot)?;
    let Some(since) = since else { return Ok(None) };
    let changed = (|| {
        let Some(base) = kept_for(&image, since)? else {
            return Ok(None);
        };
        let at = io.open(&name, Some(&snapshot), true)?;
        let extents = at.changed_since(&base)?;
        Ok(Some(ChangedChunks::from_extents(
            chunk,
            at.size()?,
            &extents,
        )))
    })();
    if changed.is_err() {
        // Nothing is left behind for a backup that could not start.
        let _ = image.snap_remove(&snapshot);
    }
    changed
}

/// Sends the snapshot kept for `backup` into `sink`: all of it, or the `changed` chunks.
pub(super) fn read(
    io: &Io<'_>,
    volume: VolumeId,
    backup: BackupId,
    changed: Option<Arc<ChangedChunks>>,
    sink: DataOut,
) -> Result<(), CephError> {
    let name = image_name(volume);
    let snapshot = kept_for(&io.open(&name, None, true)?, backup)?.ok_or_else(|| CephError {
        errno: ceph::ENOENT,
        what: format!("the snapshot of {name} for backup {backup} is gone"),
        status: String::new(),
    })?;
    let image = io.open(&name, Some(&snapshot), true)?;
    let ranges = match changed {
        Some(changed) => changed.ranges(),
        None => vec![(0, image.size()?)],
    };
    send_ranges(&image, &ranges, &sink)
}

/// Keeps only the snapshot of the newest stored backup: `backup`'s when it was `stored`
/// (the others go), else the others (`backup`'s goes).
pub(super) fn end(
    io: &Io<'_>,
    volume: VolumeId,
    backup: BackupId,
    stored: bool,
) -> Result<(), CephError> {
    let image = match io.open(&image_name(volume), None, false) {
        Err(e) if e.errno == ceph::ENOENT => return Ok(()),
        other => other?,
    };
    let own = prefix_of(backup);
    for snapshot in image.snapshots()? {
        if is_backup_snapshot(&snapshot) && snapshot.starts_with(&own) != stored {
            image.snap_remove(&snapshot)?;
        }
    }
    Ok(())
}
