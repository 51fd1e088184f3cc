//! Group types and their specs (Cinder's `group_types`, `group_type_specs`).

use std::collections::HashMap;
use std::convert::Infallible;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::paging::push_page;
use super::side_tables::{items_of, KeyValue, SideTable};
use super::SqlStore;
use crate::domain::group_type::{
    GroupSpecs, GroupType, GroupTypeSortKey, GroupTypeUpdate, NewGroupType,
};
use crate::domain::ids::{GroupId, GroupTypeId};
use crate::domain::paging::Page;
use crate::domain::refusal::{SpecMissing, TypeInUse};
use crate::domain::Outcome;

#[async_trait]
pub trait GroupTypeStore: Send + Sync {
    /// Inserts a type with its specs; a live type of the same name is `Conflict`.
    async fn create_group_type(&self, new: &NewGroupType) -> Result<(), StoreError>;
    async fn get_group_type(&self, id: GroupTypeId) -> Result<Option<GroupType>, StoreError>;
    async fn get_group_type_by_name(&self, name: &str) -> Result<Option<GroupType>, StoreError>;
    /// One page of the live types; `is_public`: only those that are (or are not).
    async fn list_group_types(
        &self,
        is_public: Option<bool>,
        page: &Page<GroupTypeSortKey>,
    ) -> Result<Vec<GroupType>, StoreError>;
    /// A name taken by another live type is `Conflict`.
    async fn update_group_type(
        &self,
        id: GroupTypeId,
        update: &GroupTypeUpdate,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError>;
    /// Refused while a live group has the type.
    async fn delete_group_type(
        &self,
        id: GroupTypeId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), TypeInUse>, StoreError>;
    /// Adds or replaces specs.
    async fn set_group_specs(
        &self,
        id: GroupTypeId,
        specs: &GroupSpecs,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError>;
    /// Removes one spec; `Refused(SpecMissing)` when the type has no such key.
    async fn delete_group_spec(
        &self,
        id: GroupTypeId,
        key: &str,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), SpecMissing>, StoreError>;
}

const COLUMNS: &str = "g.id, g.name, g.description, g.is_public, g.created_at, g.updated_at";

const INSERT: &str = "insert into group_types (id, name, description, is_public, created_at, \
     deleted) values ($1, $2, $3, $4, $5, false)";

const UPDATE: &str = "update group_types set name = coalesce($2, name), \
     description = coalesce($3, description), is_public = coalesce($4, is_public), \
     updated_at = $5 where id = $1 and deleted = false";

const LOCK: &str = "select id from group_types where id = $1 and deleted = false";

const DELETE: &str =
    "update group_types set deleted = true, deleted_at = $2 where id = $1 and deleted = false";

const IN_USE: &str = "select id from groups where group_type_id = $1 and deleted = false limit 1";

const TOUCH: &str = "update group_types set updated_at = $2 where id = $1";

impl FromRow for GroupType {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(GroupType {
            id: c.get()?,
            name: c.get()?,
            description: c.get()?,
            is_public: c.get()?,
            group_specs: GroupSpecs::new(),
            created_at: c.get()?,
            updated_at: c.get()?,
        })
    }
}

impl<D: Database> SqlStore<D> {
    /// The types `sql` selects, with their specs, read together.
    async fn group_types_with_specs(&self, sql: Sql) -> Result<Vec<GroupType>, StoreError> {
        let mut reads = self.db.begin_read().await?;
        let mut found: Vec<GroupType> = reads.fetch_all(sql).await?;
        if found.is_empty() {
            return Ok(found);
        }
        let specs = items_of(SideTable::GroupTypeSpecs, found.iter().map(|t| t.id));
        let rows: Vec<KeyValue> = reads.fetch_all(specs).await?;
        let index: HashMap<uuid::Uuid, usize> = found
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.uuid(), i))
            .collect();
        for row in rows {
            if let Some(&i) = index.get(&row.owner) {
                found[i].group_specs.insert(row.key, row.value);
            }
        }
        Ok(found)
    }

    async fn one_group_type(&self, sql: Sql) -> Result<Option<GroupType>, StoreError> {
        Ok(self.group_types_with_specs(sql).await?.pop())
    }

    /// Starts a write to group type `id`: the transaction with the type locked, or `None`
    /// when there is no such live type.
    async fn lock_group_type(&self, id: GroupTypeId) -> Result<Option<D::Tx>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let lock = Sql::locking(LOCK, D::FOR_UPDATE).bind(id);
        let locked: Option<(GroupTypeId,)> = tx.fetch_optional(lock).await?;
        Ok(locked.map(|_| tx))
    }
}

