#!/usr/bin/env bash
# Remakes tests/cinder_import/cinder29.sql (PostgreSQL) or, with DB=mysql,
# cinder29.mysql.sql (MariaDB): a database made by the real Cinder 29 (from PyPI, through
# ../shared/reference-cinder), filled through Cinder's own API by make_fixture.py, dumped
# as plain INSERTs. Run by hand when the fixture must change; the test suite only loads
# the dumps (no Cinder needed in CI). DB=mysql needs a MariaDB on 127.0.0.1:3306 whose
# root has no password.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REF="${REFERENCE_CINDER:-$HERE/../../../shared/reference-cinder}"
VENV="${VENV:-$HOME/.cache/reference-cinder-venv}"
DB="${DB:-postgresql}"
psql_q() { su postgres -c "psql -v ON_ERROR_STOP=1 -tAc \"$1\""; }
mysql_q() { mysql -uroot -h127.0.0.1 -e "$1"; }
"$REF/stop.sh" >/dev/null 2>&1 || true
case "$DB" in
  postgresql) psql_q "DROP DATABASE IF EXISTS cinder_anchor" ;;
  mysql)
    # The reference scripts, pointed at MariaDB: only their [database] connection differs.
    copy="$(mktemp -d)"
    cp -r "$REF/." "$copy/"
    sed -i 's#^connection = .*#connection = mysql+pymysql://root@127.0.0.1:3306/cinder_anchor?charset=utf8#' \
        "$copy/etc/cinder.conf.in"
    REF="$copy"
    mysql_q "DROP DATABASE IF EXISTS cinder_anchor; CREATE DATABASE cinder_anchor" ;;
  *) echo "DB is postgresql or mysql" >&2; exit 2 ;;
esac
"$REF/setup.sh" >/dev/null   # a new database, `cinder-manage db sync`
CINDER_API_WORKERS=1 "$REF/start.sh" >/dev/null
trap '"$REF/stop.sh" >/dev/null 2>&1 || true' EXIT
"$VENV/bin/python" "$HERE/make_fixture.py"
"$REF/stop.sh" >/dev/null   # services down, so the dump is at rest
header() {
    echo "-- Made by tests/cinder_import/make-fixture.sh: cinder==29.0.0 from PyPI, db sync,"
    echo "-- then make_fixture.py through Cinder's API. Do not edit by hand."
}
if [ "$DB" = mysql ]; then
    out="$HERE/cinder29.mysql.sql"
    { header
      # The tables come in name order, before the ones their foreign keys name.
      echo "SET FOREIGN_KEY_CHECKS=0;"
      mysqldump -uroot -h127.0.0.1 --compact --skip-extended-insert --no-tablespaces \
          cinder_anchor | grep -v '^/\*!40101 SET' | grep -v '^/\*M!999999'
    } > "$out"
else
    out="$HERE/cinder29.sql"
    { header
      su postgres -c "pg_dump --no-owner --no-privileges --inserts cinder_anchor" \
          | grep -v '^SELECT pg_catalog.set_config' | grep -v '^SET ' | grep -v '^--' | grep -v '^\\'
    } > "$out"
fi
echo "wrote $out ($(wc -l < "$out") lines)"
