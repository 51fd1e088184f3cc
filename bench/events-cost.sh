#!/usr/bin/env bash
# Where the events' PostgreSQL CPU goes (issue 41, goal 2), with no application at all:
# pgbench replays one attach cycle (bench/cycle.sql) and variants of it made here, on a
# fresh database each, alternating ROUNDS times. Per run: cycles/s and the CPU the
# database (the machine's busy time less pgbench's own) spends per cycle, and that over
# the mean of `no-events`. The variants are measurements, not designs: `folded` and
# `cheap-payload` would record wrong payloads.
#
#   events         the cycle as the store runs it (six events, four outbox rows, each
#                  with the payload the service built, in the writes' own statements)
#   no-events      every events statement and write removed: the work of `--events off`
#   cheap-payload  the events recorded with an empty payload
#   plain-lock     the events as the store records them, the lock without the payload's
#                  read (its rows then not what the payload says: a measurement only)
#   folded         each events statement that follows a write moved into that write's
#                  statement as a CTE (for an OLD_CYCLE whose events were statements of
#                  their own; the payload then reads the rows as they were before it)
#   folded-cheap   both of the above
#   no-times       the lock function's times returned unrendered (null): what rendering
#                  them in the service would spare the database at most
#   no-metadata    the lock function without its metadata aggregate (a constant '{}')
#   one-row        the delete's two outbox rows (detach.start; detach.end with
#                  attachment.delete.end) as one, its payloads a JSON array: one row per
#                  transaction, three a cycle instead of four
#   one-row-inline the same, the outbox's rows kept inline up to 8160 bytes (the merged
#                  payload passes TOAST's 2 KB threshold)
#   seq-cache      the outbox's sequence with a cache of 64 per session (a measurement
#                  only: seq would then not follow the order of the writes)
#   no-indexes     the outbox table without its primary key and three indexes
#   unlogged       the outbox table unlogged (no WAL)
#   old-shape      another version's cycle, from OLD_CYCLE (e.g. `git show
#                  6308c2c:bench/cycle.sql`: 0.2.0's row per event in `events`, which
#                  the schema keeps)
#
# Each round runs the variants in a shuffled order (a fixed order let the host's drift
# within a round read as a difference between variants).
#
# Usage: bench/events-cost.sh [ROUNDS] [SECONDS] [CLIENTS]   (VARIANTS="events no-events ...")
# Needs pgbench, PostgreSQL at PGURL (default postgres://postgres@127.0.0.1:5432) and a
# cinder-attach binary for the schema (BIN, default target/release/cinder-attach).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}" seconds="${2:-10}" clients="${3:-16}"
server="${PGURL:-postgres://postgres@127.0.0.1:5432}"
bin="${BIN:-target/release/cinder-attach}"
read -ra variants <<< "${VARIANTS:-events no-events cheap-payload folded folded-cheap no-indexes unlogged}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python3 - bench/cycle.sql "$work" <<'PY'
import os, sys
lines = open(sys.argv[1]).read().split("\n")
out = sys.argv[2]

def is_events(line):
    return line.startswith("with p as materialized") and "insert into outbox" in line

def parts(line):
    """A `with w0 as (...), w1 as (...) main;` statement as its writes and its main
    statement (quotes and parentheses respected); a plain one as no writes and itself."""
    text = line.rstrip(";")
    if not text.startswith("with w0 as ("):
        return [], text
    writes, at = [], len("with ")
    while text.startswith("w", at) and " as (" in text[at:at + 12]:
        start = text.index("(", at) + 1
        depth, quoted, i = 1, False, start
        while depth:
            c = text[i]
            if c == "'":
                quoted = not quoted
            elif not quoted and c == "(":
                depth += 1
            elif not quoted and c == ")":
                depth -= 1
            i += 1
        writes.append(text[start:i - 1])
        at = i + 2 if text.startswith(", ", i) else i + 1
    return writes, text[at:]

def joined(writes, main):
    if not writes:
        return main + ";"
    listed = ", ".join(f"w{i} as ({w})" for i, w in enumerate(writes))
    return f"with {listed} {main};"

def plain_lock(line):
    # The lock without the usage payload's read, as with `--events off`.
    if "cinder_attach_lock_volume_usage(" in line:
        line = line.replace("cinder_attach_lock_volume_usage(", "cinder_attach_lock_volume_rows(")
        return line.replace(", now());", ");")
    return line

def without_events(line):
    if "cinder_attach_lock_volume_usage(" in line:
        return plain_lock(line)
    # The events as writes of the statement: the rows of the payload the service built,
    # or (0.2.0 and the other writes) a first write recording the rows before the change.
    writes, main = parts(line)
    def events(w):
        return "insert into outbox" in w or "insert into events" in w
    if not any(events(w) for w in writes + [main]):
        return line
    kept = [w for w in writes if not events(w)]
    if events(main):
        main = kept.pop()
    return joined(kept, main)

def cheap(line):
    while "json_build_object('tenant_id'" in line:
        start = line.index("json_build_object('tenant_id'")
        line = line[:start] + "''" + line[line.index("::text as payload", start):]
    # A payload the service built: its literal, emptied.
    start = line.find("'{\"attachment\"")
    while start >= 0:
        end = line.index("'", start + 1)
        line = line[:start] + "''" + line[end + 1:]
        start = line.find("'{\"attachment\"", start + 2)
    return line

