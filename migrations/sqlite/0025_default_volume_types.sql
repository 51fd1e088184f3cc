-- A project's own default volume type (3.62, `/default-types`): a volume of that project
-- made without a type gets it, before the deployment's `default_volume_type`.
create table default_volume_types (
    project_id      text primary key,
    volume_type_id  text not null references volume_types (id),
    created_at      text not null,
    updated_at      text
);
create index default_volume_types_type on default_volume_types (volume_type_id);
