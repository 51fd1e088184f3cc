-- Group types (Cinder's generic volume groups, 3.11+) and their specs.
create table group_types (
    id           uuid primary key,
    name         text not null,
    description  text,
    is_public    boolean not null default true,
    created_at   timestamptz not null,
    updated_at   timestamptz,
    deleted      boolean not null default false,
    deleted_at   timestamptz
);
create unique index group_types_live_name on group_types (name) where deleted = false;

create table group_type_specs (
    id             bigint generated always as identity primary key,
    group_type_id  uuid not null references group_types (id),
    key            text not null,
    value          text,
    created_at     timestamptz not null,
    updated_at     timestamptz,
    deleted        boolean not null default false,
    deleted_at     timestamptz
);
create unique index group_type_specs_live_key on group_type_specs (group_type_id, key)
    where deleted = false;
