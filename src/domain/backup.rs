//! Backups (`/backups`): a volume's (or a snapshot's) data kept apart from its backend,
//! full or incremental, and Cinder's rules for them (`backup/api.py`): what may be backed
//! up, which backup an incremental one builds on, when a backup may be restored, deleted
//! or have its status reset.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::ids::{BackupId, SnapshotId, VolumeId};
use super::snapshot::SnapshotStatus;
use super::string_enum::string_enum;
use super::volume::VolumeStatus;

string_enum! {
    /// `backups.status` (Cinder's `BackupStatus`).
    BackupStatus {
        Error => "error",
        ErrorDeleting => "error_deleting",
        Creating => "creating",
        Available => "available",
        Deleting => "deleting",
        Deleted => "deleted",
        Restoring => "restoring",
    }
}

/// What `export_record` names as the service that holds the data; `import_record`
/// takes records of this service only. Cinder's tempest checks the prefix.
pub const POSIX_SERVICE: &str = "cinder.backup.drivers.posix.PosixBackupDriver";

/// The same for a repository on a Ceph pool (Cinder's `ceph` driver).
pub const CEPH_SERVICE: &str = "cinder.backup.drivers.ceph.CephBackupDriver";

/// Whether the configured repository `driver` can read a backup recorded as made by
/// `service` (Cinder's `_is_our_backup`): a record naming none is anyone's, and an older
/// name (the module path) names the same driver.
pub fn is_our_backup(driver: &str, service: Option<&str>) -> bool {
    service.is_none_or(|service| driver.starts_with(service))
}

/// Cinder's refusal of `action` ("Restore backup", ...) on a backup another driver made.
pub fn not_our_backup(action: &str, driver: &str, service: Option<&str>) -> String {
    format!(
        "{action} aborted, the backup service currently configured [{driver}] is not the \
         backup service that was used to create this backup [{}].",
        service.unwrap_or_default()
    )
}

/// The volume id of a backup record being imported, until its record is read (Cinder's
/// `IMPORT_VOLUME_ID`).
pub const IMPORT_VOLUME_ID: &str = "00000000-0000-0000-0000-000000000000";

#[derive(Debug, Clone, PartialEq)]
pub struct Backup {
    pub id: BackupId,
    pub volume_id: VolumeId,
    pub snapshot_id: Option<SnapshotId>,
    pub user_id: Option<String>,
    pub project_id: String,
    /// The host of the backup service that holds it.
    pub host: Option<String>,
    pub availability_zone: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    /// The directory of the repository its objects are in.
    pub container: Option<String>,
    pub status: BackupStatus,
    pub fail_reason: Option<String>,
    /// The name its objects start with in its container.
    pub service_metadata: Option<String>,
    pub service: Option<String>,
    /// The size of the backed-up volume, GiB.
    pub size: i64,
    pub object_count: i64,
    pub parent_id: Option<BackupId>,
    pub num_dependent_backups: i64,
    /// When the data was the volume's: the backup's creation, or its snapshot's.
    pub data_timestamp: Option<DateTime<Utc>>,
    pub restore_volume_id: Option<VolumeId>,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
    pub metadata: BTreeMap<String, String>,
    /// A backup of an encrypted volume: its own copy of the volume's key.
    pub encryption_key_id: Option<String>,
}

impl Backup {
    pub fn is_incremental(&self) -> bool {
        self.parent_id.is_some()
    }

    pub fn has_dependent_backups(&self) -> bool {
        self.num_dependent_backups > 0
    }
}

/// What a restore gives the volume besides its data (Cinder keeps it as the backup's
/// metadata object): kept in the backup when it is written.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VolumeRecord {
    pub name: Option<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub image_metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub bootable: bool,
    /// The backed-up volume's type: a restore of an encrypted backup needs a volume of
    /// the same type (Cinder keeps it in the backup's metadata as `volume_type_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_type_id: Option<String>,
}

/// Whether a restore gives the volume the backed-up volume's name and description, as
/// Cinder does: only to a volume the restore made (or one with no name).
pub fn restore_renames(target_name: Option<&str>, record: &VolumeRecord) -> bool {
    let named = record.name.as_deref().is_some_and(|n| !n.is_empty());
    named && target_name.is_none_or(|n| n.is_empty() || n.starts_with("restore_backup_"))
}

