#!/usr/bin/env bash
# What synchronous replication costs, in one run: the service on a one-node Patroni
# cluster and on a two-node one with a synchronous standby (`scripts/patroni-cluster`,
# both behind their HAProxy, so only the replication differs), own mode at 16 clients,
# alternating, ROUNDS times. One line per run: cluster, cycles/s, errors, p99 of
# attachment create, CPU ms per cycle of the server, of every postgres process (the
# standby's included) and of the load generator.
#
# Usage: bench/cluster.sh BIN [SECONDS] [ROUNDS]
# Needs target/release/cinder-attach-bench (cargo build --release), and patroni, etcd and
# haproxy (scripts/test installs them); run as root or as the postgres user.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(realpath "$1")" seconds="${2:-15}" rounds="${3:-2}"
load="$PWD/target/release/cinder-attach-bench"
port=18783
. bench/lib.sh

work="$(mktemp -d)"
chmod 755 "$work" # the clusters run as postgres, below it
trap 'scripts/patroni-cluster stop "$work/single"; scripts/patroni-cluster stop "$work/replicated"; rm -rf "$work"' EXIT
scripts/patroni-cluster start "$work/single" 1 >/dev/null
scripts/patroni-cluster start "$work/replicated" 2 >/dev/null

run() { # cluster
  local cluster="$1"
  pg_server="$(sed -n 's|^ROUTER_URL=\(.*\)/postgres$|\1|p' "$work/$cluster/cluster.env")"
  start_server "$bin" postgres "$port"
  "$load" --endpoint "http://127.0.0.1:$port" --clients 16 --duration "$seconds" --mode own \
    --server-pid "$server_pid" --database-process postgres --json "$server_work/report.json" >/dev/null || true
  python3 - "$server_work/report.json" "$cluster" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
create = report["operations"]["attachment_create"]
cpu = report.get("cpu_per_cycle") or {}
fmt = lambda v: "-" if v is None else "%.3f" % v
print("%-10s 16 clients: %7.1f cycles/s, %d errors, p99 create %.1f ms, CPU ms/cycle server %s "
      "postgres %s loadgen %s" % (sys.argv[2], report["cycles_per_s"], report["errors"], create["p99_ms"],
      fmt(cpu.get("server_ms")), fmt(cpu.get("database_ms")), fmt(cpu.get("load_generator_ms"))))
PY
  stop_server
}

for _ in $(seq 1 "$rounds"); do
  run single
  run replicated
done
