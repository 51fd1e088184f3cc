-- The targets a target-based backend (tgt) exports, one pair per volume: number n is
-- the read-write target id 2n-1 and the read-only one 2n; with the volume's CHAP
-- account. Kept here like Cinder's provider_location and provider_auth: the database
-- decides, tgtd is made to match it (and is rebuilt from it after a restart).
create table target_exports (
    volume_id      text primary key,
    backend_host   text not null,
    number         integer not null check (number > 0),
    auth_username  text not null,
    auth_password  text not null,
    created_at     text not null,
    unique (backend_host, number)
);
