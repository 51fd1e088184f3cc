//! `tgt`: volumes stored like `file`, exported by a real tgtd. Each volume has two
//! targets over its file, `<iqn_prefix>:volume-<id>` (read-write) and
//! `...:volume-<id>-ro` (its logical unit read-only), both behind the volume's own CHAP
//! account. Who may log in follows the attachments exactly: an initiator is in a target's
//! ACL only while a live, connected attachment of the volume names it, and losing that
//! ends its sessions. The database decides; tgtd is made to match it after every change,
//! at start, and every few seconds (so a restarted tgtd is rebuilt without an operator).

mod control;
mod names;
mod plan;
mod state;
mod steps;
mod turns;
mod unsettled;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{
    AccessRecords, AccessTurn, Backend, BackendError, Capabilities, Connector, DataIn, DataOut,
    DataSource, DriverConnection, FileBackend,
};
use crate::domain::attachment::AttachMode;
use crate::domain::export::{AccessGrant, TargetExport};
use crate::domain::ids::{SnapshotId, VolumeId};
use control::Refusal;
pub use control::{Control, ControlError};
use names::{is_iscsi_name, new_credentials};
use plan::{plan, plan_change, Step, TargetSessions, Wanted, VOLUME_LUN};
use state::{parse_accounts, parse_sessions, parse_targets, parse_targets_of, TargetState};
use turns::Turns;
use unsettled::Unsettled;

/// Account names this driver creates start with this, so that reconciliation can tell
/// its own accounts from an operator's.
const ACCOUNT_PREFIX: &str = "ca-";

/// Where a `tgt` backend finds its tgtd and how it names what it exports.
pub struct TgtOptions {
    pub portal: String,
    pub iqn_prefix: String,
    pub control: Control,
    pub reconcile_every: Duration,
}

pub struct TgtBackend {
    storage: FileBackend,
    name: String,
    options: TgtOptions,
    records: Arc<dyn AccessRecords>,
    turns: Turns,
    /// Volumes the last reconciliation saw drift on (`None` before the first pass).
    suspects: Mutex<Option<BTreeSet<VolumeId>>>,
}

impl TgtBackend {
    pub fn new(
        name: String,
        storage: FileBackend,
        options: TgtOptions,
        records: Arc<dyn AccessRecords>,
    ) -> Self {
        let turns = Turns::new(storage.dir().join(".tgt-turns"));
        TgtBackend {
            storage,
            name,
            options,
            records,
            turns,
            suspects: Mutex::new(None),
        }
    }

    fn iqn(&self, volume_id: VolumeId, read_only: bool) -> String {
        let suffix = if read_only { "-ro" } else { "" };
        format!("{}:volume-{volume_id}{suffix}", self.options.iqn_prefix)
    }

    /// The volume a target of this backend serves, from its name.
    fn volume_of(&self, iqn: &str) -> Option<VolumeId> {
        let rest = iqn.strip_prefix(&format!("{}:volume-", self.options.iqn_prefix))?;
        let id = rest.strip_suffix("-ro").unwrap_or(rest);
        uuid::Uuid::parse_str(id).ok().map(VolumeId::from)
    }

    fn failed(&self, what: &str, err: impl std::fmt::Display) -> BackendError {
        BackendError::Failed(format!(
            "The tgt backend {} could not {what}: {err}.",
            self.name
        ))
    }

    /// What tgtd holds: every target, or only those with `tids`.
    async fn targets(&self, tids: Option<&[u32]>) -> Result<Vec<TargetState>, BackendError> {
        let text = self
            .options
            .control
            .show_targets()
            .await
            .map_err(|e| self.failed("read tgtd's targets", e))?;
        Ok(match tids {
            Some(tids) => parse_targets_of(&text, tids),
            None => parse_targets(&text),
        })
    }

    fn wanted<'a>(&self, export: &'a TargetExport, grants: &'a [AccessGrant]) -> Wanted<'a> {
        Wanted {
            export,
            read_write_iqn: self.iqn(export.volume_id, false),
            read_only_iqn: self.iqn(export.volume_id, true),
            grants,
        }
    }

