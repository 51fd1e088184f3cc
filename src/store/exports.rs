//! What target-based backends export (`target_exports`) and who may log in to it: the
//! initiators of live, connected attachments. The backend asks; the database decides.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor, HeldLock, Transaction};
use super::SqlStore;
use crate::domain::attachment::{AttachMode, AttachStatus};
use crate::domain::event::EventKind;
use crate::domain::export::{AccessGrant, HostGrant, TargetExport};
use crate::domain::host_fence::{FenceOutcome, HostFence};
use crate::domain::ids::VolumeId;
use crate::domain::time::format_timestamp;

/// A volume's export as a backend asks for it: the number is the store's to allocate.
#[derive(Clone)]
pub struct NewExport<'a> {
    pub volume_id: VolumeId,
    pub backend_host: &'a str,
    pub auth_username: &'a str,
    pub auth_password: &'a str,
    pub now: DateTime<Utc>,
}

#[async_trait]
pub trait ExportStore: Send + Sync {
    /// Records the volume's export with the lowest number above every number this backend
    /// uses, or returns the export the volume already has. Safe when several processes
    /// record at once: a number goes to one volume only.
    async fn record_export(&self, new: &NewExport<'_>) -> Result<TargetExport, StoreError>;
    async fn export_of(&self, volume_id: VolumeId) -> Result<Option<TargetExport>, StoreError>;
    /// The volume's export and who may log in to it now, in one statement (asked on
    /// every attach and detach).
    async fn export_with_grants(
        &self,
        volume_id: VolumeId,
    ) -> Result<Option<(TargetExport, Vec<AccessGrant>)>, StoreError>;
    /// Every export of one backend, by number.
    async fn exports_of_backend(&self, backend_host: &str)
        -> Result<Vec<TargetExport>, StoreError>;
    async fn forget_export(&self, volume_id: VolumeId) -> Result<(), StoreError>;
    /// Who may log in now: the initiators of the live, connected attachments of the
    /// backend's exported volumes.
    async fn access_grants(&self, backend_host: &str) -> Result<Vec<AccessGrant>, StoreError>;
    /// The hosts of the live, connected attachments of the backend's volumes (of one
    /// volume, when given), with the keyring each connection was given.
    async fn host_grants(
        &self,
        backend_host: &str,
        volume: Option<VolumeId>,
    ) -> Result<Vec<HostGrant>, StoreError>;
    /// The volume's turn at changing who may reach it, shared by every process on the
    /// database, held until the value is dropped; `None` where the database is one
    /// process's (SQLite), whose turns are taken in the process.
    async fn access_turn(&self, volume_id: VolumeId) -> Result<Option<HeldLock>, StoreError>;
    /// The `ip` each live, connected attachment of the volume whose storage is
    /// `volume_id` connects from (as its connector said).
    async fn connected_ips(&self, volume_id: VolumeId) -> Result<Vec<String>, StoreError>;
    /// Keeps a fence's record.
    async fn record_fence(&self, fence: &HostFence) -> Result<(), StoreError>;
    /// The backend's fences that failed and were not tried again since, oldest first.
    async fn failed_fences(&self, backend_host: &str) -> Result<Vec<HostFence>, StoreError>;
    /// A failed fence was tried again (its new try recorded on its own).
    async fn settle_fence(&self, id: uuid::Uuid, now: DateTime<Utc>) -> Result<(), StoreError>;
}

/// `$1`/`$2` the connected statuses, `$3` the storage id.
const CONNECTED_IPS: &str = "\
    select s.value from volume_attachment a \
      join volumes v on v.id = a.volume_id \
      join attachment_specs s on s.attachment_id = a.id and s.deleted = false and s.key = 'ip' \
     where v.deleted = false and a.deleted = false and a.attach_status in ($1, $2) \
       and ((v.id = $3 and v.name_id is null) or v.name_id = $3)";

const INSERT_FENCE: &str = "\
    insert into host_fences (id, volume_id, backend_host, host_ip, addresses, outcome, reason, \
                             created_at) values ($1, $2, $3, $4, $5, $6, $7, $8)";

const FAILED_FENCES: &str = "\
    select id, volume_id, backend_host, host_ip, addresses, outcome, reason, created_at \
      from host_fences where backend_host = $1 and outcome = 'failed' and settled_at is null \
     order by created_at, id";

const SETTLE_FENCE: &str = "update host_fences set settled_at = $2 where id = $1";

impl FromRow for HostFence {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(HostFence {
            id: c.get()?,
            volume_id: c.get()?,
            backend_host: c.get()?,
            host_ip: c.get()?,
            addresses: serde_json::from_str(&c.get::<String>()?).map_err(StoreError::corrupt)?,
            outcome: {
                let text: String = c.get()?;
                FenceOutcome::parse(&text)
                    .ok_or_else(|| StoreError::corrupt(format!("fence outcome {text:?}")))?
            },
            reason: c.get()?,
            created_at: c.get()?,
        })
    }
}

