-- A volume being reverted to its latest snapshot is `reverting` (Cinder's status for
-- the `revert` action, 3.40). SQLite cannot change a CHECK, so the table is made anew:
-- its rows set aside, the table dropped and made again with the new CHECK, the rows put
-- back, the indexes made again. The rows that refer to volumes are checked when the
-- migration commits (deferred): by then every volume they name is back.
pragma defer_foreign_keys = on;
create table volumes_before_reverting as select * from volumes;
drop table volumes;
create table volumes (
    id                    text primary key,
    user_id               text,
    project_id            text not null,
    host                  text,
    size                  integer not null check (size > 0),
    availability_zone     text not null default 'nova',
    status                text not null check (status in (
        'creating', 'available', 'deleting', 'error', 'error_deleting', 'error_managing',
        'managing', 'attaching', 'in-use', 'detaching', 'maintenance', 'restoring-backup',
        'error_restoring', 'reserved', 'awaiting-transfer', 'backing-up', 'error_backing-up',
        'error_extending', 'downloading', 'uploading', 'retyping', 'extending', 'reverting',
        'deleted')),
    attach_status         text not null default 'detached' check (attach_status in (
        'attached', 'attaching', 'detached', 'reserved', 'error_attaching', 'error_detaching',
        'deleted')),
    migration_status      text,
    display_name          text,
    display_description   text,
    volume_type_id        text not null references volume_types (id),
    encryption_key_id     text,
    bootable              boolean not null default false,
    multiattach           boolean not null default false,
    previous_status       text,
    service_uuid          text,
    shared_targets        boolean default true,
    provider_id           text,
    group_id              text,
    consistencygroup_id   text,
    created_at            text not null,
    updated_at            text,
    deleted               boolean not null default false,
    deleted_at            text,
    snapshot_id           text,
    source_volid          text,
    reserved_growth       integer not null default 0
);
insert into volumes (id, user_id, project_id, host, size, availability_zone, status,
    attach_status, migration_status, display_name, display_description, volume_type_id,
    encryption_key_id, bootable, multiattach, previous_status, service_uuid, shared_targets,
    provider_id, group_id, consistencygroup_id, created_at, updated_at, deleted, deleted_at,
    snapshot_id, source_volid, reserved_growth)
select id, user_id, project_id, host, size, availability_zone, status, attach_status,
    migration_status, display_name, display_description, volume_type_id, encryption_key_id,
    bootable, multiattach, previous_status, service_uuid, shared_targets, provider_id,
    group_id, consistencygroup_id, created_at, updated_at, deleted, deleted_at, snapshot_id,
    source_volid, reserved_growth
from volumes_before_reverting;
drop table volumes_before_reverting;
create index volumes_live_project on volumes (project_id, created_at) where deleted = false;
create index volumes_type on volumes (volume_type_id) where deleted = false;
create index volumes_live_service on volumes (service_uuid) where deleted = false;
create index volumes_live_from_snapshot on volumes (snapshot_id)
    where deleted = false and snapshot_id is not null;
create index volumes_live_from_volume on volumes (source_volid)
    where deleted = false and source_volid is not null;
create index volumes_group on volumes (group_id) where deleted = false and group_id is not null;
