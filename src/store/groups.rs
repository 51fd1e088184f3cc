//! Generic volume groups (`groups`, `group_volume_type_mapping`) and their members
//! (`volumes.group_id`). Every change locks the group's row first, then the volumes it
//! touches, so a membership change, a delete and a new member never cross.

use std::collections::HashMap;
use std::convert::Infallible;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::paging::push_page;
use super::SqlStore;
use crate::domain::attachment::AttachStatus;
use crate::domain::event::EventKind;
use crate::domain::group::{
    self, Group, GroupDeleteRefusal, GroupFilters, GroupSortKey, GroupStatus, MemberCandidate,
    MembersState, MembershipRefusal, NewGroup,
};
use crate::domain::ids::{GroupId, GroupTypeId, VolumeId, VolumeTypeId};
use crate::domain::paging::Page;
use crate::domain::quota::{self, OverQuota, QuotaOwner};
use crate::domain::volume::VolumeStatus;
use crate::domain::Outcome;

/// A change of a group: fields given change; `add`/`remove` are volume ids as written.
#[derive(Debug, Clone, Default)]
pub struct GroupChange {
    pub name: Option<String>,
    pub description: Option<String>,
    pub add: Vec<String>,
    pub remove: Vec<String>,
}

/// Why a group change is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupUpdateRefusal {
    Membership(MembershipRefusal),
    /// Nothing would change (Cinder's "no valid name, description, ...").
    NothingToChange,
    /// Members change only while the group is `available`.
    NotAvailable,
}

#[async_trait]
pub trait GroupStore: Send + Sync {
    /// Inserts a group with its volume types if the project's `groups` quota has room.
    async fn insert_group(
        &self,
        new: &NewGroup,
        owner: &QuotaOwner,
    ) -> Result<Outcome<(), OverQuota>, StoreError>;
    /// A live group with its volume types.
    async fn get_group(&self, id: GroupId) -> Result<Option<Group>, StoreError>;
    /// One page of live groups.
    async fn list_groups(
        &self,
        filters: &GroupFilters,
        page: &Page<GroupSortKey>,
    ) -> Result<Vec<Group>, StoreError>;
    /// The ids of a group's live volumes, oldest first.
    async fn group_volumes(&self, id: GroupId) -> Result<Vec<VolumeId>, StoreError>;
    /// Renames, re-describes, adds and removes members, all or nothing; the group ends
    /// `available`.
    async fn update_group(
        &self,
        id: GroupId,
        change: &GroupChange,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), GroupUpdateRefusal>, StoreError>;
    /// Sets a status, whatever the current one (an admin's `reset_status`).
    async fn set_group_status(
        &self,
        id: GroupId,
        status: GroupStatus,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError>;
    /// Ends the making of a group (`create-from-src`) in `status`.
    async fn finish_group_create(
        &self,
        id: GroupId,
        status: GroupStatus,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Starts a delete: the group becomes `deleting` and, with `delete_volumes`, its
    /// members too; their ids. A group no backend took goes at once (empty list).
    async fn begin_group_delete(
        &self,
        id: GroupId,
        delete_volumes: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Vec<VolumeId>, GroupDeleteRefusal>, StoreError>;
    /// Soft-deletes a group and its type list.
    async fn finish_group_delete(&self, id: GroupId, now: DateTime<Utc>) -> Result<(), StoreError>;
}

const COLUMNS: &str = "g.id, g.user_id, g.project_id, g.host, g.availability_zone, g.status, \
     g.name, g.description, g.group_type_id, g.group_snapshot_id, g.source_group_id, \
     g.replication_status, g.created_at, g.updated_at";

const INSERT: &str = "insert into groups (id, user_id, project_id, host, availability_zone, \
     status, name, description, group_type_id, replication_status, created_at, deleted, \
     source_group_id, group_snapshot_id) \
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'disabled', $10, false, $11, $12)";

const INSERT_TYPE: &str = "insert into group_volume_type_mapping (group_id, volume_type_id, \
     created_at, deleted) values ($1, $2, $3, false)";

const LOCK_TYPE: &str = "select id from group_types where id = $1 and deleted = false";

const COUNT_LIVE: &str = "select count(*) from groups where project_id = $1 and deleted = false";

const LOCK: &str = "select g.status, g.host from groups g where g.id = $1 and g.deleted = false";

const MEMBER_COLUMNS: &str =
    "select id, project_id, volume_type_id, status, host, group_id from volumes \
      where deleted = false and ";

const MEMBERS_STATE: &str = "\
    select count(*), \
           coalesce(sum(case when v.attach_status = $2 then 1 else 0 end), 0), \
           coalesce(sum(case when exists (select 1 from snapshots s \
                                           where s.volume_id = v.id and s.deleted = false) \
                             then 1 else 0 end), 0) \
      from volumes v where v.group_id = $1 and v.deleted = false";

const SET_MEMBER: &str = "update volumes set group_id = $2, updated_at = $3 where id = $1";

const UPDATE: &str = "update groups set name = coalesce($2, name), \
     description = coalesce($3, description), status = $4, updated_at = $5 where id = $1";

const SET_STATUS: &str = "update groups set status = $2, updated_at = $3 where id = $1";

const MEMBERS_DELETING: &str = "update volumes set status = $2, updated_at = $3 \
     where group_id = $1 and deleted = false";

const MEMBER_IDS: &str = "select id from volumes where group_id = $1 and deleted = false \
     order by created_at, id";

const DELETE: &str = "update groups set deleted = true, deleted_at = $2, status = $3 \
     where id = $1 and deleted = false";

const DELETE_TYPES: &str = "update group_volume_type_mapping set deleted = true, \
     deleted_at = $2 where group_id = $1 and deleted = false";

impl FromRow for Group {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(Group {
            id: c.get()?,
            user_id: c.get()?,
            project_id: c.get()?,
            host: c.get()?,
            availability_zone: c.get()?,
            status: c.get()?,
            name: c.get()?,
            description: c.get()?,
            group_type_id: c.get()?,
            volume_type_ids: Vec::new(),
            group_snapshot_id: c.get()?,
            source_group_id: c.get()?,
            replication_status: c.get()?,
            created_at: c.get()?,
            updated_at: c.get()?,
        })
    }
}

impl FromRow for MemberCandidate {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        Ok(MemberCandidate {
            id: c.get()?,
            project_id: c.get()?,
            volume_type_id: c.get()?,
            status: c.get()?,
            host: c.get()?,
            group_id: c.get()?,
        })
    }
}

impl<D: Database> SqlStore<D> {
    /// Live groups in a project: what its `groups` quota counts.
    pub(super) async fn count_groups(
        tx: &mut impl Executor,
        project_id: &str,
    ) -> Result<i64, StoreError> {
        let (count,): (i64,) = tx
            .fetch_optional(Sql::new(COUNT_LIVE).bind(project_id))
            .await?
            .unwrap_or((0,));
        Ok(count)
    }

