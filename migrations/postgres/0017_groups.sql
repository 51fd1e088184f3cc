-- Generic volume groups (3.13+): a project's set of volumes on one backend, of the
-- volume types the group allows. Volumes name their group in volumes.group_id.
create table groups (
    id                  uuid primary key,
    user_id             text,
    project_id          text not null,
    host                text,
    availability_zone   text not null,
    status              text not null check (status in (
        'creating', 'available', 'updating', 'deleting', 'deleted', 'in-use', 'error',
        'error_deleting')),
    name                text,
    description         text,
    group_type_id       uuid not null references group_types (id),
    group_snapshot_id   text,
    source_group_id     text,
    replication_status  text not null default 'disabled',
    created_at          timestamptz not null,
    updated_at          timestamptz,
    deleted             boolean not null default false,
    deleted_at          timestamptz
);
create index groups_live_project on groups (project_id, created_at) where deleted = false;
create index groups_type on groups (group_type_id) where deleted = false;

create table group_volume_type_mapping (
    id              bigint generated always as identity primary key,
    group_id        uuid not null references groups (id),
    volume_type_id  uuid not null references volume_types (id),
    created_at      timestamptz not null,
    deleted         boolean not null default false,
    deleted_at      timestamptz
);
create index group_volume_types_group on group_volume_type_mapping (group_id) where deleted = false;
create index group_volume_types_type on group_volume_type_mapping (volume_type_id)
    where deleted = false;

create index volumes_group on volumes (group_id) where deleted = false and group_id is not null;
