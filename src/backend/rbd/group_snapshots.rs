//! Consistent group snapshots on Ceph: the members' images go into an rbd group for a
//! moment, librbd snapshots the group (holding the images' writes while it does, so no
//! write lands in one member's snapshot and not another's), and each member's part is
//! copied into an image of its own with the usual `snapshot-<id>` on it. Ceph 16 clones
//! only from snapshots in the user namespace, and a group snapshot's are not, hence the
//! copy; the group and its snapshot then go. Volumes made from such a snapshot clone
//! the copy.

use super::ceph::{self, CephError, Io};
use super::images::remove_snapshot;
use super::names::{image_name, member_image, snapshot_name};
use crate::domain::ids::{SnapshotId, VolumeId};

/// Removes a snapshot's data: the snapshot on the volume's image, or a group snapshot
/// member's own image (copy) with its snapshot.
pub(super) fn remove_snapshot_data(
    io: &Io<'_>,
    volume: VolumeId,
    snapshot: SnapshotId,
) -> Result<(), CephError> {
    let name = snapshot_name(snapshot);
    remove_snapshot(io, &image_name(volume), &name)?;
    let copy = member_image(volume, snapshot);
    remove_snapshot(io, &copy, &name)?;
    match io.remove_image(&copy) {
        Err(e) if e.errno == ceph::ENOENT => Ok(()),
        other => other,
    }
}

/// Snapshots every `(volume, snapshot)` at one point in time. On failure nothing of it
/// is left: copies, the group snapshot and the group are removed.
pub(super) fn snapshot_together(
    io: &Io<'_>,
    members: &[(VolumeId, SnapshotId)],
) -> Result<(), CephError> {
    let Some((_, first)) = members.first() else {
        return Ok(());
    };
    let group = format!("cinder-attach-{first}");
    const POINT: &str = "point";
    io.create_group(&group)?;
    let mut added = Vec::new();
    let mut made = Vec::new();
    let mut result = (|| {
        for (volume, _) in members {
            io.group_image(&group, &image_name(*volume), true)?;
            added.push(image_name(*volume));
        }
        io.group_snapshot(&group, POINT, true)?;
        for (volume, snapshot) in members {
            copy_member(io, *volume, *snapshot)?;
            made.push(member_image(*volume, *snapshot));
        }
        Ok(())
    })();
    let _ = io.group_snapshot(&group, POINT, false);
    for image in &added {
        let _ = io.group_image(&group, image, false);
    }
    if let Err(e) = io.remove_group(&group) {
        result = result.and(Err(e));
    }
    if result.is_err() {
        for ((_, snapshot), image) in members.iter().zip(&made) {
            let _ = remove_snapshot(io, image, &snapshot_name(*snapshot));
            let _ = io.remove_image(image);
        }
    }
    result
}

/// Copies a member's part of the group snapshot into its own image and marks it with
/// the member's snapshot. librbd names the part `.group.<pool>_<group id>_<snap id>`;
/// an image is in one group at a time and the group's snapshot goes once copied, so the
/// image has exactly one such part now.
fn copy_member(io: &Io<'_>, volume: VolumeId, snapshot: SnapshotId) -> Result<(), CephError> {
    let image = io.open(&image_name(volume), None, true)?;
    let parts: Vec<u64> = image
        .snapshot_entries()?
        .into_iter()
        .filter(|(_, name)| name.starts_with(".group."))
        .map(|(id, _)| id)
        .collect();
    let [part] = parts.as_slice() else {
        return Err(CephError {
            errno: ceph::EBUSY,
            what: format!(
                "{} has {} group snapshot parts",
                image_name(volume),
                parts.len()
            ),
            status: String::new(),
        });
    };
    image.read_snapshot_id(*part)?;
    finish_copy(io, &image, volume, snapshot)
}

fn finish_copy(
    io: &Io<'_>,
    image: &ceph::Image,
    volume: VolumeId,
    snapshot: SnapshotId,
) -> Result<(), CephError> {
    let copy = member_image(volume, snapshot);
    image.copy_to(io, &copy)?;
    let opened = io.open(&copy, None, false)?;
    let name = snapshot_name(snapshot);
    opened.snap_create(&name)?;
    opened.snap_protect(&name)
}