    /// The groups `sql` selects, with their volume types, read together.
    async fn groups_with_types(
        reads: &mut impl Executor,
        sql: Sql,
    ) -> Result<Vec<Group>, StoreError> {
        let mut found: Vec<Group> = reads.fetch_all(sql).await?;
        if found.is_empty() {
            return Ok(found);
        }
        let mut types = Sql::new(
            "select group_id, volume_type_id from group_volume_type_mapping \
              where deleted = false and group_id in (",
        );
        for (i, g) in found.iter().enumerate() {
            if i > 0 {
                types.push(", ");
            }
            types.push_bind(g.id);
        }
        types.push(") order by id");
        let rows: Vec<(GroupId, VolumeTypeId)> = reads.fetch_all(types).await?;
        let index: HashMap<GroupId, usize> =
            found.iter().enumerate().map(|(i, g)| (g.id, i)).collect();
        for (group, volume_type) in rows {
            if let Some(&i) = index.get(&group) {
                found[i].volume_type_ids.push(volume_type);
            }
        }
        Ok(found)
    }

    /// Group `id` as `tx` sees it.
    async fn group_in(tx: &mut D::Tx, id: GroupId) -> Result<Option<Group>, StoreError> {
        let mut read = select_where("g.id = ");
        read.push_bind(id);
        Ok(Self::groups_with_types(tx, read).await?.pop())
    }

    /// The transaction with group `id` locked, and its status and host; `None` if gone.
    async fn lock_group(
        &self,
        id: GroupId,
    ) -> Result<Option<(D::Tx, GroupStatus, Option<String>)>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let lock = Sql::locking(LOCK, D::FOR_UPDATE).bind(id);
        let found: Option<(GroupStatus, Option<String>)> = tx.fetch_optional(lock).await?;
        Ok(found.map(|(status, host)| (tx, status, host)))
    }

