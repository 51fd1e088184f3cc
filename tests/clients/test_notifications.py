"""Notifications on a real RabbitMQ, heard by a real oslo.messaging listener: the events
of a multi-attach cycle with Cinder's payload, and not one lost when the service is
killed under load and the broker is stopped and started again (delivery is at least
once: a repeat carries the same message_id)."""

import json
import os
import signal
import socket
import sqlite3
import ssl
import struct
import subprocess
import tempfile
import threading
import time
import uuid
from contextlib import closing
from pathlib import Path

import oslo_messaging
import pytest
import requests
from oslo_config import cfg

from conftest import BINARY, _postgres_url, _with_database, database_for
from rabbitmq_node import RabbitNode, free_port


def pending_events_sql(postgres):
    """How many events wait for the broker: the rows a 0.2.0 process recorded in `events`,
    one event each, and the events of this version's `outbox` rows."""
    array = "cast(events as json)" if postgres else "events"
    return (
        "select (select count(*) from events where sent_at is null) + "
        f"(select coalesce(sum(json_array_length({array})), 0) from outbox where sent_at is null)"
    )


pytestmark = pytest.mark.skipif(
    not Path("/usr/lib/rabbitmq/bin/rabbitmq-server").exists() and not os.environ.get("CI"),
    reason="rabbitmq-server is not installed (scripts/test installs it)",
)

ADMIN = {"X-Auth-Token": "admin:p1", "OpenStack-API-Version": "volume 3.54"}


class Listener:
    """oslo.messaging's notification listener on topic `notifications`."""

    def __init__(self, transport_url, durable):
        self.received = []
        self.lock = threading.Lock()
        conf = cfg.ConfigOpts()
        conf([], project="cinder-attach-tests")
        transport = oslo_messaging.get_notification_transport(conf, url=transport_url)
        conf.set_override("amqp_durable_queues", durable, group="oslo_messaging_rabbit")
        targets = [oslo_messaging.Target(topic="notifications")]
        self.listener = oslo_messaging.get_notification_listener(
            transport, targets, [self], executor="threading"
        )
        self.listener.start()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        with self.lock:
            self.received.append(
                {
                    "message_id": metadata["message_id"],
                    "event_type": event_type,
                    "publisher_id": publisher_id,
                    "payload": payload,
                    "ctxt": ctxt,
                }
            )
        return oslo_messaging.NotificationResult.HANDLED

    def snapshot(self):
        with self.lock:
            return list(self.received)

    def wait_for(self, predicate, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self.snapshot()):
                return self.snapshot()
            time.sleep(0.2)
        return self.snapshot()

    def stop(self):
        self.listener.stop()
        self.listener.wait()


