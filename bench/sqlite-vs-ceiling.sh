#!/usr/bin/env bash
# SQLite's own limit, as bench/service-vs-ceiling.sh is PostgreSQL's: in alternating runs,
# the service on a fresh SQLite file (own volumes, CLIENTS clients) and the replay of the
# statements the SQLite store runs for the same cycle (bench/cycle-sqlite.sql, generated
# from the store's statement log) from CLIENTS threads of one process with no HTTP
# (`cinder-attach-bench --replay-sqlite`), on a fresh file with the same settings.
# Prints one line per run, then the means, service / replay, and both CPU costs per cycle
# (the service's process against the replay's: what the application adds).
#
# Usage: bench/sqlite-vs-ceiling.sh [ROUNDS] [SECONDS] [CLIENTS]
# Needs target/release/cinder-attach and cinder-attach-bench (cargo build --release).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}" seconds="${2:-15}" clients="${3:-16}"
bin="$PWD/target/release/cinder-attach"
load="$PWD/target/release/cinder-attach-bench"
port=18782
. bench/lib.sh
results="$(mktemp)"
trap 'rm -f "$results"' EXIT

service() {
  start_server "$bin" sqlite "$port"
  "$load" --endpoint "http://127.0.0.1:$port" --clients "$clients" --duration "$seconds" --mode own \
    --server-pid "$server_pid" --json "$server_work/report.json" >/dev/null
  python3 - "$server_work/report.json" <<'PY' | tee -a "$results"
import json, sys
r = json.load(open(sys.argv[1]))
cpu = (r.get("cpu_per_cycle") or {}).get("server_ms")
print(f"service {r['cycles_per_s']:.1f} cycles/s  cpu {cpu:.3f} ms/cycle"
      f"  p99 create {r['operations']['attachment_create']['p99_ms']:.1f} ms  errors {r['errors']}")
PY
  stop_server
}

replay() {
  local work
  work="$(mktemp -d)"
  "$bin" migrate --database-url "sqlite://$work/replay.db" >/dev/null
  "$load" --replay-sqlite bench/cycle-sqlite.sql --database "$work/replay.db" \
    --clients "$clients" --duration "$seconds" --json "$work/replay.json" >/dev/null
  python3 - "$work/replay.json" <<'PY' | tee -a "$results"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"replay {r['cycles_per_s']:.1f} cycles/s  cpu {r['cpu_ms_per_cycle']:.3f} ms/cycle"
      f"  ({r['statements_per_cycle']} statements)")
PY
  rm -rf "$work"
}

for _ in $(seq 1 "$rounds"); do
  service
  replay
done
python3 - "$results" <<'PY'
import statistics, sys
rate, cpu = {}, {}
for line in open(sys.argv[1]):
    words = line.split()
    rate.setdefault(words[0], []).append(float(words[1]))
    cpu.setdefault(words[0], []).append(float(words[words.index("cpu") + 1]))
mean = {k: statistics.mean(v) for k, v in rate.items()}
cost = {k: statistics.mean(v) for k, v in cpu.items()}
print("\nmeans: " + ", ".join(f"{k} {v:.1f} cycles/s ({cost[k]:.3f} ms CPU)" for k, v in mean.items()))
print(f"service / replay: {mean['service'] / mean['replay']:.2f}")
print(f"CPU per cycle, service / replay: {cost['service'] / cost['replay']:.2f}")
PY