    /// Makes everything tgtd holds for one volume (targets, logical units, account, ACLs,
    /// sessions) what the database holds, from tgtd's full show. The caller holds the
    /// volume's turn. Returns the export and the steps it took; `None` when the volume
    /// has no export (deleted meanwhile).
    async fn sync_volume(
        &self,
        volume_id: VolumeId,
    ) -> Result<Option<(TargetExport, Vec<Step>)>, BackendError> {
        let Some((export, grants)) = self.export_with_grants(volume_id).await? else {
            return Ok(None);
        };
        let steps = self.sync_export(&export, &grants).await?;
        Ok(Some((export, steps)))
    }

    async fn sync_export(
        &self,
        export: &TargetExport,
        grants: &[AccessGrant],
    ) -> Result<Vec<Step>, BackendError> {
        let tids = [export.read_write_tid(), export.read_only_tid()];
        let targets = self.targets(Some(&tids)).await?;
        let path = self.storage.path_of(export.volume_id).display().to_string();
        let steps = plan(&self.wanted(export, grants), &targets, None);
        self.apply(&steps, export, &path, &targets).await?;
        Ok(steps)
    }

    async fn export_with_grants(
        &self,
        volume_id: VolumeId,
    ) -> Result<Option<(TargetExport, Vec<AccessGrant>)>, BackendError> {
        self.records
            .export_with_grants(volume_id)
            .await
            .map_err(|e| self.failed("read who may reach the volume", e))
    }

    /// One attach (`joining`) or detach (`leaving`): the change, planned from the two
    /// targets' sessions (see `plan_change`); when a target is missing (tgtd restarted)
    /// the whole volume is put back instead. The caller holds the volume's turn.
    async fn change_access(
        &self,
        volume_id: VolumeId,
        joining: Option<AccessGrant>,
        leaving: Option<AccessGrant>,
    ) -> Result<Option<TargetExport>, BackendError> {
        let changed = self.try_change_access(volume_id, joining, leaving).await;
        if changed.is_err() {
            Unsettled::of(self.storage.dir(), volume_id).mark().await;
        }
        changed
    }

    async fn try_change_access(
        &self,
        volume_id: VolumeId,
        joining: Option<AccessGrant>,
        leaving: Option<AccessGrant>,
    ) -> Result<Option<TargetExport>, BackendError> {
        let Some((export, mut grants)) = self.export_with_grants(volume_id).await? else {
            return Ok(None);
        };
        let unsettled = Unsettled::of(self.storage.dir(), volume_id);
        if unsettled.is_marked().await {
            // An earlier change stopped part-way (a failed unbind leaves an ACL entry no
            // session shows): start from tgtd's whole state this once.
            grants.extend(joining);
            self.sync_export(&export, &grants).await?;
            unsettled.clear().await;
            return Ok(Some(export));
        }
        let control = &self.options.control;
        let mut shown = Vec::with_capacity(2);
        for tid in [export.read_write_tid(), export.read_only_tid()] {
            match control.show_sessions(tid).await {
                Ok(text) => shown.push((tid, parse_sessions(&text))),
                Err(err) if err.is(Refusal::NoTarget) => {
                    grants.extend(joining);
                    self.sync_export(&export, &grants).await?;
                    return Ok(Some(export));
                }
                Err(err) => return Err(self.failed("read the volume's sessions", err)),
            }
        }
        let sessions: Vec<TargetSessions<'_>> = shown
            .iter()
            .map(|(tid, sessions)| TargetSessions {
                tid: *tid,
                sessions,
            })
            .collect();
        let steps = plan_change(
            &export,
            &grants,
            &sessions,
            joining.as_ref(),
            leaving.as_ref(),
        );
        let path = self.storage.path_of(volume_id).display().to_string();
        self.apply(&steps, &export, &path, &[]).await?;
        Ok(Some(export))
    }

    async fn turn(&self, volume_id: VolumeId) -> Result<turns::Turn, BackendError> {
        self.turns
            .take(volume_id)
            .await
            .map_err(|e| self.failed("take the volume's turn", e))
    }

