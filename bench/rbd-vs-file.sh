#!/usr/bin/env bash
# The rbd backend next to the file backend and next to its cluster's own limit, in one
# run, on PostgreSQL: 16 clients (or CLIENTS) run own-mode attach cycles for SECONDS
# against a server with a `file` backend, one with an `rbd` backend with shared
# credentials (fencing detached hosts, the default, and with fence=off, Cinder's way), and
# one with per-attachment credentials, alternately, ROUNDS times; each
# round also measures the cluster's own limit for per-attachment cycles
# (bench/ceph-identity-ceiling.py: identity pairs with no application). One line per
# run: cycles/s, errors, p99 of attachment create, CPU ms per cycle of the server, the
# database and the Ceph daemons.
#
# Usage: bench/rbd-vs-file.sh BIN [SECONDS] [ROUNDS] [CLIENTS]   (BIN: an absolute path)
# Needs target/release/cinder-attach-bench, PostgreSQL at PGURL, and starts its own
# single-node Ceph (scripts/start-ceph).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(realpath "$1")" seconds="${2:-10}" rounds="${3:-2}" clients="${4:-16}"
load="$PWD/target/release/cinder-attach-bench"
port=18783
. bench/lib.sh

eval "$(scripts/start-ceph)"
trap 'kill $CEPH_PIDS 2>/dev/null || true; sleep 1; rm -rf "$CEPH_WORK"' EXIT
ticks() { local total=0 pid; for pid in $CEPH_PIDS; do total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done; echo "$total"; }
hz="$(getconf CLK_TCK)"

run() { # label backend-spec
  local label="$1" spec="$2" before after
  start_server "$bin" postgres "$port" "$spec"
  before="$(ticks)"
  "$load" --endpoint "http://127.0.0.1:$port" --clients "$clients" --duration "$seconds" --mode own \
    --server-pid "$server_pid" --database-process postgres --json "$server_work/report.json" >/dev/null || true
  after="$(ticks)"
  python3 - "$server_work/report.json" "$label" "$clients" "$((after - before))" "$hz" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
create = report["operations"]["attachment_create"]
cpu = report.get("cpu_per_cycle") or {}
cycles = report["cycles"] or 1
ceph_ms = int(sys.argv[4]) * 1000 / int(sys.argv[5]) / cycles
fmt = lambda v: "-" if v is None else "%.3f" % v
print("%-22s %2s clients: %7.1f cycles/s, %d errors, p99 create %.1f ms, CPU ms/cycle server %s db %s ceph %.3f"
      % (sys.argv[2], sys.argv[3], report["cycles_per_s"], report["errors"], create["p99_ms"],
         fmt(cpu.get("server_ms")), fmt(cpu.get("database_ms")), ceph_ms))
PY
  stop_server
}

rbd="ceph=rbd,conf=$CEPH_CONF,pool=$CEPH_POOL,capacity_gb=100000"
for _ in $(seq 1 "$rounds"); do
  run file "file=file,dir=DIR"
  run "rbd shared" "$rbd"
  run "rbd shared fence=off" "$rbd,fence=off"
  run "rbd per-attachment" "$rbd,credentials=per-attachment"
  /usr/bin/python3 bench/ceph-identity-ceiling.py "$CEPH_CONF" "$CEPH_PIDS" "$seconds" "$clients"
done