    /// A group's status, locked in `tx` (a new member checks it): `None` when gone.
    pub(super) async fn lock_group_status(
        tx: &mut D::Tx,
        id: GroupId,
    ) -> Result<Option<GroupStatus>, StoreError> {
        let lock = Sql::locking(LOCK, D::FOR_UPDATE).bind(id);
        let found: Option<(GroupStatus, Option<String>)> = tx.fetch_optional(lock).await?;
        Ok(found.map(|(status, _)| status))
    }

    async fn lock_candidate(
        tx: &mut D::Tx,
        id: &str,
    ) -> Result<Option<MemberCandidate>, StoreError> {
        let Some(uuid) = VolumeId::parse(id) else {
            return Ok(None);
        };
        let mut sql = Sql::new(MEMBER_COLUMNS);
        sql.push("id = ").push_bind(uuid).push(D::FOR_UPDATE);
        tx.fetch_optional(sql).await
    }

    async fn lock_members(tx: &mut D::Tx, id: GroupId) -> Result<Vec<MemberCandidate>, StoreError> {
        let mut sql = Sql::new(MEMBER_COLUMNS);
        sql.push("group_id = ")
            .push_bind(id.to_string())
            .push(" order by created_at, id")
            .push(D::FOR_UPDATE);
        tx.fetch_all(sql).await
    }

    /// Checks and applies the member changes of `change` in `tx`: whether any member
    /// changed.
    async fn change_members(
        tx: &mut D::Tx,
        group: &Group,
        change: &GroupChange,
        now: DateTime<Utc>,
    ) -> Result<Result<bool, MembershipRefusal>, StoreError> {
        if let Err(refusal) = group::check_disjoint(&change.add, &change.remove) {
            return Ok(Err(refusal));
        }
        let members = Self::lock_members(tx, group.id).await?;
        let mut removals = Vec::new();
        for id in &change.remove {
            let member = members.iter().find(|m| m.id.to_string() == *id);
            if let Err(refusal) = group::may_leave(id, member) {
                return Ok(Err(refusal));
            }
            removals.extend(member.map(|m| m.id));
        }
        let mut additions = Vec::new();
        for id in &change.add {
            let Some(candidate) = Self::lock_candidate(tx, id).await? else {
                return Ok(Err(MembershipRefusal::NotFound(id.clone())));
            };
            match group::may_join(group, &candidate) {
                Ok(true) => additions.push(candidate.id),
                Ok(false) => {}
                Err(refusal) => return Ok(Err(refusal)),
            }
        }
        for volume in &removals {
            tx.execute(
                Sql::new(SET_MEMBER)
                    .bind(*volume)
                    .bind(None::<String>)
                    .bind(now),
            )
            .await?;
        }
        for volume in &additions {
            let group_id = Some(group.id.to_string());
            tx.execute(Sql::new(SET_MEMBER).bind(*volume).bind(group_id).bind(now))
                .await?;
        }
        Ok(Ok(!removals.is_empty() || !additions.is_empty()))
    }
}

impl From<&NewGroup> for Group {
    fn from(new: &NewGroup) -> Self {
        Group {
            id: new.id,
            user_id: Some(new.user_id.clone()),
            project_id: new.project_id.clone(),
            host: new.host.clone(),
            availability_zone: new.availability_zone.clone(),
            status: new.status,
            name: new.name.clone(),
            description: new.description.clone(),
            group_type_id: new.group_type_id,
            volume_type_ids: new.volume_type_ids.clone(),
            group_snapshot_id: new.group_snapshot_id.map(|g| g.to_string()),
            source_group_id: new.source_group_id.map(|g| g.to_string()),
            replication_status: "disabled".to_owned(),
            created_at: new.created_at,
            updated_at: None,
        }
    }
}

fn select_where(condition: &str) -> Sql {
    let mut sql = Sql::new("select ");
    sql.push(COLUMNS)
        .push(" from groups g where g.deleted = false and ")
        .push(condition);
    sql
}

