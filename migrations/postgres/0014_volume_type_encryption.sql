-- Encryption types (Cinder's `encryption` table): how the hosts of a volume type's
-- volumes encrypt them (LUKS by the hypervisor for control_location front-end), at most
-- one live row per type. The key of each volume is held by the key manager; a volume
-- names it in volumes.encryption_key_id.
create table encryption (
    encryption_id     uuid primary key,
    volume_type_id    uuid not null references volume_types (id),
    provider          text not null,
    control_location  text not null check (control_location in ('front-end', 'back-end')),
    cipher            text,
    key_size          integer,
    created_at        timestamptz not null,
    updated_at        timestamptz,
    deleted           boolean not null default false,
    deleted_at        timestamptz
);
create unique index encryption_live_type on encryption (volume_type_id) where deleted = false;
