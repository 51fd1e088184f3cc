"""A private RabbitMQ node on loopback (Debian's rabbitmq-server), with its own name,
ports and data directory, so tests can stop and start it without touching a broker the
machine already runs."""

import os
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

RABBITMQ_BIN = Path("/usr/lib/rabbitmq/bin")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RabbitNode:
    def __init__(self):
        self.workdir = Path(tempfile.mkdtemp(prefix="cinder-attach-rabbit-"))
        self.port = free_port()
        self.node = f"cinderattach-{uuid.uuid4().hex[:8]}@localhost"
        (self.workdir / "enabled_plugins").write_text("[].\n")
        (self.workdir / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.port}\n"
            "loopback_users.guest = true\n"
        )
        self.env = dict(
            os.environ,
            HOME=str(self.workdir),
            RABBITMQ_NODENAME=self.node,
            RABBITMQ_NODE_PORT=str(self.port),
            RABBITMQ_DIST_PORT=str(free_port()),
            RABBITMQ_MNESIA_BASE=str(self.workdir / "mnesia"),
            RABBITMQ_LOG_BASE=str(self.workdir / "log"),
            RABBITMQ_ENABLED_PLUGINS_FILE=str(self.workdir / "enabled_plugins"),
            RABBITMQ_CONFIG_FILE=str(self.workdir / "rabbitmq"),
            RABBITMQ_PID_FILE=str(self.workdir / "pid"),
        )
        self.process = None

    @property
    def amqp_url(self):
        """The URL cinder-attach's --notify-url takes (vhost `/`)."""
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2f"

    @property
    def transport_url(self):
        """The same broker as oslo.messaging names it."""
        return f"rabbit://guest:guest@127.0.0.1:{self.port}/"

    def _ctl(self, *args, timeout=90):
        return subprocess.run(
            [str(RABBITMQ_BIN / "rabbitmqctl"), "-n", self.node, *args],
            env=self.env, capture_output=True, text=True, timeout=timeout,
        )

    def start(self):
        log = open(self.workdir / "server.out", "a")
        self.process = subprocess.Popen(
            [str(RABBITMQ_BIN / "rabbitmq-server")], env=self.env, stdout=log, stderr=subprocess.STDOUT,
        )
        waited = self._ctl("wait", "--timeout", "90", str(self.workdir / "pid"), timeout=120)
        if waited.returncode != 0:
            raise RuntimeError(f"RabbitMQ did not start: {waited.stdout}{waited.stderr}")

    def stop(self):
        """A clean stop: durable queues and persistent messages are kept."""
        if self.process is None:
            return
        self._ctl("stop")
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def queue_depth(self, name):
        listed = self._ctl("list_queues", "name", "messages", "--no-table-headers", "--quiet")
        for line in listed.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == name:
                return int(parts[1])
        return None

    def destroy(self):
        self.stop()
        subprocess.run(["rm", "-rf", str(self.workdir)], check=False)
