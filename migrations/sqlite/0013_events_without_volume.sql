-- Events about volume types (`volume_type.*`, `volume_type_extra_specs.*`) concern no
-- volume: their `volume_id` is null (src/store/outbox/type_events.rs). SQLite cannot
-- drop a NOT NULL constraint in place: the table is copied into one without it,
-- sequence, rows and indexes as they were.
create table events_next (
    seq                integer primary key autoincrement,
    message_id         text not null,
    event_type         text not null,
    priority           text not null default 'INFO',
    publisher_id       text not null,
    volume_id          text,
    attachment_id      text,
    project_id         text not null,
    caller_user_id     text,
    caller_project_id  text,
    request_id         text,
    payload            text,
    created_at         text not null,
    sent_at            text
);
insert into events_next select * from events;
-- Numbers of purged events are not handed out again.
delete from sqlite_sequence where name = 'events_next';
insert into sqlite_sequence (name, seq) select 'events_next', seq from sqlite_sequence where name = 'events';
drop table events;
alter table events_next rename to events;
create index events_pending on events (seq) where sent_at is null;
create index events_volume on events (volume_id, seq);
create index events_created on events (created_at);