class Service:
    """cinder-attach on a fixed loopback port, so it can be killed and started again."""

    def __init__(self, store, notify_args):
        self.workdir = Path(tempfile.mkdtemp(prefix="cinder-attach-notify-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.database_url, self.admin_url, self.database = database_for(store, self.workdir)
        self.notify_args = list(notify_args)
        self.process = None
        self.start()

    def start(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("CINDER_ATTACH_")}
        env.update(RUST_LOG="info", NO_COLOR="1")
        log = open(self.workdir / "server.log", "a")
        self.process = subprocess.Popen(
            [
                str(BINARY), "serve", "--listen", f"127.0.0.1:{self.port}",
                "--database-url", self.database_url, "--host", "notify-host",
                "--backend", f"file=file,dir={self.workdir / 'volumes'}",
                *self.notify_args,
            ],
            cwd=self.workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                requests.get(self.url + "/", timeout=1)
                return
            except requests.ConnectionError:
                time.sleep(0.1)
        raise RuntimeError("cinder-attach did not start: " + (self.workdir / "server.log").read_text())

    def pending_events(self):
        """How many events the broker has not confirmed yet."""
        return int(self.sql(pending_events_sql(postgres=bool(self.database)))[0])

    def log_tail(self, lines=60):
        return "\n".join((self.workdir / "server.log").read_text(errors="replace").splitlines()[-lines:])

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def events(self, *args):
        listed = subprocess.run(
            [str(BINARY), "events", "--database-url", self.database_url, "--limit", "100000", *args],
            capture_output=True, text=True, check=True,
        )
        return [json.loads(line) for line in listed.stdout.splitlines()]

    def sql(self, query):
        if self.database:
            out = subprocess.run(
                ["psql", _with_database(self.admin_url, self.database), "-Atc", query],
                capture_output=True, text=True, check=True,
            )
        else:
            with closing(sqlite3.connect(self.workdir / "cinder.db")) as db:
                return [str(value) for row in db.execute(query) for value in row]
        return out.stdout.split()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=15)
        if self.database:
            subprocess.run(
                ["psql", self.admin_url, "-qc", f'drop database if exists "{self.database}" with (force)'],
                check=False,
            )
        subprocess.run(["rm", "-rf", str(self.workdir)], check=False)


def _stores():
    return ["sqlite"] + (["postgres"] if _postgres_url() else [])


@pytest.fixture(scope="module")
def broker():
    node = RabbitNode()
    node.start()
    yield node
    node.destroy()


def multiattach_volume(url):
    made = requests.post(
        f"{url}/v3/p1/types", headers=ADMIN,
        json={"volume_type": {"name": f"shared-{uuid.uuid4().hex[:6]}", "extra_specs": {"multiattach": "<is> True"}}},
    )
    assert made.status_code == 200, made.text
    created = requests.post(
        f"{url}/v3/p1/volumes", headers=ADMIN,
        json={"volume": {"size": 1, "volume_type": made.json()["volume_type"]["name"]}},
    )
    assert created.status_code == 202, created.text
    return created.json()["volume"]["id"]


def attach(url, volume, host, mode, timeout=10):
    body = {
        "attachment": {
            "volume_uuid": volume, "instance_uuid": str(uuid.uuid4()), "mode": mode,
            "connector": {"host": host, "mountpoint": "/dev/vdb", "initiator": f"iqn.2026-11.test:{host}"},
        }
    }
    return requests.post(f"{url}/v3/p1/attachments", headers=ADMIN, json=body, timeout=timeout)


@pytest.mark.parametrize("store", _stores())
def test_a_listener_hears_a_shared_volume_cycle(broker, store):
    listener = Listener(broker.transport_url, durable=False)
    service = Service(store, ["--notify-url", broker.amqp_url])
    try:
        volume = multiattach_volume(service.url)
        rw = attach(service.url, volume, "compute-1", "rw")
        ro = attach(service.url, volume, "compute-2", "ro")
        assert rw.status_code == 200 and ro.status_code == 200, (rw.text, ro.text)
        rw_id, ro_id = rw.json()["attachment"]["id"], ro.json()["attachment"]["id"]
        for attachment in (rw_id, ro_id):
            done = requests.post(
                f"{service.url}/v3/p1/attachments/{attachment}/action", headers=ADMIN, json={"os-complete": None}
            )
            assert done.status_code == 204, done.text
        gone = requests.delete(f"{service.url}/v3/p1/attachments/{rw_id}", headers=ADMIN)
        assert gone.status_code == 200, gone.text

        def about_volume(received):
            return [n for n in received if n["payload"].get("volume_id") == volume]

        expected = [
            "volume.create.start", "volume.create.end",
            "volume.attach.start", "attachment.create.end",
            "volume.attach.start", "attachment.create.end",
            "attachment.complete.end", "attachment.complete.end",
            "volume.detach.start", "volume.detach.end", "attachment.delete.end",
        ]
        heard = about_volume(listener.wait_for(lambda r: len(about_volume(r)) >= len(expected)))
        assert [n["event_type"] for n in heard] == expected
        for notification in heard:
            assert notification["publisher_id"] == "volume.notify-host"
            payload = notification["payload"]
            assert payload["tenant_id"] == "p1"
            assert payload["size"] == 1
            assert payload["host"] == "notify-host@file#file"
            assert payload["volume_type"]
            assert notification["ctxt"]["request_id"].startswith("req-")
            assert notification["ctxt"]["project_id"] == "p1"
        created_ro = heard[5]["payload"]
        assert created_ro["attachment"]["id"] == ro_id
        assert created_ro["attachment"]["attach_mode"] == "ro"
        assert created_ro["attachment"]["attached_host"] == "compute-2"
        assert created_ro["attachment"]["instance_uuid"] == ro.json()["attachment"]["instance"]
        assert [a["attach_mode"] for a in created_ro["volume_attachment"]] == ["rw", "ro"]
        assert heard[7]["payload"]["status"] == "in-use"
        assert heard[10]["payload"]["attachment"]["id"] == rw_id
        assert [a["id"] for a in heard[10]["payload"]["volume_attachment"]] == [ro_id]
        # Every event is marked sent once the broker confirmed it.
        deadline = time.monotonic() + 10
        while any(e["sent_at"] is None for e in service.events("--volume", volume)):
            assert time.monotonic() < deadline, "events never marked sent"
            time.sleep(0.2)
    finally:
        service.stop()
        listener.stop()


@pytest.mark.parametrize("form", ["trailing slash", "oslo", "oslo, first host down"])
def test_urls_as_operators_write_them_reach_the_broker(broker, form):
    """`amqp://.../` (an empty virtual host: `/`, as oslo and pika read it) and oslo's
    `rabbit://` transport URL (several hosts, tried in turn, the others taking the first
    one's credentials) all deliver."""
    port = broker.amqp_url.split(":")[-1].split("/")[0]
    url = {
        "trailing slash": f"amqp://guest:guest@127.0.0.1:{port}/",
        "oslo": f"rabbit://guest:guest@127.0.0.1:{port},guest:guest@127.0.0.1:1/",
        "oslo, first host down": f"rabbit://guest:guest@127.0.0.1:1,127.0.0.1:{port}/",
    }[form]
    listener = Listener(broker.transport_url, durable=False)
    service = Service("sqlite", ["--notify-url", url])
    try:
        made = requests.post(f"{service.url}/v3/p1/volumes", headers=ADMIN, json={"volume": {"size": 1}})
        assert made.status_code == 202, made.text
        volume = made.json()["volume"]["id"]

        def created(received):
            return [n for n in received
                    if n["payload"].get("volume_id") == volume and n["event_type"] == "volume.create.end"]

        assert created(listener.wait_for(lambda r: len(created(r)) >= 1))
    finally:
        service.stop()
        listener.stop()


@pytest.mark.parametrize("refusal", ["password", "virtual host"])
def test_a_broker_that_refuses_the_relay_stops_start_up_naming_why(broker, refusal):
    """Wrong credentials or a virtual host the broker lacks would be refused at every
    attempt while events pile up; the service says so at start instead."""
    port = broker.amqp_url.split(":")[-1].split("/")[0]
    url, cause = {
        "password": (f"amqp://guest:wrong@127.0.0.1:{port}/", "ACCESS_REFUSED"),
        "virtual host": (f"amqp://guest:guest@127.0.0.1:{port}/no-such-vhost", "vhost no-such-vhost not found"),
    }[refusal]
    workdir = Path(tempfile.mkdtemp(prefix="cinder-attach-refused-"))
    try:
        started = subprocess.run(
            [
                str(BINARY), "serve", "--listen", f"127.0.0.1:{free_port()}",
                "--database-url", f"sqlite://{workdir / 'cinder.db'}",
                "--backend", f"file=file,dir={workdir / 'volumes'}", "--notify-url", url,
            ],
            capture_output=True, text=True, timeout=60,
            env={k: v for k, v in os.environ.items() if not k.startswith("CINDER_ATTACH_")},
        )
        assert started.returncode != 0, started.stderr
        assert "the message bus refused the notification relay" in started.stderr
        assert cause in started.stderr
    finally:
        subprocess.run(["rm", "-rf", str(workdir)], check=False)



@pytest.fixture(scope="module")
def tls_broker():
    node = RabbitNode(tls=True)
    node.start()
    yield node
    node.destroy()


def start_refused(args):
    """Runs `serve` with `args`, expecting it to stop at start; its stderr."""
    workdir = Path(tempfile.mkdtemp(prefix="cinder-attach-refused-"))
    try:
        started = subprocess.run(
            [
                str(BINARY), "serve", "--listen", f"127.0.0.1:{free_port()}",
                "--database-url", f"sqlite://{workdir / 'cinder.db'}",
                "--backend", f"file=file,dir={workdir / 'volumes'}", *args,
            ],
            capture_output=True, text=True, timeout=60,
            env={k: v for k, v in os.environ.items() if not k.startswith("CINDER_ATTACH_")},
        )
        assert started.returncode != 0, started.stderr
        return started.stderr
    finally:
        subprocess.run(["rm", "-rf", str(workdir)], check=False)


@pytest.mark.parametrize("form", ["amqps", "oslo ?ssl=1", "--notify-ssl"])
def test_tls_to_the_broker_with_its_ca_and_a_client_certificate(tls_broker, form):
    """amqps:// (or oslo's ssl=1, or [oslo_messaging_rabbit] ssl = true): the broker's
    certificate is checked against --notify-ssl-ca-file and the relay shows its own
    certificate to a broker that asks for one. Events arrive over TLS."""
    tls, port = tls_broker.tls_dir, tls_broker.tls_port
    url = {
        "amqps": [f"amqps://guest:guest@localhost:{port}/"],
        "oslo ?ssl=1": [f"rabbit://guest:guest@localhost:{port}/?ssl=1"],
        "--notify-ssl": [f"amqp://guest:guest@localhost:{port}/", "--notify-ssl"],
    }[form]
    files = ["--notify-ssl-ca-file", str(tls / "ca.pem"), "--notify-ssl-cert-file", str(tls / "client.pem"),
             "--notify-ssl-key-file", str(tls / "client.key")]
    listener = Listener(tls_broker.transport_url, durable=False)
    service = Service("sqlite", ["--notify-url", *url, *files])
    try:
        created = requests.post(f"{service.url}/v3/p1/volumes", headers=ADMIN, json={"volume": {"size": 1}})
        assert created.status_code == 202, created.text
        volume = created.json()["volume"]["id"]

        def created_end(received):
            return [n for n in received if n["event_type"] == "volume.create.end" and n["payload"]["volume_id"] == volume]

        assert created_end(listener.wait_for(lambda r: created_end(r))), service.log_tail()
    finally:
        service.stop()
        listener.stop()


@pytest.mark.parametrize("missing", ["CA file", "client certificate"])
def test_a_broker_whose_tls_does_not_check_out_stops_start_up(tls_broker, missing):
    """A certificate no trusted CA signed, or a broker refusing a relay that shows none,
    would fail at every attempt: the service says so at start."""
    tls = tls_broker.tls_dir
    args = {
        "CA file": ["--notify-ssl-cert-file", str(tls / "client.pem"), "--notify-ssl-key-file", str(tls / "client.key")],
        "client certificate": ["--notify-ssl-ca-file", str(tls / "ca.pem")],
    }[missing]
    stderr = start_refused(["--notify-url", f"amqps://guest:guest@localhost:{tls_broker.tls_port}/", *args])
    assert "the message bus refused the notification relay" in stderr, stderr
    assert {"CA file": "UnknownIssuer", "client certificate": "certificate"}[missing] in stderr, stderr

class DroppingTlsServer:
    """A TLS listener that completes the handshake, optionally asking for a client
    certificate it does not insist on, then resets the connection without an alert: what
    the relay sees when a TLS 1.3 broker's refusal of a missing certificate is lost to
    the reset that follows it."""

    def __init__(self, tls_dir, asks_for_certificate):
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(tls_dir / "server.pem", tls_dir / "server.key")
        self.context.load_verify_locations(tls_dir / "ca.pem")
        self.context.verify_mode = ssl.CERT_OPTIONAL if asks_for_certificate else ssl.CERT_NONE
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.handshakes = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            try:
                tls = self.context.wrap_socket(conn, server_side=True)
                self.handshakes += 1
                tls.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                tls.close()
            except OSError:
                conn.close()

    def stop(self):
        self.listener.close()


@pytest.mark.parametrize("asks", [True, False], ids=["asks for a certificate", "asks for none"])
def test_a_reset_after_the_handshake_is_a_refusal_only_where_a_certificate_was_asked_for(tls_broker, asks):
    """A broker that asked for the certificate we do not have and then drops us refuses
    the relay for good: the service stops at start, naming the certificate. One that asked
    for nothing and drops us may just be going down: the service starts and retries."""
    server = DroppingTlsServer(tls_broker.tls_dir, asks)
    url = f"amqps://guest:guest@localhost:{server.port}/"
    ca = ["--notify-ssl-ca-file", str(tls_broker.tls_dir / "ca.pem")]
    try:
        if asks:
            stderr = start_refused(["--notify-url", url, *ca])
            assert "the message bus refused the notification relay" in stderr, stderr
            assert "asked for a client certificate, none is configured" in stderr, stderr
        else:
            service = Service("sqlite", ["--notify-url", url, *ca])
            try:
                made = requests.post(f"{service.url}/v3/p1/volumes", headers=ADMIN, json={"volume": {"size": 1}})
                assert made.status_code == 202, made.text
                deadline = time.monotonic() + 30
                while detailed_health(service.url)["notifications"]["relay"] != "failing":
                    assert time.monotonic() < deadline, service.log_tail()
                    time.sleep(0.2)
                assert server.handshakes >= 1
                assert "Connection reset" in detailed_health(service.url, ADMIN)["notifications"]["error"]
            finally:
                service.stop()
    finally:
        server.stop()


def detailed_health(url, headers=None):
    answer = requests.get(f"{url}/healthcheck?detailed", headers=headers or {}, timeout=5)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_healthcheck_shows_a_relay_that_cannot_deliver_and_its_backlog():
    """A broker not up yet does not stop start-up; until it answers, the detailed
    healthcheck says the relay fails (the error only to admins), how many events wait and
    for how long, and `cinder-attach healthcheck --detailed` fails; then they go out."""
    node = RabbitNode()  # its port is chosen; nothing listens there yet
    service = Service("sqlite", ["--notify-url", node.amqp_url])
    try:
        made = requests.post(f"{service.url}/v3/p1/volumes", headers=ADMIN, json={"volume": {"size": 1}})
        assert made.status_code == 202, made.text
        deadline = time.monotonic() + 30
        while detailed_health(service.url)["notifications"]["relay"] != "failing":
            assert time.monotonic() < deadline, detailed_health(service.url)
            time.sleep(0.2)
        time.sleep(1.1)
        anonymous = detailed_health(service.url)
        assert anonymous["status"] == "DEGRADED" and anonymous["database"] == "OK"
        relay = anonymous["notifications"]
        assert relay["pending"] >= 2  # volume.create.start and .end
        assert relay["oldest_pending_age_seconds"] >= 1
        assert "error" not in relay
        assert "Connection refused" in detailed_health(service.url, ADMIN)["notifications"]["error"]
        port = service.url.rsplit(":", 1)[1]
        probe = subprocess.run(
            [str(BINARY), "healthcheck", "--listen", f"127.0.0.1:{port}", "--detailed"],
            capture_output=True, text=True, timeout=30,
        )
        assert probe.returncode == 1 and "DEGRADED" in probe.stderr, (probe.stdout, probe.stderr)

        node.start()
        deadline = time.monotonic() + 90
        while True:
            health = detailed_health(service.url)
            if health["status"] == "OK" and health["notifications"]["pending"] == 0:
                break
            assert time.monotonic() < deadline, health
            time.sleep(0.5)
        assert health["notifications"] == {
            "relay": "delivering", "pending": 0, "oldest_pending_age_seconds": None,
        }
    finally:
        service.stop()
        node.destroy()


@pytest.mark.skipif(not _postgres_url(), reason="PostgreSQL only (TEST_DATABASE_URL)")
def test_an_idle_relay_on_postgres_is_woken_by_writes(broker):
    """On PostgreSQL an idle relay LISTENs instead of polling, and this process's writes
    NOTIFY it as they commit: each event is confirmed by the broker well within the 1 s
    the relay would otherwise wait (measured in the database: sent_at - created_at)."""
    service = Service("postgres", ["--notify-url", broker.amqp_url])
    try:
        deadline = time.monotonic() + 30
        while int(service.sql(
            "select count(*) from pg_stat_activity where query like 'LISTEN %cinder_attach_events%'"
        )[0]) < 1:
            assert time.monotonic() < deadline, "the relay never listened"
            time.sleep(0.1)
        for trial in range(5):
            time.sleep(1.5)  # idle: nothing pending, the relay waits
            made = requests.post(f"{service.url}/v3/p1/volumes", headers=ADMIN, json={"volume": {"size": 1}})
            assert made.status_code == 202, made.text
            volume = made.json()["volume"]["id"]
            deadline = time.monotonic() + 10
            while True:
                delays = service.sql(
                    "select extract(epoch from sent_at - created_at) from outbox "
                    f"where volume_id = '{volume}' and events like '%\"volume.create.end\"%' "
                    "and sent_at is not null"
                )
                if delays:
                    break
                assert time.monotonic() < deadline, "never sent"
                time.sleep(0.05)
            assert float(delays[0]) < 0.3, f"trial {trial}: {delays[0]} s"
    finally:
        service.stop()


class Load:
    """Attach cycles (create with a connector, complete, delete) from a few threads on one
    shared volume; a journal of every attachment the service acknowledged. Each thread
    starts at most `per_second` cycles a second: the test is about loss, not speed, and an
    unpaced load makes the backlog the relay must drain grow with however long the broker
    took to start (tens of thousands of events on a loaded machine)."""

    def __init__(self, url, volume, threads=4, per_second=5):
        self.pause = 1.0 / per_second
        self.url, self.volume = url, volume
        self.acknowledged = []  # (attachment id, "created" | "deleted")
        self.errors = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(i,)) for i in range(threads)]
        for t in self.threads:
            t.start()

    def note(self, attachment, what):
        with self.lock:
            self.acknowledged.append((attachment, what, time.monotonic()))

    def run(self, i):
        while not self.stopping.wait(self.pause):
            try:
                created = attach(self.url, self.volume, f"compute-{i}", "rw" if i % 2 else "ro", timeout=5)
                if created.status_code != 200:
                    raise RuntimeError(created.text)
                attachment = created.json()["attachment"]["id"]
                self.note(attachment, "created")
                requests.post(
                    f"{self.url}/v3/p1/attachments/{attachment}/action", headers=ADMIN,
                    json={"os-complete": None}, timeout=5,
                )
                deleted = requests.delete(f"{self.url}/v3/p1/attachments/{attachment}", headers=ADMIN, timeout=5)
                if deleted.status_code == 200:
                    self.note(attachment, "deleted")
            except Exception:  # the service is down for a moment: count it and go on
                with self.lock:
                    self.errors += 1
                time.sleep(0.05)

    def acknowledged_between(self, start, end):
        with self.lock:
            return sum(1 for _, _, at in self.acknowledged if start <= at < end)

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join()


