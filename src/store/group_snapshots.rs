//! Group snapshots (`group_snapshots`) and the member snapshots they hold
//! (`snapshots.group_snapshot_id`). Taking one locks the group, then its members, then
//! the project's quota, as every group change does, so members cannot change under it.

use std::convert::Infallible;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::paging::push_page;
use super::SqlStore;
use crate::domain::event::EventKind;
use crate::domain::group::{GroupSortKey, GroupStatus};
use crate::domain::group_snapshot::{
    self, GroupSnapshot, GroupSnapshotFilters, GroupSnapshotStatus, MemberSnapshot,
    NewGroupSnapshot, SnapshotCandidate,
};
use crate::domain::ids::{GroupId, GroupSnapshotId, GroupTypeId, SnapshotId};
use crate::domain::paging::Page;
use crate::domain::quota::{self, OverQuota, QuotaOwner};
use crate::domain::snapshot::SnapshotStatus;
use crate::domain::Outcome;

/// Why a group snapshot is not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupSnapshotRefusal {
    /// The group is not `available`: the reason.
    Group(String),
    /// A member cannot be snapshotted: Cinder's reason.
    Member(String),
    OverQuota(OverQuota),
}

#[async_trait]
pub trait GroupSnapshotStore: Send + Sync {
    /// Records a group snapshot in `creating` with a `creating` snapshot of each live
    /// member, if every member can be snapshotted and the project's quota (`owner`'s
    /// defaults) has room for them all; the member snapshots.
    async fn insert_group_snapshot(
        &self,
        new: &NewGroupSnapshot,
        owner: &QuotaOwner,
    ) -> Result<Outcome<Vec<MemberSnapshot>, GroupSnapshotRefusal>, StoreError>;
    async fn get_group_snapshot(
        &self,
        id: GroupSnapshotId,
    ) -> Result<Option<GroupSnapshot>, StoreError>;
    async fn list_group_snapshots(
        &self,
        filters: &GroupSnapshotFilters,
        page: &Page<GroupSortKey>,
    ) -> Result<Vec<GroupSnapshot>, StoreError>;
    /// The live snapshots of a group snapshot, oldest first.
    async fn group_snapshot_members(
        &self,
        id: GroupSnapshotId,
    ) -> Result<Vec<MemberSnapshot>, StoreError>;
    async fn set_group_snapshot_status(
        &self,
        id: GroupSnapshotId,
        status: GroupSnapshotStatus,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError>;
    /// Ends the taking of a group snapshot in `status`.
    async fn finish_group_snapshot_create(
        &self,
        id: GroupSnapshotId,
        status: GroupSnapshotStatus,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Starts a delete: an `available` or `error` group snapshot no group is being made
    /// from becomes `deleting`, and its snapshots too; its member snapshots.
    async fn begin_group_snapshot_delete(
        &self,
        id: GroupSnapshotId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Vec<MemberSnapshot>, ()>, StoreError>;
    async fn finish_group_snapshot_delete(
        &self,
        id: GroupSnapshotId,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
}

const COLUMNS: &str = "g.id, g.group_id, g.user_id, g.project_id, g.group_type_id, g.status, \
     g.name, g.description, g.created_at, g.updated_at";

const LOCK_GROUP: &str =
    "select group_type_id, status from groups where id = $1 and deleted = false";

const LOCK: &str = "select status from group_snapshots where id = $1 and deleted = false";

/// The live members with what a snapshot of each needs checked and counted.
const MEMBERS: &str = "\
    select v.id, v.status, v.migration_status, v.host is not null, v.size, t.name \
      from volumes v join volume_types t on t.id = v.volume_type_id \
     where v.group_id = $1 and v.deleted = false order by v.created_at, v.id";

const INSERT: &str = "insert into group_snapshots (id, group_id, user_id, project_id, \
     group_type_id, status, name, description, created_at, deleted) \
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, false)";

const INSERT_MEMBER: &str = "insert into snapshots (id, volume_id, user_id, project_id, status, \
     progress, volume_size, display_name, display_description, created_at, deleted, \
     group_snapshot_id) values ($1, $2, $3, $4, $5, '0%', $6, $7, $8, $9, false, $10)";

const MEMBER_SNAPSHOTS: &str = "select id, volume_id from snapshots \
     where group_snapshot_id = $1 and deleted = false order by created_at, id";

const SET_STATUS: &str = "update group_snapshots set status = $2, updated_at = $3 where id = $1";

/// A group being made from the group snapshot.
const SOURCE_OF_CREATING: &str =
    "select id from groups where group_snapshot_id = $1 and status = $2 and deleted = false";

const MEMBERS_DELETING: &str = "update snapshots set status = $2, updated_at = $3 \
     where group_snapshot_id = $1 and deleted = false";

const DELETE: &str = "update group_snapshots set deleted = true, deleted_at = $2, status = $3 \
     where id = $1 and deleted = false";

impl FromRow for GroupSnapshot {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(GroupSnapshot {
            id: c.get()?,
            group_id: c.get()?,
            user_id: c.get()?,
            project_id: c.get()?,
            group_type_id: c.get()?,
            status: c.get()?,
            name: c.get()?,
            description: c.get()?,
            created_at: c.get()?,
            updated_at: c.get()?,
        })
    }
}

impl FromRow for SnapshotCandidate {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(SnapshotCandidate {
            id: c.get()?,
            status: c.get()?,
            migration_status: c.get()?,
            has_host: c.get()?,
            size: c.get()?,
            type_name: c.get()?,
        })
    }
}

impl FromRow for MemberSnapshot {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(MemberSnapshot {
            snapshot: c.get()?,
            volume: c.get()?,
        })
    }
}

fn select_where(condition: &str) -> Sql {
    let mut sql = Sql::new("select ");
    sql.push(COLUMNS)
        .push(" from group_snapshots g where g.deleted = false and ")
        .push(condition);
    sql
}

impl<D: Database> SqlStore<D> {
    /// Group snapshot `id` as `tx` sees it.
    async fn group_snapshot_in(
        tx: &mut D::Tx,
        id: GroupSnapshotId,
    ) -> Result<Option<GroupSnapshot>, StoreError> {
        let mut sql = select_where("g.id = ");
        sql.push_bind(id);
        tx.fetch_optional(sql).await
    }

