-- Fences of hosts on backends whose hosts share one identity (rbd, credentials=shared):
-- when an attachment ends, the clients its host (the connector's ip) has open on the
-- volume's image are blocklisted. Each try is kept: what was fenced, what was kept open
-- and why, or why it failed (settled_at: a later reconciliation tried it again).
create table host_fences (
    id            text primary key,
    -- The storage the backend knows the volume by (a volume's name_id, else its id).
    volume_id     text not null,
    backend_host  text not null,
    host_ip       text,
    -- The client addresses blocklisted (ip:port/nonce), a JSON array.
    addresses     text not null,
    outcome       text not null check (outcome in ('fenced', 'nothing-open', 'kept', 'failed')),
    reason        text not null,
    created_at    text not null,
    settled_at    text
);
create index host_fences_failed on host_fences (backend_host) where outcome = 'failed' and settled_at is null;
create index host_fences_volume on host_fences (volume_id);
