//! Volume types, their extra specs and access lists. Specs of a type that volumes use
//! are frozen; the rules are `domain::volume_type`'s.

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::outbox::SpecsChange;
use super::side_tables::{KeyValue, SideTable};
use super::SqlStore;
use crate::domain::event::EventKind;
use crate::domain::ids::VolumeTypeId;
use crate::domain::refusal::{
    ExtraSpecsRefusal, SpecRemovalRefusal, TypeAccessRefusal, TypeDeleteRefusal, TypeInUse,
};
use crate::domain::volume_type::{
    check_cacheable, ExtraSpecs, NewVolumeType, VolumeType, VolumeTypeUpdate,
};
use crate::domain::Outcome;
use std::convert::Infallible;

#[async_trait]
pub trait VolumeTypeStore: Send + Sync {
    /// Inserts a type with its specs; a live type of the same name is `Conflict`.
    async fn create_volume_type(&self, new: &NewVolumeType) -> Result<(), StoreError>;
    async fn get_volume_type(&self, id: VolumeTypeId) -> Result<Option<VolumeType>, StoreError>;
    async fn get_volume_type_by_name(&self, name: &str) -> Result<Option<VolumeType>, StoreError>;
    /// Every live type, oldest first.
    async fn list_volume_types(&self) -> Result<Vec<VolumeType>, StoreError>;
    /// A name taken by another live type is `Conflict`.
    async fn update_volume_type(
        &self,
        id: VolumeTypeId,
        update: &VolumeTypeUpdate,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError>;
    /// Soft-deletes a type no live volume uses and no project has as its default.
    async fn delete_volume_type(
        &self,
        id: VolumeTypeId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), TypeDeleteRefusal>, StoreError>;
    /// Adds or replaces specs of a type no live volume uses.
    /// Adds or replaces specs; `named_key` is the key a `PUT .../extra_specs/{key}` named
    /// (reported as an update), `None` for a `POST`.
    async fn set_extra_specs(
        &self,
        id: VolumeTypeId,
        specs: &ExtraSpecs,
        named_key: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), ExtraSpecsRefusal>, StoreError>;
    /// Removes one spec of a type no live volume uses.
    async fn delete_extra_spec(
        &self,
        id: VolumeTypeId,
        key: &str,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), SpecRemovalRefusal>, StoreError>;
    /// Lets `project` use type `id`; `Refused(Exists)` when it already may.
    async fn add_type_access(
        &self,
        id: VolumeTypeId,
        project: &str,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), TypeAccessRefusal>, StoreError>;
    /// Takes that back; `Refused(Missing)` when `project` had no access.
    async fn remove_type_access(
        &self,
        id: VolumeTypeId,
        project: &str,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), TypeAccessRefusal>, StoreError>;
}

const TYPE_COLUMNS: &str =
    "select id, name, description, is_public, qos_specs_id, created_at, updated_at from volume_types";

static TYPE_BY_ID: LazyLock<String> =
    LazyLock::new(|| format!("{TYPE_COLUMNS} where id = $1 and deleted = false"));
static TYPE_BY_NAME: LazyLock<String> =
    LazyLock::new(|| format!("{TYPE_COLUMNS} where name = $1 and deleted = false"));
static ALL_TYPES: LazyLock<String> =
    LazyLock::new(|| format!("{TYPE_COLUMNS} where deleted = false order by created_at, id"));

const ALL_SPECS: &str = "select volume_type_id, key, value from volume_type_extra_specs \
                          where deleted = false order by key";
const ALL_ACCESS: &str = "select volume_type_id, project_id from volume_type_projects \
                           where deleted = false order by project_id";
const ONE_TYPE_SPECS: &str = "select volume_type_id, key, value from volume_type_extra_specs \
                               where volume_type_id = $1 and deleted = false order by key";
const ONE_TYPE_ACCESS: &str = "select volume_type_id, project_id from volume_type_projects \
                                where volume_type_id = $1 and deleted = false order by project_id";

const INSERT_TYPE: &str =
    "insert into volume_types (id, name, description, is_public, created_at, deleted) \
                           values ($1, $2, $3, $4, $5, false)";

const UPDATE_TYPE: &str = "\
    update volume_types \
       set name = coalesce($2, name), description = coalesce($3, description), \
           is_public = coalesce($4, is_public), updated_at = $5 \
     where id = $1 and deleted = false";

const LOCK_TYPE: &str = "select id from volume_types where id = $1 and deleted = false";

const LOCK_TYPE_NAME: &str = "select name from volume_types where id = $1 and deleted = false";

/// A live volume of the type, or a live group that allows it (Cinder refuses both).
const TYPE_IN_USE: &str = "select id from volumes where volume_type_id = $1 and deleted = false \
     union all select m.volume_type_id from group_volume_type_mapping m \
      where m.volume_type_id = $1 and m.deleted = false limit 1";

const TYPE_SPECS: &str = "select volume_type_id, key, value from volume_type_extra_specs \
                           where volume_type_id = $1 and deleted = false";

const UPSERT_SPEC: &str = "\
    insert into volume_type_extra_specs (volume_type_id, key, value, created_at, deleted) \
    values ($1, $2, $3, $4, false) \
    on conflict (volume_type_id, key) where deleted = false \
    do update set value = excluded.value, updated_at = excluded.created_at";

const TOUCH_TYPE: &str = "update volume_types set updated_at = $2 where id = $1";

const DELETE_ACCESS: &str = "update volume_type_projects set deleted = true, deleted_at = $2 \
                              where volume_type_id = $1 and deleted = false";

const INSERT_ACCESS: &str = "insert into volume_type_projects \
    (volume_type_id, project_id, created_at, deleted) values ($1, $2, $3, false)";

const REMOVE_ACCESS: &str = "update volume_type_projects set deleted = true, deleted_at = $3 \
                              where volume_type_id = $1 and project_id = $2 and deleted = false";

/// A deleted type's encryption goes with it, as Cinder's `volume_type_destroy` does.
const DELETE_ENCRYPTION: &str = "update encryption set deleted = true, deleted_at = $2 \
                                 where volume_type_id = $1 and deleted = false";

const DELETE_TYPE: &str =
    "update volume_types set deleted = true, deleted_at = $2 where id = $1 and deleted = false";

impl FromRow for VolumeType {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(VolumeType {
            id: c.get()?,
            name: c.get()?,
            description: c.get()?,
            is_public: c.get()?,
            qos_specs_id: c.get()?,
            extra_specs: BTreeMap::new(),
            projects: Vec::new(),
            created_at: c.get()?,
            updated_at: c.get()?,
        })
    }
}