    /// Whether the group has a live group snapshot (such a group is not deleted).
    pub(super) async fn has_group_snapshots(
        tx: &mut D::Tx,
        group: GroupId,
    ) -> Result<bool, StoreError> {
        let sql =
            Sql::new("select id from group_snapshots where group_id = $1 and deleted = false")
                .bind(group);
        let found: Option<(GroupSnapshotId,)> = tx.fetch_optional(sql).await?;
        Ok(found.is_some())
    }
}

#[async_trait]
impl<D: Database> GroupSnapshotStore for SqlStore<D> {
    #[tracing::instrument(skip_all, fields(group_snapshot_id = %new.id), err)]
    async fn insert_group_snapshot(
        &self,
        new: &NewGroupSnapshot,
        owner: &QuotaOwner,
    ) -> Result<Outcome<Vec<MemberSnapshot>, GroupSnapshotRefusal>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let lock = Sql::locking(LOCK_GROUP, D::FOR_UPDATE).bind(new.group_id);
        let Some((group_type, status)): Option<(GroupTypeId, GroupStatus)> =
            tx.fetch_optional(lock).await?
        else {
            return Ok(Outcome::Gone);
        };
        if let Err(reason) = group_snapshot::check_group(new.group_id, status) {
            return Ok(Outcome::Refused(GroupSnapshotRefusal::Group(reason)));
        }
        let members = Sql::locking(MEMBERS, D::FOR_UPDATE_OF_VOLUME).bind(new.group_id.to_string());
        let members: Vec<SnapshotCandidate> = tx.fetch_all(members).await?;
        for member in &members {
            if let Err(reason) = group_snapshot::check_member(member) {
                return Ok(Outcome::Refused(GroupSnapshotRefusal::Member(reason)));
            }
        }
        let (limits, usage) = Self::locked_quota(&mut tx, owner).await?;
        let sizes: Vec<(i64, &str)> = members
            .iter()
            .map(|m| (m.size, m.type_name.as_str()))
            .collect();
        if let Err(over) = quota::check_snapshots_create(&limits, &usage, &sizes) {
            return Ok(Outcome::Refused(GroupSnapshotRefusal::OverQuota(over)));
        }
        let insert = Sql::new(INSERT)
            .bind(new.id)
            .bind(new.group_id)
            .bind(&new.user_id)
            .bind(&new.project_id)
            .bind(group_type)
            .bind(GroupSnapshotStatus::Creating)
            .bind(&new.name)
            .bind(&new.description)
            .bind(new.created_at);
        tx.execute(insert).await?;
        if let Some(made) = Self::group_snapshot_in(&mut tx, new.id).await? {
            let payload = group_snapshot::usage_payload(&made, GroupSnapshotStatus::Creating);
            let kind = EventKind::GroupSnapshotCreateStart;
            self.record_payload_event(&mut tx, kind, payload, new.created_at)
                .await?;
        }
        let mut taken = Vec::with_capacity(members.len());
        for member in &members {
            let snapshot = SnapshotId::generate();
            let insert = Sql::new(INSERT_MEMBER)
                .bind(snapshot)
                .bind(member.id)
                .bind(&new.user_id)
                .bind(&new.project_id)
                .bind(SnapshotStatus::Creating)
                .bind(member.size)
                .bind(&new.name)
                .bind(&new.description)
                .bind(new.created_at)
                .bind(new.id.to_string());
            tx.execute(insert).await?;
            let events = &[EventKind::SnapshotCreateStart];
            self.record_snapshot_events(&mut tx, events, snapshot, new.created_at)
                .await?;
            taken.push(MemberSnapshot {
                snapshot,
                volume: member.id,
            });
        }
        tx.commit().await?;
        Ok(Outcome::Done(taken))
    }

