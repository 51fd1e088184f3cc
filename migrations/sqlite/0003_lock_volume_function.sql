-- PostgreSQL's 0003 adds cinder_attach_lock_volume (lock a volume and read its live
-- attachments in one round trip). SQLite needs none: a write transaction holds the whole
-- database (BEGIN IMMEDIATE), so the store reads the volume and its attachments in two
-- statements of one process without a round trip. Kept so both stores count the same
-- migrations.
select 1;
