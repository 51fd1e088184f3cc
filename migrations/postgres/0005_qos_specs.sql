-- QoS specs (Cinder's quality_of_service_specs): a named set of key/value limits with a
-- consumer, associated with volume types through volume_types.qos_specs_id. Front-end
-- specs reach the hypervisor in every attachment's connection_info.
create table qos_specs (
    id          uuid primary key,
    name        text not null,
    consumer    text not null default 'back-end'
                check (consumer in ('front-end', 'back-end', 'both')),
    created_at  timestamptz not null,
    updated_at  timestamptz,
    deleted     boolean not null default false,
    deleted_at  timestamptz
);
create unique index qos_specs_live_name on qos_specs (name) where deleted = false;

create table qos_specs_items (
    id            bigserial primary key,
    qos_specs_id  uuid not null references qos_specs (id),
    key           text not null,
    value         text,
    created_at    timestamptz not null,
    updated_at    timestamptz,
    deleted       boolean not null default false,
    deleted_at    timestamptz
);
create unique index qos_specs_items_live_key on qos_specs_items (qos_specs_id, key)
    where deleted = false;
-- The association column was reserved as text in 0001; it now refers to these rows.
alter table volume_types alter column qos_specs_id type uuid using qos_specs_id::uuid;
create index volume_types_qos on volume_types (qos_specs_id) where deleted = false;
