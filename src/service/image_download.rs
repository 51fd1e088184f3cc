//! Volumes made from Glance images. The create checks the image as Cinder's API does
//! (found, `active`, fits the size and `min_disk`) and answers at once; the data then
//! flows while the volume is `downloading`: a raw image straight into the volume (its
//! first bytes inspected before any is written), any other format through a file in the
//! conversion directory, inspected (`image::checked`) before `qemu-img` converts it. The
//! data is checked against the hash Glance recorded; a failure removes what was written
//! and leaves the volume in `error` with Cinder's fixed user message (why, in the log).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use axum::body::Bytes;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use super::Service;
use crate::backend::Backend;
use crate::domain::encryption::LuksCipher;
use crate::domain::ids::{VolumeId, VolumeTypeId};
use crate::domain::message::{action, detail, Detail, Message};
use crate::domain::volume::VolumeStatus;
use crate::domain::{DomainError, Outcome};
use crate::image::checked::{self, ImageFault};
use crate::image::digest::Verifier;
use crate::image::glance::Download;
use crate::image::inspect::{self, Format, Refusal};
use crate::image::{qemu, Glance, GlanceError, ImageInfo, Scratch};

const GIB: u64 = 1 << 30;

/// Cinder's answer when `imageRef` names nothing the caller can read.
const IMAGE_NOT_USABLE: &str = "Invalid image identifier or unable to access requested image.";

/// How many chunks may wait between the network and the volume (memory stays small).
const CHUNKS_IN_FLIGHT: usize = 8;

/// Bytes of a raw image held back until its format is known: every magic number the
/// inspector looks for lies within them.
const RAW_HEAD: usize = 512;

/// Cinder's `check_image_metadata`: the image is `active`, its data and virtual size fit
/// the volume, and the volume is at least the image's `min_disk`.
pub(super) fn check_image_fits(image: &ImageInfo, size: i64) -> Result<(), DomainError> {
    let refuse = |why: String| {
        Err(DomainError::ImageRefused(format!(
            "Invalid input received: {why}"
        )))
    };
    if image.status != "active" {
        return refuse(format!("Image {} is not active.", image.id));
    }
    let size_gb = size.max(0) as u64;
    let image_gb = image.size.unwrap_or(0).div_ceil(GIB);
    if image_gb > size_gb {
        return refuse(format!(
            "Size of specified image {image_gb}GB is larger than volume size {size}GB."
        ));
    }
    if size < image.min_disk {
        return refuse(format!(
            "Volume size {size}GB cannot be smaller than the image minDisk size {}GB.",
            image.min_disk
        ));
    }
    if let Some(virtual_size) = image.virtual_size {
        let virtual_gb = virtual_size.div_ceil(GIB);
        if virtual_gb > size_gb {
            return Err(DomainError::ImageRefused(format!(
                "Image {} is unacceptable: Image virtual size is {virtual_gb}GB and doesn't fit \
                 in a volume of size {size}GB.",
                image.id
            )));
        }
    }
    Ok(())
}

/// What Cinder keeps of the image as the volume's image metadata: its custom properties,
/// then its id, name and core attributes.
pub(super) fn image_metadata_of(image: &ImageInfo) -> BTreeMap<String, String> {
    let mut metadata = image.properties.clone();
    metadata.insert("image_id".into(), image.id.clone());
    if let Some(name) = image.name.as_ref().filter(|n| !n.is_empty()) {
        metadata.insert("image_name".into(), name.clone());
    }
    let core = [
        ("checksum", image.checksum.clone()),
        ("container_format", image.container_format.clone()),
        ("disk_format", image.disk_format.clone()),
        ("min_disk", Some(image.min_disk.to_string())),
        ("min_ram", Some(image.min_ram.to_string())),
        ("size", image.size.map(|s| s.to_string())),
    ];
    for (key, value) in core {
        if let Some(value) = value {
            metadata.insert(key.into(), value);
        }
    }
    metadata
}

fn glance_failed(err: GlanceError) -> String {
    err.to_string()
}

impl Service {
    pub(super) fn glance(&self) -> Result<&Glance, DomainError> {
        self.settings.glance.as_deref().ok_or_else(|| {
            DomainError::ImageRefused(
                "No image service is configured ([glance] api_servers).".to_owned(),
            )
        })
    }

