-- The outbox in its second shape (issue 64): one row per point of a transaction that
-- records events, its events as a JSON array of [message id, event type, priority] and
-- their one payload. Event number i (from 0) of a row is `seq + i`.
--
-- An expand step: `events` stays, a process of 0.2.0 still writes and relays its rows
-- there, and this version relays the rows waiting in both tables (src/store/outbox.rs).
-- Both tables draw their numbers from one sequence, which now steps by 8, so that a
-- row here has 8 numbers of its own for its events and no row of `events` takes one of
-- them. A later contract step moves what `events` still holds and drops it, having
-- first made `outbox.seq` the sequence's owner (dropping `events` drops what it owns).
alter table events alter column seq set increment by 8;

create table outbox (
    seq                bigint primary key default nextval('events_seq_seq'),
    events             text not null,
    publisher_id       text not null,
    -- null for events about no volume (volume types, QoS specs).
    volume_id          uuid,
    attachment_id      uuid,
    project_id         text not null,
    caller_user_id     text,
    caller_project_id  text,
    request_id         text,
    payload            text not null,
    created_at         timestamptz not null,
    sent_at            timestamptz
);
create index outbox_pending on outbox (seq) where sent_at is null;
create index outbox_volume on outbox (volume_id, seq);
create index outbox_created on outbox (created_at);

-- See 0009: lz4 where the server has it.
do $$
begin
    alter table outbox alter column payload set compression lz4;
exception when feature_not_supported then
    raise notice 'lz4 is not available: event payloads stay compressed with pglz';
end
$$;
