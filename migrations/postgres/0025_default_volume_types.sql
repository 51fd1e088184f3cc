-- A project's own default volume type (3.62, `/default-types`): a volume of that project
-- made without a type gets it, before the deployment's `default_volume_type`.
create table default_volume_types (
    project_id      text primary key,
    volume_type_id  uuid not null references volume_types (id),
    created_at      timestamptz not null,
    updated_at      timestamptz
);
create index default_volume_types_type on default_volume_types (volume_type_id);