    /// Cinder's `_image_uuid_from_ref`: the last segment of a URL, an id the caller can
    /// read, else a name that names one image. Anything else is Cinder's 400.
    pub(super) async fn resolve_image(
        &self,
        token: Option<&str>,
        image_ref: &str,
    ) -> Result<ImageInfo, DomainError> {
        let glance = self.glance()?;
        let id = image_ref.rsplit('/').next().unwrap_or(image_ref);
        if uuid::Uuid::parse_str(id).is_ok() {
            match glance.show(token, id).await {
                Ok(image) => return Ok(image),
                Err(err) => tracing::info!(image = id, error = %err, "image not found by id"),
            }
        }
        let found = glance
            .find_by_name(token, image_ref)
            .await
            .unwrap_or_default();
        if found.len() > 1 {
            return Err(DomainError::ImageNameAmbiguous(image_ref.to_owned()));
        }
        if let Some(id) = found.first() {
            if let Ok(image) = glance.show(token, id).await {
                return Ok(image);
            }
        }
        Err(DomainError::ImageRefused(IMAGE_NOT_USABLE.to_owned()))
    }

    /// Creates the volume's storage and fills it from `image`; the volume ends
    /// `available` and bootable, or in `error` with nothing of it left on the backend.
    pub(super) async fn fill_from_image(
        &self,
        id: VolumeId,
        size: i64,
        image: ImageInfo,
        token: Option<String>,
        project_id: String,
        request_id: Option<String>,
    ) {
        let result = self
            .download_image(id, size, &image, token.as_deref())
            .await;
        let now = self.clock.now();
        let fault = match result {
            Ok(driver) => {
                let metadata = image_metadata_of(&image);
                match self.store.finish_image_download(id, &metadata, now).await {
                    Ok(Outcome::Done(())) => return,
                    // Deleted (forced) while the data flowed: nothing may stay behind.
                    Ok(Outcome::Gone) => {
                        let _ = driver.delete_volume(id).await;
                        return;
                    }
                    // Another status set meanwhile (an admin's reset, a delete under
                    // way): that operation owns the volume and its data now.
                    Ok(Outcome::Refused(refusal)) => {
                        tracing::warn!(volume_id = %id, status = %refusal.0, "the volume changed status while its image downloaded");
                        return;
                    }
                    Err(err) => ImageFault::Failed(err.to_string()),
                }
            }
            Err(fault) => fault,
        };
        tracing::warn!(volume_id = %id, image_id = %image.id, error = %fault, "creating a volume from an image failed");
        let why = (action::COPY_IMAGE_TO_VOLUME, fault_detail(&fault));
        let message = Message::volume_error(id, project_id, request_id, why, now);
        if let Err(err) = self.store.fail_volume_creation(id, &message).await {
            tracing::error!(volume_id = %id, error = %err, "could not record the failed image copy");
        }
    }

