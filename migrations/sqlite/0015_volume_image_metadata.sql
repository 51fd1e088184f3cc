-- A volume's image metadata (Cinder's volume_glance_metadata): what it was made from,
-- shown as `volume_image_metadata` and changed with os-set_image_metadata and
-- os-unset_image_metadata.
create table volume_glance_metadata (
    id           integer primary key autoincrement,
    volume_id    text references volumes (id),
    key          text not null,
    value        text,
    created_at   text not null,
    updated_at   text,
    deleted      boolean not null default false,
    deleted_at   text
);
create unique index volume_glance_metadata_live_key on volume_glance_metadata (volume_id, key)
    where deleted = false;
