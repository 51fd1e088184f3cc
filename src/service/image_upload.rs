//! `os-volume_upload_image`: a volume's data becomes a Glance image. The image record is
//! made while the caller waits (a refusal from Glance is the caller's 400); the data then
//! flows while the volume is `uploading`, converted by `qemu-img` when the image is not
//! raw. The volume then returns to the status its attachments give it; a failed upload
//! deletes the image and leaves a user message.

use std::sync::Arc;

use axum::body::Bytes;
use serde_json::{Map, Value};
use tokio::io::{AsyncSeekExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::Service;
use crate::backend::Backend;
use crate::domain::ids::VolumeId;
use crate::domain::image_properties::is_reserved_property;
use crate::domain::message::{action, detail, Action, Detail, Message};
use crate::domain::volume::Volume;
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::image::{qemu, Scratch};
use crate::policy::{rules, Target};

/// An upload as the API received it (formats already checked against Cinder's lists).
#[derive(Debug, Clone)]
pub struct UploadImage {
    pub image_name: String,
    pub force: bool,
    pub disk_format: String,
    pub container_format: String,
    /// Given at 3.1 and later.
    pub visibility: Option<String>,
    pub protected: Option<bool>,
    pub auth_token: Option<String>,
}

/// What the caller is told: the volume (now `uploading`) and Glance's new image record.
#[derive(Debug, Clone)]
pub struct UploadStarted {
    pub volume: Volume,
    pub image: Value,
}

/// Cinder's `glance_core_properties`: image metadata keys not copied to a new image.
const CORE_PROPERTIES: &[&str] = &[
    "checksum",
    "container_format",
    "disk_format",
    "image_name",
    "image_id",
    "min_disk",
    "min_ram",
    "name",
    "size",
];

/// Every failed upload's user message (Cinder's, whatever the cause: the log says it).
const UPLOAD_FAILED: (Action, Detail) = (
    action::COPY_VOLUME_TO_IMAGE,
    detail::FAILED_TO_UPLOAD_VOLUME,
);

const ENCRYPTED_FORMATS: &str = "An encrypted volume uploaded as an image must use 'raw' \
disk_format and 'bare' container_format, which are the defaults for these options.";

/// The image record Cinder asks Glance for: the request's fields, then the volume's own
/// image metadata (custom keys only, none reserved, none already set).
fn image_fields(
    request: &UploadImage,
    volume_image_metadata: &std::collections::BTreeMap<String, String>,
    encryption_key_id: Option<&str>,
    reserved: &[String],
) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("name".into(), request.image_name.clone().into());
    fields.insert("disk_format".into(), request.disk_format.clone().into());
    fields.insert(
        "container_format".into(),
        request.container_format.clone().into(),
    );
    if let Some(visibility) = &request.visibility {
        fields.insert("visibility".into(), visibility.clone().into());
    }
    if let Some(protected) = request.protected {
        fields.insert("protected".into(), protected.into());
    }
    if let Some(key) = encryption_key_id {
        fields.insert("cinder_encryption_key_id".into(), key.into());
        fields.insert(
            "cinder_encryption_key_deletion_policy".into(),
            "on_image_deletion".into(),
        );
    }
    for (key, value) in volume_image_metadata {
        let left_out =
            is_reserved_property(key, reserved) || CORE_PROPERTIES.contains(&key.as_str());
        if !left_out && !fields.contains_key(key) {
            fields.insert(key.clone(), value.clone().into());
        }
    }
    fields
}

