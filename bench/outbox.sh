#!/usr/bin/env bash
# What the notification outbox costs, in one run: for each store, 16 clients in own mode
# against the same binary with events off (`--events off`), on (recorded, no bus), and
# on with the relay publishing to RabbitMQ (AMQP_URL, default the local broker; skipped
# when it cannot be reached), alternating, ROUNDS times. One line per run: mode, store,
# cycles/s, p99 of attachment create, CPU ms per cycle by process, and the events
# recorded per cycle and left unsent at the end.
#
# Usage: bench/outbox.sh BIN [SECONDS] [ROUNDS]
# Needs target/release/cinder-attach-bench (cargo build --release) and PostgreSQL at PGURL
# (default postgres://postgres@127.0.0.1:5432).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(realpath "$1")" seconds="${2:-10}" rounds="${3:-2}"
load="$PWD/target/release/cinder-attach-bench"
amqp="${AMQP_URL:-amqp://guest:guest@127.0.0.1:5672/%2f}"
port=18782
. bench/lib.sh

modes=(off on)
if python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", 5672), 1)' 2>/dev/null; then
  modes+=(relay)
fi

run() { # mode store
  local mode="$1" store="$2" database=() url
  [ "$store" = postgres ] && database=(--database-process postgres)
  case "$mode" in
    off) SERVER_ARGS=(--events off) ;;
    on) SERVER_ARGS=(--events on) ;;
    relay) SERVER_ARGS=(--events on --notify-url "$amqp" --notify-topic "bench_$port") ;;
  esac
  start_server "$bin" "$store" "$port"
  "$load" --endpoint "http://127.0.0.1:$port" --clients 16 --duration "$seconds" --mode own \
    --server-pid "$server_pid" "${database[@]}" --json "$server_work/report.json" >/dev/null || true
  sleep 1 # the relay's last round
  if [ "$store" = postgres ]; then url="$pg_server/bench_$port"; else url="sqlite://$server_work/bench.db"; fi
  local events unsent
  events="$("$bin" events --database-url "$url" --limit 100000000 | wc -l)"
  unsent="$("$bin" events --database-url "$url" --limit 100000000 | grep -c '"sent_at":null' || true)"
  python3 - "$server_work/report.json" "$mode" "$store" "$events" "$unsent" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
create = report["operations"]["attachment_create"]
cpu = report.get("cpu_per_cycle") or {}
fmt = lambda v: "-" if v is None else "%.3f" % v
cycles = max(report.get("cycles", 0), 1)
print("events %-5s %-8s 16 clients: %7.1f cycles/s, %d errors, p99 create %.1f ms, "
      "CPU ms/cycle server %s db %s loadgen %s, %s events (%.1f per cycle), %s unsent"
      % (sys.argv[2], sys.argv[3], report["cycles_per_s"], report["errors"], create["p99_ms"],
         fmt(cpu.get("server_ms")), fmt(cpu.get("database_ms")), fmt(cpu.get("load_generator_ms")),
         sys.argv[4], int(sys.argv[4]) / cycles, sys.argv[5]))
PY
  stop_server
  if [ "$mode" = relay ] && command -v rabbitmqctl >/dev/null; then
    rabbitmqctl delete_queue "bench_$port.info" >/dev/null 2>&1 || true
  fi
}

for _ in $(seq 1 "$rounds"); do
  for store in sqlite postgres; do
    for mode in "${modes[@]}"; do
      run "$mode" "$store"
    done
  done
done
