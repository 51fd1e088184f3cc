-- Gigabytes a volume is growing by while its backend extends it (`extending`): counted
-- in its project's usage from the moment the extend is accepted until the new size is
-- recorded or the extend fails, so that extends in flight cannot together pass the
-- `gigabytes` quota (src/store/quotas.rs). A process of an earlier version ignores the
-- column; its default keeps its writes valid.
alter table volumes add column reserved_growth bigint not null default 0;

-- A snapshot or volume may not go while a volume is being created from it: its delete
-- looks for such volumes (src/store/volume_sources.rs).
create index volumes_live_from_snapshot on volumes (snapshot_id)
    where deleted = false and snapshot_id is not null;
create index volumes_live_from_volume on volumes (source_volid)
    where deleted = false and source_volid is not null;
