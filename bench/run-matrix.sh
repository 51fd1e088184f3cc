#!/usr/bin/env bash
# Runs the load generator against the release binary on both stores, for 1/4/16/64
# clients, own-volume and shared-volume modes, plus the SQLite read mix, and the
# PostgreSQL ceiling (bench/pg-ceiling.sh) for the same client counts. Results go to
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
server="${PGURL:-postgres://postgres@127.0.0.1:5432}"

start() { # store
  work="$(mktemp -d)"
  if [ "$1" = postgres ]; then
    psql "$server/postgres" -qc "drop database if exists bench_matrix with (force)" -c "create database bench_matrix"
    url="$server/bench_matrix"
  else
    url="sqlite://$work/bench.db"
  fi
  (cd "$work" && RUST_LOG=warn "$bin" --listen "127.0.0.1:$port" --database-url "$url" --db-max-connections 32 \
     --backend "file=file,dir=$work/volumes" >"$work/server.log" 2>&1 &)
  for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$port/" >/dev/null 2>&1 && break; sleep 0.1; done
  pid="$(pgrep -f -- "--listen 127.0.0.1:$port")"
}
stop() { kill "$pid"; sleep 0.5; }

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
done
