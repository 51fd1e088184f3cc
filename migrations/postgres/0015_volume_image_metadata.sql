-- A volume's image metadata (Cinder's volume_glance_metadata): what it was made from,
-- shown as `volume_image_metadata` and changed with os-set_image_metadata and
-- os-unset_image_metadata.
create table volume_glance_metadata (
    id           bigserial primary key,
    volume_id    uuid references volumes (id),
    key          text not null,
    value        text,
    created_at   timestamptz not null,
    updated_at   timestamptz,
    deleted      boolean not null default false,
    deleted_at   timestamptz
);
create unique index volume_glance_metadata_live_key on volume_glance_metadata (volume_id, key)
    where deleted = false;