#[async_trait]
impl<D: Database> GroupStore for SqlStore<D> {
    #[tracing::instrument(skip_all, fields(group_id = %new.id), err)]
    async fn insert_group(
        &self,
        new: &NewGroup,
        owner: &QuotaOwner,
    ) -> Result<Outcome<(), OverQuota>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        // The type stays while the group is made (a delete of it waits, then refuses).
        let lock = Sql::locking(LOCK_TYPE, D::FOR_UPDATE).bind(new.group_type_id);
        let found: Option<(GroupTypeId,)> = tx.fetch_optional(lock).await?;
        if found.is_none() {
            return Ok(Outcome::Gone);
        }
        let (limits, mut usage) = Self::locked_quota(&mut tx, owner).await?;
        usage.groups = Self::count_groups(&mut tx, &owner.project_id).await?;
        if let Err(over) = quota::check_group_create(&limits, &usage) {
            return Ok(Outcome::Refused(over));
        }
        let insert = Sql::new(INSERT)
            .bind(new.id)
            .bind(&new.user_id)
            .bind(&new.project_id)
            .bind(&new.host)
            .bind(&new.availability_zone)
            .bind(new.status)
            .bind(&new.name)
            .bind(&new.description)
            .bind(new.group_type_id)
            .bind(new.created_at)
            .bind(new.source_group_id.map(|g| g.to_string()))
            .bind(new.group_snapshot_id.map(|g| g.to_string()));
        tx.execute(insert).await?;
        for volume_type in &new.volume_type_ids {
            let mapping = Sql::new(INSERT_TYPE)
                .bind(new.id)
                .bind(*volume_type)
                .bind(new.created_at);
            tx.execute(mapping).await?;
        }
        let made = Group::from(new);
        let start = group::usage_payload(&made, GroupStatus::Creating);
        let kind = EventKind::GroupCreateStart;
        self.record_payload_event(&mut tx, kind, start, new.created_at)
            .await?;
        if new.status == GroupStatus::Available {
            let end = group::usage_payload(&made, new.status);
            let kind = EventKind::GroupCreateEnd;
            self.record_payload_event(&mut tx, kind, end, new.created_at)
                .await?;
        }
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn get_group(&self, id: GroupId) -> Result<Option<Group>, StoreError> {
        let mut sql = select_where("g.id = ");
        sql.push_bind(id);
        let mut reads = self.db.begin_read().await?;
        Ok(Self::groups_with_types(&mut reads, sql).await?.pop())
    }

    #[tracing::instrument(skip_all, err)]
    async fn list_groups(
        &self,
        filters: &GroupFilters,
        page: &Page<GroupSortKey>,
    ) -> Result<Vec<Group>, StoreError> {
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
        push_page(&mut sql, page, "g", "groups");
        let mut reads = self.db.begin_read().await?;
        Self::groups_with_types(&mut reads, sql).await
    }