impl<D: Database> SqlStore<D> {
    /// Specs and access lists of `types`, filled in.
    async fn load_type_details(&self, types: &mut [VolumeType]) -> Result<(), StoreError> {
        if types.is_empty() {
            return Ok(());
        }
        let index: HashMap<uuid::Uuid, usize> = types
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.uuid(), i))
            .collect();
        // One type (every volume create looks its type up): its own rows only, through
        // the live-rows indexes, however many types there are.
        let (specs, access) = match types {
            [one] => (
                Sql::new(ONE_TYPE_SPECS).bind(one.id),
                Sql::new(ONE_TYPE_ACCESS).bind(one.id),
            ),
            _ => (Sql::new(ALL_SPECS), Sql::new(ALL_ACCESS)),
        };
        let mut reads = self.db.begin_read().await?;
        let specs: Vec<KeyValue> = reads.fetch_all(specs).await?;
        let access: Vec<(uuid::Uuid, String)> = reads.fetch_all(access).await?;
        for spec in specs {
            if let Some(&i) = index.get(&spec.owner) {
                types[i].extra_specs.insert(spec.key, spec.value);
            }
        }
        for (owner, project) in access {
            if let Some(&i) = index.get(&owner) {
                types[i].projects.push(project);
            }
        }
        Ok(())
    }

    async fn one_type(&self, sql: Sql) -> Result<Option<VolumeType>, StoreError> {
        let Some(found) = self.db.fetch_optional::<VolumeType>(sql).await? else {
            return Ok(None);
        };
        let mut types = [found];
        self.load_type_details(&mut types).await?;
        let [found] = types;
        Ok(Some(found))
    }

    /// Starts a write to the specs of type `id`: locks it and checks that no live volume
    /// uses it. The transaction, or the answer that ends the write.
    async fn begin_spec_write<R: From<TypeInUse>>(
        &self,
        id: VolumeTypeId,
    ) -> Result<Result<D::Tx, Outcome<(), R>>, StoreError> {
        let Some(mut tx) = self.lock_type(id).await? else {
            return Ok(Err(Outcome::Gone));
        };
        let used: Option<(uuid::Uuid,)> = tx.fetch_optional(Sql::new(TYPE_IN_USE).bind(id)).await?;
        if used.is_some() {
            return Ok(Err(Outcome::Refused(TypeInUse.into())));
        }
        Ok(Ok(tx))
    }

    /// Starts a write to type `id`: the transaction with the type locked, or `Gone`.
    async fn lock_type(&self, id: VolumeTypeId) -> Result<Option<D::Tx>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let lock = Sql::locking(LOCK_TYPE, D::FOR_UPDATE).bind(id);
        let locked: Option<(VolumeTypeId,)> = tx.fetch_optional(lock).await?;
        Ok(locked.map(|_| tx))
    }
}

