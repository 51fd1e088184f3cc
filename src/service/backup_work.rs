//! The background work of backups: a volume's data read from its backend into the
//! repository, a backup's data written back onto a volume, a deleted backup's data
//! removed, and work a stopped service left half-done ended. Each runs to its end even
//! if the client goes away, and touches its backup while it runs, so that recovery can
//! tell stopped work from running work.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::Service;

/// How long start-up waits for the backup repository's first set-up check.
const FIRST_SETUP_WAIT: Duration = Duration::from_secs(10);
use crate::backend::Backend;
use crate::backup::manifest::CHUNK;
use crate::backup::{Location, Progress, VolumeData, VolumeRecord};
use crate::domain::backup::{Backup, BackupStatus};
use crate::domain::volume::Volume;
use crate::domain::DomainError;
use crate::store::{BackupEnd, RestoreEnd};

const GIB: u64 = 1 << 30;

/// Where a backup's objects are.
pub(super) fn location_of(backup: &Backup) -> Location {
    Location {
        container: backup.container.clone().unwrap_or_default(),
        prefix: backup
            .service_metadata
            .clone()
            .unwrap_or_else(|| format!("backup-{}", backup.id)),
        backup_id: backup.id.to_string(),
        volume_id: backup.volume_id.to_string(),
    }
}

/// The key a restore gives its volume, and the token its keys are made and deleted with
/// (Cinder's restore runs in the caller's context).
#[derive(Debug, Default)]
pub(super) struct RestoreKey {
    /// The volume's own copy of the backup's key; `None` for a backup of a plain volume.
    pub copy: Option<String>,
    pub token: Option<String>,
}

/// What a restore gives back besides the data.
fn record_of(volume: &Volume) -> VolumeRecord {
    VolumeRecord {
        name: volume.name.clone(),
        description: volume.description.clone(),
        metadata: volume.metadata.clone(),
        image_metadata: volume.image_metadata.clone(),
        bootable: volume.bootable,
        volume_type_id: Some(volume.volume_type_id.to_string()),
    }
}

fn log_failure(what: &str, result: Result<(), DomainError>) {
    if let Err(err) = result {
        tracing::error!(error = %err, "{what} could not be recorded");
    }
}

impl Service {
    /// How often running work touches its backup.
    fn touch_every(&self) -> Duration {
        let stale = self
            .settings
            .backups
            .as_ref()
            .map_or(Duration::from_secs(60), |b| b.stale_after);
        (stale / 3).clamp(Duration::from_millis(100), Duration::from_secs(5))
    }

