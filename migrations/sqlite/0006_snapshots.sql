-- Snapshots: a point-in-time copy of a volume's data, kept by the volume's backend.
-- A volume made from one (or cloned from another volume) names its source.
alter table volumes add column snapshot_id text;
alter table volumes add column source_volid text;

create table snapshots (
    id                   text primary key,
    volume_id            text not null references volumes (id),
    user_id              text,
    project_id           text not null,
    status               text not null check (status in (
        'creating', 'available', 'deleting', 'error', 'error_deleting', 'unmanaging',
        'backing-up', 'restoring', 'deleted')),
    progress             text,
    volume_size          bigint not null,
    display_name         text,
    display_description  text,
    created_at           text not null,
    updated_at           text,
    deleted              boolean not null default false,
    deleted_at           text
);
create index snapshots_live_volume on snapshots (volume_id) where deleted = false;
create index snapshots_live_project on snapshots (project_id, created_at) where deleted = false;

create table snapshot_metadata (
    id           integer primary key autoincrement,
    snapshot_id  text not null references snapshots (id),
    key          text not null,
    value        text,
    created_at   text not null,
    updated_at   text,
    deleted      boolean not null default false,
    deleted_at   text
);
create unique index snapshot_metadata_live_key on snapshot_metadata (snapshot_id, key)
    where deleted = false;
