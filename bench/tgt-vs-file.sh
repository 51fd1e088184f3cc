#!/usr/bin/env bash
# The tgt backend next to the file backend, in one run: for each store, 16 clients (or
# CLIENTS) run own-mode attach cycles for SECONDS against a server with a `file` backend,
# then against one with a `tgt` backend on a tgtd started here (loopback portal), and so
# on alternately, ROUNDS times. One line per run: backend, store, cycles/s, errors, p99 of
# attachment create, CPU ms per cycle of the server, the database and tgtd.
#
# EXTRA_VOLUMES=N first creates N idle volumes (2N targets for tgt), to see what the size
# of tgtd's state costs.
#
# Usage: bench/tgt-vs-file.sh BIN [SECONDS] [ROUNDS] [CLIENTS]   (as root: tgtd needs it)
# Needs target/release/cinder-attach-bench and PostgreSQL at PGURL.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$1" seconds="${2:-10}" rounds="${3:-2}" clients="${4:-16}"
load="$PWD/target/release/cinder-attach-bench"
port=18782 control=4242 portal=127.0.0.1:13262
. bench/lib.sh

tgtd -f -C "$control" --iscsi "portal=$portal" >/dev/null 2>&1 &
tgtd_pid=$!
trap 'kill -9 "$tgtd_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do tgtadm -C "$control" --op show --mode sys >/dev/null 2>&1 && break; sleep 0.1; done
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz="$(getconf CLK_TCK)"

run() { # backend store
  local backend="$1" store="$2" spec="file=file,dir=DIR" database=() before after
  [ "$backend" = tgt ] && spec="tgt=tgt,dir=DIR,portal=$portal,control_port=$control"
  [ "$store" = postgres ] && database=(--database-process postgres)
  start_server "$bin" "$store" "$port" "$spec"
  local refused
  refused="$(seq 1 "${EXTRA_VOLUMES:-0}" | xargs -P 8 -I{} curl -s -o /dev/null -w '%{http_code}\n' -X POST \
    "http://127.0.0.1:$port/v3/p1/volumes" -H 'X-Auth-Token: admin:p1' -H 'Content-Type: application/json' \
    -d '{"volume": {"size": 1}}' | grep -vc '^202$' || true)"
  [ "$refused" = 0 ] || echo "warning: $refused of $EXTRA_VOLUMES idle volumes were not created" >&2
  before="$(ticks "$tgtd_pid")"
  "$load" --endpoint "http://127.0.0.1:$port" --clients "$clients" --duration "$seconds" --mode own \
    --server-pid "$server_pid" "${database[@]}" --json "$server_work/report.json" >/dev/null || true
  after="$(ticks "$tgtd_pid")"
  python3 - "$server_work/report.json" "$backend" "$store" "$clients" "$((after - before))" "$hz" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
create = report["operations"]["attachment_create"]
cpu = report.get("cpu_per_cycle") or {}
cycles = report["cycles"] or 1
tgtd_ms = int(sys.argv[5]) * 1000 / int(sys.argv[6]) / cycles
fmt = lambda v: "-" if v is None else "%.3f" % v
print("%-4s %-8s %2s clients: %7.1f cycles/s, %d errors, p99 create %.1f ms, CPU ms/cycle server %s db %s tgtd %.3f"
      % (sys.argv[2], sys.argv[3], sys.argv[4], report["cycles_per_s"], report["errors"], create["p99_ms"],
         fmt(cpu.get("server_ms")), fmt(cpu.get("database_ms")), tgtd_ms))
PY
  stop_server
}

for _ in $(seq 1 "$rounds"); do
  for store in sqlite postgres; do
    run file "$store"
    run tgt "$store"
  done
done
