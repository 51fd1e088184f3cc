//! QoS specs (admin only, as in Cinder): create, list, show, set and unset keys, delete,
//! and their association with volume types.

use super::Service;
use crate::domain::ids::{QosSpecsId, VolumeTypeId};
use crate::domain::paging::Page;
use crate::domain::qos::{Association, Consumer, NewQosSpecs, QosItems, QosSortKey, QosSpecs};
use crate::domain::refusal::{QosAssociationRefusal, QosInUse, QosKeyMissing};
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::{rules, Target};
use crate::store::StoreError;

fn qos_not_found(id: impl std::fmt::Display) -> DomainError {
    DomainError::QosSpecsNotFound(id.to_string())
}

fn qos_id(id: &str) -> Result<QosSpecsId, DomainError> {
    QosSpecsId::parse(id).ok_or_else(|| qos_not_found(id))
}

/// Splits `consumer` off the items, as Cinder does; an unknown consumer is refused.
fn take_consumer(items: &mut QosItems) -> Result<Option<Consumer>, DomainError> {
    match items.remove("consumer") {
        None => Ok(None),
        Some(value) => {
            let text = value.unwrap_or_default();
            Consumer::parse(&text)
                .map(Some)
                .ok_or(DomainError::InvalidQosConsumer(text))
        }
    }
}

impl Service {
    fn may(&self, caller: &RequestContext, rule: &'static str) -> Result<(), DomainError> {
        self.policy.enforce(rule, caller, &Target::caller(caller))
    }

    pub async fn create_qos_specs(
        &self,
        caller: &RequestContext,
        name: &str,
        mut specs: QosItems,
    ) -> Result<QosSpecs, DomainError> {
        self.may(caller, rules::QOS_CREATE)?;
        let name = name.trim();
        if name.is_empty() {
            return Err(DomainError::QosNameEmpty);
        }
        let given = take_consumer(&mut specs)?;
        let new = NewQosSpecs {
            id: QosSpecsId::generate(),
            name: name.to_owned(),
            consumer: given.unwrap_or(Consumer::BackEnd),
            consumer_given: given.is_some(),
            specs,
            created_at: self.clock.now(),
        };
        match self.store.create_qos_specs(&new).await {
            Ok(()) => {}
            Err(StoreError::Conflict(_)) => return Err(DomainError::QosSpecsExists(new.name)),
            Err(other) => return Err(other.into()),
        }
        self.store
            .get_qos_specs(new.id)
            .await?
            .ok_or_else(|| qos_not_found(new.id))
    }

    pub async fn list_qos_specs(
        &self,
        caller: &RequestContext,
        page: &Page<QosSortKey>,
    ) -> Result<Vec<QosSpecs>, DomainError> {
        self.may(caller, rules::QOS_GET_ALL)?;
        if let Some(marker) = page.marker {
            if self.store.get_qos_specs(marker.into()).await?.is_none() {
                return Err(DomainError::MarkerNotFound(marker.to_string()));
            }
        }
        Ok(self.store.list_qos_specs(page).await?)
    }

    pub async fn get_qos_specs(
        &self,
        caller: &RequestContext,
        id: &str,
    ) -> Result<QosSpecs, DomainError> {
        self.may(caller, rules::QOS_GET)?;
        self.store
            .get_qos_specs(qos_id(id)?)
            .await?
            .ok_or_else(|| qos_not_found(id))
    }

    /// `PUT /qos-specs/{id}`: sets the consumer and items given.
    pub async fn update_qos_specs(
        &self,
        caller: &RequestContext,
        id: &str,
        mut items: QosItems,
    ) -> Result<(), DomainError> {
        self.may(caller, rules::QOS_UPDATE)?;
        let uuid = qos_id(id)?;
        let consumer = take_consumer(&mut items)?;
        let now = self.clock.now();
        self.store
            .update_qos_specs(uuid, consumer, &items, now)
            .await?
            .found()
            .ok_or_else(|| qos_not_found(id))
    }

    pub async fn delete_qos_keys(
        &self,
        caller: &RequestContext,
        id: &str,
        keys: &[String],
    ) -> Result<(), DomainError> {
        self.may(caller, rules::QOS_DELETE)?;
        let uuid = qos_id(id)?;
        match self
            .store
            .delete_qos_keys(uuid, keys, self.clock.now())
            .await?
        {
            Outcome::Done(()) => Ok(()),
            Outcome::Gone => Err(qos_not_found(id)),
            Outcome::Refused(QosKeyMissing(key)) => {
                Err(DomainError::QosKeyNotFound { specs: uuid, key })
            }
        }
    }

    pub async fn delete_qos_specs(
        &self,
        caller: &RequestContext,
        id: &str,
        force: bool,
    ) -> Result<(), DomainError> {
        self.may(caller, rules::QOS_DELETE)?;
        let uuid = qos_id(id)?;
        match self
            .store
            .delete_qos_specs(uuid, force, self.clock.now())
            .await?
        {
            Outcome::Done(()) => Ok(()),
            Outcome::Gone => Err(qos_not_found(id)),
            Outcome::Refused(QosInUse) => Err(DomainError::QosSpecsInUse),
        }
    }

    pub async fn qos_associations(
        &self,
        caller: &RequestContext,
        id: &str,
    ) -> Result<Vec<Association>, DomainError> {
        self.may(caller, rules::QOS_GET_ALL)?;
        self.store
            .qos_associations(qos_id(id)?)
            .await?
            .ok_or_else(|| qos_not_found(id))
    }

    /// `associate` (`Some(true)`), `disassociate` (`Some(false)`) of the type
    /// `vol_type_id`, or `disassociate_all` (`type_id` None).
    pub async fn change_qos_association(
        &self,
        caller: &RequestContext,
        id: &str,
        type_id: Option<&str>,
        associate: bool,
    ) -> Result<(), DomainError> {
        self.may(caller, rules::QOS_UPDATE)?;
        let uuid = qos_id(id)?;
        let now = self.clock.now();
        let type_uuid = match type_id {
            Some(text) => Some(
                VolumeTypeId::parse(text)
                    .ok_or_else(|| DomainError::VolumeTypeNotFound(text.to_owned()))?,
            ),
            None => None,
        };
        let outcome = match (type_uuid, associate) {
            (Some(type_uuid), true) => self.store.associate_qos(uuid, type_uuid, now).await?,
            (type_uuid, _) => self.store.disassociate_qos(uuid, type_uuid, now).await?,
        };
        match outcome {
            Outcome::Done(()) => Ok(()),
            Outcome::Gone => Err(qos_not_found(id)),
            Outcome::Refused(QosAssociationRefusal::NoSuchType) => Err(
                DomainError::VolumeTypeNotFound(type_id.unwrap_or_default().to_owned()),
            ),
            Outcome::Refused(QosAssociationRefusal::TypeTaken(other)) => {
                Err(DomainError::QosTypeTaken {
                    volume_type: type_id.unwrap_or_default().to_owned(),
                    specs: other,
                })
            }
        }
    }
}
