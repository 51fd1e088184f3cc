-- Group snapshots (3.14+): a snapshot of every member of a group, taken together. Each
-- member's snapshot names its group snapshot in snapshots.group_snapshot_id.
create table group_snapshots (
    id             text primary key,
    group_id       text not null references groups (id),
    user_id        text,
    project_id     text not null,
    group_type_id  text not null references group_types (id),
    status         text not null check (status in (
        'creating', 'available', 'updating', 'deleting', 'deleted', 'error', 'error_deleting')),
    name           text,
    description    text,
    created_at     text not null,
    updated_at     text,
    deleted        boolean not null default false,
    deleted_at     text
);
create index group_snapshots_live_project on group_snapshots (project_id, created_at)
    where deleted = false;
create index group_snapshots_group on group_snapshots (group_id) where deleted = false;

alter table snapshots add column group_snapshot_id text;
create index snapshots_group_snapshot on snapshots (group_snapshot_id)
    where deleted = false and group_snapshot_id is not null;
