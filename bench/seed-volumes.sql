-- Seeds :n volumes in project 'seed' with 1-8 attachments each (PostgreSQL), to measure
-- how reads cost grows with the table size. Usage:
--   psql URL -v n=100000 -f bench/seed-volumes.sql
insert into volumes (id, project_id, host, size, status, attach_status, volume_type_id, multiattach,
                     created_at, deleted)
select md5('seed' || g)::uuid, 'seed', 'h@file#file', 1, 'in-use', 'attached',
       (select id from volume_types where name = '__DEFAULT__'), true, now(), false
  from generate_series(1, :n) as g;
insert into volume_attachment (id, volume_id, instance_uuid, attached_host, mountpoint, attach_time,
                               attach_status, attach_mode, connection_info, created_at, deleted)
select gen_random_uuid(), md5('seed' || g)::uuid, md5('i' || g || '-' || k), 'h', '/dev/vdb', now(),
       'attached', 'rw', '{}', now(), false
  from generate_series(1, :n) as g, generate_series(1, 1 + (g % 8)) as k;
analyze;
