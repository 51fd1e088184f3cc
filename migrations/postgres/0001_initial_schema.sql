-- The whole model in its first form. Ids of our own objects are uuid, timestamps
-- timestamptz. Rows are soft-deleted (deleted = true), never removed.

create table volume_types (
    id            uuid primary key,
    name          text not null,
    description   text,
    is_public     boolean not null default true,
    qos_specs_id  text,
    created_at    timestamptz not null,
    updated_at    timestamptz,
    deleted       boolean not null default false,
    deleted_at    timestamptz
);
create unique index volume_types_live_name on volume_types (name) where deleted = false;

create table volume_type_extra_specs (
    id              bigint generated always as identity primary key,
    volume_type_id  uuid not null references volume_types (id),
    key             text not null,
    value           text,
    created_at      timestamptz not null,
    updated_at      timestamptz,
    deleted         boolean not null default false,
    deleted_at      timestamptz
);
create unique index volume_type_extra_specs_live_key
    on volume_type_extra_specs (volume_type_id, key) where deleted = false;

create table volume_type_projects (
    id              bigint generated always as identity primary key,
    volume_type_id  uuid not null references volume_types (id),
    project_id      text not null,
    created_at      timestamptz not null,
    updated_at      timestamptz,
    deleted         boolean not null default false,
    deleted_at      timestamptz
);
create unique index volume_type_projects_live
    on volume_type_projects (volume_type_id, project_id) where deleted = false;

-- One row per configured storage backend (Cinder's cinder-volume service).
create table services (
    id                 bigint generated always as identity primary key,
    uuid               uuid not null unique,
    host               text not null,
    binary_name        text not null default 'cinder-volume',
    backend_name       text not null,
    driver             text not null,
    availability_zone  text not null default 'nova',
    capabilities       text,
    disabled           boolean not null default false,
    created_at         timestamptz not null,
    updated_at         timestamptz,
    deleted            boolean not null default false,
    deleted_at         timestamptz
);
create unique index services_live_host on services (host) where deleted = false;

create table volumes (
    id                    uuid primary key,
    user_id               text,
    project_id            text not null,
    host                  text,
    size                  bigint not null check (size > 0),
    availability_zone     text not null default 'nova',
    status                text not null check (status in (
        'creating', 'available', 'deleting', 'error', 'error_deleting', 'error_managing',
        'managing', 'attaching', 'in-use', 'detaching', 'maintenance', 'restoring-backup',
        'error_restoring', 'reserved', 'awaiting-transfer', 'backing-up', 'error_backing-up',
        'error_extending', 'downloading', 'uploading', 'retyping', 'extending', 'deleted')),
    attach_status         text not null default 'detached' check (attach_status in (
        'attached', 'attaching', 'detached', 'reserved', 'error_attaching', 'error_detaching',
        'deleted')),
    migration_status      text,
    display_name          text,
    display_description   text,
    volume_type_id        uuid not null references volume_types (id),
    encryption_key_id     text,
    bootable              boolean not null default false,
    multiattach           boolean not null default false,
    previous_status       text,
    service_uuid          uuid,
    shared_targets        boolean default true,
    provider_id           text,
    group_id              text,
    consistencygroup_id   text,
    created_at            timestamptz not null,
    updated_at            timestamptz,
    deleted               boolean not null default false,
    deleted_at            timestamptz
);
create index volumes_live_project on volumes (project_id, created_at) where deleted = false;
create index volumes_type on volumes (volume_type_id) where deleted = false;

create table volume_metadata (
    id          bigint generated always as identity primary key,
    volume_id   uuid not null references volumes (id),
    key         text not null,
    value       text,
    created_at  timestamptz not null,
    updated_at  timestamptz,
    deleted     boolean not null default false,
    deleted_at  timestamptz
);
create unique index volume_metadata_live_key on volume_metadata (volume_id, key) where deleted = false;

-- Keys only admins set: readonly ("True"/"False"), attached_mode, format.
create table volume_admin_metadata (
    id          bigint generated always as identity primary key,
    volume_id   uuid not null references volumes (id),
    key         text not null,
    value       text,
    created_at  timestamptz not null,
    updated_at  timestamptz,
    deleted     boolean not null default false,
    deleted_at  timestamptz
);
create unique index volume_admin_metadata_live_key
    on volume_admin_metadata (volume_id, key) where deleted = false;

create table volume_attachment (
    id               uuid primary key,
    volume_id        uuid not null references volumes (id),
    instance_uuid    text,
    attached_host    text,
    mountpoint       text,
    attach_time      timestamptz,
    detach_time      timestamptz,
    attach_status    text not null check (attach_status in (
        'attached', 'attaching', 'detached', 'reserved', 'error_attaching', 'error_detaching',
        'deleted')),
    attach_mode      text check (attach_mode in ('rw', 'ro', 'null')),
    connection_info  text,
    created_at       timestamptz not null,
    updated_at       timestamptz,
    deleted          boolean not null default false,
    deleted_at       timestamptz
);
create index volume_attachment_live_volume on volume_attachment (volume_id) where deleted = false;
create index volume_attachment_created on volume_attachment (created_at, id);

-- The host connector of an attachment, one row per connector key.
create table attachment_specs (
    id             bigint generated always as identity primary key,
    attachment_id  uuid not null references volume_attachment (id),
    key            text not null,
    value          text,
    created_at     timestamptz not null,
    updated_at     timestamptz,
    deleted        boolean not null default false,
    deleted_at     timestamptz
);
create unique index attachment_specs_live_key
    on attachment_specs (attachment_id, key) where deleted = false;

-- User-visible messages about asynchronous failures (Cinder's /messages API).
create table messages (
    id             uuid primary key,
    project_id     text not null,
    request_id     text,
    resource_type  text not null,
    resource_uuid  text,
    event_id       text not null,
    message_level  text not null default 'ERROR',
    user_message   text not null,
    created_at     timestamptz not null,
    expires_at     timestamptz,
    deleted        boolean not null default false,
    deleted_at     timestamptz
);
create index messages_live_project on messages (project_id, created_at) where deleted = false;

insert into volume_types (id, name, description, is_public, created_at, deleted)
values (gen_random_uuid(), '__DEFAULT__', 'Default Volume Type', true, now(), false);