/// `$1` what the backend's volume hosts start with (`<backend host>#`), `$2`/`$3` the
/// connected statuses. Each grant names the volume's storage (`Volume::storage_id`).
const HOST_GRANTS: &str = "\
    select coalesce(v.name_id, v.id), a.attached_host, a.attach_mode, a.connection_info \
      from volume_attachment a join volumes v on v.id = a.volume_id \
     where substr(v.host, 1, length(cast($1 as text))) = cast($1 as text) \
       and v.deleted = false and a.deleted = false \
       and a.attach_status in ($2, $3) and a.attached_host is not null";

const EXPORT_COLUMNS: &str =
    "select volume_id, number, auth_username, auth_password from target_exports";

/// The next number is one above the backend's highest; a number taken meanwhile by
/// another process (or an export the volume already has) inserts nothing.
const RECORD_EXPORT: &str = "\
    insert into target_exports (volume_id, backend_host, number, auth_username, auth_password, \
                                created_at) \
    select $1, $2, coalesce(max(number), 0) + 1, $3, $4, $5 from target_exports \
     where backend_host = $2 \
    on conflict do nothing";

const FORGET_EXPORT: &str = "delete from target_exports where volume_id = $1";

/// `$1` backend host, `$2`/`$3` the connected statuses. Exports are of storage: a volume
/// whose storage is named after another id (`name_id`) is exported under that id.
const ACCESS_GRANTS: &str = "\
    select e.volume_id, s.value, a.attach_mode from volume_attachment a \
      join attachment_specs s on s.attachment_id = a.id \
      join volumes v on v.id = a.volume_id \
      join target_exports e on e.volume_id = coalesce(v.name_id, v.id) \
     where e.backend_host = $1 and a.deleted = false and a.attach_status in ($2, $3) \
       and s.deleted = false and s.key = 'initiator'";

/// `$1` the volume's storage id, `$2`/`$3` the connected statuses: one row per live
/// attachment of the volume whose storage it is (or one with nulls), each with the export.
const EXPORT_WITH_GRANTS: &str = "\
    select e.volume_id, e.number, e.auth_username, e.auth_password, e.volume_id, s.value, \
           a.attach_mode \
      from target_exports e \
      left join volumes v on v.deleted = false \
                         and ((v.id = e.volume_id and v.name_id is null) or v.name_id = e.volume_id) \
      left join volume_attachment a on a.volume_id = v.id and a.deleted = false \
                                   and a.attach_status in ($2, $3) \
      left join attachment_specs s on s.attachment_id = a.id and s.deleted = false \
                                  and s.key = 'initiator' \
     where e.volume_id = $1";

/// A number taken by another process between our read and insert: try again. Each round
/// of concurrent recorders has a winner, so this bounds how many may record at once.
const RECORD_ATTEMPTS: usize = 256;

impl FromRow for TargetExport {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        let volume_id = c.get()?;
        let number: i64 = c.get()?;
        Ok(TargetExport {
            volume_id,
            number: u32::try_from(number)
                .map_err(|_| StoreError::corrupt(format!("export number {number}")))?,
            auth_username: c.get()?,
            auth_password: c.get()?,
        })
    }
}

/// A grant row: the initiator is kept as JSON text, like every connector value (all
/// columns null when an export has no live attachment).
struct GrantRow {
    volume_id: Option<VolumeId>,
    initiator: Option<String>,
    mode: Option<AttachMode>,
}

