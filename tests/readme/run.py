"""Runs the README's walk-through as a reader would: every ```sh block from "A walk through
with curl" up to "Where to read on", then every block of docs/walkthrough.md (which goes
on from it), in order, in one bash (so variables and functions carry over), against a
fresh service (SQLite, noauth) started in an empty directory. Port 8776
in the text is replaced by the service's own port. Fails when a command fails or an id
cannot be read from an answer, so the README cannot drift from the service.

Usage: run.py BINARY    (the `cinder` CLI must be on PATH for its block)
"""

import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

from support import free_port

HERE = pathlib.Path(__file__).resolve().parent
README = HERE.parents[1] / "README.md"
CONTINUED = HERE.parents[1] / "docs" / "walkthrough.md"


def sh_blocks(text):
    return re.findall(r"```sh\n(.*?)```", text, flags=re.S)


def walkthrough_blocks():
    text = README.read_text()
    start = text.index("## A walk through with curl")
    end = text.index("## Where to read on", start)
    return sh_blocks(text[start:end]) + sh_blocks(CONTINUED.read_text())


def main():
    binary = pathlib.Path(sys.argv[1]).resolve()
    blocks = walkthrough_blocks()
    if len(blocks) < 3:
        sys.exit(f"expected the walk-through's blocks in {README} and {CONTINUED}, found {len(blocks)}")
    port = free_port()
    work = pathlib.Path(tempfile.mkdtemp(prefix="cinder-attach-readme-"))
    log = open(work / "server.log", "w")
    server = subprocess.Popen(
        [str(binary), "serve", "--listen", f"127.0.0.1:{port}", "--log-format", "json"],
        cwd=work, stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(300):
            if "cinder-attach listening" in (work / "server.log").read_text():
                break
            if server.poll() is not None:
                sys.exit((work / "server.log").read_text())
            time.sleep(0.1)
        script = "set -euo pipefail\n" + "\n".join(blocks).replace("8776", str(port))
        result = subprocess.run(["bash", "-c", script], cwd=work, capture_output=True, text=True,
                                timeout=300)
        print(result.stdout[-4000:])
        if result.returncode != 0:
            print(result.stderr[-4000:], file=sys.stderr)
            sys.exit(f"the README's walk-through failed (exit {result.returncode})")
        # Everything the walk-through detached is detached: no attachment is left half-done.
        check = subprocess.run(
            [str(binary), "check", "--json"], cwd=work, capture_output=True, text=True)
        report = json.loads(check.stdout)
        if check.returncode != 0 or report["findings"]:
            sys.exit(f"cinder-attach check after the walk-through: {check.stdout}")
        print(f"README walk-through: {len(blocks)} blocks ran; check clean")
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
