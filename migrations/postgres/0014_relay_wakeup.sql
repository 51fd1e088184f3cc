-- An idle relay waits on LISTEN instead of polling the outbox (src/notify/mod.rs). While
-- it waits, `waiting` is set and every transaction that records events wakes it with a
-- NOTIFY as it commits; while it is busy nobody notifies, so writes under load never
-- queue on the lock PostgreSQL takes to order notifying commits.
--
-- The relay sets `waiting` holding the advisory lock below exclusively; each writer holds
-- it shared until it commits. So a writer either committed before the relay looks for
-- pending events (and is found), or sees `waiting` and notifies: no event waits for the
-- relay's fallback poll. The relay only tries the lock: queued behind writers, it would
-- make the writers after it queue too. While writers hold it, the relay polls.
alter table event_relay add column waiting boolean not null default false;

-- Sets `waiting`; false (and nothing set) when writers hold the lock.
create function cinder_attach_relay_waiting(on_off boolean) returns boolean
language plpgsql as $$
begin
    if on_off and not pg_try_advisory_xact_lock(hashtextextended('cinder-attach relay wake-up', 0)) then
        return false;
    end if;
    update event_relay set waiting = on_off where name = 'notifications';
    return true;
end
$$;

create function cinder_attach_wake_relay() returns trigger
language plpgsql as $$
begin
    perform pg_advisory_xact_lock_shared(hashtextextended('cinder-attach relay wake-up', 0));
    if exists (select 1 from event_relay where name = 'notifications' and waiting) then
        perform pg_notify('cinder_attach_events', '');
    end if;
    return null;
end
$$;

create trigger events_wake_relay after insert on events
    for each statement execute function cinder_attach_wake_relay();
