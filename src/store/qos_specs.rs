//! QoS specs, their items, and their associations with volume types
//! (`volume_types.qos_specs_id`).

use std::collections::HashMap;
use std::sync::LazyLock;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::paging::push_page;
use super::side_tables::{items_of, KeyValue, SideTable};
use super::SqlStore;
use crate::domain::event::EventKind;
use crate::domain::ids::{QosSpecsId, VolumeTypeId};
use crate::domain::paging::Page;
use crate::domain::qos::{Association, Consumer, NewQosSpecs, QosItems, QosSortKey, QosSpecs};
use crate::domain::refusal::{QosAssociationRefusal, QosInUse, QosKeyMissing};
use crate::domain::time::format_timestamp;
use crate::domain::Outcome;
use serde_json::json;
use std::convert::Infallible;

#[async_trait]
pub trait QosSpecsStore: Send + Sync {
    /// A live QoS specs of the same name is `Conflict`.
    async fn create_qos_specs(&self, new: &NewQosSpecs) -> Result<(), StoreError>;
    async fn get_qos_specs(&self, id: QosSpecsId) -> Result<Option<QosSpecs>, StoreError>;
    /// Every live QoS specs, newest first.
    /// One page of live QoS specs, with their items.
    async fn list_qos_specs(&self, page: &Page<QosSortKey>) -> Result<Vec<QosSpecs>, StoreError>;
    /// Sets the consumer (when given) and adds or replaces items.
    async fn update_qos_specs(
        &self,
        id: QosSpecsId,
        consumer: Option<Consumer>,
        items: &QosItems,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError>;
    /// Removes items; the first key that is not there refuses (`NoSuchQosKey`) and
    /// nothing is removed.
    async fn delete_qos_keys(
        &self,
        id: QosSpecsId,
        keys: &[String],
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), QosKeyMissing>, StoreError>;
    /// Deletes a QoS specs; while types use it, refused (`QosInUse`) unless `force`,
    /// which disassociates them first.
    async fn delete_qos_specs(
        &self,
        id: QosSpecsId,
        force: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), QosInUse>, StoreError>;
    /// The types using the QoS specs (`None` when it does not exist).
    async fn qos_associations(
        &self,
        id: QosSpecsId,
    ) -> Result<Option<Vec<Association>>, StoreError>;
    /// Associates a type; refused (`QosTypeTaken`) when the type has other specs.
    /// `Gone` when either does not exist.
    async fn associate_qos(
        &self,
        id: QosSpecsId,
        type_id: VolumeTypeId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), QosAssociationRefusal>, StoreError>;
    /// Disassociates one type (`Some`) or every type (`None`) from the specs.
    async fn disassociate_qos(
        &self,
        id: QosSpecsId,
        type_id: Option<VolumeTypeId>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), QosAssociationRefusal>, StoreError>;
    /// The QoS specs of a volume type, if it has any.
    async fn qos_of_type(&self, type_id: VolumeTypeId) -> Result<Option<QosSpecs>, StoreError>;
}

/// When a locked QoS specs was created, as its events show it.
struct Created(DateTime<Utc>);

impl Created {
    fn text(&self) -> String {
        format_timestamp(&self.0)
    }
}

/// The specs a caller gave, as Cinder's events show them: the items, and the consumer
/// when one was named.
fn specs_given(items: &QosItems, consumer: Option<Consumer>) -> serde_json::Value {
    let mut specs: serde_json::Map<String, serde_json::Value> = items
        .iter()
        .map(|(key, value)| (key.clone(), json!(value)))
        .collect();
    if let Some(consumer) = consumer {
        specs.insert("consumer".to_owned(), json!(consumer.as_str()));
    }
    serde_json::Value::Object(specs)
}

const QOS_COLUMNS: &str = "q.id, q.name, q.consumer, q.created_at, q.updated_at";

impl FromRow for QosSpecs {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        let id = c.get()?;
        let name = c.get()?;
        let consumer: String = c.get()?;
        Ok(QosSpecs {
            id,
            name,
            consumer: Consumer::parse(&consumer)
                .ok_or_else(|| StoreError::corrupt(format!("qos consumer {consumer:?}")))?,
            specs: QosItems::new(),
            created_at: c.get()?,
            updated_at: c.get()?,
        })
    }
}