    #[tracing::instrument(skip_all, err)]
    async fn get_group_snapshot(
        &self,
        id: GroupSnapshotId,
    ) -> Result<Option<GroupSnapshot>, StoreError> {
        let mut sql = select_where("g.id = ");
        sql.push_bind(id);
        self.db.fetch_optional(sql).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn list_group_snapshots(
        &self,
        filters: &GroupSnapshotFilters,
        page: &Page<GroupSortKey>,
    ) -> Result<Vec<GroupSnapshot>, StoreError> {
        let mut sql = select_where("true");
        if let Some(project) = &filters.project_id {
            sql.push(" and g.project_id = ").push_bind(project.clone());
        }
        if let Some(name) = &filters.name {
            sql.push(" and g.name = ").push_bind(name.clone());
        }
        if let Some(status) = filters.status {
            sql.push(" and g.status = ").push_bind(status);
        }
        if let Some(group) = filters.group_id {
            sql.push(" and g.group_id = ").push_bind(group);
        }
        push_page(&mut sql, page, "g", "group_snapshots");
        self.db.fetch_all(sql).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn group_snapshot_members(
        &self,
        id: GroupSnapshotId,
    ) -> Result<Vec<MemberSnapshot>, StoreError> {
        let sql = Sql::new(MEMBER_SNAPSHOTS).bind(id.to_string());
        self.db.fetch_all(sql).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn set_group_snapshot_status(
        &self,
        id: GroupSnapshotId,
        status: GroupSnapshotStatus,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let lock = Sql::locking(LOCK, D::FOR_UPDATE).bind(id);
        let found: Option<(GroupSnapshotStatus,)> = tx.fetch_optional(lock).await?;
        if found.is_none() {
            return Ok(Outcome::Gone);
        }
        tx.execute(Sql::new(SET_STATUS).bind(id).bind(status).bind(now))
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn begin_group_snapshot_delete(
        &self,
        id: GroupSnapshotId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Vec<MemberSnapshot>, ()>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let lock = Sql::locking(LOCK, D::FOR_UPDATE).bind(id);
        let Some((status,)): Option<(GroupSnapshotStatus,)> = tx.fetch_optional(lock).await? else {
            return Ok(Outcome::Gone);
        };
        let creating = Sql::new(SOURCE_OF_CREATING)
            .bind(id.to_string())
            .bind(GroupStatus::Creating);
        let source_of: Option<(GroupId,)> = tx.fetch_optional(creating).await?;
        if !group_snapshot::may_delete(status) || source_of.is_some() {
            return Ok(Outcome::Refused(()));
        }
        let members: Vec<MemberSnapshot> = tx
            .fetch_all(Sql::new(MEMBER_SNAPSHOTS).bind(id.to_string()))
            .await?;
        let deleting = Sql::new(MEMBERS_DELETING)
            .bind(id.to_string())
            .bind(SnapshotStatus::Deleting)
            .bind(now);
        tx.execute(deleting).await?;
        for member in &members {
            let kind = &[EventKind::SnapshotDeleteStart];
            self.record_snapshot_events(&mut tx, kind, member.snapshot, now)
                .await?;
        }
        let status = Sql::new(SET_STATUS)
            .bind(id)
            .bind(GroupSnapshotStatus::Deleting)
            .bind(now);
        tx.execute(status).await?;
        if let Some(deleting) = Self::group_snapshot_in(&mut tx, id).await? {
            let payload = group_snapshot::usage_payload(&deleting, GroupSnapshotStatus::Deleting);
            let kind = EventKind::GroupSnapshotDeleteStart;
            self.record_payload_event(&mut tx, kind, payload, now)
                .await?;
        }
        tx.commit().await?;
        Ok(Outcome::Done(members))
    }

    #[tracing::instrument(skip_all, err)]
    async fn finish_group_snapshot_delete(
        &self,
        id: GroupSnapshotId,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().await?;
        if let Some(deleted) = Self::group_snapshot_in(&mut tx, id).await? {
            let payload = group_snapshot::usage_payload(&deleted, GroupSnapshotStatus::Deleted);
            let kind = EventKind::GroupSnapshotDeleteEnd;
            self.record_payload_event(&mut tx, kind, payload, now)
                .await?;
        }
        let delete = Sql::new(DELETE)
            .bind(id)
            .bind(now)
            .bind(GroupSnapshotStatus::Deleted);
        tx.execute(delete).await?;
        tx.commit().await?;
        Ok(())
    }

    #[tracing::instrument(skip_all, err)]
    async fn finish_group_snapshot_create(
        &self,
        id: GroupSnapshotId,
        status: GroupSnapshotStatus,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().await?;
        tx.execute(Sql::new(SET_STATUS).bind(id).bind(status).bind(now))
            .await?;
        let made = Self::group_snapshot_in(&mut tx, id).await?;
        if let Some(made) = made.filter(|_| status == GroupSnapshotStatus::Available) {
            let payload = group_snapshot::usage_payload(&made, status);
            let kind = EventKind::GroupSnapshotCreateEnd;
            self.record_payload_event(&mut tx, kind, payload, now)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