impl FromRow for GrantRow {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(GrantRow {
            volume_id: c.get()?,
            initiator: c.get()?,
            mode: c.get()?,
        })
    }
}

/// An export next to one of its grant rows.
struct ExportGrantRow {
    export: TargetExport,
    grant: GrantRow,
}

impl FromRow for ExportGrantRow {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(ExportGrantRow {
            export: TargetExport::from_row(c)?,
            grant: GrantRow::from_row(c)?,
        })
    }
}

/// Sorted and without repeats (two attachments from one host are one grant).
fn grants(rows: impl IntoIterator<Item = GrantRow>) -> Vec<AccessGrant> {
    let mut grants: Vec<AccessGrant> = rows.into_iter().filter_map(GrantRow::grant).collect();
    grants.sort();
    grants.dedup();
    grants
}

impl GrantRow {
    /// The grant, when the connector's initiator is a name at all.
    fn grant(self) -> Option<AccessGrant> {
        let volume_id = self.volume_id?;
        let text = self.initiator?;
        let initiator = match serde_json::from_str(&text) {
            Ok(serde_json::Value::String(name)) => name,
            _ => return None,
        };
        Some(AccessGrant {
            volume_id,
            initiator,
            read_only: self.mode == Some(AttachMode::ReadOnly),
        })
    }
}

#[async_trait]
impl<D: Database> ExportStore for SqlStore<D> {
    #[tracing::instrument(skip_all, err)]
    async fn record_export(&self, new: &NewExport<'_>) -> Result<TargetExport, StoreError> {
        for _ in 0..RECORD_ATTEMPTS {
            let sql = Sql::new(RECORD_EXPORT)
                .bind(new.volume_id)
                .bind(new.backend_host)
                .bind(new.auth_username)
                .bind(new.auth_password)
                .bind(new.now);
            let inserted = self.db.execute(sql).await?;
            if inserted == 1 {
                break;
            }
            if self.export_of(new.volume_id).await?.is_some() {
                break;
            }
        }
        self.export_of(new.volume_id).await?.ok_or_else(|| {
            StoreError::corrupt(format!(
                "no export number could be recorded for volume {}",
                new.volume_id
            ))
        })
    }

