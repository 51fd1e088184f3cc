-- PostgreSQL's relay waits on LISTEN while `waiting` is set (its 0014). SQLite's relay is
-- in the one process that writes and polls; the column keeps the two schemas alike.
alter table event_relay add column waiting boolean not null default false;
