-- Quotas as Cinder keeps them: limits an admin set for one project (quotas) and for a
-- quota class (quota_classes; the class 'default' is every project's fallback). A
-- resource without a row takes the class's limit, else the built-in default. Usage is
-- not stored: it is counted from the live volumes inside the write it guards.
create table quotas (
    id           integer primary key autoincrement,
    project_id   text not null,
    resource     text not null,
    hard_limit   bigint not null check (hard_limit >= -1),
    created_at   text not null,
    updated_at   text,
    deleted      boolean not null default false,
    deleted_at   text
);
create unique index quotas_live on quotas (project_id, resource) where deleted = false;

create table quota_classes (
    id           integer primary key autoincrement,
    class_name   text not null,
    resource     text not null,
    hard_limit   bigint not null check (hard_limit >= -1),
    created_at   text not null,
    updated_at   text,
    deleted      boolean not null default false,
    deleted_at   text
);
create unique index quota_classes_live on quota_classes (class_name, resource)
    where deleted = false;
