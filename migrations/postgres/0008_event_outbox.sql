-- The outbox of notifications (issue 19): one row per event Cinder would notify about,
-- written in the transaction of the change it reports. `sent_at` stays null until the
-- broker confirmed the event; the relay publishes the pending ones in `seq` order.
-- `message_id` is a random UUID and nothing looks events up by it: no index (a unique one
-- cost about 40 % of each insert on SQLite, BENCHMARKS.md).
create table events (
    seq                bigint generated always as identity primary key,
    message_id         uuid not null,
    event_type         text not null,
    priority           text not null default 'INFO',
    publisher_id       text not null,
    volume_id          uuid not null,
    attachment_id      uuid,
    project_id         text not null,
    caller_user_id     text,
    caller_project_id  text,
    request_id         text,
    payload            text not null,
    created_at         timestamptz not null,
    sent_at            timestamptz
);
create index events_pending on events (seq) where sent_at is null;
create index events_volume on events (volume_id, seq);
create index events_created on events (created_at);

-- Which process relays the outbox: one at a time, for as long as its lease lasts.
create table event_relay (
    name        text primary key,
    holder      text not null,
    expires_at  timestamptz not null
);
