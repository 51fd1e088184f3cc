-- Where a volume is being moved (`os-migrate_volume`, a retype that migrates): the
-- destination backend's host while `migration_status` says it moves, so a restart can
-- remove a half-made copy there.
alter table volumes add column migration_host text;
