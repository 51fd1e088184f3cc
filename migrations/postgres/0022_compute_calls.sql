-- Calls the service owes Nova (Cinder's cinder/compute/nova.py): `volume-extended` after an
-- attached volume grew, `volume-reimaged` after a re-image for a rebuild, a swap of the
-- servers of a migrating volume. Each is written in the transaction of the change that
-- owes it, then sent by a relay (claimed_until: which process holds it), tried again
-- while Nova does not answer, and kept with what Nova said.
create table compute_calls (
    id               uuid primary key,
    kind             text not null check (kind in ('volume-extended', 'volume-reimaged', 'swap-volume')),
    volume_id        uuid not null,
    new_volume_id    uuid,
    project_id       text not null,
    -- The servers (Nova instance uuids), a JSON array.
    servers          text not null,
    status           text not null check (status in ('pending', 'sent', 'failed')),
    attempts         bigint not null default 0,
    next_attempt_at  timestamptz not null,
    claimed_until    timestamptz,
    answer           text,
    created_at       timestamptz not null,
    updated_at       timestamptz
);
create index compute_calls_due on compute_calls (status, next_attempt_at);
create index compute_calls_volume on compute_calls (volume_id);
