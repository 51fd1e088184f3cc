//! Volume transfers: offer an `available` volume to another project, list and withdraw
//! offers, and accept one with its key, under Cinder's `volume:*_transfer` rules.

use super::transfer_keys::Holder;
use super::Service;
use crate::domain::ids::{TransferId, VolumeId};
use crate::domain::paging::Page;
use crate::domain::quota::QuotaOwner;
use crate::domain::refusal::TransferRefusal;
use crate::domain::transfer::{key_opens, NewTransfer, Transfer, TransferFilters, TransferSortKey};
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::{rules, Target};
use crate::store::{Recipient, TransferSecret};

fn not_found(id: TransferId) -> DomainError {
    DomainError::TransferNotFound(id.to_string())
}

/// A refused transfer change, with Cinder's reason.
fn refused(refusal: TransferRefusal, id: Option<TransferId>, volume: VolumeId) -> DomainError {
    match refusal {
        TransferRefusal::OverQuota(over) => DomainError::OverQuota(over),
        TransferRefusal::SnapshotNotAvailable(snapshot) => DomainError::TransferRefused(format!(
            "Invalid snapshot: snapshot: {snapshot} status must be available"
        )),
        TransferRefusal::VolumeStatus(_) => DomainError::TransferRefused(match id {
            None => "Invalid volume: status must be available".to_owned(),
            Some(id) => format!(
                "Invalid volume: Transfer {id}: Volume id {volume} expected in \
                 awaiting-transfer state."
            ),
        }),
    }
}

impl Service {
    pub async fn create_transfer(
        &self,
        caller: &RequestContext,
        volume_id: VolumeId,
        name: Option<String>,
        no_snapshots: bool,
        allow_encrypted: bool,
    ) -> Result<NewTransfer, DomainError> {
        let volume = self
            .volume_under_rule(caller, volume_id, rules::TRANSFER_CREATE)
            .await?;
        if volume.encryption_key_id.is_some() {
            if !allow_encrypted {
                return Err(DomainError::TransferRefused(
                    "Invalid volume: transferring encrypted volume is not supported".to_owned(),
                ));
            }
            if no_snapshots {
                return Err(DomainError::TransferRefused(
                    "Invalid volume: transferring an encrypted volume without its snapshots \
                     is not supported"
                        .to_owned(),
                ));
            }
        }
        let offer = NewTransfer::offer(
            volume_id,
            name,
            no_snapshots,
            volume.project_id.clone(),
            self.clock.now(),
        )
        .map_err(|detail| DomainError::Interrupted {
            what: "transfer key generation",
            detail,
        })?;
        let (owner, service) = (Holder::Caller(caller), Holder::Service);
        let key = volume.encryption_key_id.as_deref();
        let moving = self.copy_key_for_transfer(key, owner, service).await?;
        let outcome = match self.store.insert_transfer(&offer).await {
            Ok(Outcome::Done(())) => {
                self.finish_key_move(volume_id, moving, owner).await?;
                return Ok(offer);
            }
            Ok(Outcome::Gone) => Err(super::volume_not_found(volume_id)),
            Ok(Outcome::Refused(refusal)) => Err(refused(refusal, None, volume_id)),
            Err(err) => Err(err.into()),
        };
        self.drop_moving_key(moving, service).await;
        outcome
    }

    /// An open transfer of the caller's project (any project's, for admins).
    async fn visible_transfer(
        &self,
        caller: &RequestContext,
        id: TransferId,
    ) -> Result<TransferSecret, DomainError> {
        let found = self
            .store
            .get_transfer(id)
            .await?
            .ok_or_else(|| not_found(id))?;
        if caller.is_project_scoped() && found.transfer.source_project_id != caller.project_id {
            return Err(not_found(id));
        }
        Ok(found)
    }

    pub async fn get_transfer(
        &self,
        caller: &RequestContext,
        id: TransferId,
    ) -> Result<Transfer, DomainError> {
        self.policy
            .enforce(rules::TRANSFER_GET, caller, &Target::caller(caller))?;
        Ok(self.visible_transfer(caller, id).await?.transfer)
    }

