-- Snapshots: a point-in-time copy of a volume's data, kept by the volume's backend.
-- A volume made from one (or cloned from another volume) names its source.
alter table volumes add column snapshot_id uuid;
alter table volumes add column source_volid uuid;

create table snapshots (
    id                   uuid primary key,
    volume_id            uuid not null references volumes (id),
    user_id              text,
    project_id           text not null,
    status               text not null check (status in (
        'creating', 'available', 'deleting', 'error', 'error_deleting', 'unmanaging',
        'backing-up', 'restoring', 'deleted')),
    progress             text,
    volume_size          bigint not null,
    display_name         text,
    display_description  text,
    created_at           timestamptz not null,
    updated_at           timestamptz,
    deleted              boolean not null default false,
    deleted_at           timestamptz
);
create index snapshots_live_volume on snapshots (volume_id) where deleted = false;
create index snapshots_live_project on snapshots (project_id, created_at) where deleted = false;

create table snapshot_metadata (
    id           bigserial primary key,
    snapshot_id  uuid not null references snapshots (id),
    key          text not null,
    value        text,
    created_at   timestamptz not null,
    updated_at   timestamptz,
    deleted      boolean not null default false,
    deleted_at   timestamptz
);
create unique index snapshot_metadata_live_key on snapshot_metadata (snapshot_id, key)
    where deleted = false;