@pytest.mark.parametrize("store", _stores())
def test_no_event_is_lost_when_the_service_dies_and_the_broker_restarts(store):
    node = RabbitNode()
    node.start()
    listener = Listener(node.transport_url, durable=True)
    service = Service(store, ["--notify-url", node.amqp_url, "--notify-durable"])
    try:
        volume = multiattach_volume(service.url)
        load = Load(service.url, volume)
        time.sleep(3)
        service.kill()  # SIGKILL under load: whatever was committed must still go out
        service.start()
        time.sleep(2)
        node.stop()  # the broker goes away; the API keeps serving
        outage_start = time.monotonic()
        time.sleep(3)
        outage_end = time.monotonic()
        node.start()
        time.sleep(3)
        load.stop()
        assert load.acknowledged_between(outage_start, outage_end) > 0, "the API stopped while the broker was down"

        # Everything the database holds goes out, then the listener has heard it all. The
        # relay must keep making progress: 60 s without one event fewer pending is a stall.
        pending = service.pending_events()
        progress_at = time.monotonic()
        while pending > 0:
            assert time.monotonic() - progress_at < 60, (
                f"{pending} events pending and none sent for 60 s; the service's log ends:\n" + service.log_tail()
            )
            time.sleep(0.5)
            now_pending = service.pending_events()
            if now_pending < pending:
                progress_at = time.monotonic()
            pending = now_pending
        recorded = service.events()
        recorded_ids = {e["message_id"] for e in recorded}
        received = listener.wait_for(lambda r: recorded_ids <= {n["message_id"] for n in r}, timeout=60)
        received_ids = [n["message_id"] for n in received]
        assert set(received_ids) == recorded_ids, (
            f"missing {len(recorded_ids - set(received_ids))}, unknown {len(set(received_ids) - recorded_ids)}"
        )
        # A repeat is the same message: same id, same event.
        by_id = {}
        for n in received:
            first = by_id.setdefault(n["message_id"], n)
            assert (first["event_type"], first["payload"]) == (n["event_type"], n["payload"])

        # Exactly one event per committed change, and every acknowledged change among them.
        created = [e["attachment_id"] for e in recorded if e["event_type"] == "attachment.create.end"]
        deleted = [e["attachment_id"] for e in recorded if e["event_type"] == "attachment.delete.end"]
        stored = service.sql(f"select id from volume_attachment where volume_id = '{volume}'")
        stored_deleted = service.sql(
            f"select id from volume_attachment where volume_id = '{volume}' and deleted = true"
        )
        assert sorted(created) == sorted(stored)
        assert sorted(deleted) == sorted(stored_deleted)
        for attachment, what, _ in load.acknowledged:
            assert attachment in (created if what == "created" else deleted), (attachment, what)
        assert len(load.acknowledged) > 20, load.acknowledged
    finally:
        service.stop()
        listener.stop()
        node.destroy()
