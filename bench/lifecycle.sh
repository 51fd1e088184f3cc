#!/usr/bin/env bash
# Volume and snapshot create/delete cycles per second on both stores (issue 41, item 5),
# in alternating rounds: `cinder-attach-bench --mode volumes` (create a 1 GiB volume:
# placement, quotas, events; delete it) and `--mode snapshots` (take a snapshot of the
# client's own volume, delete it), CLIENTS clients for SECONDS each, release build, file
# backend. Prints cycles/s, p99 of the create and CPU ms per cycle per run.
#
# Usage: bench/lifecycle.sh [ROUNDS] [SECONDS] [CLIENTS]   (PROJECT_PER_CLIENT=1: each client
#        in a project of its own; STORES, MODES: which to run, default both of each)
# Needs target/release/cinder-attach and cinder-attach-bench (cargo build --release) and
# PostgreSQL at PGURL (default postgres://postgres@127.0.0.1:5432).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-2}" seconds="${2:-10}" clients="${3:-16}"
bin="$PWD/target/release/cinder-attach"
load="$PWD/target/release/cinder-attach-bench"
port=18783
. bench/lib.sh

one() { # STORE MODE
  start_server "$bin" "$1" "$port"
  local db=()
  [ "$1" = postgres ] && db=(--database-process postgres)
  local own=()
  [ -n "${PROJECT_PER_CLIENT:-}" ] && own=(--project-per-client)
  "$load" --endpoint "http://127.0.0.1:$port" --clients "$clients" --duration "$seconds" --mode "$2" "${own[@]}" \
    --server-pid "$server_pid" "${db[@]}" --json "$server_work/report.json" >/dev/null
  python3 - "$server_work/report.json" "$1" "$2" <<'PY'
import json, sys
r, store, mode = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
op = "volume_create" if mode == "volumes" else "snapshot_create"
cpu = r.get("cpu_per_cycle") or {}
shown = ", ".join(f"{k.removesuffix('_ms')} {v:.2f}" for k, v in sorted(cpu.items()) if v is not None)
print(f"{store:8} {mode:9} {r['cycles_per_s']:7.1f} cycles/s  p99 create {r['operations'][op]['p99_ms']:6.1f} ms"
      f"  errors {r['errors']}  CPU ms/cycle: {shown}")
PY
  stop_server
}

for _ in $(seq 1 "$rounds"); do
  for store in ${STORES:-sqlite postgres}; do
    for mode in ${MODES:-volumes snapshots}; do
      one "$store" "$mode"
    done
  done
done
