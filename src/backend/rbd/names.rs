//! What the backend names things in the pool, as Cinder's RBD driver does: a volume's
//! image, a snapshot, a group snapshot member's own image and a backup's snapshot. A
//! leaf: every other module of the backend may use it.

use crate::domain::ids::{SnapshotId, VolumeId};

pub(super) fn image_name(volume: VolumeId) -> String {
    format!("volume-{volume}")
}

pub(super) fn snapshot_name(snapshot: SnapshotId) -> String {
    format!("snapshot-{snapshot}")
}

/// The image holding a member's part of a group snapshot.
pub(super) fn member_image(volume: VolumeId, snapshot: SnapshotId) -> String {
    format!("{}.gsnap-{snapshot}", image_name(volume))
}

/// Whether `snapshot` is one a backup keeps of its volume (Cinder's name for it too).
pub(super) fn is_backup_snapshot(snapshot: &str) -> bool {
    snapshot.starts_with("backup.") && snapshot.contains(".snap.")
}