    /// The data part of `fill_from_image`: the backend whose volume holds the image, or
    /// why it does not (what was written is removed).
    async fn download_image(
        &self,
        id: VolumeId,
        size: i64,
        image: &ImageInfo,
        token: Option<&str>,
    ) -> Result<Arc<dyn Backend>, ImageFault> {
        let volume = self
            .store
            .get_volume_brief(id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the volume went away")?;
        let driver = self
            .backend_of(&volume)
            .map_err(|e| e.to_string())?
            .driver
            .clone();
        // An image uploaded from an encrypted volume is already that volume's LUKS
        // container, and the new volume's key is a copy of its key: the bytes are copied
        // as they are (Cinder's `copy_image_to_volume`). A plain image is encrypted on
        // the way in.
        let luks = match &volume.encryption_key_id {
            Some(_) if image.encryption_key_id().is_some() => None,
            Some(key_id) => Some(self.luks_of(volume.volume_type_id, key_id, token).await?),
            None => None,
        };
        // A raw image in storage the backend reaches becomes the volume's parent: no
        // data moves, and the volume goes from `creating` to `available` (as in Cinder;
        // not for an encrypted volume).
        let encrypted = volume.encryption_key_id.is_some();
        if !encrypted && image.disk_format.as_deref() == Some("raw") {
            let cloned = driver.clone_image(id, &image.locations, size as u64).await;
            if cloned.map_err(|e| e.to_string())? {
                return Ok(driver);
            }
        }
        driver
            .create_volume(id, size as u64)
            .await
            .map_err(|e| e.to_string())?;
        let now = self.clock.now();
        let moved = self
            .store
            .transition_volume(id, VolumeStatus::Creating, VolumeStatus::Downloading, now)
            .await;
        let copied = match moved {
            Ok(Outcome::Done(())) => {
                let copy = self.copy_image(&driver, id, size, image, token, luks.as_ref());
                copy.await
            }
            Ok(_) => Err(ImageFault::Failed(
                "the volume changed while it was being created".to_owned(),
            )),
            Err(err) => Err(ImageFault::Failed(err.to_string())),
        };
        if let Err(why) = copied {
            if let Err(err) = driver.delete_volume(id).await {
                tracing::warn!(volume_id = %id, error = %err, "could not remove a half-written volume");
            }
            return Err(why);
        }
        Ok(driver)
    }

    /// How an encrypted volume's data is written: its type's cipher and its key's
    /// passphrase (Cinder's `check_encryption_provider`, then the key manager).
    pub(super) async fn luks_of(
        &self,
        volume_type: VolumeTypeId,
        key_id: &str,
        token: Option<&str>,
    ) -> Result<Luks, String> {
        let encryption = self
            .store
            .get_encryption(volume_type)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the volume's type has no encryption any more.")?;
        let cipher = encryption.specs.luks_cipher()?;
        let passphrase = self
            .settings
            .key_manager
            .passphrase(token, key_id)
            .await
            .map_err(|e| format!("the volume's key {key_id}: {e}."))?;
        Ok(Luks { cipher, passphrase })
    }

    pub(super) async fn copy_image(
        &self,
        driver: &Arc<dyn Backend>,
        id: VolumeId,
        size: i64,
        image: &ImageInfo,
        token: Option<&str>,
        luks: Option<&Luks>,
    ) -> Result<(), ImageFault> {
        let container = image.container_format.as_deref().unwrap_or("bare");
        if container != "bare" {
            return Err(format!(
                "the image's container format {container} is not supported (only bare)."
            )
            .into());
        }
        let disk_format = image
            .disk_format
            .as_deref()
            .ok_or("the image has no disk format.")?;
        let rules = &self.settings.image_rules;
        // Refused before a byte is fetched: a format no inspector reads, or one that needs
        // a conversion the deployment forbids.
        let declared = inspect::admissible(disk_format, rules)?;
        let verifier = Verifier::for_image(image)?;
        let glance = self.glance().map_err(|e| e.to_string())?;
        let download = glance
            .download(token, &image.id)
            .await
            .map_err(glance_failed)?;
        if luks.is_none() && declared == Format::Raw {
            return self.stream_raw(driver, id, image, download, verifier).await;
        }
        let dir = &self.settings.image_conversion_dir;
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| format!("the conversion directory {}: {e}", dir.display()))?;
        let fetched = Scratch(dir.join(format!("{id}.{disk_format}")));
        save(download, verifier, image, &fetched.0).await?;
        let checked = checked::check_file(&fetched.0, disk_format, rules).await?;
        if checked.virtual_size > size as u64 * GIB {
            return Err(format!(
                "the image's virtual size of {} bytes does not fit in the volume's {size} GiB.",
                checked.virtual_size
            )
            .into());
        }
        let from = checked.format.qemu_name();
        let limit = self.settings.image_conversion_timeout;
        if let Some(luks) = luks {
            // Cinder's `_encrypt_image`: the data goes in as a LUKS container the host
            // opens with the volume's key.
            let passphrase = Scratch(dir.join(format!("{id}.passphrase")));
            write_private(&passphrase.0, &luks.passphrase).await?;
            let encrypted = Scratch(dir.join(format!("{id}.luks")));
            qemu::convert_to_luks(
                &fetched.0,
                from,
                &encrypted.0,
                &luks.cipher,
                &passphrase.0,
                limit,
            )
            .await?;
            drop((passphrase, fetched));
            let length = tokio::fs::metadata(&encrypted.0)
                .await
                .map_err(|e| e.to_string())?
                .len();
            if length > size as u64 * GIB {
                return Err(format!(
                    "the image encrypted ({length} bytes with its LUKS header) does not fit in the volume's {size} GiB."
                )
                .into());
            }
            return Ok(write_file_into(driver, id, &encrypted.0).await?);
        }
        if let Some(volume_file) = driver.local_path(id) {
            // A volume that is a file here: qemu-img writes it in place.
            return Ok(qemu::convert_into_raw(&fetched.0, from, &volume_file, limit).await?);
        }
        let raw = Scratch(dir.join(format!("{id}.raw")));
        qemu::convert(&fetched.0, from, &raw.0, "raw", limit).await?;
        drop(fetched);
        Ok(write_file_into(driver, id, &raw.0).await?)
    }