impl Service {
    pub async fn upload_volume_to_image(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        request: UploadImage,
        request_id: Option<String>,
    ) -> Result<UploadStarted, DomainError> {
        let volume = self.get_volume(caller, id).await?;
        let target = Target::project(&volume.project_id);
        self.policy.enforce(rules::UPLOAD_IMAGE, caller, &target)?;
        if request.visibility.as_deref() == Some("public") {
            self.policy.enforce(rules::UPLOAD_PUBLIC, caller, &target)?;
        }
        let encrypted = volume.encryption_key_id.is_some();
        if encrypted && (request.disk_format != "raw" || request.container_format != "bare") {
            return Err(DomainError::ImageRefused(ENCRYPTED_FORMATS.to_owned()));
        }
        let glance = self.glance()?;
        // Cinder ignores `force` unless the deployment enables it.
        let force = request.force && self.settings.enable_force_upload;
        match self.store.begin_upload(id, force, self.clock.now()).await? {
            Outcome::Done(()) => {}
            Outcome::Gone => return Err(super::volume_not_found(id)),
            Outcome::Refused(_) => {
                let statuses = if force {
                    "available or in-use"
                } else {
                    "available"
                };
                return Err(DomainError::ImageRefused(format!(
                    "Invalid volume: Volume {id} status must be {statuses}"
                )));
            }
        }
        let token = request.auth_token.clone();
        // The image gets a key of its own (Cinder clones it): the volume's goes with the
        // volume.
        let key = match &volume.encryption_key_id {
            Some(key) => match self.copy_key(token.as_deref(), key).await {
                Ok(copy) => Some(copy),
                Err(err) => {
                    self.store.end_upload(id, None, self.clock.now()).await?;
                    return Err(err);
                }
            },
            None => None,
        };
        let reserved = &self.settings.image_rules.reserved_namespaces;
        let fields = image_fields(&request, &volume.image_metadata, key.as_deref(), reserved);
        let image = match glance.create(token.as_deref(), &fields).await {
            Ok(image) => image,
            Err(err) => {
                self.store.end_upload(id, None, self.clock.now()).await?;
                self.forget_key(token.as_deref(), key.as_deref()).await;
                return Err(DomainError::ImageRefused(err.to_string()));
            }
        };
        let image_id = image["id"].as_str().unwrap_or_default().to_owned();
        let driver = self.backend_of(&volume)?.driver.clone();
        let service = self.clone();
        let (project, disk_format) = (volume.project_id.clone(), request.disk_format);
        let storage = volume.storage_id();
        crate::origin::spawn(async move {
            let sent = service
                .send_volume(&driver, storage, &image_id, &disk_format, token.as_deref())
                .await;
            let token = token.as_deref();
            if sent.is_err() {
                service.forget_key(token, key.as_deref()).await;
            }
            service
                .finish_upload(id, &image_id, token, sent, project, request_id)
                .await;
        });
        let volume = self
            .store
            .get_volume(id)
            .await?
            .ok_or_else(|| super::volume_not_found(id))?;
        Ok(UploadStarted { volume, image })
    }

    async fn finish_upload(
        &self,
        id: VolumeId,
        image_id: &str,
        token: Option<&str>,
        sent: Result<(), String>,
        project_id: String,
        request_id: Option<String>,
    ) {
        let message = match sent {
            Ok(()) => None,
            Err(why) => {
                tracing::warn!(volume_id = %id, image_id, error = %why, "uploading a volume to an image failed");
                if let Ok(glance) = self.glance() {
                    if let Err(err) = glance.delete(token, image_id).await {
                        tracing::warn!(image_id, error = %err, "could not delete the failed image");
                    }
                }
                let now = self.clock.now();
                Some(Message::volume_error(
                    id,
                    project_id,
                    request_id,
                    UPLOAD_FAILED,
                    now,
                ))
            }
        };
        if let Err(err) = self
            .store
            .end_upload(id, message.as_ref(), self.clock.now())
            .await
        {
            tracing::error!(volume_id = %id, error = %err, "could not end the upload");
        }
    }

    /// A volume left `uploading` by a stopped service gets its status back, with a
    /// message saying the upload did not finish. Whether it was handled.
    pub(super) async fn upload_interrupted(&self, volume: &Volume) -> Result<bool, DomainError> {
        tracing::warn!(volume_id = %volume.id, "the service stopped while the volume was being uploaded");
        let now = self.clock.now();
        let project = volume.project_id.clone();
        let message = Message::volume_error(volume.id, project, None, UPLOAD_FAILED, now);
        let ended = self
            .store
            .end_upload(volume.id, Some(&message), now)
            .await?;
        Ok(ended == Outcome::Done(()))
    }