fn select_where(condition: &str) -> Sql {
    let mut sql = Sql::new("select ");
    sql.push(COLUMNS)
        .push(" from group_types g where g.deleted = false and ")
        .push(condition);
    sql
}

#[async_trait]
impl<D: Database> GroupTypeStore for SqlStore<D> {
    #[tracing::instrument(skip_all, fields(name = %new.name), err)]
    async fn create_group_type(&self, new: &NewGroupType) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().await?;
        let insert = Sql::new(INSERT)
            .bind(new.id)
            .bind(&new.name)
            .bind(&new.description)
            .bind(new.is_public)
            .bind(new.created_at);
        tx.execute(insert).await?;
        let items = new.group_specs.iter().map(|(k, v)| (k.clone(), v.clone()));
        let (table, owner) = (SideTable::GroupTypeSpecs, new.id.uuid());
        Self::insert_items(&mut tx, table, owner, items, new.created_at).await?;
        tx.commit().await?;
        Ok(())
    }

    #[tracing::instrument(skip_all, err)]
    async fn get_group_type(&self, id: GroupTypeId) -> Result<Option<GroupType>, StoreError> {
        let mut sql = select_where("g.id = ");
        sql.push_bind(id);
        self.one_group_type(sql).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn get_group_type_by_name(&self, name: &str) -> Result<Option<GroupType>, StoreError> {
        let mut sql = select_where("g.name = ");
        sql.push_bind(name.to_owned());
        self.one_group_type(sql).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn list_group_types(
        &self,
        is_public: Option<bool>,
        page: &Page<GroupTypeSortKey>,
    ) -> Result<Vec<GroupType>, StoreError> {
        let mut sql = select_where("true");
        if let Some(is_public) = is_public {
            sql.push(" and g.is_public = ").push_bind(is_public);
        }
        push_page(&mut sql, page, "g", "group_types");
        self.group_types_with_specs(sql).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn update_group_type(
        &self,
        id: GroupTypeId,
        update: &GroupTypeUpdate,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError> {
        let Some(mut tx) = self.lock_group_type(id).await? else {
            return Ok(Outcome::Gone);
        };
        let sql = Sql::new(UPDATE)
            .bind(id)
            .bind(&update.name)
            .bind(&update.description)
            .bind(update.is_public)
            .bind(now);
        tx.execute(sql).await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn delete_group_type(
        &self,
        id: GroupTypeId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), TypeInUse>, StoreError> {
        let Some(mut tx) = self.lock_group_type(id).await? else {
            return Ok(Outcome::Gone);
        };
        let used: Option<(GroupId,)> = tx.fetch_optional(Sql::new(IN_USE).bind(id)).await?;
        if used.is_some() {
            return Ok(Outcome::Refused(TypeInUse));
        }
        let (table, owner) = (SideTable::GroupTypeSpecs, id.uuid());
        Self::remove_items(&mut tx, table, owner, None, now).await?;
        tx.execute(Sql::new(DELETE).bind(id).bind(now)).await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn set_group_specs(
        &self,
        id: GroupTypeId,
        specs: &GroupSpecs,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError> {
        let Some(mut tx) = self.lock_group_type(id).await? else {
            return Ok(Outcome::Gone);
        };
        let (table, owner) = (SideTable::GroupTypeSpecs, id.uuid());
        for (key, value) in specs {
            Self::remove_items(&mut tx, table, owner, Some(key), now).await?;
            let item = [(key.clone(), value.clone())];
            Self::insert_items(&mut tx, table, owner, item, now).await?;
        }
        tx.execute(Sql::new(TOUCH).bind(id).bind(now)).await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn delete_group_spec(
        &self,
        id: GroupTypeId,
        key: &str,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), SpecMissing>, StoreError> {
        let Some(mut tx) = self.lock_group_type(id).await? else {
            return Ok(Outcome::Gone);
        };
        let (table, owner) = (SideTable::GroupTypeSpecs, id.uuid());
        if Self::remove_items(&mut tx, table, owner, Some(key), now).await? == 0 {
            return Ok(Outcome::Refused(SpecMissing));
        }
        tx.execute(Sql::new(TOUCH).bind(id).bind(now)).await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }
}
