"""Runs the rbd backend's walk-through in docs/backends.md as a reader would: every ```sh
block from the one that starts a cluster with scripts/start-ceph to the end of the rbd
section, in order, in one bash, in an empty directory, with its own single-node Ceph and
the service on a free port (`CINDER_ATTACH_LISTEN`). `cargo run --release --` in the text is the binary given;
a line that starts with `!` must fail (bash's `set -e` would not see it). Fails when a
command fails, so the walk-through cannot drift from the backend.

Usage: rbd_walkthrough.py BINARY    (needs ceph, rbd, jq, curl and uuidgen on PATH)
"""

import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile

from support import free_port

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "backends.md"


def rbd_blocks(text):
    start = text.index('```sh\neval "$(scripts/start-ceph)"')
    end = text.find("\n## ", start)
    return re.findall(r"```sh\n(.*?)```", text[start:end if end > 0 else None], flags=re.S)


def must_fail(line):
    """`! cmd   # why` becomes a test that `cmd` fails."""
    match = re.match(r"^! (.*?)(\s+#.*)?$", line)
    if not match:
        return line
    command = match.group(1)
    return f'if {command}; then echo "expected to fail: {command}" >&2; exit 1; fi'


def main():
    binary = pathlib.Path(sys.argv[1]).resolve()
    blocks = rbd_blocks(DOC.read_text())
    if len(blocks) < 2:
        sys.exit(f"expected the rbd walk-through's blocks in {DOC}, found {len(blocks)}")
    port = free_port()
    text = "\n".join(blocks)
    text = text.replace("cargo run --release --", str(binary))
    text = text.replace("scripts/start-ceph", str(ROOT / "scripts" / "start-ceph"))
    text = text.replace("8776", str(port))
    text = "\n".join(must_fail(line) for line in text.split("\n"))
    # Whatever happens, the cluster the walk-through started goes with it.
    script = ("set -euo pipefail\n"
              "trap 'kill $CEPH_PIDS 2>/dev/null || true; sleep 1; rm -rf \"${CEPH_WORK:-}\"' EXIT\n"
              + text)
    work = pathlib.Path(tempfile.mkdtemp(prefix="cinder-attach-rbd-walk-"))
    env = dict(os.environ, CINDER_ATTACH_LISTEN=f"127.0.0.1:{port}")
    bash = subprocess.Popen(["bash", "-c", script], cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = bash.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(bash.pid, signal.SIGKILL)
        out, _ = bash.communicate()
        print(out[-6000:])
        sys.exit("the rbd walk-through did not finish in 600 s")
    finally:
        # The service (and anything else of the walk-through) left running.
        try:
            os.killpg(bash.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        shutil.rmtree(work, ignore_errors=True)
    print(out[-6000:])
    if bash.returncode != 0:
        sys.exit(f"the rbd walk-through failed (exit {bash.returncode})")
    print(f"rbd walk-through: {len(blocks)} blocks ran")


if __name__ == "__main__":
    main()
