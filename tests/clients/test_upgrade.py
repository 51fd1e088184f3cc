"""An upgrade without downtime, side by side on PostgreSQL: the previous version
(scripts/previous-version, built by scripts/build-previous; its path in
CINDER_ATTACH_PREVIOUS_BIN) serves under load, this version migrates the database under
it, starts beside it and takes the load, and the old process stops. Every request is
answered, every acknowledged write is in the database, and every event reaches the
broker exactly once, whichever process relayed it."""

import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

from conftest import BINARY, _postgres_url, _with_database, database_for
from rabbitmq_node import RabbitNode, free_port
from test_notifications import Listener, Load, multiattach_volume, pending_events_sql

PREVIOUS = os.environ.get("CINDER_ATTACH_PREVIOUS_BIN")

pytestmark = [
    pytest.mark.skipif(
        not PREVIOUS and not os.environ.get("CI"),
        reason="CINDER_ATTACH_PREVIOUS_BIN is not set (scripts/test builds it with scripts/build-previous)",
    ),
    pytest.mark.skipif(
        not Path("/usr/lib/rabbitmq/bin/rabbitmq-server").exists() and not os.environ.get("CI"),
        reason="rabbitmq-server is not installed (scripts/test installs it)",
    ),
]


def version_of(binary):
    return subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True).stdout


class Process:
    """One `serve` of `binary` on a loopback port of its own, logging to a file."""

    def __init__(self, binary, database_url, workdir, notify_url):
        self.binary = binary
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log_path = workdir / f"{Path(binary).name}-{self.url.rsplit(':', 1)[1]}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("CINDER_ATTACH_")}
        env.update(RUST_LOG="info", NO_COLOR="1")
        self.process = subprocess.Popen(
            [
                str(binary), "serve", "--listen", self.url.removeprefix("http://"),
                "--database-url", database_url, "--host", "upgrade-host",
                "--backend", f"file=file,dir={workdir / 'volumes'}",
                "--notify-url", notify_url,
            ],
            cwd=workdir, env=env, stdout=open(self.log_path, "w"), stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"{binary} exited:\n{self.log()}"
            try:
                requests.get(self.url + "/", timeout=1)
                return
            except requests.ConnectionError:
                time.sleep(0.1)
        raise RuntimeError(f"{binary} did not start:\n{self.log()}")

    def log(self):
        return self.log_path.read_text(errors="replace")

    def stop(self):
        """SIGTERM: the process drains what it serves and stops."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def migrate(binary, database_url, *args):
    return subprocess.run(
        [str(binary), "migrate", "--database-url", database_url, *args],
        capture_output=True, text=True,
    )


def test_the_previous_version_hands_over_to_this_one_under_load():
    if not PREVIOUS:
        pytest.fail("CI is set but CINDER_ATTACH_PREVIOUS_BIN is not: scripts/build-previous makes it")
    admin_url = _postgres_url()
    if not admin_url:
        pytest.skip("no PostgreSQL (TEST_DATABASE_URL)")
    named = next(
        line.split()[0]
        for line in (Path(__file__).resolve().parents[2] / "scripts" / "previous-version").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert version_of(PREVIOUS).startswith(f"cinder-attach {named}"), version_of(PREVIOUS)
    assert not version_of(BINARY).startswith(f"cinder-attach {named}"), "the new binary is the old version"

    workdir = Path(tempfile.mkdtemp(prefix="cinder-attach-upgrade-"))
    database_url, admin_url, database = database_for("postgres", workdir)
    node = RabbitNode()
    node.start()
    listener = Listener(node.transport_url, durable=False)
    old = new = load = None
    try:
        made = migrate(PREVIOUS, database_url)
        assert made.returncode == 0, made.stderr
        # This version sees what the previous one made: its own migrations pending.
        check = migrate(BINARY, database_url, "--check")
        assert check.returncode == 1, check.stdout + check.stderr
        assert "pending:" in check.stdout, check.stdout

        old = Process(PREVIOUS, database_url, workdir, node.amqp_url)
        volume = multiattach_volume(old.url)
        load = Load(old.url, volume)
        time.sleep(2)

        # Expand under the old process, which keeps serving.
        migrated = migrate(BINARY, database_url)
        assert migrated.returncode == 0, migrated.stderr
        check = migrate(BINARY, database_url, "--check")
        assert check.returncode == 0, check.stdout + check.stderr
        before = len(load.acknowledged)
        time.sleep(2)
        assert len(load.acknowledged) > before, "the old process stopped serving after the migration"

        # The new process beside it, then the load moves over (as a balancer would), and
        # the old one stops once nothing it started can still be on its way to it.
        new = Process(BINARY, database_url, workdir, node.amqp_url)
        time.sleep(2)
        load.url = new.url
        time.sleep(1)
        assert old.stop() == 0, old.log()[-3000:]
        before = len(load.acknowledged)
        time.sleep(2)
        load.stop()
        assert len(load.acknowledged) > before, "the new process did not take the load"

        # Every request answered.
        assert load.errors == 0, f"{load.errors} requests failed; the new process's log ends:\n{new.log()[-3000:]}"

        # Every acknowledged write is stored.
        def sql(query):
            out = subprocess.run(
                ["psql", _with_database(admin_url, database), "-Atc", query],
                capture_output=True, text=True, check=True,
            )
            return out.stdout.split()

        stored = set(sql(f"select id from volume_attachment where volume_id = '{volume}'"))
        stored_deleted = set(
            sql(f"select id from volume_attachment where volume_id = '{volume}' and deleted = true")
        )
        for attachment, what, _ in load.acknowledged:
            assert attachment in (stored if what == "created" else stored_deleted), (attachment, what)
        assert len(load.acknowledged) > 20, load.acknowledged

        # Every event relayed, by one process or the other, and heard exactly once.
        deadline = time.monotonic() + 60
        while int(sql(pending_events_sql(postgres=True))[0]) > 0:
            assert time.monotonic() < deadline, "events still unsent after 60 s:\n" + new.log()[-3000:]
            time.sleep(0.5)
        listed = subprocess.run(
            [str(BINARY), "events", "--database-url", database_url, "--limit", "100000"],
            capture_output=True, text=True, check=True,
        )
        recorded_ids = {json.loads(line)["message_id"] for line in listed.stdout.splitlines()}
        received = listener.wait_for(lambda r: recorded_ids <= {n["message_id"] for n in r}, timeout=60)
        time.sleep(1)  # a repeat, were there one, would arrive right behind
        received_ids = [n["message_id"] for n in listener.snapshot()]
        assert set(received_ids) == recorded_ids, (
            f"missing {len(recorded_ids - set(received_ids))}, unknown {len(set(received_ids) - recorded_ids)}"
        )
        repeated = len(received_ids) - len(set(received_ids))
        assert repeated == 0, f"{repeated} events delivered twice"
        assert len(received) >= len(load.acknowledged)
    finally:
        if load:
            load.stop()
        for process in (old, new):
            if process:
                process.kill()
        listener.stop()
        node.destroy()
        subprocess.run(
            ["psql", admin_url, "-qc", f'drop database if exists "{database}" with (force)'], check=False
        )
        subprocess.run(["rm", "-rf", str(workdir)], check=False)