/// A backup about to be recorded `creating`.
#[derive(Debug, Clone)]
pub struct NewBackup {
    pub id: BackupId,
    pub volume_id: VolumeId,
    pub snapshot_id: Option<SnapshotId>,
    pub user_id: String,
    pub project_id: String,
    pub host: String,
    pub availability_zone: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub container: String,
    /// The repository's driver (`backup.service`).
    pub service: &'static str,
    pub incremental: bool,
    pub force: bool,
    pub metadata: BTreeMap<String, String>,
    /// The copy of an encrypted volume's key the backup keeps.
    pub encryption_key_id: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// What a backup listing may filter on.
#[derive(Debug, Clone, Default)]
pub struct BackupFilters {
    /// `None`: every project's (an admin's `all_tenants`).
    pub project_id: Option<String>,
    pub name: Option<String>,
    pub status: Option<BackupStatus>,
    pub volume_id: Option<VolumeId>,
    pub parent_id: Option<BackupId>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackupSortKey {
    Id,
    Name,
    Status,
    Size,
    VolumeId,
    ProjectId,
    CreatedAt,
    UpdatedAt,
}

impl BackupSortKey {
    pub fn parse(key: &str) -> Option<Self> {
        Some(match key {
            "id" => BackupSortKey::Id,
            "name" | "display_name" => BackupSortKey::Name,
            "status" => BackupSortKey::Status,
            "size" => BackupSortKey::Size,
            "volume_id" => BackupSortKey::VolumeId,
            "project_id" => BackupSortKey::ProjectId,
            "created_at" => BackupSortKey::CreatedAt,
            "updated_at" => BackupSortKey::UpdatedAt,
            _ => return None,
        })
    }
}

/// Why a backup is not started, in Cinder's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateRefusal {
    /// `InvalidVolume`: not `available` or `in-use`.
    VolumeStatus(VolumeStatus),
    /// `InvalidVolume`: `in-use` without `force`.
    InUseWithoutForce,
    /// `InvalidSnapshot`: the snapshot is not `available`.
    SnapshotStatus(SnapshotStatus),
    /// `InvalidBackup`: incremental, and no `available` backup to build on.
    NoParent,
}

impl CreateRefusal {
    /// The reason as Cinder words it (after its exception's own prefix).
    pub fn reason(&self) -> String {
        match self {
            CreateRefusal::VolumeStatus(status) => format!(
                "Volume to be backed up must be available or in-use, but the current status \
                 is \"{status}\"."
            ),
            CreateRefusal::InUseWithoutForce => {
                "Backing up an in-use volume must use the force flag.".to_owned()
            }
            CreateRefusal::SnapshotStatus(status) => format!(
                "Snapshot to be backed up must be available, but the current status is \
                 \"{status}\"."
            ),
            CreateRefusal::NoParent => "No backups available to do an incremental backup.".into(),
        }
    }
}

/// Whether the volume (or, for a backup of a snapshot, the snapshot) may be backed up.
pub fn check_source(
    volume: VolumeStatus,
    snapshot: Option<SnapshotStatus>,
    force: bool,
) -> Result<(), CreateRefusal> {
    if let Some(status) = snapshot {
        return match status {
            SnapshotStatus::Available => Ok(()),
            other => Err(CreateRefusal::SnapshotStatus(other)),
        };
    }
    match volume {
        VolumeStatus::Available => Ok(()),
        VolumeStatus::InUse if force => Ok(()),
        VolumeStatus::InUse => Err(CreateRefusal::InUseWithoutForce),
        other => Err(CreateRefusal::VolumeStatus(other)),
    }
}

/// A backup of the volume an incremental one may build on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentCandidate {
    pub id: BackupId,
    pub status: BackupStatus,
    pub data_timestamp: Option<DateTime<Utc>>,
    /// The driver that made it: an incremental backup builds only on one it can read.
    pub service: Option<String>,
}

/// Cinder's choice of parent: the `available` backup whose data is newest; for a backup
/// of a snapshot, only backups whose data is older than the snapshot. Only backups the
/// configured `driver` made count (Cinder would pick another driver's and fail writing).
/// `None` when there is none (Cinder then refuses the incremental backup).
pub fn choose_parent(
    candidates: &[ParentCandidate],
    snapshot_taken: Option<DateTime<Utc>>,
    driver: &str,
) -> Option<BackupId> {
    candidates
        .iter()
        .filter(|c| c.status == BackupStatus::Available)
        .filter(|c| is_our_backup(driver, c.service.as_deref()))
        .filter_map(|c| c.data_timestamp.map(|at| (at, c.id)))
        .filter(|(at, _)| snapshot_taken.is_none_or(|taken| *at < taken))
        .max_by_key(|(at, _)| *at)
        .map(|(_, id)| id)
}

/// Why a backup is not deleted (`InvalidBackup`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteRefusal {
    Status,
    HasIncrementals,
}

impl DeleteRefusal {
    pub fn reason(self) -> &'static str {
        match self {
            DeleteRefusal::Status => "Backup status must be available or error",
            DeleteRefusal::HasIncrementals => "Incremental backups exist for this backup.",
        }
    }
}

/// Cinder deletes an `available` or `error` backup; `force` (admins) any, but never one
/// that incremental backups build on.
pub fn check_delete(backup: &Backup, force: bool) -> Result<(), DeleteRefusal> {
    let deletable = matches!(backup.status, BackupStatus::Available | BackupStatus::Error);
    if !force && !deletable {
        return Err(DeleteRefusal::Status);
    }
    if backup.has_dependent_backups() {
        return Err(DeleteRefusal::HasIncrementals);
    }
    Ok(())
}

