#!/usr/bin/env bash
# Issue 41's ratios in one run: the scripts behind each, one after the other, then a
# table of the goals. PostgreSQL: bench/service-vs-ceiling.sh (goal 1, the service over
# the prepared replay of its own statements, and its CPU per cycle; goal 3, the service
# over the 28 statements of 33af736) and bench/events-cost.sh with the variants `events`
# and `no-events` (goal 2, the database's CPU per cycle with events over without). SQLite:
# bench/sqlite-vs-ceiling.sh (goal 4, the service over the replay of the SQLite store's
# statements). p99 of create from both services' runs. Goal 5 (PostgreSQL, a project per
# client): bench/lifecycle.sh's volume and snapshot create/delete cycles next to
# bench/pg-ceiling.sh replaying bench/volume-cycle.sql and snapshot-cycle.sql, alternating.
#
# Usage: bench/goals.sh [ROUNDS] [SECONDS] [CLIENTS]     (about 10 minutes with 3 15 16)
# Needs what the three scripts need (a release build, pgbench, PostgreSQL at PGURL).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}" seconds="${2:-15}" clients="${3:-16}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "== PostgreSQL: the service next to its replays" >&2
bench/service-vs-ceiling.sh "$rounds" "$seconds" "$clients" | tee "$work/pg" >&2
echo "== PostgreSQL: events against none, no application" >&2
VARIANTS="events no-events" bench/events-cost.sh "$rounds" "$seconds" "$clients" | tee "$work/events" >&2
echo "== SQLite: the service next to its replay" >&2
bench/sqlite-vs-ceiling.sh "$rounds" "$seconds" "$clients" | tee "$work/sqlite" >&2
echo "== PostgreSQL: volume and snapshot cycles next to their replays, a project per client" >&2
: >"$work/lifecycle"
for _ in $(seq 1 "$rounds"); do
  for mode in volumes snapshots; do
    STORES=postgres MODES="$mode" PROJECT_PER_CLIENT=1 bench/lifecycle.sh 1 "$seconds" "$clients" |
      tee -a "$work/lifecycle" >&2
    replayed="$(PGBENCH_MODE=prepared PROJECT_PER_CLIENT=1 CYCLE="bench/${mode%s}-cycle.sql" \
      bench/pg-ceiling.sh "$clients" "$seconds" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')"
    echo "replay $mode $replayed" | tee -a "$work/lifecycle" >&2
  done
done
python3 - "$work" <<'PY'
import re, statistics, sys
work = sys.argv[1]
pg, events, sqlite, lifecycle = (
    open(f"{work}/{n}").read() for n in ("pg", "events", "sqlite", "lifecycle"))
def ratio(text, label):
    return float(re.search(re.escape(label) + r": ([0-9.]+)", text).group(1))
def mean_of(text, pattern):
    values = [float(v) for v in re.findall(pattern, text, re.M)]
    return statistics.mean(values)
pg_cpu = mean_of(pg, r"server ([0-9.]+)")
pg_p99 = mean_of(pg, r"p99 create ([0-9.]+) ms")
sqlite_p99 = mean_of(sqlite, r"p99 create ([0-9.]+) ms")
events_ratio = float(re.search(r"^events .* ([0-9.]+)$", events, re.M).group(1))
rows = [
    ("1", "PostgreSQL service / replay of its own statements", ratio(pg, "service / ceiling-today"), ">= 0.95"),
    ("1", "PostgreSQL service CPU per cycle (ms)", pg_cpu, "<= 0.6"),
    ("2", "PostgreSQL CPU per cycle, events / none", events_ratio, "<= 1.10"),
    ("3", "PostgreSQL service / 33af736's 28 statements", ratio(pg, "service / ceiling-33af736"), ">= 1.0"),
    ("4", "SQLite service / replay of its statements", ratio(sqlite, "service / replay"), ">= 0.7"),
    ("4", "p99 create, SQLite (ms)", sqlite_p99, "<= 5"),
    ("4", "p99 create, PostgreSQL (ms)", pg_p99, "<= 20"),
]
for mode, statements in (("volumes", 60), ("snapshots", 37)):
    service = mean_of(lifecycle, rf"^postgres +{mode} +([0-9.]+) cycles/s")
    replay = mean_of(lifecycle, rf"^replay {mode} ([0-9.]+)$")
    what = f"PostgreSQL {mode[:-1]} cycle: service / replay of its {statements} statements"
    rows.append(("5", what, service / replay, "(measured)"))
print(f"\n| goal | measure | this run | wanted |\n|---|---|---|---|")
for goal, what, value, wanted in rows:
    print(f"| {goal} | {what} | {value:.2f} | {wanted} |")
PY
