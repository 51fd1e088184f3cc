#!/usr/bin/env bash
# Two builds of the service side by side, in alternating runs (A, B, A, B, ...), so that
# the machine's drift hits both alike: SQLite and PostgreSQL own-volume mode at CLIENTS
# clients, and each build's PostgreSQL ceiling (pgbench running that build's cycle file).
# The same load generator drives both. One line per run: build, store, cycles/s, p99 of
# create, and CPU milliseconds per cycle of the server, PostgreSQL's processes (on
# PostgreSQL) and the load generator. PGBENCH_MODE=prepared makes the ceilings prepared.
#
# Usage: bench/compare.sh BIN_A CYCLE_A BIN_B CYCLE_B [PAIRS] [SECONDS] [CLIENTS]
#   BIN_x    a cinder-attach release binary
#   CYCLE_x  its bench/cycle.sql (e.g. `git show REV:bench/cycle.sql > /tmp/a.sql`)
# Needs target/release/cinder-attach-bench (cargo build --release) and PostgreSQL at PGURL
# (default postgres://postgres@127.0.0.1:5432).
set -euo pipefail
cd "$(dirname "$0")/.."
bin_a="$1" cycle_a="$2" bin_b="$3" cycle_b="$4"
pairs="${5:-3}" seconds="${6:-10}" clients="${7:-16}"
load="$PWD/target/release/cinder-attach-bench"
port=18779
. bench/lib.sh

run() { # name bin store
  local name="$1" bin="$2" store="$3"
  local database=()
  [ "$store" = postgres ] && database=(--database-process postgres)
  start_server "$bin" "$store" "$port"
  "$load" --endpoint "http://127.0.0.1:$port" --clients "$clients" --duration "$seconds" --mode own \
    --server-pid "$server_pid" "${database[@]}" --json "$server_work/report.json" >/dev/null
  python3 - "$server_work/report.json" "$name" "$store" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
create = report["operations"]["attachment_create"]
cpu = report.get("cpu_per_cycle") or {}
shown = ", ".join(f"{k.removesuffix('_ms')} {v:.2f}" for k, v in sorted(cpu.items()) if v is not None)
print("%s %s %.1f cycles/s, p99 create %.1f ms, errors %d, CPU ms/cycle: %s"
      % (sys.argv[2], sys.argv[3], report["cycles_per_s"], create["p99_ms"], report["errors"], shown))
PY
  stop_server
}

ceiling() { # name bin cycle
  local tps
  tps="$(BIN="$2" CYCLE="$3" bench/pg-ceiling.sh "$clients" "$seconds" | awk '/^tps/ {print $3}')"
  echo "$1 ceiling $tps cycles/s ($(grep -vc '^\(--\|\\\)' "$3") statements per cycle)"
}

for _ in $(seq 1 "$pairs"); do
  for store in sqlite postgres; do
    run A "$bin_a" "$store"
    run B "$bin_b" "$store"
  done
  ceiling A "$bin_a" "$cycle_a"
  ceiling B "$bin_b" "$cycle_b"
done