    #[tracing::instrument(skip_all, err)]
    async fn group_volumes(&self, id: GroupId) -> Result<Vec<VolumeId>, StoreError> {
        let rows: Vec<(VolumeId,)> = self
            .db
            .fetch_all(Sql::new(MEMBER_IDS).bind(id.to_string()))
            .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    #[tracing::instrument(skip_all, err)]
    async fn update_group(
        &self,
        id: GroupId,
        change: &GroupChange,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), GroupUpdateRefusal>, StoreError> {
        let Some((mut tx, status, _)) = self.lock_group(id).await? else {
            return Ok(Outcome::Gone);
        };
        let Some(group) = Self::group_in(&mut tx, id).await? else {
            return Ok(Outcome::Gone);
        };
        let name = change
            .name
            .as_ref()
            .filter(|n| group.name.as_ref() != Some(*n));
        let description = change
            .description
            .as_ref()
            .filter(|d| group.description.as_ref() != Some(*d));
        let members_change = !change.add.is_empty() || !change.remove.is_empty();
        if members_change && status != GroupStatus::Available {
            // Cinder checks the members first, then the status.
            let checked = Self::change_members(&mut tx, &group, change, now).await?;
            return Ok(Outcome::Refused(match checked {
                Err(refusal) => GroupUpdateRefusal::Membership(refusal),
                Ok(_) => GroupUpdateRefusal::NotAvailable,
            }));
        }
        let changed = match Self::change_members(&mut tx, &group, change, now).await? {
            Ok(changed) => changed,
            Err(refusal) => return Ok(Outcome::Refused(GroupUpdateRefusal::Membership(refusal))),
        };
        if name.is_none() && description.is_none() && !changed {
            return Ok(Outcome::Refused(GroupUpdateRefusal::NothingToChange));
        }
        let update = Sql::new(UPDATE)
            .bind(id)
            .bind(name.cloned())
            .bind(description.cloned())
            .bind(GroupStatus::Available)
            .bind(now);
        tx.execute(update).await?;
        let changed = Group {
            name: name.cloned().or(group.name.clone()),
            ..group
        };
        for (kind, status) in [
            (EventKind::GroupUpdateStart, GroupStatus::Updating),
            (EventKind::GroupUpdateEnd, GroupStatus::Available),
        ] {
            let payload = group::usage_payload(&changed, status);
            self.record_payload_event(&mut tx, kind, payload, now)
                .await?;
        }
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn set_group_status(
        &self,
        id: GroupId,
        status: GroupStatus,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), Infallible>, StoreError> {
        let Some((mut tx, _, _)) = self.lock_group(id).await? else {
            return Ok(Outcome::Gone);
        };
        tx.execute(Sql::new(SET_STATUS).bind(id).bind(status).bind(now))
            .await?;
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn begin_group_delete(
        &self,
        id: GroupId,
        delete_volumes: bool,
        now: DateTime<Utc>,
    ) -> Result<Outcome<Vec<VolumeId>, GroupDeleteRefusal>, StoreError> {
        let Some((mut tx, status, host)) = self.lock_group(id).await? else {
            return Ok(Outcome::Gone);
        };
        if host.is_none() {
            // No backend ever held it: only its record goes.
            tx.execute(
                Sql::new(DELETE)
                    .bind(id)
                    .bind(now)
                    .bind(GroupStatus::Deleted),
            )
            .await?;
            tx.execute(Sql::new(DELETE_TYPES).bind(id).bind(now))
                .await?;
            tx.commit().await?;
            return Ok(Outcome::Done(Vec::new()));
        }
        Self::lock_members(&mut tx, id).await?;
        let (volumes, attached, with_snapshots): (i64, i64, i64) = tx
            .fetch_optional(
                Sql::new(MEMBERS_STATE)
                    .bind(id.to_string())
                    .bind(AttachStatus::Attached),
            )
            .await?
            .unwrap_or((0, 0, 0));
        let members = MembersState {
            group_snapshots: Self::has_group_snapshots(&mut tx, id).await?,
            volumes: volumes as usize,
            attached: attached > 0,
            with_snapshots: with_snapshots > 0,
        };
        if let Err(refusal) = group::may_delete(status, members, delete_volumes) {
            return Ok(Outcome::Refused(refusal));
        }
        let ids: Vec<(VolumeId,)> = tx
            .fetch_all(Sql::new(MEMBER_IDS).bind(id.to_string()))
            .await?;
        let deleting = Sql::new(MEMBERS_DELETING)
            .bind(id.to_string())
            .bind(VolumeStatus::Deleting)
            .bind(now);
        tx.execute(deleting).await?;
        // Each member's delete is told as a volume's is (its `.end` comes as it goes).
        for (volume,) in &ids {
            let kind = &[EventKind::VolumeDeleteStart];
            self.record_events(&mut tx, kind, *volume, None, now)
                .await?;
        }
        let status = Sql::new(SET_STATUS)
            .bind(id)
            .bind(GroupStatus::Deleting)
            .bind(now);
        tx.execute(status).await?;
        if let Some(deleting) = Self::group_in(&mut tx, id).await? {
            let payload = group::usage_payload(&deleting, GroupStatus::Deleting);
            let kind = EventKind::GroupDeleteStart;
            self.record_payload_event(&mut tx, kind, payload, now)
                .await?;
        }
        tx.commit().await?;
        Ok(Outcome::Done(ids.into_iter().map(|(v,)| v).collect()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn finish_group_delete(&self, id: GroupId, now: DateTime<Utc>) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().await?;
        if let Some(deleted) = Self::group_in(&mut tx, id).await? {
            let payload = group::usage_payload(&deleted, GroupStatus::Deleted);
            let kind = EventKind::GroupDeleteEnd;
            self.record_payload_event(&mut tx, kind, payload, now)
                .await?;
        }
        let delete = Sql::new(DELETE)
            .bind(id)
            .bind(now)
            .bind(GroupStatus::Deleted);
        tx.execute(delete).await?;
        tx.execute(Sql::new(DELETE_TYPES).bind(id).bind(now))
            .await?;
        tx.commit().await?;
        Ok(())
    }

    #[tracing::instrument(skip_all, err)]
    async fn finish_group_create(
        &self,
        id: GroupId,
        status: GroupStatus,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let Some((mut tx, _, _)) = self.lock_group(id).await? else {
            return Ok(());
        };
        tx.execute(Sql::new(SET_STATUS).bind(id).bind(status).bind(now))
            .await?;
        let made = Self::group_in(&mut tx, id).await?;
        if let Some(made) = made.filter(|_| status == GroupStatus::Available) {
            let payload = group::usage_payload(&made, status);
            let kind = EventKind::GroupCreateEnd;
            self.record_payload_event(&mut tx, kind, payload, now)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
