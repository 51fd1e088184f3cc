//! A volume whose last access change failed part-way (a failed unbind leaves an ACL
//! entry that no session shows) is marked by a file beside the volumes, so every process
//! sharing this tgtd and volume directory sees it: the volume's next change then starts
//! from tgtd's whole state. Reconciliation repairs the volume meanwhile either way.

use std::path::{Path, PathBuf};

use crate::domain::ids::VolumeId;

pub(super) struct Unsettled(PathBuf);

impl Unsettled {
    pub(super) fn of(volumes_dir: &Path, volume_id: VolumeId) -> Self {
        Unsettled(
            volumes_dir
                .join(".tgt-unsettled")
                .join(volume_id.to_string()),
        )
    }

    pub(super) async fn is_marked(&self) -> bool {
        tokio::fs::try_exists(&self.0).await.unwrap_or(false)
    }

    pub(super) async fn mark(&self) {
        let written = match self.0.parent() {
            Some(dir) => match tokio::fs::create_dir_all(dir).await {
                Ok(()) => tokio::fs::write(&self.0, b"").await,
                Err(err) => Err(err),
            },
            None => Ok(()),
        };
        if let Err(err) = written {
            tracing::warn!(mark = %self.0.display(), error = %err,
                "could not mark a volume's export as unsettled");
        }
    }

    pub(super) async fn clear(&self) {
        let _ = tokio::fs::remove_file(&self.0).await;
    }
}
