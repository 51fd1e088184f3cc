#!/usr/bin/env bash
# Shared-volume mode next to own-volume mode, in one run: for each store and client
# count, BIN serves own mode (every client its own volume) and shared mode (every client
# on one multiattach volume), alternating. With a second binary (OLD_BIN), the same
# shared-mode runs for it too, so a change to the multi-attach rules shows as a ratio
# measured in one session. One line per run: build, store, mode, clients, cycles/s,
# refusals, errors, p99 of attachment create, peak RSS, CPU ms per cycle by process.
#
# Usage: bench/shared-vs-own.sh BIN [SECONDS] [OLD_BIN]
# Needs target/release/cinder-attach-bench (cargo build --release) and PostgreSQL at PGURL
# (default postgres://postgres@127.0.0.1:5432).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$1" seconds="${2:-10}" old_bin="${3:-}"
load="$PWD/target/release/cinder-attach-bench"
port=18781
. bench/lib.sh

run() { # name bin store mode clients
  local name="$1" bin="$2" store="$3" mode="$4" clients="$5"
  local database=()
  [ "$store" = postgres ] && database=(--database-process postgres)
  start_server "$bin" "$store" "$port"
  "$load" --endpoint "http://127.0.0.1:$port" --clients "$clients" --duration "$seconds" --mode "$mode" \
    --server-pid "$server_pid" "${database[@]}" --json "$server_work/report.json" >/dev/null || true
  python3 - "$server_work/report.json" "$name" "$store" "$mode" "$clients" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
create = report["operations"]["attachment_create"]
cpu = report.get("cpu_per_cycle") or {}
fmt = lambda v: "-" if v is None else "%.3f" % v
print("%-4s %-8s %-6s %2s clients: %7.1f cycles/s, %6d refusals, %d errors, p99 create %.1f ms, peak RSS %.1f MiB, "
      "CPU ms/cycle server %s db %s loadgen %s"
      % (sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], report["cycles_per_s"], report["refusals"],
         report["errors"], create["p99_ms"], report.get("peak_rss_mib") or 0,
         fmt(cpu.get("server_ms")), fmt(cpu.get("database_ms")), fmt(cpu.get("load_generator_ms"))))
PY
  stop_server
}

for store in sqlite postgres; do
  for clients in 16 64; do
    run new "$bin" "$store" own "$clients"
    run new "$bin" "$store" shared "$clients"
    if [ -n "$old_bin" ]; then
      run old "$old_bin" "$store" shared "$clients"
    fi
  done
done
