//! `os-reimage` (3.68): an image's data put in place of a volume's, as Cinder's `reimage`
//! for Nova's rebuild of a volume-backed server. The request is checked and answered;
//! the volume is `downloading` while its storage is made anew and filled from the image
//! (inspected as a new volume's image is), then has the status it had before. A volume
//! Nova reserved for the rebuild owes Nova's server a `volume-reimaged` event.

use super::Service;
use crate::domain::error::ReimageError;
use crate::domain::ids::VolumeId;
use crate::domain::message::{action, Message};
use crate::domain::volume::VolumeStatus;
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::image::checked::ImageFault;
use crate::image::ImageInfo;
use crate::policy::{rules, Target};
use crate::store::ReimageRefusal;

impl Service {
    /// `os-reimage`: checks, then spawns the copy and answers.
    pub async fn reimage_volume(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        image_ref: &str,
        reserved_allowed: bool,
    ) -> Result<(), DomainError> {
        let volume = self.get_volume(caller, id).await?;
        let rule = if volume.status == VolumeStatus::Reserved {
            rules::REIMAGE_RESERVED
        } else {
            rules::REIMAGE
        };
        self.policy
            .enforce(rule, caller, &Target::project(&volume.project_id))?;
        let now = self.clock.now();
        match self.store.begin_reimage(id, reserved_allowed, now).await? {
            Outcome::Done(()) => {}
            Outcome::Gone => return Err(super::volume_not_found(id)),
            Outcome::Refused(ReimageRefusal::SeveralServers) => {
                return Err(ReimageError::SeveralServers.into())
            }
            Outcome::Refused(ReimageRefusal::Status(status)) => {
                return Err(ReimageError::Status {
                    volume: id,
                    status,
                    reserved_allowed,
                }
                .into())
            }
        }
        let token = caller.auth_token.clone();
        let checked = async {
            let image = self.resolve_image(token.as_deref(), image_ref).await?;
            super::image_download::check_image_fits(&image, volume.size)?;
            Ok::<ImageInfo, DomainError>(image)
        };
        let image = match checked.await {
            Ok(image) => image,
            Err(err) => {
                self.store.undo_reimage(id, self.clock.now()).await?;
                return Err(err);
            }
        };
        let service = self.clone();
        let project = volume.project_id.clone();
        let request_id = None;
        crate::origin::spawn(async move {
            service
                .fill_reimaged(id, volume.size, image, token, project, request_id)
                .await
        });
        Ok(())
    }

    async fn fill_reimaged(
        &self,
        id: VolumeId,
        size: i64,
        image: ImageInfo,
        token: Option<String>,
        project: String,
        request_id: Option<String>,
    ) {
        let filled = self
            .rewrite_volume(id, size, &image, token.as_deref())
            .await;
        let now = self.clock.now();
        let fault = match filled {
            Ok(()) => {
                let metadata = super::image_download::image_metadata_of(&image);
                let tell = self.settings.nova.as_ref().map(|_| project.as_str());
                match self.store.finish_reimage(id, &metadata, tell, now).await {
                    Ok(Outcome::Done(())) => return,
                    Ok(Outcome::Gone) => return,
                    Ok(Outcome::Refused(refusal)) => {
                        tracing::warn!(volume_id = %id, status = %refusal.0, "the volume changed status while it was re-imaged");
                        return;
                    }
                    Err(err) => ImageFault::Failed(err.to_string()),
                }
            }
            Err(fault) => fault,
        };
        tracing::warn!(volume_id = %id, image_id = %image.id, error = %fault, "re-imaging the volume failed");
        let why = (
            action::REIMAGE_VOLUME,
            super::image_download::fault_detail(&fault),
        );
        let message = Message::volume_error(id, project, request_id, why, now);
        if let Err(err) = self.store.fail_reimage(id, &message).await {
            tracing::error!(volume_id = %id, error = %err, "could not record the failed re-image");
        }
    }

    /// The volume's storage made anew (no host reads it while `downloading`) and filled
    /// from the image, encrypted under the volume's own key when it has one.
    async fn rewrite_volume(
        &self,
        id: VolumeId,
        size: i64,
        image: &ImageInfo,
        token: Option<&str>,
    ) -> Result<(), ImageFault> {
        if image.encryption_key_id().is_some() {
            return Err(ImageFault::Failed(
                "the image is an encrypted volume's, under a key of its own: a volume keeps its \
                 key when re-imaged, so it cannot take it"
                    .to_owned(),
            ));
        }
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
        let luks = match &volume.encryption_key_id {
            Some(key_id) => Some(self.luks_of(volume.volume_type_id, key_id, token).await?),
            None => None,
        };
        // The backend knows the volume by its storage id.
        let storage = volume.storage_id();
        driver
            .delete_volume(storage)
            .await
            .map_err(|e| e.to_string())?;
        driver
            .create_volume(storage, size as u64)
            .await
            .map_err(|e| e.to_string())?;
        self.copy_image(&driver, storage, size, image, token, luks.as_ref())
            .await
    }
}