    /// Creates the volume's export (database record first, then tgtd); on failure
    /// nothing of it is left.
    async fn export(&self, volume_id: VolumeId) -> Result<(), BackendError> {
        let (username, password) = new_credentials();
        let export = self
            .records
            .record_export(volume_id, &username, &password)
            .await
            .map_err(|e| self.failed("record the volume's export", e))?;
        let turn = self.turn(volume_id).await?;
        if let Err(err) = self.sync_volume(volume_id).await {
            let _ = self.unexport(&export).await;
            let _ = self.records.forget_export(volume_id).await;
            drop(turn);
            return Err(err);
        }
        Ok(())
    }

    fn grant_for(volume_id: VolumeId, connector: &Connector) -> Option<AccessGrant> {
        let Some(Value::String(initiator)) = connector.get("initiator") else {
            return None;
        };
        Some(AccessGrant {
            volume_id,
            initiator: initiator.clone(),
            read_only: connector.mode() == Some(AttachMode::ReadOnly),
        })
    }
}

#[async_trait]
impl Backend for TgtBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            driver: "tgt",
            storage_protocol: "iSCSI",
            ..self.storage.capabilities()
        }
    }

    async fn create_volume(&self, volume_id: VolumeId, size_gib: u64) -> Result<(), BackendError> {
        self.storage.create_volume(volume_id, size_gib).await?;
        if let Err(err) = self.export(volume_id).await {
            let _ = self.storage.delete_volume(volume_id).await;
            return Err(err);
        }
        Ok(())
    }

    async fn create_snapshot(
        &self,
        volume_id: VolumeId,
        snapshot_id: SnapshotId,
    ) -> Result<(), BackendError> {
        self.storage.create_snapshot(volume_id, snapshot_id).await
    }

    async fn delete_snapshot(
        &self,
        volume_id: VolumeId,
        snapshot_id: SnapshotId,
    ) -> Result<(), BackendError> {
        self.storage.delete_snapshot(volume_id, snapshot_id).await
    }

    /// Copies the data, then exports the new volume as `create_volume` does.
    async fn create_volume_from(
        &self,
        volume_id: VolumeId,
        source: DataSource,
        size_gib: u64,
    ) -> Result<(), BackendError> {
        self.storage
            .create_volume_from(volume_id, source, size_gib)
            .await?;
        if let Err(err) = self.export(volume_id).await {
            let _ = self.storage.delete_volume(volume_id).await;
            return Err(err);
        }
        Ok(())
    }

    async fn extend_volume(
        &self,
        volume_id: VolumeId,
        new_size_gib: u64,
    ) -> Result<(), BackendError> {
        self.storage.extend_volume(volume_id, new_size_gib).await?;
        // tgtd reads a logical unit's size when it is added: add it again, so that the
        // next login sees the new size.
        let _turn = self.turn(volume_id).await?;
        if let Some(export) = self
            .records
            .export_of(volume_id)
            .await
            .map_err(|e| self.failed("read the volume's export", e))?
        {
            for tid in [export.read_write_tid(), export.read_only_tid()] {
                self.options
                    .control
                    .delete_lun(tid, VOLUME_LUN)
                    .await
                    .map_err(|e| self.failed("resize the volume's logical unit", e))?;
            }
        }
        self.sync_volume(volume_id).await.map(drop)
    }

    async fn delete_volume(&self, volume_id: VolumeId) -> Result<(), BackendError> {
        let turn = self.turn(volume_id).await?;
        if let Some(export) = self
            .records
            .export_of(volume_id)
            .await
            .map_err(|e| self.failed("read the volume's export", e))?
        {
            self.unexport(&export).await?;
            self.records
                .forget_export(volume_id)
                .await
                .map_err(|e| self.failed("forget the volume's export", e))?;
        }
        Unsettled::of(self.storage.dir(), volume_id).clear().await;
        drop(turn);
        self.storage.delete_volume(volume_id).await
    }

    async fn write_data(&self, volume_id: VolumeId, data: DataIn) -> Result<u64, BackendError> {
        self.storage.write_data(volume_id, data).await
    }

    fn local_path(&self, volume_id: VolumeId) -> Option<std::path::PathBuf> {
        self.storage.local_path(volume_id)
    }

    async fn read_data(&self, volume_id: VolumeId, sink: DataOut) -> Result<(), BackendError> {
        self.storage.read_data(volume_id, sink).await
    }

    async fn read_snapshot_data(
        &self,
        volume_id: VolumeId,
        snapshot_id: SnapshotId,
        sink: DataOut,
    ) -> Result<(), BackendError> {
        self.storage
            .read_snapshot_data(volume_id, snapshot_id, sink)
            .await
    }

    async fn overwrite_data(&self, volume_id: VolumeId, data: DataIn) -> Result<u64, BackendError> {
        self.storage.overwrite_data(volume_id, data).await
    }

    fn file_storage(&self) -> Option<&dyn Backend> {
        Some(&self.storage)
    }

    async fn volume_exists(&self, volume_id: VolumeId) -> Result<bool, BackendError> {
        self.storage.volume_exists(volume_id).await
    }

    async fn list_volumes(&self) -> Result<Vec<VolumeId>, BackendError> {
        self.storage.list_volumes().await
    }

    async fn list_snapshots(&self) -> Result<Vec<SnapshotId>, BackendError> {
        self.storage.list_snapshots().await
    }

    fn validate_connector(&self, connector: &Connector) -> Result<(), BackendError> {
        match connector.get("initiator") {
            Some(Value::String(initiator)) if is_iscsi_name(initiator) => Ok(()),
            Some(Value::String(initiator)) if !initiator.trim().is_empty() => Err(
                BackendError::InvalidConnector(
                    "initiator (an iSCSI name: letters, digits, '.', '-', ':', '_'; at most 223 characters)"
                        .to_owned(),
                ),
            ),
            _ => Err(BackendError::InvalidConnector("initiator".to_owned())),
        }
    }

    async fn access_turn(&self, volume_id: VolumeId) -> Result<Option<AccessTurn>, BackendError> {
        let turn = self.turn(volume_id).await?;
        Ok(Some(AccessTurn::new(turn)))
    }

    /// Lets the connector's initiator in (read-only target for an `ro` attachment), after
    /// cutting off every initiator with a session the database no longer backs. The
    /// caller holds the volume's turn and records the attachment before releasing it.
    async fn initialize_connection(
        &self,
        volume_id: VolumeId,
        connector: &Connector,
    ) -> Result<DriverConnection, BackendError> {
        self.validate_connector(connector)?;
        let grant = Self::grant_for(volume_id, connector)
            .ok_or_else(|| BackendError::InvalidConnector("initiator".to_owned()))?;
        let read_only = grant.read_only;
        let export = self
            .change_access(volume_id, Some(grant), None)
            .await?
            .ok_or_else(|| {
                BackendError::Failed(format!(
                    "Volume {volume_id} is not exported by the tgt backend {}.",
                    self.name
                ))
            })?;
        let data = json!({
            "target_discovered": false,
            "target_iqn": self.iqn(volume_id, read_only),
            "target_portal": self.options.portal,
            "target_lun": VOLUME_LUN,
            "auth_method": "CHAP",
            "auth_username": export.auth_username,
            "auth_password": export.auth_password,
            "volume_id": volume_id.to_string(),
            "discard": false,
        });
        Ok(DriverConnection {
            driver_volume_type: "iscsi".to_owned(),
            data: data.as_object().cloned().unwrap_or_default(),
        })
    }

    /// Called after an attachment is gone (or was refused): its initiator is cut off
    /// (ACL entry and sessions), unless another live attachment of the volume still
    /// names it.
    async fn terminate_connection(
        &self,
        volume_id: VolumeId,
        connector: &Connector,
    ) -> Result<(), BackendError> {
        self.validate_connector(connector)?;
        let leaving = Self::grant_for(volume_id, connector);
        self.change_access(volume_id, None, leaving).await.map(drop)
    }

    fn reconcile_interval(&self) -> Option<Duration> {
        Some(self.options.reconcile_every)
    }

    async fn reconcile(&self, repair: bool) -> Result<Vec<String>, BackendError> {
        let read = |e: String| self.failed("read its exports", e);
        let exports = self.records.exports().await.map_err(read)?;
        let grants = self.records.grants().await.map_err(read)?;
        let targets = self.targets(None).await?;
        let accounts = parse_accounts(
            &self
                .options
                .control
                .show_accounts()
                .await
                .map_err(|e| self.failed("read tgtd's accounts", e))?,
        );
        let mut drift = Vec::new();
        let mut drifting = BTreeSet::new();
        let suspected = self.suspects.lock().map(|s| s.clone()).unwrap_or_default();
        for export in &exports {
            let steps = plan(&self.wanted(export, &grants), &targets, Some(&accounts));
            if steps.is_empty() {
                continue;
            }
            let volume = export.volume_id;
            drifting.insert(volume);
            let describe = |steps: &[Step]| -> Vec<String> {
                steps
                    .iter()
                    .map(|s| format!("volume {volume}: {}", s.describe()))
                    .collect()
            };
            if !repair {
                drift.extend(describe(&steps));
                continue;
            }
            // Drift seen once may be an operation in flight (holding the turn, it has
            // changed tgtd but not yet the database, or the other way round): it is
            // repaired when the next pass still sees it, or at once on the first pass.
            if suspected.as_ref().is_some_and(|s| !s.contains(&volume)) {
                continue;
            }
            // Inside the turn the database is read again; tgtd's text is not (it lists
            // every target, so it costs tgtd milliseconds per thousand targets): where an
            // operation finished in between, the plan repeats what it did, and every
            // step is idempotent.
            let _turn = self.turn(volume).await?;
            if let Some((export, grants)) = self.export_with_grants(volume).await? {
                let steps = plan(&self.wanted(&export, &grants), &targets, Some(&accounts));
                let path = self.storage.path_of(volume).display().to_string();
                self.apply(&steps, &export, &path, &targets).await?;
                drift.extend(describe(&steps));
            }
        }
        if let Ok(mut suspects) = self.suspects.lock() {
            *suspects = Some(drifting);
        }
        let ours = |tid: u32| {
            exports
                .iter()
                .any(|e| e.read_write_tid() == tid || e.read_only_tid() == tid)
        };
        for target in targets.iter().filter(|t| !ours(t.tid)) {
            let Some(volume) = self.volume_of(&target.iqn) else {
                continue;
            };
            let extra = format!(
                "target {} ({}) belongs to no exported volume",
                target.tid, target.iqn
            );
            if !repair {
                drift.push(extra);
                continue;
            }
            {
                let _turn = self.turn(volume).await?;
                // Recorded meanwhile (a volume being created): it is not extra after all.
                let now = self.records.export_of(volume).await.map_err(read)?;
                if now.is_some_and(|e| {
                    e.read_write_tid() == target.tid || e.read_only_tid() == target.tid
                }) {
                    continue;
                }
                self.options
                    .control
                    .delete_target(target.tid)
                    .await
                    .map_err(|e| self.failed("remove an extra target", e))?;
                drift.push(extra);
            }
        }
        let known_accounts = |name: &str| exports.iter().any(|e| e.auth_username == name);
        let extra: Vec<&String> = accounts
            .iter()
            .filter(|a| a.starts_with(ACCOUNT_PREFIX) && !known_accounts(a))
            .collect();
        if !extra.is_empty() {
            let current = if repair {
                self.records.exports().await.map_err(read)?
            } else {
                Vec::new()
            };
            for account in extra {
                if repair && current.iter().any(|e| &e.auth_username == account) {
                    continue; // recorded meanwhile (a volume being created)
                }
                if repair {
                    self.options
                        .control
                        .delete_account(account)
                        .await
                        .map_err(|e| self.failed("remove an extra CHAP account", e))?;
                }
                drift.push(format!(
                    "CHAP account {account} belongs to no exported volume"
                ));
            }
        }
        Ok(drift)
    }
}
