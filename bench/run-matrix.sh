#!/usr/bin/env bash
# Runs the load generator against the release binary on both stores, for 1/4/16/64
# clients, own-volume and shared-volume modes, plus the SQLite read mix, and the
# PostgreSQL ceiling (bench/pg-ceiling.sh) for the same client counts, with the cycle's
# statements sent as text (pgbench's simple mode) and as prepared statements (as the
# store sends them). Results go to
# bench/results/<date>/ as JSON and to stdout as one line per run.
# Usage: bench/run-matrix.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
cargo build --release --quiet
out="bench/results/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
bin="$PWD/target/release/cinder-attach"
load="$PWD/target/release/cinder-attach-bench"
port=18777
. bench/lib.sh
start() { start_server "$bin" "$1" "$port"; pid="$server_pid"; }
stop() { stop_server; }

for store in sqlite postgres; do
  for mode in own shared; do
    for clients in 1 4 16 64; do
      start "$store"
      "$load" --endpoint "http://127.0.0.1:$port" --clients "$clients" --duration "$seconds" --mode "$mode" \
        --server-pid "$pid" --json "$out/$store-$mode-$clients.json" | head -1 | sed "s/^/$store: /"
      stop
    done
  done
done
start sqlite
"$load" --endpoint "http://127.0.0.1:$port" --clients 16 --duration "$seconds" --mode reads \
  --server-pid "$pid" --json "$out/sqlite-reads-16.json" | head -1 | sed "s/^/sqlite: /"
stop
for clients in 1 4 16 64; do
  echo "ceiling $clients clients: $(bench/pg-ceiling.sh "$clients" "$seconds" | grep '^tps')"
  echo "ceiling $clients clients, prepared: $(PGBENCH_MODE=prepared bench/pg-ceiling.sh "$clients" "$seconds" | grep '^tps')"
done
