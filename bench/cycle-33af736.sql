-- The 28-statement attach cycle of 33af736 (bench/cycle.sql when issue 27 was filed), the
-- reference its 1.0x goal names, rewritten only so that `pgbench -M prepared` runs it:
-- ':name' literals became bare parameters (their type comes from the column compared)
-- and `|| :client_id` became `|| cast(:client_id as text)`. The statements are otherwise
-- those of 33af736; bench/service-vs-ceiling.sh replays them next to the service.
-- Volume ids are md5('bench' || client) as seeded by pg-ceiling.sh.
-- create: the volume with its admin metadata (one row per item; the seeded volumes have none)
select v.id, v.user_id, v.project_id, v.host, v.size, v.availability_zone, v.status, v.attach_status, v.migration_status, v.display_name, v.display_description, v.volume_type_id, t.name as volume_type_name, v.encryption_key_id, v.bootable, v.multiattach, v.previous_status, v.service_uuid, v.shared_targets, v.provider_id, v.group_id, v.consistencygroup_id, v.created_at, v.updated_at, m.key as admin_key, m.value as admin_value from volumes v left join volume_types t on t.id = v.volume_type_id left join volume_admin_metadata m on m.volume_id = v.id and m.deleted = false where v.id = md5('bench' || cast(:client_id as text))::uuid and v.deleted = false \gset
-- create: the reservation transaction
begin;
select status, attach_status, migration_status, multiattach, volume_type_id, exists(select 1 from volume_attachment where volume_id = :id and instance_uuid = 'i-' || cast(:client_id as text) and deleted = false) as same_instance from volumes where id = :id and deleted = false for update;
update volumes set status = 'reserved', updated_at = now() where id = :id and deleted = false and multiattach = false and status in ('available', 'downloading');
insert into volume_attachment (id, volume_id, instance_uuid, attach_status, attach_mode, connection_info, created_at, deleted) values (gen_random_uuid(), :id, 'i-' || cast(:client_id as text), 'reserved', 'rw', '{}', now(), false) returning id as att \gset
commit;
-- create: connect
select value from volume_type_extra_specs where volume_type_id = :volume_type_id and key = 'cacheable' and deleted = false;
begin;
select v.id, v.status, v.attach_status, v.migration_status, v.multiattach, v.volume_type_id from volume_attachment a join volumes v on v.id = a.volume_id where a.id = :att and a.deleted = false and v.deleted = false for update of v;
update volume_attachment set attach_status = 'attaching', attached_host = 'h', mountpoint = '/dev/vdb', attach_time = now(), attach_mode = 'rw', connection_info = '{"driver_volume_type": "local", "device_path": "/x", "access_mode": "rw", "encrypted": false, "qos_specs": null, "cacheable": false, "enforce_multipath": false}', updated_at = now() where id = :att and deleted = false returning id, volume_id, instance_uuid, attached_host, mountpoint, attach_status, attach_mode, attach_time, detach_time, connection_info, created_at;
insert into attachment_specs (attachment_id, key, value, created_at, deleted) values (:att, 'host', '"h"', now(), false), (:att, 'initiator', '"iqn"', now(), false), (:att, 'ip', '"10.0.0.1"', now(), false), (:att, 'platform', '"x86_64"', now(), false), (:att, 'os_type', '"linux"', now(), false), (:att, 'multipath', 'false', now(), false), (:att, 'mountpoint', '"/dev/vdb"', now(), false), (:att, 'mode', '"rw"', now(), false);
update volumes set status = 'attaching', attach_status = 'attaching', updated_at = now() where id = :id;
commit;
-- os-complete
select a.id, a.volume_id, a.instance_uuid, a.attached_host, a.mountpoint, a.attach_status, a.attach_mode, a.attach_time, a.detach_time, a.connection_info, a.created_at, v.project_id, v.host as volume_host, s.key as spec_key, s.value as spec_value from volume_attachment a join volumes v on v.id = a.volume_id left join attachment_specs s on s.attachment_id = a.id and s.deleted = false where a.id = :att and a.deleted = false;
begin;
select v.id, v.status, v.attach_status, v.migration_status, v.multiattach, v.volume_type_id from volume_attachment a join volumes v on v.id = a.volume_id where a.id = :att and a.deleted = false and v.deleted = false for update of v;
update volume_attachment set attach_status = 'attached', updated_at = now() where id = :att and deleted = false;
update volumes set status = 'in-use', attach_status = 'attached', updated_at = now() where id = :id;
commit;
-- delete
select a.id, a.volume_id, a.instance_uuid, a.attached_host, a.mountpoint, a.attach_status, a.attach_mode, a.attach_time, a.detach_time, a.connection_info, a.created_at, v.project_id, v.host as volume_host, s.key as spec_key, s.value as spec_value from volume_attachment a join volumes v on v.id = a.volume_id left join attachment_specs s on s.attachment_id = a.id and s.deleted = false where a.id = :att and a.deleted = false;
begin;
select v.id, v.status, v.attach_status, v.migration_status, v.multiattach, v.volume_type_id from volume_attachment a join volumes v on v.id = a.volume_id where a.id = :att and a.deleted = false and v.deleted = false for update of v;
update volume_attachment set deleted = true, deleted_at = now(), attach_status = 'detached', detach_time = now(), updated_at = now() where id = :att and deleted = false;
update attachment_specs set deleted = true, deleted_at = now() where attachment_id = :att and deleted = false;
update volume_admin_metadata set deleted = true, deleted_at = now() where volume_id = :id and key = 'attached_mode' and deleted = false;
select a.id, a.attach_status from volume_attachment a where a.volume_id = :id and a.deleted = false order by a.created_at, a.id;
update volumes set status = 'available', attach_status = 'detached', updated_at = now() where id = :id;
commit;