    /// A raw image, from the network into the volume, checked as it passes; its first
    /// bytes are held back until they show it is raw indeed.
    async fn stream_raw(
        &self,
        driver: &Arc<dyn Backend>,
        id: VolumeId,
        image: &ImageInfo,
        mut download: Download,
        mut verifier: Verifier,
    ) -> Result<(), ImageFault> {
        let disk_format = image.disk_format.as_deref().unwrap_or("raw");
        let rules = &self.settings.image_rules;
        let (tx, rx) = mpsc::channel(CHUNKS_IN_FLIGHT);
        let writer = spawn_writer(driver, id, rx);
        let mut received = 0u64;
        let pumped: Result<(), ImageFault> = async {
            let mut head = Some(Vec::with_capacity(RAW_HEAD));
            while let Some(chunk) = download.chunk().await.map_err(glance_failed)? {
                verifier.update(&chunk);
                received += chunk.len() as u64;
                let chunk = match head.as_mut() {
                    None => chunk,
                    Some(held) => {
                        held.extend_from_slice(&chunk);
                        if held.len() < RAW_HEAD {
                            continue;
                        }
                        inspect::check(held, disk_format, rules)?;
                        Bytes::from(head.take().unwrap_or_default())
                    }
                };
                if tx.send(chunk).await.is_err() {
                    return Ok(()); // the writer stopped; its error says why
                }
            }
            if let Some(held) = head.filter(|h| !h.is_empty()) {
                // The whole image is shorter than the head.
                inspect::check(&held, disk_format, rules)?;
                let _ = tx.send(Bytes::from(held)).await;
            }
            Ok(())
        }
        .await;
        drop(tx);
        let written = writer.await.map_err(|e| e.to_string())?;
        pumped?;
        written.map_err(|e| e.to_string())?;
        whole(image, received)?;
        Ok(verifier.finish()?)
    }
}

fn spawn_writer(
    driver: &Arc<dyn Backend>,
    id: VolumeId,
    rx: mpsc::Receiver<Bytes>,
) -> tokio::task::JoinHandle<Result<u64, crate::backend::BackendError>> {
    let driver = driver.clone();
    tokio::spawn(async move { driver.write_data(id, rx).await })
}

/// An encrypted volume's cipher and passphrase.
pub(super) struct Luks {
    cipher: LuksCipher,
    passphrase: String,
}

/// Writes `text` to a new file only its owner may read (a passphrase for qemu-img).
async fn write_private(path: &Path, text: &str) -> Result<(), String> {
    let failed = |e: std::io::Error| format!("writing {}: {e}", path.display());
    let mut file = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .await
        .map_err(failed)?;
    file.write_all(text.as_bytes()).await.map_err(failed)?;
    file.flush().await.map_err(failed)
}

/// Writes the raw file at `path` into the volume through the backend.
async fn write_file_into(
    driver: &Arc<dyn Backend>,
    id: VolumeId,
    path: &Path,
) -> Result<(), String> {
    let (tx, rx) = mpsc::channel(CHUNKS_IN_FLIGHT);
    let writer = spawn_writer(driver, id, rx);
    let sent = send_file(path, &tx).await;
    drop(tx);
    let written = writer.await.map_err(|e| e.to_string())?;
    sent?;
    written.map(drop).map_err(|e| e.to_string())
}

