-- The outbox in its second shape (issue 64): one row per point of a transaction that
-- records events, its events as a JSON array of [message id, event type, priority] and
-- their one payload. Event number i (from 0) of a row is `seq + i`.
--
-- An expand step: `events` stays, a process of 0.2.0 still writes and relays its rows
-- there, and this version relays the rows waiting in both tables (src/store/outbox.rs).
-- Both tables take their numbers from `events`' counter in sqlite_sequence: a row here
-- takes the next one and moves the counter 7 further (the trigger below), so its events
-- have 8 numbers of their own and no row of `events` takes one of them. A later
-- contract step moves what `events` still holds and drops it.
insert into sqlite_sequence (name, seq)
select 'events', coalesce((select max(seq) from events), 0)
 where not exists (select 1 from sqlite_sequence where name = 'events');

create table outbox (
    seq                integer primary key,
    events             text not null,
    publisher_id       text not null,
    volume_id          text,
    attachment_id      text,
    project_id         text not null,
    caller_user_id     text,
    caller_project_id  text,
    request_id         text,
    payload            text not null,
    created_at         text not null,
    sent_at            text
);
create index outbox_pending on outbox (seq) where sent_at is null;
create index outbox_volume on outbox (volume_id, seq);
create index outbox_created on outbox (created_at);

create trigger outbox_numbers after insert on outbox
begin
    update sqlite_sequence set seq = new.seq + 7 where name = 'events';
end;