#[async_trait]
impl<D: Database> VolumeTypeStore for SqlStore<D> {
    #[tracing::instrument(skip_all, fields(name = %new.name), err)]
    async fn create_volume_type(&self, new: &NewVolumeType) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().await?;
        let insert = Sql::new(INSERT_TYPE)
            .bind(new.id)
            .bind(&new.name)
            .bind(&new.description)
            .bind(new.is_public)
            .bind(new.created_at);
        tx.execute(insert).await?;
        let items = new.extra_specs.iter().map(|(k, v)| (k.clone(), v.clone()));
        Self::insert_items(
            &mut tx,
            SideTable::TypeExtraSpecs,
            new.id.uuid(),
            items,
            new.created_at,
        )
        .await?;
        self.record_type_event(&mut tx, EventKind::VolumeTypeCreate, new.id, new.created_at)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    #[tracing::instrument(skip_all, err)]
    async fn get_volume_type(&self, id: VolumeTypeId) -> Result<Option<VolumeType>, StoreError> {
        self.one_type(Sql::new(&TYPE_BY_ID).bind(id)).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn get_volume_type_by_name(&self, name: &str) -> Result<Option<VolumeType>, StoreError> {
        self.one_type(Sql::new(&TYPE_BY_NAME).bind(name)).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn list_volume_types(&self) -> Result<Vec<VolumeType>, StoreError> {
        let mut types: Vec<VolumeType> = self.db.fetch_all(Sql::new(&ALL_TYPES)).await?;
        self.load_type_details(&mut types).await?;
        Ok(types)
    }

    #[tracing::instrument(skip_all, err)]
    async fn update_volume_type(
        &self,
        id: VolumeTypeId,
        update: &VolumeTypeUpdate,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let lock = Sql::locking(LOCK_TYPE_NAME, D::FOR_UPDATE).bind(id);
        let Some((old_name,)) = tx.fetch_optional::<(String,)>(lock).await? else {
            return Ok(Outcome::Gone);
        };
        let sql = Sql::new(UPDATE_TYPE)
            .bind(id)
            .bind(&update.name)
            .bind(&update.description)
            .bind(update.is_public)
            .bind(now);
        tx.execute(sql).await?;
        if let Some(new_name) = update.name.as_deref().filter(|n| *n != old_name) {
            Self::rename_type_quotas(&mut tx, &old_name, new_name, now).await?;
        }
        self.record_type_event(&mut tx, EventKind::VolumeTypeUpdate, id, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn delete_volume_type(
        &self,
        id: VolumeTypeId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), TypeDeleteRefusal>, StoreError> {
        let mut tx = match self.begin_spec_write(id).await? {
            Ok(tx) => tx,
            Err(answer) => return Ok(answer),
        };
        let default_of = Sql::new(super::default_types::DEFAULT_OF_SOME_PROJECT).bind(id);
        let project: Option<(String,)> = tx.fetch_optional(default_of).await?;
        if project.is_some() {
            return Ok(Outcome::Refused(TypeDeleteRefusal::ProjectDefault));
        }
        // Reported as the type was, extra specs included (Cinder reads it before).
        self.record_type_event(&mut tx, EventKind::VolumeTypeDelete, id, now)
            .await?;
        Self::remove_items(&mut tx, SideTable::TypeExtraSpecs, id.uuid(), None, now).await?;
        for statement in [DELETE_ACCESS, DELETE_ENCRYPTION, DELETE_TYPE] {
            tx.execute(Sql::new(statement).bind(id).bind(now)).await?;
        }
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn set_extra_specs(
        &self,
        id: VolumeTypeId,
        specs: &ExtraSpecs,
        named_key: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), ExtraSpecsRefusal>, StoreError> {
        let mut tx = match self.begin_spec_write(id).await? {
            Ok(tx) => tx,
            Err(answer) => return Ok(answer),
        };
        let stored: Vec<KeyValue> = tx.fetch_all(Sql::new(TYPE_SPECS).bind(id)).await?;
        let existing: ExtraSpecs = stored.into_iter().map(|s| (s.key, s.value)).collect();
        if let Err(refusal) = check_cacheable(&existing, specs) {
            return Ok(Outcome::Refused(refusal));
        }
        for (key, value) in specs {
            let sql = Sql::new(UPSERT_SPEC)
                .bind(id)
                .bind(key)
                .bind(value)
                .bind(now);
            tx.execute(sql).await?;
        }
        tx.execute(Sql::new(TOUCH_TYPE).bind(id).bind(now)).await?;
        let (kind, change) = match named_key {
            Some(key) => (EventKind::VolumeTypeExtraSpecsUpdate, SpecsChange::Key(key)),
            None => (
                EventKind::VolumeTypeExtraSpecsCreate,
                SpecsChange::Set(specs),
            ),
        };
        self.record_spec_event(&mut tx, kind, id, change, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn delete_extra_spec(
        &self,
        id: VolumeTypeId,
        key: &str,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), SpecRemovalRefusal>, StoreError> {
        let mut tx = match self.begin_spec_write(id).await? {
            Ok(tx) => tx,
            Err(answer) => return Ok(answer),
        };
        let removed = Self::remove_items(
            &mut tx,
            SideTable::TypeExtraSpecs,
            id.uuid(),
            Some(key),
            now,
        )
        .await?;
        if removed == 0 {
            return Ok(Outcome::Refused(SpecRemovalRefusal::NoSuchKey));
        }
        let change = SpecsChange::Key(key);
        self.record_spec_event(
            &mut tx,
            EventKind::VolumeTypeExtraSpecsDelete,
            id,
            change,
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn add_type_access(
        &self,
        id: VolumeTypeId,
        project: &str,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), TypeAccessRefusal>, StoreError> {
        let Some(mut tx) = self.lock_type(id).await? else {
            return Ok(Outcome::Gone);
        };
        let insert = Sql::new(INSERT_ACCESS).bind(id).bind(project).bind(now);
        match tx.execute(insert).await {
            Ok(_) => {}
            Err(StoreError::Conflict(_)) => return Ok(Outcome::Refused(TypeAccessRefusal::Exists)),
            Err(other) => return Err(other),
        }
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn remove_type_access(
        &self,
        id: VolumeTypeId,
        project: &str,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), TypeAccessRefusal>, StoreError> {
        let Some(mut tx) = self.lock_type(id).await? else {
            return Ok(Outcome::Gone);
        };
        let remove = Sql::new(REMOVE_ACCESS).bind(id).bind(project).bind(now);
        if tx.execute(remove).await? == 0 {
            return Ok(Outcome::Refused(TypeAccessRefusal::Missing));
        }
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }
}