/// Whether all of the image came (Glance's `size`, when it gives one).
fn whole(image: &ImageInfo, received: u64) -> Result<(), String> {
    match image.size {
        Some(size) if size != received => Err(format!(
            "the image service sent {received} of the image's {size} bytes."
        )),
        _ => Ok(()),
    }
}

/// Writes the download to `path`, checked as it passes.
async fn save(
    mut download: Download,
    mut verifier: Verifier,
    image: &ImageInfo,
    path: &Path,
) -> Result<(), String> {
    let failed = |e: std::io::Error| format!("writing the image to {}: {e}", path.display());
    // Whole blocks per write: each write of a tokio file is a trip to a blocking thread.
    let file = tokio::fs::File::create(path).await.map_err(failed)?;
    let mut file = tokio::io::BufWriter::with_capacity(crate::backend::data::BLOCK, file);
    let mut received = 0u64;
    while let Some(chunk) = download.chunk().await.map_err(glance_failed)? {
        verifier.update(&chunk);
        received += chunk.len() as u64;
        file.write_all(&chunk).await.map_err(failed)?;
    }
    file.flush().await.map_err(failed)?;
    whole(image, received)?;
    verifier.finish()
}

/// Sends the file at `path` into `tx` in blocks; stops early if the receiver went away.
async fn send_file(path: &Path, tx: &mpsc::Sender<Bytes>) -> Result<(), String> {
    let failed = |e: std::io::Error| format!("reading {}: {e}", path.display());
    let mut file = tokio::fs::File::open(path).await.map_err(failed)?;
    while let Some(block) = crate::backend::data::read_block(&mut file)
        .await
        .map_err(failed)?
    {
        if tx.send(Bytes::from(block)).await.is_err() {
            return Ok(());
        }
    }
    Ok(())
}

/// What the project is told of an image that did not make it into a volume: Cinder's
/// "image format unacceptable" for one the rules refuse to convert, else "unknown error".
pub(super) fn fault_detail(fault: &ImageFault) -> Detail {
    match fault {
        ImageFault::Refused(Refusal::ConversionDisabled(_)) => detail::IMAGE_FORMAT_UNACCEPTABLE,
        _ => detail::UNKNOWN_ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image() -> ImageInfo {
        ImageInfo {
            id: "0f7c3a35-3f5b-4e3d-8a45-5a0e5b4d8f10".into(),
            name: Some("cirros".into()),
            status: "active".into(),
            size: Some(GIB + 1),
            virtual_size: None,
            min_disk: 3,
            min_ram: 64,
            disk_format: Some("qcow2".into()),
            container_format: Some("bare".into()),
            checksum: Some("abc".into()),
            os_hash_algo: None,
            os_hash_value: None,
            properties: [("hw_disk_bus".to_owned(), "scsi".to_owned())].into(),
            locations: Vec::new(),
        }
    }

    fn refusal(result: Result<(), DomainError>) -> String {
        match result {
            Err(DomainError::ImageRefused(why)) => why,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn cinder_checks_size_min_disk_and_status() {
        let why = refusal(check_image_fits(&image(), 1));
        assert!(
            why.ends_with("Size of specified image 2GB is larger than volume size 1GB."),
            "{why}"
        );
        let why = refusal(check_image_fits(&image(), 2));
        assert!(
            why.ends_with("cannot be smaller than the image minDisk size 3GB."),
            "{why}"
        );
        check_image_fits(&image(), 3).unwrap();
        let queued = ImageInfo {
            status: "queued".into(),
            ..image()
        };
        assert!(refusal(check_image_fits(&queued, 3)).contains("is not active"));
        let big = ImageInfo {
            virtual_size: Some(4 * GIB),
            ..image()
        };
        assert!(refusal(check_image_fits(&big, 3)).contains("doesn't fit in a volume of size 3GB"));
    }

    #[test]
    fn image_metadata_holds_core_keys_and_properties() {
        let metadata = image_metadata_of(&image());
        assert_eq!(metadata["image_id"], image().id);
        assert_eq!(metadata["image_name"], "cirros");
        assert_eq!(metadata["min_disk"], "3");
        assert_eq!(metadata["size"], (GIB + 1).to_string());
        assert_eq!(metadata["hw_disk_bus"], "scsi");
        assert_eq!(metadata.len(), 9);
    }
}