static BY_ID: LazyLock<String> = LazyLock::new(|| {
    format!("select {QOS_COLUMNS} from qos_specs q where q.id = $1 and q.deleted = false")
});

static OF_TYPE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "select {QOS_COLUMNS} from qos_specs q join volume_types t on t.qos_specs_id = q.id \
          where t.id = $1 and t.deleted = false and q.deleted = false"
    )
});

const INSERT: &str = "insert into qos_specs (id, name, consumer, created_at, deleted) \
                      values ($1, $2, $3, $4, false)";

const LOCK: &str = "select id, created_at from qos_specs where id = $1 and deleted = false";

const ITEMS: &str = "select qos_specs_id, key, value from qos_specs_items \
                     where qos_specs_id = $1 and deleted = false";

const UPSERT_ITEM: &str = "\
    insert into qos_specs_items (qos_specs_id, key, value, created_at, deleted) \
    values ($1, $2, $3, $4, false) \
    on conflict (qos_specs_id, key) where deleted = false \
    do update set value = excluded.value, updated_at = excluded.created_at";

const SET_CONSUMER: &str =
    "update qos_specs set consumer = coalesce($2, consumer), updated_at = $3 where id = $1";

const ASSOCIATED: &str = "select id, name from volume_types \
                          where qos_specs_id = $1 and deleted = false order by created_at, id";

const LOCK_TYPE_QOS: &str =
    "select qos_specs_id from volume_types where id = $1 and deleted = false";

const ASSOCIATE: &str =
    "update volume_types set qos_specs_id = $2, updated_at = $3 where id = $1 and deleted = false";

const DISASSOCIATE_ONE: &str = "update volume_types set qos_specs_id = null, updated_at = $3 \
                                 where id = $2 and qos_specs_id = $1 and deleted = false";

const DISASSOCIATE_ALL: &str = "update volume_types set qos_specs_id = null, updated_at = $2 \
                                 where qos_specs_id = $1 and deleted = false";

const DELETE: &str =
    "update qos_specs set deleted = true, deleted_at = $2 where id = $1 and deleted = false";

impl<D: Database> SqlStore<D> {
    /// The items of `specs`, filled in from `rows` of `(owner, key, value)`.
    fn fill_items(specs: &mut [QosSpecs], rows: Vec<KeyValue>) {
        let index: HashMap<uuid::Uuid, usize> = specs
            .iter()
            .enumerate()
            .map(|(i, q)| (q.id.uuid(), i))
            .collect();
        for row in rows {
            if let Some(&i) = index.get(&row.owner) {
                specs[i].specs.insert(row.key, row.value);
            }
        }
    }

    async fn one_qos(&self, sql: Sql) -> Result<Option<QosSpecs>, StoreError> {
        let mut reads = self.db.begin_read().await?;
        let Some(found) = reads.fetch_optional::<QosSpecs>(sql).await? else {
            return Ok(None);
        };
        let rows: Vec<KeyValue> = reads.fetch_all(Sql::new(ITEMS).bind(found.id)).await?;
        let mut one = [found];
        Self::fill_items(&mut one, rows);
        let [found] = one;
        Ok(Some(found))
    }

    /// A write to QoS specs `id`: the transaction with its row locked and the specs'
    /// creation time (for its event), or `None`.
    async fn lock_qos(&self, id: QosSpecsId) -> Result<Option<(D::Tx, Created)>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let lock = Sql::locking(LOCK, D::FOR_UPDATE).bind(id);
        let locked: Option<(QosSpecsId, DateTime<Utc>)> = tx.fetch_optional(lock).await?;
        Ok(locked.map(|(_, created_at)| (tx, Created(created_at))))
    }
}

