-- Group types (Cinder's generic volume groups, 3.11+) and their specs.
create table group_types (
    id           text primary key,
    name         text not null,
    description  text,
    is_public    boolean not null default true,
    created_at   text not null,
    updated_at   text,
    deleted      boolean not null default false,
    deleted_at   text
);
create unique index group_types_live_name on group_types (name) where deleted = false;

create table group_type_specs (
    id             integer primary key autoincrement,
    group_type_id  text not null references group_types (id),
    key            text not null,
    value          text,
    created_at     text not null,
    updated_at     text,
    deleted        boolean not null default false,
    deleted_at     text
);
create unique index group_type_specs_live_key on group_type_specs (group_type_id, key)
    where deleted = false;
