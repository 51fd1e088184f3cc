//! Exported backup records (`export_record`, `import_record`): a backup's database
//! record as base64-encoded JSON, as Cinder's `Backup.encode_record` writes it, so that
//! a backup whose record was lost (or one kept elsewhere) can be brought back.

use base64::Engine;
use serde_json::{json, Value};

use super::Service;
use crate::domain::backup::{self, Backup, BackupStatus};
use crate::domain::error::BackupError;
use crate::domain::ids::{BackupId, SnapshotId, VolumeId};
use crate::domain::quota::QuotaOwner;
use crate::domain::time::format_timestamp;
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::{rules, Target};
use crate::store::{ImportRefusal, ImportedBackup};

fn invalid(reason: impl Into<String>) -> DomainError {
    BackupError::Invalid(reason.into()).into()
}

fn invalid_input(reason: impl Into<String>) -> DomainError {
    BackupError::InvalidInput(reason.into()).into()
}

/// The record's fields, named as Cinder's `Backup` object names them.
fn encode(found: &Backup) -> String {
    let time = |t: &Option<chrono::DateTime<chrono::Utc>>| t.as_ref().map(format_timestamp);
    let record = json!({
        "id": found.id,
        "user_id": found.user_id,
        "project_id": found.project_id,
        "volume_id": found.volume_id,
        "host": found.host,
        "availability_zone": found.availability_zone,
        "display_name": found.name,
        "display_description": found.description,
        "container": found.container,
        "status": found.status.as_str(),
        "fail_reason": found.fail_reason,
        "service_metadata": found.service_metadata,
        "service": found.service,
        "size": found.size,
        "object_count": found.object_count,
        "parent_id": found.parent_id,
        "temp_volume_id": null,
        "temp_snapshot_id": null,
        "num_dependent_backups": found.num_dependent_backups,
        "snapshot_id": found.snapshot_id,
        "data_timestamp": time(&found.data_timestamp),
        "restore_volume_id": found.restore_volume_id,
        "metadata": found.metadata,
        "encryption_key_id": found.encryption_key_id,
        "created_at": format_timestamp(&found.created_at),
        "updated_at": time(&found.updated_at),
        "deleted_at": null,
        "deleted": false,
    });
    base64::engine::general_purpose::STANDARD.encode(record.to_string())
}

fn decode(url: &str) -> Result<serde_json::Map<String, Value>, DomainError> {
    let unparsable = || invalid_input("Can't parse backup record.");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(url.trim())
        .map_err(|_| unparsable())?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(record)) => Ok(record),
        _ => Err(unparsable()),
    }
}

