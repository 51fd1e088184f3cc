-- The admin views of services (os-services): why a service was disabled, and whether its
-- backend is frozen. Volume transfers (os-volume-transfer, volume-transfers): an offer of a
-- volume to another project, accepted with a key only its hash is kept of.
alter table services add column disabled_reason text;
alter table services add column frozen boolean not null default false;
create index volumes_live_service on volumes (service_uuid) where deleted = false;

create table transfers (
    id                      uuid primary key,
    volume_id               uuid not null references volumes (id),
    display_name            text,
    salt                    text not null,
    crypt_hash              text not null,
    no_snapshots            boolean not null default false,
    source_project_id       text not null,
    destination_project_id  text,
    accepted                boolean not null default false,
    created_at              timestamptz not null,
    updated_at              timestamptz,
    deleted                 boolean not null default false,
    deleted_at              timestamptz
);
-- At most one open offer per volume (the volume is `awaiting-transfer` while it lasts).
create unique index transfers_live_volume on transfers (volume_id) where deleted = false;
create index transfers_live_created on transfers (created_at, id) where deleted = false;