    pub async fn list_transfers(
        &self,
        caller: &RequestContext,
        mut filters: TransferFilters,
        all_tenants: bool,
        page: &Page<TransferSortKey>,
    ) -> Result<Vec<Transfer>, DomainError> {
        self.policy
            .enforce(rules::TRANSFER_GET_ALL, caller, &Target::caller(caller))?;
        filters.project_id = caller.listing_project(all_tenants, None);
        if let Some(marker) = page.marker {
            let found = self.store.get_transfer(marker.into()).await?;
            let owner = found
                .as_ref()
                .map(|t| t.transfer.source_project_id.as_str());
            super::check_marker(marker, owner, filters.project_id.as_ref())?;
        }
        Ok(self.store.list_transfers(&filters, page).await?)
    }

    /// Withdraws an offer; the volume is `available` again.
    pub async fn delete_transfer(
        &self,
        caller: &RequestContext,
        id: TransferId,
    ) -> Result<(), DomainError> {
        let found = self.visible_transfer(caller, id).await?;
        self.policy.enforce(
            rules::TRANSFER_DELETE,
            caller,
            &Target::project(&found.transfer.source_project_id),
        )?;
        let volume_id = found.transfer.volume_id;
        // The key goes back from the service's keeping to the caller's project.
        let volume = self.store.get_volume_brief(volume_id).await?;
        let key = volume.and_then(|v| v.encryption_key_id);
        let (service, owner) = (Holder::Service, Holder::Caller(caller));
        let moving = self
            .copy_key_for_transfer(key.as_deref(), service, owner)
            .await?;
        match self
            .store
            .delete_transfer(id, volume_id, self.clock.now())
            .await
        {
            Ok(Outcome::Done(())) => self.finish_key_move(volume_id, moving, service).await,
            Ok(Outcome::Gone | Outcome::Refused(_)) => {
                self.drop_moving_key(moving, owner).await;
                Err(not_found(id))
            }
            Err(err) => {
                self.drop_moving_key(moving, owner).await;
                Err(err.into())
            }
        }
    }

    /// Takes the volume into the caller's project with the offer's key.
    pub async fn accept_transfer(
        &self,
        caller: &RequestContext,
        id: TransferId,
        auth_key: &str,
    ) -> Result<Transfer, DomainError> {
        self.policy
            .enforce(rules::TRANSFER_ACCEPT, caller, &Target::caller(caller))?;
        // Any project may accept: the offer is found whoever made it.
        let found = self
            .store
            .get_transfer(id)
            .await?
            .ok_or_else(|| not_found(id))?;
        if !key_opens(&found.salt, &found.crypt_hash, auth_key) {
            return Err(DomainError::InvalidAuthKey(id.to_string()));
        }
        let volume_id = found.transfer.volume_id;
        let volume = self
            .store
            .get_volume_brief(volume_id)
            .await?
            .ok_or_else(|| super::volume_not_found(volume_id))?;
        let recipient = Recipient {
            user_id: caller.user_id.clone(),
            owner: QuotaOwner {
                project_id: caller.project_id.clone(),
                type_name: volume.volume_type_name.clone().unwrap_or_default(),
                defaults: self.settings.quota_defaults.clone(),
            },
        };
        // The key leaves the service's keeping for the accepting project.
        let (service, taker) = (Holder::Service, Holder::Caller(caller));
        let key = volume.encryption_key_id.as_deref();
        let moving = self.copy_key_for_transfer(key, service, taker).await?;
        let outcome = match self
            .store
            .accept_transfer(id, volume_id, &recipient, self.clock.now())
            .await
        {
            Ok(Outcome::Done(transfer)) => {
                self.finish_key_move(volume_id, moving, service).await?;
                return Ok(transfer);
            }
            Ok(Outcome::Gone) => Err(not_found(id)),
            Ok(Outcome::Refused(refusal)) => Err(refused(refusal, Some(id), volume_id)),
            Err(err) => Err(err.into()),
        };
        self.drop_moving_key(moving, taker).await;
        outcome
    }
}
