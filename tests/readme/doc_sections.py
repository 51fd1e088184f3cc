"""Runs the command blocks of the docs outside the README's walk-through as a reader would:
each section's ```sh blocks in order, in one bash, in an empty directory, with the
service on a free port (`CINDER_ATTACH_LISTEN`; 8776 in the text becomes that port).
`cargo run --release --` in the text is the binary given, `/srv/` a directory inside the
empty one, and a line that starts with `!` must fail (bash's `set -e` would not see it).
Whatever a section leaves running is stopped with it. Fails when a command fails, so the
docs cannot drift from the service.

Usage: doc_sections.py BINARY SECTION...
  backends   docs/backends.md: the service with two backends of different kinds
  tgt        docs/backends.md: the tgt walk-through (root; tgt and libiscsi-bin)
  rbd        docs/backends.md: the rbd walk-through (its own cluster; ceph, rbd, jq, uuidgen)
  postgres   docs/operations.md: a PostgreSQL database for the service (createdb, psql;
             the database's name is made unique and dropped afterwards)
  processes  docs/operations.md: two processes on one address and one database (as above)
  images     docs/operations.md: volumes from and to a Glance of its own (qemu-img, jq)
"""

import os
import pathlib
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.parse
import uuid

from support import free_port

ROOT = pathlib.Path(__file__).resolve().parents[2]
BACKENDS = ROOT / "docs" / "backends.md"
OPERATIONS = ROOT / "docs" / "operations.md"

# The section's document and the text its first block starts with; it ends at the next
# heading.
SECTIONS = {
    "backends": (BACKENDS, "cargo run --release -- --backend 'fast=file"),
    "tgt": (BACKENDS, "apt-get install -y tgt libiscsi-bin"),
    "rbd": (BACKENDS, 'eval "$(scripts/start-ceph)"'),
    "images": (OPERATIONS, 'eval "$(scripts/start-glance)"'),
    "postgres": (OPERATIONS, "createdb -h 127.0.0.1 -U postgres cinder\ncargo run --release -- migrate --database-url postgres://postgres:postgres@127.0.0.1:5432/cinder\nCINDER"),
    "processes": (OPERATIONS, "createdb -h 127.0.0.1 -U postgres cinder\ncargo run --release -- migrate --database-url postgres://postgres:postgres@127.0.0.1:5432/cinder\nfor"),
}


def section_blocks(doc, first):
    text = doc.read_text()
    start = text.index("```sh\n" + first)
    end = text.find("\n## ", start)
    return re.findall(r"```sh\n(.*?)```", text[start:end if end > 0 else None], flags=re.S)


def must_fail(line):
    """`! cmd   # why` becomes a test that `cmd` fails."""
    match = re.match(r"^! (.*?)(\s+#.*)?$", line)
    if not match:
        return line
    command = match.group(1)
    return f'if {command}; then echo "expected to fail: {command}" >&2; exit 1; fi'


def free_control_port():
    """A tgtd management socket no tgtd uses (tgtd takes a C short, as the tgt tests)."""
    while True:
        candidate = random.randint(1_000, 31_999)
        if not pathlib.Path(f"/var/run/tgtd/socket.{candidate}").exists():
            return candidate


def script_for(name, binary, port, work):
    doc, first = SECTIONS[name]
    blocks = section_blocks(doc, first)
    text = "\n".join(blocks)
    text = text.replace("cargo run --release --", str(binary))
    text = text.replace("scripts/start-ceph", str(ROOT / "scripts" / "start-ceph"))
    text = text.replace("scripts/start-glance", str(ROOT / "scripts" / "start-glance"))
    text = text.replace("8776", str(port))
    text = text.replace("/srv/", f"{work}/srv/")
    cleanup = ""
    if name == "tgt":
        # A tgtd of its own: its own portal and management socket.
        text = text.replace("3260", str(free_port()))
        control = free_control_port()
        text = text.replace("-C 0", f"-C {control}").replace("control_port=0", f"control_port={control}")
    if name == "rbd":
        cleanup = 'kill $CEPH_PIDS 2>/dev/null || true; sleep 1; rm -rf "${CEPH_WORK:-}"'
    if name == "images":
        cleanup = ('if [ -n "${GLANCE_PID:-}" ]; then kill -9 -- -$GLANCE_PID 2>/dev/null || true; fi; '
                   'rm -rf "${GLANCE_WORK:-}"')
    if name in ("postgres", "processes"):
        database = "walkthrough_" + uuid.uuid4().hex[:12]
        text = re.sub(r"\bcinder\b(?=\s|$)", database, text)
        cleanup = f"dropdb -h 127.0.0.1 -U postgres --if-exists {database}"
    text = "\n".join(must_fail(line) for line in text.split("\n"))
    # Whatever happens, what the section started goes with it.
    trap = f"trap '{cleanup.replace(chr(39), chr(34))}' EXIT\n" if cleanup else ""
    return "set -euo pipefail\n" + trap + text, len(blocks)


def run(name, binary):
    port = free_port()
    work = pathlib.Path(tempfile.mkdtemp(prefix=f"cinder-attach-doc-{name}-"))
    script, count = script_for(name, binary, port, work)
    env = dict(os.environ, CINDER_ATTACH_LISTEN=f"127.0.0.1:{port}")
    # createdb, psql and dropdb as the docs run them (`-h 127.0.0.1 -U postgres`) need the
    # password a fresh install asks for: the tests' database URL's (scripts/start-postgres
    # sets `postgres`); with trust auth it is not asked.
    password = urllib.parse.urlsplit(os.environ.get("TEST_DATABASE_URL", "")).password
    env.setdefault("PGPASSWORD", password or "postgres")
    bash = subprocess.Popen(["bash", "-c", script], cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = bash.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(bash.pid, signal.SIGKILL)
        out, _ = bash.communicate()
        print(out[-6000:])
        sys.exit(f"the {name} section did not finish in 600 s")
    finally:
        # The service (and anything else of the section) left running.
        try:
            os.killpg(bash.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        shutil.rmtree(work, ignore_errors=True)
    print(out[-6000:])
    if bash.returncode != 0:
        sys.exit(f"the {name} section of the docs failed (exit {bash.returncode})")
    print(f"docs, {name}: {count} blocks ran")


def main():
    binary = pathlib.Path(sys.argv[1]).resolve()
    names = sys.argv[2:]
    unknown = [n for n in names if n not in SECTIONS]
    if not names or unknown:
        sys.exit(__doc__)
    for name in names:
        run(name, binary)


if __name__ == "__main__":
    main()