    /// Touches the backup every `touch_every` while work runs (with the backup's
    /// progress in percent of `total` bytes when `percent`), and stops the work if the
    /// backup is deleted meanwhile.
    fn keep_touching(
        &self,
        backup: &Backup,
        progress: Arc<Progress>,
        percent: bool,
    ) -> tokio::task::JoinHandle<()> {
        let (service, id, every) = (self.clone(), backup.id, self.touch_every());
        let total = (backup.size.max(1) as u64) * GIB;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let done = progress.done.load(Ordering::Relaxed);
                let share = percent.then(|| (done.saturating_mul(100) / total).min(100) as u8);
                let now = service.clock.now();
                if let Err(err) = service.store.backup_progress(id, share, now).await {
                    tracing::warn!(backup_id = %id, error = %err, "could not note a backup's progress");
                }
                // Only a backup that is gone or being deleted stops the work; a read that
                // fails (the database away for a moment) does not.
                if let Ok(found) = service.store.get_backup(id).await {
                    if found.is_none_or(|b| b.status == BackupStatus::Deleting) {
                        progress.cancelled.store(true, Ordering::Relaxed);
                    }
                }
            }
        })
    }

    /// Writes a backup recorded `creating` in the background.
    pub(super) fn start_backup_writing(&self, backup: Backup, volume: Volume) {
        let service = self.clone();
        crate::origin::spawn(async move {
            let result = service.write_backup(&backup, &volume).await;
            if let Err(reason) = &result {
                tracing::warn!(backup_id = %backup.id, %reason, "backup failed");
            }
            let now = service.clock.now();
            let object_count = result.map(|w| w.object_count);
            match service
                .store
                .finish_backup(backup.id, object_count, now)
                .await
            {
                Ok(Some(BackupEnd::Deleting)) => {
                    service.remove_backup_data(backup).await;
                }
                Ok(_) => {}
                Err(err) => log_failure("a backup's end", Err(err.into())),
            }
        });
    }

    async fn write_backup(
        &self,
        backup: &Backup,
        volume: &Volume,
    ) -> Result<crate::backup::Written, String> {
        let settings = self.backup_settings().map_err(|e| e.to_string())?;
        let backend = self.backend_of(volume).map_err(|e| e.to_string())?;
        let parent = match backup.parent_id {
            Some(parent) => match self.store.get_backup(parent).await {
                Ok(Some(parent)) => Some(location_of(&parent)),
                _ => return Err(format!("the parent backup {parent} is gone")),
            },
            None => None,
        };
        let (tx, rx) = mpsc::channel(8);
        let driver: Arc<dyn Backend> = backend.driver.clone();
        // The backend knows the volume by its storage id.
        let (volume_id, snapshot_id) = (volume.storage_id(), backup.snapshot_id);
        // A volume (not a snapshot) is read as its backend keeps it for the backup, and
        // only its chunks changed since the parent's when the backend can tell.
        let changed = match snapshot_id {
            Some(_) => None,
            None => driver
                .begin_backup_read(volume_id, backup.id, backup.parent_id, CHUNK as u64)
                .await
                .map_err(|e| e.to_string())?
                .map(Arc::new),
        };
        let reader = driver.clone();
        let (backup_id, wanted) = (backup.id, changed.clone());
        let reading = tokio::spawn(async move {
            match snapshot_id {
                Some(snapshot) => reader.read_snapshot_data(volume_id, snapshot, tx).await,
                None => {
                    reader
                        .read_backup_data(volume_id, backup_id, wanted, tx)
                        .await
                }
            }
        });
        let progress = Arc::new(Progress::default());
        let touching = self.keep_touching(backup, progress.clone(), true);
        let location = location_of(backup);
        let record = record_of(volume);
        let data = VolumeData { data: rx, changed };
        let written = settings
            .repository
            .write(location.clone(), parent, data, record, progress)
            .await;
        touching.abort();
        let read = match reading.await {
            Ok(read) => read.map_err(|e| e.to_string()),
            Err(err) => Err(format!("the volume's data could not be read: {err}")),
        };
        let expected = backup.size as u64 * GIB;
        let checked = match (written, read) {
            (Ok(w), Ok(())) if w.volume_bytes == expected => Ok(w),
            (Ok(w), Ok(())) => Err(format!(
                "the volume's data held {} bytes, not {expected}",
                w.volume_bytes
            )),
            (Err(err), _) | (Ok(_), Err(err)) => Err(err),
        };
        if checked.is_err() {
            if let Err(err) = settings.repository.remove(location).await {
                tracing::warn!(backup_id = %backup.id, error = %err, "could not remove a failed backup's objects");
            }
        }
        if snapshot_id.is_none() {
            let stored = checked.is_ok();
            if let Err(err) = driver.end_backup_read(volume_id, backup.id, stored).await {
                tracing::warn!(backup_id = %backup.id, error = %err, "could not tidy what the volume's backend kept for the backup");
            }
        }
        checked
    }

    /// Restores a backup held `restoring` onto `volume` in the background; `key` is the
    /// volume's own copy of an encrypted backup's key.
    pub(super) fn start_restore(
        &self,
        backup: Backup,
        volume: Volume,
        is_new: bool,
        key: RestoreKey,
    ) {
        let service = self.clone();
        crate::origin::spawn(async move {
            let result = service.restore_data(&backup, &volume, is_new).await;
            if let Err(reason) = &result {
                tracing::warn!(backup_id = %backup.id, volume_id = %volume.id, %reason, "restore failed");
            }
            let now = service.clock.now();
            let record = result.as_ref().map_err(Clone::clone);
            let ended = service
                .store
                .finish_restore(backup.id, volume.id, record, key.copy.as_deref(), now)
                .await;
            service
                .settle_restore_key(&volume, key, result.is_ok() && ended.is_ok())
                .await;
            match ended {
                Ok(Some(RestoreEnd::Deleting)) => {
                    service.remove_backup_data(backup).await;
                }
                Ok(_) => {}
                Err(err) => log_failure("a restore's end", Err(err.into())),
            }
        });
    }

    async fn restore_data(
        &self,
        backup: &Backup,
        volume: &Volume,
        is_new: bool,
    ) -> Result<VolumeRecord, String> {
        let settings = self.backup_settings().map_err(|e| e.to_string())?;
        let backend = self.backend_of(volume).map_err(|e| e.to_string())?;
        let manifest = settings.repository.manifest(location_of(backup)).await?;
        let manifest = Arc::new(manifest);
        let (tx, rx) = mpsc::channel(8);
        let driver: Arc<dyn Backend> = backend.driver.clone();
        let volume_id = volume.storage_id();
        // A new volume reads zeros already: its blocks of zeros are skipped.
        let writing = tokio::spawn(async move {
            match is_new {
                true => driver.write_data(volume_id, rx).await,
                false => driver.overwrite_data(volume_id, rx).await,
            }
        });
        let progress = Arc::new(Progress::default());
        let touching = self.keep_touching(backup, progress.clone(), false);
        let read = settings
            .repository
            .read(manifest.clone(), tx, progress)
            .await;
        touching.abort();
        let written = match writing.await {
            Ok(written) => written.map_err(|e| e.to_string()),
            Err(err) => Err(format!("the volume could not be written: {err}")),
        };
        match (read, written) {
            (Ok(()), Ok(bytes)) if bytes == manifest.size_bytes => Ok(manifest.volume.clone()),
            (Ok(()), Ok(bytes)) => Err(format!(
                "{bytes} bytes were written, not {}",
                manifest.size_bytes
            )),
            (Err(err), _) | (Ok(()), Err(err)) => Err(err),
        }
    }

    /// Removes a `deleting` backup's data, then its record; the work runs to its end even
    /// if the client goes away. Whether the data went.
    pub(super) async fn remove_backup_now(&self, backup: Backup) -> Result<bool, DomainError> {
        let service = self.clone();
        crate::origin::spawn(async move { service.remove_backup_data(backup).await })
            .await
            .map_err(|e| DomainError::Interrupted {
                what: "backup delete",
                detail: e.to_string(),
            })
    }

    async fn remove_backup_data(&self, backup: Backup) -> bool {
        let removed = match (
            self.backup_settings(),
            self.store.location_shared(backup.id).await,
        ) {
            // Another live backup keeps its objects here (an imported record of it):
            // they stay for it, and only this record goes.
            (_, Ok(true)) => Ok(()),
            (Ok(settings), Ok(false)) => settings.repository.remove(location_of(&backup)).await,
            (Err(err), _) => Err(err.to_string()),
            (_, Err(err)) => Err(err.to_string()),
        };
        let now = self.clock.now();
        let gone = removed.is_ok();
        let recorded = match removed {
            Ok(()) => self.store.finish_backup_delete(backup.id, now).await,
            Err(reason) => {
                tracing::warn!(backup_id = %backup.id, %reason, "backup data not removed");
                self.store.fail_backup_delete(backup.id, &reason, now).await
            }
        };
        log_failure("a backup's delete", recorded.map_err(Into::into));
        gone
    }

    /// Ends the backup work of this host that nothing has touched for `stale_after`
    /// (a service that stopped): writing ends `error`, a restore ends with the volume
    /// `error_restoring`, a delete is taken up again. How many were ended.
    pub async fn recover_stopped_backups(&self) -> Result<usize, DomainError> {
        let Ok(settings) = self.backup_settings() else {
            return Ok(0);
        };
        let stale = chrono::Duration::from_std(settings.stale_after)
            .unwrap_or(chrono::Duration::minutes(1));
        let before = self.clock.now() - stale;
        let stuck = self.store.stuck_backups(&settings.host, before).await?;
        let mut ended = 0;
        for backup in stuck {
            if backup.status == BackupStatus::Deleting {
                tracing::warn!(backup_id = %backup.id, "backup deletion was interrupted; finishing it");
                let key = backup.encryption_key_id.clone();
                // No caller's token now: its key goes with the service's own, if allowed.
                if self.remove_backup_data(backup).await {
                    self.forget_key(None, key.as_deref()).await;
                }
                ended += 1;
                continue;
            }
            let reason = "The backup service stopped while the backup was being written; \
                          delete this backup and take another.";
            let now = self.clock.now();
            let store = &self.store;
            if store
                .end_stuck_backup(backup.id, backup.status, before, reason, now)
                .await?
            {
                tracing::warn!(backup_id = %backup.id, status = %backup.status, "interrupted backup work ended");
                if backup.status == BackupStatus::Creating {
                    if let Err(err) = settings.repository.remove(location_of(&backup)).await {
                        tracing::warn!(backup_id = %backup.id, error = %err, "could not remove an unfinished backup's objects");
                    }
                }
                ended += 1;
            }
        }
        Ok(ended)
    }

    /// Runs `recover_stopped_backups` now and then for as long as the process runs.
    /// Checks the repository's set-up until it passes, every `interval` (Cinder's
    /// `backup_driver_init_check_interval`), then lets requests in (`ready`). The first
    /// try is waited for, up to `FIRST_SETUP_WAIT`, so a service that can work does
    /// from its first request; the rest run in the background.
    pub async fn keep_setting_backups_up(&self, interval: Duration) {
        let Some(settings) = self.settings.backups.as_ref() else {
            return;
        };
        let (repository, ready) = (settings.repository.clone(), settings.ready.clone());
        let set_up = move |result: Result<(), String>| match result {
            Ok(()) => {
                ready.store(true, Ordering::Release);
                tracing::info!(driver = repository.driver(), "backup driver ready");
                true
            }
            Err(err) => {
                tracing::error!(
                    error = %err,
                    retry_in_s = interval.as_secs_f64(),
                    "the backup driver cannot be set up; backup requests are refused until it can"
                );
                false
            }
        };
        let first = tokio::time::timeout(FIRST_SETUP_WAIT, settings.repository.check_setup());
        let first = first.await.unwrap_or_else(|_| Err("no answer yet".into()));
        if set_up(first) {
            return;
        }
        let repository = settings.repository.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                if set_up(repository.check_setup().await) {
                    return;
                }
            }
        });
    }

    pub fn keep_recovering_backups(&self) {
        let Some(settings) = self.settings.backups.as_ref() else {
            return;
        };
        let (service, every) = (self.clone(), settings.stale_after / 2);
        tokio::spawn(async move {
            loop {
                match service.recover_stopped_backups().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(backups = n, "interrupted backup work ended"),
                    Err(err) => {
                        tracing::error!(error = %err, "could not end interrupted backup work")
                    }
                }
                tokio::time::sleep(every.max(Duration::from_millis(200))).await;
            }
        });
    }
}