    #[tracing::instrument(skip_all, err)]
    async fn export_of(&self, volume_id: VolumeId) -> Result<Option<TargetExport>, StoreError> {
        let mut sql = Sql::new(EXPORT_COLUMNS);
        sql.push(" where volume_id = ").push_bind(volume_id);
        self.db.fetch_optional(sql).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn exports_of_backend(
        &self,
        backend_host: &str,
    ) -> Result<Vec<TargetExport>, StoreError> {
        let mut sql = Sql::new(EXPORT_COLUMNS);
        sql.push(" where backend_host = ")
            .push_bind(backend_host)
            .push(" order by number");
        self.db.fetch_all(sql).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn forget_export(&self, volume_id: VolumeId) -> Result<(), StoreError> {
        self.db
            .execute(Sql::new(FORGET_EXPORT).bind(volume_id))
            .await?;
        Ok(())
    }

    #[tracing::instrument(skip_all, err)]
    async fn access_grants(&self, backend_host: &str) -> Result<Vec<AccessGrant>, StoreError> {
        let sql = Sql::new(ACCESS_GRANTS)
            .bind(backend_host)
            .bind(AttachStatus::Attaching)
            .bind(AttachStatus::Attached);
        let rows: Vec<GrantRow> = self.db.fetch_all(sql).await?;
        Ok(grants(rows))
    }

    async fn access_turn(&self, volume_id: VolumeId) -> Result<Option<HeldLock>, StoreError> {
        self.db
            .hold_lock(format!("cinder-attach access {volume_id}"))
            .await
    }

    #[tracing::instrument(skip_all, err)]
    async fn connected_ips(&self, volume_id: VolumeId) -> Result<Vec<String>, StoreError> {
        let sql = Sql::new(CONNECTED_IPS)
            .bind(AttachStatus::Attaching)
            .bind(AttachStatus::Attached)
            .bind(volume_id);
        let rows: Vec<(Option<String>,)> = self.db.fetch_all(sql).await?;
        // Connector values are kept as JSON text.
        Ok(rows
            .into_iter()
            .filter_map(|(text,)| serde_json::from_str::<serde_json::Value>(&text?).ok())
            .filter_map(|ip| ip.as_str().map(str::to_owned))
            .collect())
    }

    #[tracing::instrument(skip_all, err)]
    async fn record_fence(&self, fence: &HostFence) -> Result<(), StoreError> {
        let addresses = serde_json::to_string(&fence.addresses).map_err(StoreError::corrupt)?;
        let sql = Sql::new(INSERT_FENCE)
            .bind(fence.id)
            .bind(fence.volume_id)
            .bind(fence.backend_host.as_str())
            .bind(fence.host_ip.clone())
            .bind(addresses)
            .bind(fence.outcome.as_str())
            .bind(fence.reason.as_str())
            .bind(fence.created_at);
        let mut tx = self.db.begin_write().await?;
        tx.execute(sql).await?;
        let kind = match fence.outcome {
            FenceOutcome::Failed => EventKind::VolumeHostFenceError,
            _ => EventKind::VolumeHostFence,
        };
        let payload = serde_json::json!({
            "fence_id": fence.id,
            "backend_host": fence.backend_host,
            "host_ip": fence.host_ip,
            "addresses": fence.addresses,
            "outcome": fence.outcome.as_str(),
            "reason": fence.reason,
            "created_at": format_timestamp(&fence.created_at),
        });
        self.record_volume_payload_event(&mut tx, kind, fence.volume_id, payload, fence.created_at)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    #[tracing::instrument(skip_all, err)]
    async fn failed_fences(&self, backend_host: &str) -> Result<Vec<HostFence>, StoreError> {
        self.db
            .fetch_all(Sql::new(FAILED_FENCES).bind(backend_host))
            .await
    }

    #[tracing::instrument(skip_all, err)]
    async fn settle_fence(&self, id: uuid::Uuid, now: DateTime<Utc>) -> Result<(), StoreError> {
        self.db
            .execute(Sql::new(SETTLE_FENCE).bind(id).bind(now))
            .await
            .map(drop)
    }

    #[tracing::instrument(skip_all, err)]
    async fn host_grants(
        &self,
        backend_host: &str,
        volume: Option<VolumeId>,
    ) -> Result<Vec<HostGrant>, StoreError> {
        let mut sql = Sql::new(HOST_GRANTS)
            .bind(format!("{backend_host}#"))
            .bind(AttachStatus::Attaching)
            .bind(AttachStatus::Attached);
        if let Some(volume) = volume {
            // `volume` is a storage id (see `HOST_GRANTS`).
            sql.push(" and ((v.id = ")
                .push_bind(volume)
                .push(" and v.name_id is null) or v.name_id = ")
                .push_bind(volume)
                .push(")");
        }
        let rows: Vec<(VolumeId, String, Option<AttachMode>, Option<String>)> =
            self.db.fetch_all(sql).await?;
        let mut grants: Vec<HostGrant> = rows
            .into_iter()
            .map(|(volume_id, host, mode, info)| HostGrant {
                volume_id,
                host,
                read_only: mode == Some(AttachMode::ReadOnly),
                keyring: info
                    .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
                    .and_then(|info| info.get("keyring")?.as_str().map(str::to_owned)),
            })
            .collect();
        grants.sort();
        grants.dedup_by(|a, b| {
            (&a.volume_id, &a.host, a.read_only) == (&b.volume_id, &b.host, b.read_only)
        });
        Ok(grants)
    }

    #[tracing::instrument(skip_all, err)]
    async fn export_with_grants(
        &self,
        volume_id: VolumeId,
    ) -> Result<Option<(TargetExport, Vec<AccessGrant>)>, StoreError> {
        let sql = Sql::new(EXPORT_WITH_GRANTS)
            .bind(volume_id)
            .bind(AttachStatus::Attaching)
            .bind(AttachStatus::Attached);
        let rows: Vec<ExportGrantRow> = self.db.fetch_all(sql).await?;
        let Some(export) = rows.first().map(|row| row.export.clone()) else {
            return Ok(None);
        };
        Ok(Some((
            export,
            grants(rows.into_iter().map(|row| row.grant)),
        )))
    }
}
