"""Starts the real cinder-attach binary on 127.0.0.1 (random port, fresh database) for
each test, once on SQLite and once on PostgreSQL (when TEST_DATABASE_URL is set)."""

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

import tempest_schemas

REPO = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("CINDER_ATTACH_BIN", REPO / "target" / "debug" / "cinder-attach"))


def _postgres_url():
    url = os.environ.get("TEST_DATABASE_URL")
    if not url and os.environ.get("CI"):
        raise RuntimeError("CI is set but TEST_DATABASE_URL is not: the Postgres half must run")
    return url


def _with_database(url, name):
    base, _, query = url.partition("?")
    server = base.rsplit("/", 1)[0] if base.count("/") > 2 else base
    return f"{server}/{name}" + (f"?{query}" if query else "")


def database_for(store, workdir):
    """A fresh database of `store`: (its URL, the admin URL and name of a PostgreSQL one to
    drop afterwards, else None and None)."""
    if store != "postgres":
        return f"sqlite://{workdir / 'cinder.db'}", None, None
    admin_url = _postgres_url()
    name = f"t_{uuid.uuid4().hex}"
    subprocess.run(["psql", admin_url, "-qc", f'create database "{name}"'], check=True)
    return _with_database(admin_url, name), admin_url, name


class Server:
    def __init__(self, store, extra_args=()):
        self.workdir = Path(tempfile.mkdtemp(prefix="cinder-attach-client-"))
        self.volumes_dir = self.workdir / "volumes"
        database_url, self.admin_url, self.database = database_for(store, self.workdir)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CINDER_ATTACH_")}
        env.update(RUST_LOG="info", NO_COLOR="1")
        self.process = subprocess.Popen(
            [
                str(BINARY), "serve",
                "--listen", "127.0.0.1:0",
                "--database-url", database_url,
                "--backend", f"file=file,dir={self.volumes_dir}",
                "--backup-posix-path", str(self.workdir / "backups"),
                "--log-format", "json",
                *extra_args,
            ],
            cwd=self.workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        self.address = None
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("message") == "cinder-attach listening":
                self.address = event["address"]
                break
        if not self.address:
            raise RuntimeError("cinder-attach did not start")
        self.url = f"http://{self.address}"
        # The rest of the log, kept for tests that read why something failed (and so the
        # pipe never fills and stalls the server).
        self.log_lines = []
        threading.Thread(target=self._drain_log, daemon=True).start()

    def _drain_log(self):
        for line in self.process.stdout:
            self.log_lines.append(line)

    def logged(self, text, timeout=10):
        """Whether a log line holding `text` came within `timeout` seconds."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(text in line for line in list(self.log_lines)):
                return True
            time.sleep(0.1)
        return False

    def lines_about(self, text):
        """The log lines that name `text` (a volume's id, say): why it went wrong."""
        return [line.strip() for line in list(self.log_lines) if text in line]

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
        if self.database:
            subprocess.run(
                ["psql", self.admin_url, "-qc", f'drop database if exists "{self.database}" with (force)'],
                check=False,
            )
        shutil.rmtree(self.workdir, ignore_errors=True)


def _stores():
    stores = ["sqlite"]
    if _postgres_url():
        stores.append("postgres")
    return stores


@pytest.fixture(params=_stores())
def server(request):
    started = Server(request.param)
    yield started
    started.stop()


@pytest.fixture
def schema_proxy(server):
    """A proxy in front of the server that checks every response the CLI gets against
    tempest's response schemas; the test fails if any is rejected."""
    proxy = tempest_schemas.ValidatingProxy(server.url)
    yield proxy
    proxy.stop()
    assert not proxy.failures, "\n".join(proxy.failures)


@pytest.fixture
def cinder(server, schema_proxy):
    """Runs the real `cinder` CLI against the server (noauth, project p1), through the
    schema-checking proxy."""

    def run(*args, version="3.71", check=True, project="p1"):
        env = dict(os.environ)
        env.update(
            OS_AUTH_TYPE="noauth",
            CINDER_ENDPOINT=f"{schema_proxy.url}/v3",
            OS_USER_ID="admin",
            OS_PROJECT_ID=project,
            OS_VOLUME_API_VERSION=version,
        )
        result = subprocess.run(["cinder", *args], env=env, capture_output=True, text=True, timeout=60)
        if check and result.returncode != 0:
            raise AssertionError(f"cinder {' '.join(args)} failed: {result.stdout}{result.stderr}")
        return result

    return run


def table(output):
    """The `Property | Value` rows of a cinder CLI table as a dict."""
    rows = {}
    for line in output.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and not line.startswith("+"):
            rows[cells[0]] = cells[1]
    return rows
