#!/usr/bin/env bash
# The database's own speed for cinder-attach's attach cycle: pgbench runs bench/cycle.sql
# (the statements one cycle issues) on a fresh database with the real schema.
# Usage: bench/pg-ceiling.sh CLIENTS SECONDS   (PGURL: server, default postgres://postgres@127.0.0.1:5432)
set -euo pipefail
cd "$(dirname "$0")/.."
clients="${1:-16}"
seconds="${2:-10}"
server="${PGURL:-postgres://postgres@127.0.0.1:5432}"
db="ceiling_$$"
psql "$server/postgres" -qc "create database $db"
trap 'psql "$server/postgres" -qc "drop database if exists $db with (force)"' EXIT
./target/release/cinder-attach migrate --database-url "$server/$db" >/dev/null
psql "$server/$db" -q <<SQL
insert into volumes (id, project_id, host, size, status, attach_status, volume_type_id, created_at, deleted)
select md5('bench' || n)::uuid, 'p', 'h@file#file', 1, 'available', 'detached',
       (select id from volume_types where name = '__DEFAULT__'), now(), false
  from generate_series(0, $clients - 1) as n;
SQL
pgbench -n -M "${PGBENCH_MODE:-simple}" -f bench/cycle.sql -c "$clients" -j 2 -T "$seconds" "$server/$db" 2>&1 | grep -E "^(number of transactions actually processed|number of failed|latency average|tps)"