#[async_trait]
impl<D: Database> QosSpecsStore for SqlStore<D> {
    #[tracing::instrument(skip_all, fields(name = %new.name), err)]
    async fn create_qos_specs(&self, new: &NewQosSpecs) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().await?;
        let insert = Sql::new(INSERT)
            .bind(new.id)
            .bind(&new.name)
            .bind(new.consumer.as_str())
            .bind(new.created_at);
        tx.execute(insert).await?;
        let items = new.specs.iter().map(|(k, v)| (k.clone(), v.clone()));
        Self::insert_items(
            &mut tx,
            SideTable::QosSpecs,
            new.id.uuid(),
            items,
            new.created_at,
        )
        .await?;
        let given = new.consumer_given.then_some(new.consumer);
        let payload = json!({"name": new.name, "created_at": format_timestamp(&new.created_at),
                             "specs": specs_given(&new.specs, given)});
        self.record_payload_event(&mut tx, EventKind::QosSpecsCreate, payload, new.created_at)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    #[tracing::instrument(skip_all, err)]
    async fn get_qos_specs(&self, id: QosSpecsId) -> Result<Option<QosSpecs>, StoreError> {
        self.one_qos(Sql::new(&BY_ID).bind(id)).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn list_qos_specs(&self, page: &Page<QosSortKey>) -> Result<Vec<QosSpecs>, StoreError> {
        let mut sql = Sql::new("select ");
        sql.push(QOS_COLUMNS)
            .push(" from qos_specs q where q.deleted = false");
        push_page(&mut sql, page, "q", "qos_specs");
        let mut reads = self.db.begin_read().await?;
        let mut found: Vec<QosSpecs> = reads.fetch_all(sql).await?;
        if found.is_empty() {
            return Ok(found);
        }
        let items = items_of(SideTable::QosSpecs, found.iter().map(|q| q.id));
        let rows: Vec<KeyValue> = reads.fetch_all(items).await?;
        Self::fill_items(&mut found, rows);
        Ok(found)
    }

    #[tracing::instrument(skip_all, err)]
    async fn update_qos_specs(
        &self,
        id: QosSpecsId,
        consumer: Option<Consumer>,
        items: &QosItems,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError> {
        let Some((mut tx, created)) = self.lock_qos(id).await? else {
            return Ok(Outcome::Gone);
        };
        for (key, value) in items {
            let upsert = Sql::new(UPSERT_ITEM)
                .bind(id)
                .bind(key)
                .bind(value)
                .bind(now);
            tx.execute(upsert).await?;
        }
        let payload = json!({"id": id, "created_at": created.text(),
                             "updated_at": format_timestamp(&now), "specs": specs_given(items, consumer)});
        let consumer = consumer.map(|c| c.as_str());
        tx.execute(Sql::new(SET_CONSUMER).bind(id).bind(consumer).bind(now))
            .await?;
        self.record_payload_event(&mut tx, EventKind::QosSpecsUpdate, payload, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn delete_qos_keys(
        &self,
        id: QosSpecsId,
        keys: &[String],
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), QosKeyMissing>, StoreError> {
        let Some((mut tx, created)) = self.lock_qos(id).await? else {
            return Ok(Outcome::Gone);
        };
        for key in keys {
            let removed =
                Self::remove_items(&mut tx, SideTable::QosSpecs, id.uuid(), Some(key), now).await?;
            if removed == 0 {
                return Ok(Outcome::Refused(QosKeyMissing(key.clone())));
            }
        }
        tx.execute(Sql::new(SET_CONSUMER).bind(id).bind(None::<&str>).bind(now))
            .await?;
        let payload =
            json!({"id": id, "created_at": created.text(), "updated_at": format_timestamp(&now)});
        self.record_payload_event(&mut tx, EventKind::QosSpecsDeleteKeys, payload, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn delete_qos_specs(
        &self,
        id: QosSpecsId,
        force: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), QosInUse>, StoreError> {
        let Some((mut tx, created)) = self.lock_qos(id).await? else {
            return Ok(Outcome::Gone);
        };
        let users: Vec<(VolumeTypeId, String)> =
            tx.fetch_all(Sql::new(ASSOCIATED).bind(id)).await?;
        if !users.is_empty() {
            if !force {
                return Ok(Outcome::Refused(QosInUse));
            }
            tx.execute(Sql::new(DISASSOCIATE_ALL).bind(id).bind(now))
                .await?;
        }
        Self::remove_items(&mut tx, SideTable::QosSpecs, id.uuid(), None, now).await?;
        tx.execute(Sql::new(DELETE).bind(id).bind(now)).await?;
        let payload =
            json!({"id": id, "created_at": created.text(), "deleted_at": format_timestamp(&now)});
        self.record_payload_event(&mut tx, EventKind::QosSpecsDelete, payload, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn qos_associations(
        &self,
        id: QosSpecsId,
    ) -> Result<Option<Vec<Association>>, StoreError> {
        let mut reads = self.db.begin_read().await?;
        let exists: Option<(QosSpecsId, DateTime<Utc>)> =
            reads.fetch_optional(Sql::new(LOCK).bind(id)).await?;
        if exists.is_none() {
            return Ok(None);
        }
        let users: Vec<(VolumeTypeId, String)> =
            reads.fetch_all(Sql::new(ASSOCIATED).bind(id)).await?;
        Ok(Some(
            users
                .into_iter()
                .map(|(type_id, type_name)| Association { type_id, type_name })
                .collect(),
        ))
    }

    #[tracing::instrument(skip_all, err)]
    async fn associate_qos(
        &self,
        id: QosSpecsId,
        type_id: VolumeTypeId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), QosAssociationRefusal>, StoreError> {
        let Some((mut tx, created)) = self.lock_qos(id).await? else {
            return Ok(Outcome::Gone);
        };
        let lock = Sql::locking(LOCK_TYPE_QOS, D::FOR_UPDATE).bind(type_id);
        let Some((current,)) = tx.fetch_optional::<(Option<QosSpecsId>,)>(lock).await? else {
            return Ok(Outcome::Refused(QosAssociationRefusal::NoSuchType));
        };
        match current {
            Some(same) if same == id => return Ok(Outcome::Done(())),
            Some(other) => return Ok(Outcome::Refused(QosAssociationRefusal::TypeTaken(other))),
            None => {}
        }
        tx.execute(Sql::new(ASSOCIATE).bind(type_id).bind(id).bind(now))
            .await?;
        let payload = json!({"id": id, "type_id": type_id, "created_at": created.text()});
        self.record_payload_event(&mut tx, EventKind::QosSpecsAssociate, payload, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn disassociate_qos(
        &self,
        id: QosSpecsId,
        type_id: Option<VolumeTypeId>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), QosAssociationRefusal>, StoreError> {
        let Some((mut tx, created)) = self.lock_qos(id).await? else {
            return Ok(Outcome::Gone);
        };
        let (kind, payload) = match type_id {
            Some(type_id) => (
                EventKind::QosSpecsDisassociate,
                json!({"id": id, "type_id": type_id, "created_at": created.text()}),
            ),
            None => (
                EventKind::QosSpecsDisassociateAll,
                json!({"id": id, "created_at": created.text()}),
            ),
        };
        match type_id {
            Some(type_id) => {
                let lock = Sql::locking(LOCK_TYPE_QOS, D::FOR_UPDATE).bind(type_id);
                let found: Option<(Option<QosSpecsId>,)> = tx.fetch_optional(lock).await?;
                if found.is_none() {
                    return Ok(Outcome::Refused(QosAssociationRefusal::NoSuchType));
                }
                tx.execute(Sql::new(DISASSOCIATE_ONE).bind(id).bind(type_id).bind(now))
                    .await?;
            }
            None => {
                tx.execute(Sql::new(DISASSOCIATE_ALL).bind(id).bind(now))
                    .await?;
            }
        }
        self.record_payload_event(&mut tx, kind, payload, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn qos_of_type(&self, type_id: VolumeTypeId) -> Result<Option<QosSpecs>, StoreError> {
        self.one_qos(Sql::new(&OF_TYPE).bind(type_id)).await
    }
}
