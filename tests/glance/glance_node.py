"""A Glance of the tests' own (scripts/start-glance): started, its environment read, and
stopped with everything it wrote. Used by tests/clients and tests/tempest."""

import os
import pathlib
import shutil
import signal
import subprocess

REPO = pathlib.Path(__file__).resolve().parents[2]


def start(extra_env=None):
    """Starts Glance; returns its environment (GLANCE_URL, GLANCE_PID, GLANCE_WORK,
    GLANCE_STORE). `extra_env`: GLANCE_KEYSTONE_URL and its admin password, for a Glance
    that checks tokens."""
    out = subprocess.run([str(REPO / "scripts" / "start-glance")], env={**os.environ, **(extra_env or {})},
                         check=True, capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        if line.startswith("export "):
            for pair in line[len("export "):].split():
                key, _, value = pair.partition("=")
                found[key] = value
    return found


def stop(env):
    try:
        os.killpg(int(env["GLANCE_PID"]), signal.SIGKILL)
    except ProcessLookupError:
        pass
    shutil.rmtree(env["GLANCE_WORK"], ignore_errors=True)