/// Why a restore is refused, in Cinder's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreRefusal {
    /// `InvalidBackup`.
    BackupStatus,
    /// `InvalidVolume`: the target is not `available`.
    VolumeStatus,
    /// `InvalidVolume`: the target is smaller than the backup.
    TooSmall { volume_size: i64, size: i64 },
}

impl RestoreRefusal {
    pub fn reason(&self) -> String {
        match self {
            RestoreRefusal::BackupStatus => "Backup status must be available".to_owned(),
            RestoreRefusal::VolumeStatus => "Volume to be restored to must be available".to_owned(),
            RestoreRefusal::TooSmall { volume_size, size } => {
                format!("volume size {volume_size} is too small to restore backup of size {size}.")
            }
        }
    }
}

/// Whether `backup` may be restored onto a volume in `status` of `volume_size` GiB.
pub fn check_restore(
    backup: BackupStatus,
    size: i64,
    volume: VolumeStatus,
    volume_size: i64,
) -> Result<(), RestoreRefusal> {
    if backup != BackupStatus::Available {
        return Err(RestoreRefusal::BackupStatus);
    }
    if volume != VolumeStatus::Available {
        return Err(RestoreRefusal::VolumeStatus);
    }
    if size > volume_size {
        return Err(RestoreRefusal::TooSmall { volume_size, size });
    }
    Ok(())
}

/// The name of a volume a restore makes when none is given.
pub fn restore_volume_name(backup: BackupId) -> String {
    format!("restore_backup_{backup}")
}

/// The description of a volume a restore makes.
pub const RESTORE_VOLUME_DESCRIPTION: &str = "auto-created_from_restore_from_backup";

/// Cinder's `backup_status` format check of `os-reset_status`: `available` or `error`.
pub fn reset_status_of(text: &str) -> Result<BackupStatus, String> {
    match text.to_lowercase().as_str() {
        "available" => Ok(BackupStatus::Available),
        "error" => Ok(BackupStatus::Error),
        _ => Err(format!(
            "Backup status: {text} is invalid, valid statuses are: ['available', 'error']."
        )),
    }
}

/// The directory a backup's objects go in when the request names none, as Cinder's
/// posix driver makes it: the volume id's first two pairs of characters, then the id.
pub fn default_container(volume: VolumeId) -> String {
    let id = volume.to_string();
    format!("{}/{}/{}", &id[0..2], &id[2..4], id)
}

/// A container named in a request: a relative path of plain names, so it stays inside
/// the repository.
pub fn check_container(container: &str) -> Result<(), String> {
    let plain = |part: &str| {
        !part.is_empty()
            && part != "."
            && part != ".."
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    if container.split('/').all(plain) {
        Ok(())
    } else {
        Err(format!(
            "Invalid container '{container}': use names of letters, digits, '-', '_' and '.', \
             separated by '/'."
        ))
    }
}

/// The name prefix of a backup's objects as an imported record gives it
/// (`service_metadata`): one plain name (our own are `backup-<uuid>`), so that every
/// object it names stays inside its container.
pub fn check_object_prefix(prefix: &str) -> Result<(), String> {
    let plain = !prefix.is_empty()
        && prefix.len() <= 255
        && !prefix.starts_with('.')
        && prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if plain {
        Ok(())
    } else {
        Err(format!(
            "Invalid backup object prefix '{prefix}': use one name of letters, digits, '-', \
             '_' and '.', not starting with '.'."
        ))
    }
}

/// A container named in a request to a Ceph repository: the name of a pool.
pub fn check_pool_container(container: &str) -> Result<(), String> {
    let plain = !container.is_empty()
        && container
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if plain {
        Ok(())
    } else {
        Err(format!(
            "Invalid container '{container}': name a pool of letters, digits, '-', '_' and '.'."
        ))
    }
}

/// Cinder's backup usage payload (`_usage_from_backup`) in `status`.
pub fn usage_payload(backup: &Backup, status: BackupStatus) -> serde_json::Value {
    let time = |t: &Option<DateTime<Utc>>| t.as_ref().map(super::time::format_timestamp);
    serde_json::json!({
        "tenant_id": backup.project_id,
        "user_id": backup.user_id,
        "availability_zone": backup.availability_zone,
        "backup_id": backup.id,
        "host": backup.host,
        "display_name": backup.name,
        "created_at": super::time::format_timestamp(&backup.created_at),
        "status": status.as_str(),
        "volume_id": backup.volume_id,
        "size": backup.size,
        "service_metadata": backup.service_metadata,
        "service": backup.service,
        "fail_reason": backup.fail_reason,
        "parent_id": backup.parent_id,
        "num_dependent_backups": backup.num_dependent_backups,
        "snapshot_id": backup.snapshot_id,
        "data_timestamp": time(&backup.data_timestamp),
    })
}

#[cfg(test)]
mod tests;