    /// The volume's data into Glance's image `image_id`: raw as it is read, any other
    /// format through the conversion directory.
    async fn send_volume(
        &self,
        driver: &Arc<dyn Backend>,
        id: VolumeId,
        image_id: &str,
        disk_format: &str,
        token: Option<&str>,
    ) -> Result<(), String> {
        let glance = self.glance().map_err(|e| e.to_string())?;
        if self.settings.image_rules.conversion_disabled && disk_format != "raw" {
            return Err(format!(
                "image conversion is disabled and the upload asks for {disk_format}, not raw"
            ));
        }
        let (tx, rx) = mpsc::channel(8);
        if disk_format == "raw" {
            let reading = spawn_reader(driver, id, tx);
            let uploaded = glance.upload(token, image_id, rx).await;
            reading.await.map_err(|e| e.to_string())??;
            return uploaded.map_err(|e| e.to_string());
        }
        let dir = &self.settings.image_conversion_dir;
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| format!("the conversion directory {}: {e}", dir.display()))?;
        let raw = Scratch(dir.join(format!("{id}.upload.raw")));
        let reading = spawn_reader(driver, id, tx);
        save_stream(rx, &raw.0).await?;
        reading.await.map_err(|e| e.to_string())??;
        // Cinder's safety check of what it converts: a volume whose bytes are an image
        // that names other files is not uploaded (qemu-img reads it as raw regardless).
        let head = crate::image::checked::read_head(&raw.0).await?;
        crate::image::inspect::check_found(&head, &self.settings.image_rules)
            .map_err(|refusal| format!("the volume's data failed the safety check: {refusal}"))?;
        let converted = Scratch(dir.join(format!("{id}.upload.{disk_format}")));
        let format = qemu::output_format(disk_format);
        let limit = self.settings.image_conversion_timeout;
        qemu::convert(&raw.0, "raw", &converted.0, format, limit).await?;
        drop(raw);
        let (tx, rx) = mpsc::channel(8);
        let path = converted.0.clone();
        let feeding = tokio::spawn(async move {
            crate::backend::data::read_file(&path, tx)
                .await
                .map_err(|e| e.to_string())
        });
        let uploaded = glance.upload(token, image_id, rx).await;
        feeding.await.map_err(|e| e.to_string())??;
        uploaded.map_err(|e| e.to_string())
    }
}

type Chunks = mpsc::Sender<Result<Bytes, std::io::Error>>;

/// Reads the volume into `tx`; a failed read also ends the stream with an error, so the
/// upload it feeds fails instead of sending a short image.
fn spawn_reader(
    driver: &Arc<dyn Backend>,
    id: VolumeId,
    tx: Chunks,
) -> tokio::task::JoinHandle<Result<(), String>> {
    let driver = driver.clone();
    tokio::spawn(async move {
        let feeder = tx.clone();
        let read = driver.read_data(id, tx).await.map_err(|e| e.to_string());
        if let Err(why) = &read {
            let _ = feeder.send(Err(std::io::Error::other(why.clone()))).await;
        }
        read
    })
}

async fn save_stream(
    mut rx: mpsc::Receiver<Result<Bytes, std::io::Error>>,
    path: &std::path::Path,
) -> Result<(), String> {
    let failed = |e: std::io::Error| format!("writing {}: {e}", path.display());
    let mut file = tokio::fs::File::create(path).await.map_err(failed)?;
    let mut length = 0u64;
    while let Some(chunk) = rx.recv().await {
        let chunk = chunk.map_err(|e| e.to_string())?;
        // Zeros stay holes: a mostly empty volume costs little scratch space.
        if crate::backend::data::is_zero(&chunk) {
            file.seek(std::io::SeekFrom::Current(chunk.len() as i64))
                .await
                .map_err(failed)?;
        } else {
            file.write_all(&chunk).await.map_err(failed)?;
        }
        length += chunk.len() as u64;
    }
    file.set_len(length).await.map_err(failed)?;
    file.flush().await.map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_image_metadata_goes_with_the_image() {
        let request = UploadImage {
            image_name: "backup".into(),
            force: false,
            disk_format: "qcow2".into(),
            container_format: "bare".into(),
            visibility: Some("shared".into()),
            protected: Some(false),
            auth_token: None,
        };
        let metadata = [
            ("image_id", "old"),
            ("checksum", "x"),
            ("hw_disk_bus", "scsi"),
            ("os_glance_importing_to_stores", "a"),
            ("name", "old name"),
            ("cinder_encryption_key_id", "someone else's key"),
            ("cinder_encryption_key_deletion_policy", "on_image_deletion"),
            ("signature_verified", "True"),
            ("img_signature", "sig"),
            ("site_secret", "s"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let fields = image_fields(&request, &metadata, None, &["site_".to_owned()]);
        let mut keys: Vec<_> = fields.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "container_format",
                "disk_format",
                "hw_disk_bus",
                "name",
                "protected",
                "visibility"
            ]
        );
        assert_eq!(fields["name"], "backup");
        let fields = image_fields(&request, &metadata, Some("k1"), &[]);
        assert_eq!(fields["cinder_encryption_key_id"], "k1");
        assert_eq!(
            fields["cinder_encryption_key_deletion_policy"],
            "on_image_deletion"
        );
        assert_eq!(fields["site_secret"], "s");
    }
}
