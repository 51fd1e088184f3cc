-- Seeds :n volumes in project 'seed' with 1-8 attachments each (SQLite), to measure how
-- reads cost grows with the table size. Usage, on a database the server has created:
--   sqlite3 DB.sqlite ".parameter set :n 100000" ".read bench/seed-volumes-sqlite.sql"
with recursive g(n) as (select 1 union all select n + 1 from g where n < :n)
insert into volumes (id, project_id, host, size, status, attach_status, volume_type_id, multiattach,
                     created_at, deleted)
select printf('%08x-0000-4000-8000-%012x', n, n), 'seed', 'h@file#file', 1, 'in-use', 'attached',
       (select id from volume_types where name = '__DEFAULT__'), 1,
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 0
  from g;
with recursive g(n) as (select 1 union all select n + 1 from g where n < :n),
               k(k) as (select 1 union all select k + 1 from k where k < 8)
insert into volume_attachment (id, volume_id, instance_uuid, attached_host, mountpoint, attach_time,
                               attach_status, attach_mode, connection_info, created_at, deleted)
select printf('%08x-%04x-4000-8000-%012x', n, k, n), printf('%08x-0000-4000-8000-%012x', n, n),
       printf('i-%d-%d', n, k), 'h', '/dev/vdb', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
       'attached', 'rw', '{}', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 0
  from g join k on k.k <= 1 + (g.n % 8);
analyze;
