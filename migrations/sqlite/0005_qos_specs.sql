-- QoS specs (Cinder's quality_of_service_specs): a named set of key/value limits with a
-- consumer, associated with volume types through volume_types.qos_specs_id. Front-end
-- specs reach the hypervisor in every attachment's connection_info.
create table qos_specs (
    id          text primary key,
    name        text not null,
    consumer    text not null default 'back-end'
                check (consumer in ('front-end', 'back-end', 'both')),
    created_at  text not null,
    updated_at  text,
    deleted     boolean not null default false,
    deleted_at  text
);
create unique index qos_specs_live_name on qos_specs (name) where deleted = false;

create table qos_specs_items (
    id            integer primary key autoincrement,
    qos_specs_id  text not null references qos_specs (id),
    key           text not null,
    value         text,
    created_at    text not null,
    updated_at    text,
    deleted       boolean not null default false,
    deleted_at    text
);
create unique index qos_specs_items_live_key on qos_specs_items (qos_specs_id, key)
    where deleted = false;
create index volume_types_qos on volume_types (qos_specs_id) where deleted = false;
