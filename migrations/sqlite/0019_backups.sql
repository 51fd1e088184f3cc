-- Backups (/backups): a volume's or snapshot's data kept in a backup repository, full or
-- incremental (parent_id), as Cinder's backups table. service_metadata names the
-- backup's objects in its container; num_dependent_backups counts live incrementals.
create table backups (
    id                     text primary key,
    volume_id              text not null,
    snapshot_id            text,
    user_id                text,
    project_id             text not null,
    host                   text,
    availability_zone      text,
    display_name           text,
    display_description    text,
    container              text,
    status                 text not null check (status in (
        'creating', 'available', 'deleting', 'error', 'error_deleting', 'restoring',
        'deleted')),
    fail_reason            text,
    service_metadata       text,
    service                text,
    size                   integer not null,
    object_count           integer not null default 0,
    parent_id              text,
    num_dependent_backups  integer not null default 0,
    data_timestamp         text,
    restore_volume_id      text,
    created_at             text not null,
    updated_at             text,
    deleted                boolean not null default false,
    deleted_at             text
);
create index backups_live_project on backups (project_id, created_at) where deleted = false;
create index backups_live_volume on backups (volume_id) where deleted = false;
create index backups_live_parent on backups (parent_id) where deleted = false;

create table backup_metadata (
    id          integer primary key autoincrement,
    backup_id   text not null references backups (id),
    key         text not null,
    value       text,
    created_at  text not null,
    updated_at  text,
    deleted     boolean not null default false,
    deleted_at  text
);
create unique index backup_metadata_live_key on backup_metadata (backup_id, key)
    where deleted = false;