def folded(lines):
    result = []
    for line in lines:
        if is_events(line) and result and result[-1].startswith("with "):
            write = result.pop()
            line = "with e as (" + line.rstrip(";") + "), " + write[len("with "):]
        result.append(line)
    return result

def write(name, lines):
    open(f"{out}/{name}.sql", "w").write("\n".join(lines))

write("events", lines)
write("no-events", [without_events(l) for l in lines if not is_events(l)])
write("cheap-payload", [cheap(l) for l in lines])
write("plain-lock", [plain_lock(l) for l in lines])
write("folded", folded(lines))
write("folded-cheap", [cheap(l) for l in folded(lines)])
write("no-indexes", lines)
write("no-times", lines)
write("no-metadata", lines)

def one_row(line):
    # Two outbox rows recorded by one statement (`values (events, payload), (...)`) as
    # one: the events arrays joined, the payloads as a JSON array.
    if "insert into outbox" not in line or "'), ('[[" not in line:
        return line
    head, rest = line.split("from (values ('", 1)
    first, second = rest.split("'), ('[[", 1)
    events1, payload1 = first.split("', '", 1)
    events2, rest = second.split("', '", 1)
    payload2, tail = rest.split("')) as e (events, payload)", 1)
    return (f"{head}from (values ('{events1[:-1]},[{events2}', '[{payload1},{payload2}]'))"
            f" as e (events, payload){tail}")

write("one-row", [one_row(l) for l in lines])
write("one-row-inline", [one_row(l) for l in lines])
write("seq-cache", lines)
write("unlogged", lines)
if os.environ.get("OLD_CYCLE"):
    write("old-shape", open(os.environ["OLD_CYCLE"]).read().split("\n"))
PY

# The lock function redefined from its own definition (d) by a SQL expression; refused if
# the expression changed nothing (the migration's text moved on).
redefine_lock() {
  echo "do \$r\$ declare d text := pg_get_functiondef('cinder_attach_lock_volume_usage'::regproc);
          changed text := $1;
        begin
          if changed = d then raise 'the lock function did not change'; end if;
          execute changed;
        end \$r\$"
}
unrendered_times="regexp_replace(d, 'to_json\(([a-z_.]+)\)::text', 'null::text', 'g')"
constant_metadata="regexp_replace(d, 'coalesce\(\(select json_object_agg.*?::json\)::text', '''{}''::text')"

schema_change() {
  case "$1" in
    no-times) redefine_lock "$unrendered_times" ;;
    no-metadata) redefine_lock "$constant_metadata" ;;
    seq-cache) echo "alter sequence events_seq_seq cache 64" ;;
    one-row-inline) echo "alter table outbox set (toast_tuple_target = 8160)" ;;
    no-indexes) echo "alter table outbox drop constraint outbox_pkey; drop index outbox_pending, outbox_volume, outbox_created" ;;
    unlogged) echo "alter table outbox set unlogged" ;;
    *) echo "select 1" ;;
  esac
}

busy_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }

run() { # variant
  local db="events_cost_$$" before after report
  psql "$server/postgres" -qc "drop database if exists $db with (force)" -c "create database $db" 2>/dev/null
  "$bin" migrate --database-url "$server/$db" >/dev/null
  psql "$server/$db" -q -o /dev/null -c "$(schema_change "$1")" -c "
    insert into volumes (id, project_id, host, size, status, attach_status, volume_type_id, created_at, deleted)
    select md5('bench' || n)::uuid, 'p', 'h@file#file', 1, 'available', 'detached',
           (select id from volume_types where name = '__DEFAULT__'), now(), false
      from generate_series(0, $clients - 1) as n" -c checkpoint
  before="$(busy_ticks)"
  report="$({ /usr/bin/time -f "pgbench-cpu %U %S" pgbench -n -M prepared -f "$work/$1.sql" \
              -c "$clients" -j 2 -T "$seconds" "$server/$db"; } 2>&1)"
  after="$(busy_ticks)"
  psql "$server/postgres" -qc "drop database if exists $db with (force)"
  REPORT="$report" python3 - "$1" "$before" "$after" "$(getconf CLK_TCK)" <<'PY' | tee -a "$work/results"
import os, re, sys
name, before, after, hz = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
report = os.environ["REPORT"]
tps = float(re.search(r"^tps = ([0-9.]+)", report, re.M).group(1))
cycles = int(re.search(r"actually processed: (\d+)", report).group(1))
user, system = map(float, re.search(r"pgbench-cpu ([0-9.]+) ([0-9.]+)", report).groups())
database_ms = ((after - before) / hz - user - system) * 1000 / cycles
print(f"{name} {tps:.1f} {database_ms:.3f}")
PY
}

for _ in $(seq 1 "$rounds"); do
  for variant in $(printf '%s\n' "${variants[@]}" | shuf); do run "$variant" >/dev/null; done
done
python3 - "$work/results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, tps, ms = line.split()
    runs.setdefault(name, []).append((float(tps), float(ms)))
base = statistics.mean(ms for _, ms in runs.get("no-events", [(0, float("nan"))]))
print(f"{'variant':14s} {'cycles/s':>22s} {'database CPU ms/cycle':>24s}  / no-events")
for name, rs in runs.items():
    tps = ", ".join(f"{t:.0f}" for t, _ in rs)
    ms = ", ".join(f"{m:.2f}" for _, m in rs)
    print(f"{name:14s} {tps:>22s} {ms:>24s}  {statistics.mean(m for _, m in rs) / base:.2f}")
PY
