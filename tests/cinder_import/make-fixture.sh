#!/usr/bin/env bash
# Remakes tests/cinder_import/cinder29.sql: a database made by the real Cinder 29 (from
# PyPI, through ../shared/reference-cinder), filled through Cinder's own API by
# make_fixture.py, dumped as plain INSERTs. Run by hand when the fixture must change;
# the test suite only loads the dump (no Cinder needed in CI).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REF="${REFERENCE_CINDER:-$HERE/../../../shared/reference-cinder}"
VENV="${VENV:-$HOME/.cache/reference-cinder-venv}"
psql_q() { su postgres -c "psql -v ON_ERROR_STOP=1 -tAc \"$1\""; }
"$REF/stop.sh" >/dev/null 2>&1 || true
psql_q "DROP DATABASE IF EXISTS cinder_anchor"
"$REF/setup.sh" >/dev/null   # a new database, `cinder-manage db sync`
CINDER_API_WORKERS=1 "$REF/start.sh" >/dev/null
trap '"$REF/stop.sh" >/dev/null 2>&1 || true' EXIT
"$VENV/bin/python" "$HERE/make_fixture.py"
"$REF/stop.sh" >/dev/null   # services down, so the dump is at rest
{
    echo "-- Made by tests/cinder_import/make-fixture.sh: cinder==29.0.0 from PyPI, db sync,"
    echo "-- then make_fixture.py through Cinder's API. Do not edit by hand."
    su postgres -c "pg_dump --no-owner --no-privileges --inserts cinder_anchor" \
        | grep -v '^SELECT pg_catalog.set_config' | grep -v '^SET ' | grep -v '^--' | grep -v '^\\'
} > "$HERE/cinder29.sql"
echo "wrote $HERE/cinder29.sql ($(wc -l < "$HERE/cinder29.sql") lines)"
