#!/usr/bin/env bash
# The service next to the database's ceiling for the same work, in alternating runs so
# the machine's drift hits all alike: the service (PostgreSQL, own volumes, CLIENTS
# clients, CPU per cycle by process), then pgbench replaying the statements of one cycle
# as prepared statements with no application in between: today's (bench/cycle.sql,
# generated from the store's own statement log) and the 28 of 33af736 that issue 27's
# goal names (bench/cycle-33af736.sql). Prints one line per run and the ratios, among
# them today's replay over 33af736's: the bound no application could pass with today's
# statements.
#
# Usage: [EVENTS=off] bench/service-vs-ceiling.sh [ROUNDS] [SECONDS] [CLIENTS]
# EVENTS=off runs the service with `--events off`: the work of 33af736's cycle, which
# recorded no events.
# Needs target/release/cinder-attach and cinder-attach-bench (cargo build --release),
# pgbench, and PostgreSQL at PGURL (default postgres://postgres@127.0.0.1:5432).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}" seconds="${2:-15}" clients="${3:-16}"
bin="$PWD/target/release/cinder-attach"
load="$PWD/target/release/cinder-attach-bench"
port=18781
. bench/lib.sh
[ "${EVENTS:-on}" = off ] && SERVER_ARGS=(--events off)
results="$(mktemp)"
trap 'rm -f "$results"' EXIT

service() {
  start_server "$bin" postgres "$port"
  "$load" --endpoint "http://127.0.0.1:$port" --clients "$clients" --duration "$seconds" --mode own \
    --server-pid "$server_pid" --database-process postgres --json "$server_work/report.json" >/dev/null
  python3 - "$server_work/report.json" <<'PY' | tee -a "$results"
import json, sys
r = json.load(open(sys.argv[1]))
cpu = r.get("cpu_per_cycle") or {}
shown = ", ".join(f"{k.removesuffix('_ms')} {v:.2f}" for k, v in sorted(cpu.items()) if v is not None)
print(f"service {r['cycles_per_s']:.1f} cycles/s  p99 create {r['operations']['attachment_create']['p99_ms']:.1f} ms"
      f"  errors {r['errors']}  CPU ms/cycle: {shown}")
PY
  stop_server
}

ceiling() { # name cycle-file
  local tps
  tps="$(PGBENCH_MODE=prepared CYCLE="$2" BIN="$bin" bench/pg-ceiling.sh "$clients" "$seconds" |
         awk '/^tps/ {print $3}')"
  echo "$1 $tps cycles/s ($(grep -vc '^\(--\|\\\)' "$2") statements, prepared)" | tee -a "$results"
}

for _ in $(seq 1 "$rounds"); do
  service
  ceiling ceiling-today bench/cycle.sql
  ceiling ceiling-33af736 bench/cycle-33af736.sql
done
python3 - "$results" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, rate = line.split()[0], float(line.split()[1])
    runs.setdefault(name, []).append(rate)
mean = {k: statistics.mean(v) for k, v in runs.items()}
print("\nmeans: " + ", ".join(f"{k} {v:.1f}" for k, v in mean.items()))
for ref in ("ceiling-today", "ceiling-33af736"):
    print(f"service / {ref}: {mean['service'] / mean[ref]:.2f}")
# The most any application could reach with today's statements: their replay alone.
print(f"ceiling-today / ceiling-33af736: {mean['ceiling-today'] / mean['ceiling-33af736']:.2f}")
PY