fn text(record: &serde_json::Map<String, Value>, key: &str) -> Option<String> {
    record.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn time(
    record: &serde_json::Map<String, Value>,
    key: &str,
) -> Option<chrono::DateTime<chrono::Utc>> {
    let text = text(record, key)?;
    let parsed = chrono::DateTime::parse_from_rfc3339(&text)
        .ok()
        .map(Into::into);
    parsed.or_else(|| {
        chrono::NaiveDateTime::parse_from_str(&text, "%Y-%m-%dT%H:%M:%S%.f")
            .ok()
            .map(|t| t.and_utc())
    })
}

impl Service {
    /// `export_record` (admins): an `available` backup's record.
    pub async fn export_backup(
        &self,
        caller: &RequestContext,
        id: &str,
    ) -> Result<(String, String), DomainError> {
        let found = self.get_backup(caller, id).await?;
        let target = Target::project(&found.project_id);
        self.policy.enforce(rules::BACKUP_EXPORT, caller, &target)?;
        if found.status != BackupStatus::Available {
            return Err(invalid(format!(
                "Backup status must be available and not {}.",
                found.status
            )));
        }
        let settings = self.backup_service().await?;
        super::backups::check_ours(settings, &found, "Export record")?;
        Ok((settings.repository.driver().to_owned(), encode(&found)))
    }

    /// `import_record` (admins): a backup record of this service, whose objects the
    /// repository holds, recorded `available` in the caller's project.
    pub async fn import_backup(
        &self,
        caller: &RequestContext,
        service: &str,
        url: &str,
    ) -> Result<Backup, DomainError> {
        self.policy
            .enforce(rules::BACKUP_IMPORT, caller, &Target::caller(caller))?;
        let settings = self.backup_service().await?;
        if service != settings.repository.driver() {
            return Err(invalid(format!(
                "Import record failed, cannot find backup service to perform the import. \
                 Request service {service}."
            )));
        }
        let record = decode(url)?;
        let id = match record.get("id") {
            None => return Err(invalid_input("Provided backup record is missing an id")),
            Some(id) => id.as_str().and_then(BackupId::parse).ok_or_else(|| {
                invalid_input("Provided backup record has an id that is not a UUID")
            })?,
        };
        let Some(size) = record.get("size") else {
            return Err(invalid_input(
                "Provided backup record is missing size attribute",
            ));
        };
        let size = size.as_i64().ok_or_else(|| {
            invalid_input("Provided backup record has a size that is not a number")
        })?;
        if size < 1 {
            return Err(invalid_input(format!(
                "Provided backup record has a size of {size} GB: a backup holds at least 1 GB"
            )));
        }
        let required = [
            "display_name",
            "display_description",
            "container",
            "service_metadata",
            "object_count",
        ];
        let missing: Vec<&str> = required
            .into_iter()
            .filter(|key| !record.contains_key(*key))
            .collect();
        if !missing.is_empty() {
            return Err(invalid(format!(
                "Driver successfully decoded imported backup data, but there are missing \
                 fields ({}).",
                missing.join(", ")
            )));
        }
        let existing = self.store.get_backup_any(id).await?;
        if existing
            .as_ref()
            .is_some_and(|b| b.status != BackupStatus::Deleted)
        {
            return Err(invalid("Backup already exists in database."));
        }
        let now = self.clock.now();
        let container = text(&record, "container").unwrap_or_default();
        (settings.repository.check_container(&container)).map_err(BackupError::InvalidInput)?;
        let prefix = text(&record, "service_metadata");
        if let Some(prefix) = &prefix {
            backup::check_object_prefix(prefix).map_err(BackupError::InvalidInput)?;
        }
        let imported = Backup {
            id,
            volume_id: text(&record, "volume_id")
                .and_then(|v| VolumeId::parse(&v))
                .unwrap_or_else(|| VolumeId::parse(backup::IMPORT_VOLUME_ID).expect("a uuid")),
            snapshot_id: text(&record, "snapshot_id").and_then(|s| SnapshotId::parse(&s)),
            user_id: Some(caller.user_id.clone()),
            project_id: caller.project_id.clone(),
            host: Some(settings.host.clone()),
            availability_zone: text(&record, "availability_zone"),
            name: text(&record, "display_name"),
            description: text(&record, "display_description"),
            container: Some(container),
            status: BackupStatus::Available,
            fail_reason: None,
            service_metadata: prefix,
            service: Some(settings.repository.driver().to_owned()),
            size,
            object_count: record
                .get("object_count")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            parent_id: text(&record, "parent_id").and_then(|p| BackupId::parse(&p)),
            num_dependent_backups: 0,
            data_timestamp: time(&record, "data_timestamp"),
            restore_volume_id: None,
            created_at: now,
            updated_at: Some(now),
            metadata: Default::default(),
            encryption_key_id: text(&record, "encryption_key_id"),
        };
        // The objects must be there and readable before the record says so.
        let location = super::backup_work::location_of(&imported);
        settings
            .repository
            .manifest(location)
            .await
            .map_err(|e| invalid(format!("The backup's data cannot be read: {e}")))?;
        let owner = QuotaOwner {
            project_id: caller.project_id.clone(),
            type_name: String::new(),
            defaults: self.settings.quota_defaults.clone(),
        };
        let revive = existing.is_some();
        let request = ImportedBackup {
            backup: imported.clone(),
            revive,
        };
        match self.store.import_backup(&request, &owner).await? {
            Outcome::Done(()) => Ok(imported),
            Outcome::Refused(ImportRefusal::OverQuota(over)) => Err(DomainError::OverQuota(over)),
            Outcome::Refused(ImportRefusal::NoSuchParent) => Err(invalid_input(format!(
                "Provided backup record names a parent backup {} that is not a backup of \
                 this project: import the parent first.",
                imported
                    .parent_id
                    .map(|p| p.to_string())
                    .unwrap_or_default()
            ))),
            _ => Err(invalid("Backup already exists in database.")),
        }
    }
}
