-- One live service per host and binary, as Cinder's services table: the process's host
-- runs `cinder-scheduler` and `cinder-backup` under the same name (backends are
-- `host@backend`), so the host alone no longer tells its rows apart.
drop index services_live_host;
create unique index services_live_host_binary on services (host, binary_name) where deleted = false;
