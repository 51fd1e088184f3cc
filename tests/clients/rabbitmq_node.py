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


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certificates(directory):
    """A CA, a server certificate from it for localhost and 127.0.0.1, and a client one."""
    directory.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "3", "-subj", "/CN=broker test CA",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             cwd=directory)
    for name, usage, extra in (("server", "serverAuth", "subjectAltName=DNS:localhost,IP:127.0.0.1\n"),
                               ("client", "clientAuth", "")):
        _openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=directory)
        (directory / f"{name}.ext").write_text(f"{extra}basicConstraints=CA:FALSE\nextendedKeyUsage={usage}\n")
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.pem", "-days", "3", "-extfile", f"{name}.ext", cwd=directory)
    return directory


class RabbitNode:
    def __init__(self, tls=False):
        """`tls`: also a TLS listener (`tls_port`) with certificates in `tls_dir`, taking
        only clients that show a certificate from its CA."""
        self.workdir = Path(tempfile.mkdtemp(prefix="cinder-attach-rabbit-"))
        self.port = free_port()
        self.node = f"cinderattach-{uuid.uuid4().hex[:8]}@localhost"
        (self.workdir / "enabled_plugins").write_text("[].\n")
        conf = f"listeners.tcp.default = 127.0.0.1:{self.port}\nloopback_users.guest = true\n"
        self.tls_port = self.tls_dir = None
        if tls:
            self.tls_port = free_port()
            self.tls_dir = make_certificates(self.workdir / "tls")
            conf += (
                f"listeners.ssl.default = 127.0.0.1:{self.tls_port}\n"
                f"ssl_options.cacertfile = {self.tls_dir / 'ca.pem'}\n"
                f"ssl_options.certfile = {self.tls_dir / 'server.pem'}\n"
                f"ssl_options.keyfile = {self.tls_dir / 'server.key'}\n"
                "ssl_options.verify = verify_peer\n"
                "ssl_options.fail_if_no_peer_cert = true\n"
            )
        (self.workdir / "rabbitmq.conf").write_text(conf)
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
