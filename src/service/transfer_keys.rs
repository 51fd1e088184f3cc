//! An encrypted volume's key on a transfer (Cinder's `key_transfer`, 3.70+). A Barbican
//! secret belongs to one project, so the key moves with the volume: while the volume is
//! offered, the service's own project holds it; on acceptance it moves to the accepting
//! project, on withdrawal back to the caller's. Each move copies the secret to its new
//! holder first, then records the volume's change, then deletes the old secret: a failure
//! part way leaves the volume naming a secret that exists.

use super::Service;
use crate::domain::ids::VolumeId;
use crate::domain::{DomainError, RequestContext};

/// Who holds (or is to hold) a moving key.
#[derive(Clone, Copy)]
pub(super) enum Holder<'a> {
    /// The caller, by its token.
    Caller(&'a RequestContext),
    /// The service's own project.
    Service,
}

/// A key copied to its next holder, to be named by the volume once the transfer's
/// record changed.
pub(super) struct MovingKey {
    old: String,
    new: String,
}

impl Service {
    async fn token_of(&self, holder: Holder<'_>) -> Result<String, DomainError> {
        match holder {
            Holder::Caller(caller) => caller
                .auth_token
                .clone()
                .ok_or(DomainError::KeyManagerFailed),
            Holder::Service => self.settings.key_manager.own_token().await.map_err(|err| {
                tracing::error!(error = %err, "the service cannot hold a transferred volume's key");
                DomainError::KeyManagerFailed
            }),
        }
    }

    /// Copies the volume's key to its next holder, when keys have owners (Barbican) and
    /// the volume has one; `None` when nothing moves.
    pub(super) async fn copy_key_for_transfer(
        &self,
        key: Option<&str>,
        from: Holder<'_>,
        to: Holder<'_>,
    ) -> Result<Option<MovingKey>, DomainError> {
        let keys = &self.settings.key_manager;
        let Some(key) = key.filter(|_| keys.keys_have_owners()) else {
            return Ok(None);
        };
        let (from_token, to_token) = (self.token_of(from).await?, self.token_of(to).await?);
        let copy = keys.copy_key_between(&from_token, &to_token, key).await;
        let new = copy.map_err(|err| {
            tracing::error!(error = %err, key_id = key, "could not move a transferred volume's key");
            DomainError::KeyManagerFailed
        })?;
        Ok(Some(MovingKey {
            old: key.to_owned(),
            new,
        }))
    }

    /// The transfer's record did not change: the copy goes.
    pub(super) async fn drop_moving_key(&self, moving: Option<MovingKey>, to: Holder<'_>) {
        let Some(moving) = moving else { return };
        let token = self.token_of(to).await.ok();
        self.forget_key(token.as_deref(), Some(&moving.new)).await;
    }

    /// The transfer's record changed: the volume names the copy, and the old secret goes.
    pub(super) async fn finish_key_move(
        &self,
        volume_id: VolumeId,
        moving: Option<MovingKey>,
        from: Holder<'_>,
    ) -> Result<(), DomainError> {
        let Some(moving) = moving else { return Ok(()) };
        if !self
            .store
            .swap_volume_key(volume_id, &moving.old, &moving.new)
            .await?
        {
            tracing::warn!(volume_id = %volume_id, "the volume's key changed during its transfer; the copy is left unused");
            return Ok(());
        }
        let token = self.token_of(from).await.ok();
        self.forget_key(token.as_deref(), Some(&moving.old)).await;
        Ok(())
    }
}
