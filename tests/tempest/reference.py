"""The real Cinder 29 in place of cinder-attach, for the same tempest run under the same
Nova (`TEMPEST_TARGET=reference tests/tempest/run.py`): which of the compute-volume tests
pass on Cinder itself. Run by hand, not in CI: it needs ../shared/reference-cinder's
virtualenv (cinder==29.0.0 from PyPI, `setup.sh`) and takes its storage-less driver
(`fakedriver/`), twice, as the backends `file` and `file2` our run has. Cinder checks
tokens with the run's Keystone and calls Nova as the run's Cinder user, as devstack wires
them; its broker is a private RabbitMQ node, its database a fresh one on PostgreSQL."""

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "clients"))
from rabbitmq_node import RabbitNode  # noqa: E402

REFERENCE = pathlib.Path(os.environ.get("REFERENCE_CINDER", HERE.parents[2] / "shared" / "reference-cinder"))
VENV = pathlib.Path(os.environ.get("VENV", pathlib.Path.home() / ".cache" / "reference-cinder-venv"))


def conf(work, port, database_url, keystone_url, users, password, glance_url, rabbit_url):
    keystone = f"""auth_type = password
auth_url = {keystone_url}
username = {users["service_user"]}
password = {password}
project_name = {users["service_project"]}
user_domain_name = Default
project_domain_name = Default
"""
    backends = "".join(f"""
[{name}]
volume_driver = cinder_anchor_fake.AnchorFakeMultiattachDriver
volume_backend_name = {name}
""" for name in ("file", "file2"))
    return f"""[DEFAULT]
auth_strategy = keystone
api_paste_config = {REFERENCE}/etc/api-paste.ini
osapi_volume_listen = 127.0.0.1
osapi_volume_listen_port = {port}
osapi_volume_workers = 1
host = tempest
my_ip = 127.0.0.1
state_path = {work}/state
transport_url = {rabbit_url}
enabled_backends = file,file2
glance_api_servers = {glance_url}
storage_availability_zone = nova
default_availability_zone = nova
report_interval = 5
[database]
connection = {database_url}
max_pool_size = 5
max_overflow = 10
{backends}
[keystone_authtoken]
www_authenticate_uri = {keystone_url}
{keystone}service_token_roles_required = true
# The run's Keystone lists public endpoints only.
interface = public
[nova]
{keystone}region_name = {users["region"]}
interface = public
[oslo_concurrency]
lock_path = {work}/locks
[coordination]
backend_url = file://{work}/coordination
[oslo_messaging_notifications]
driver = noop
"""


class ReferenceCinder:
    """cinder-api, -scheduler and -volume of Cinder 29 on `port`; `stop()` ends them."""

    def __init__(self, port, database_url, keystone_url, users, password, glance_url):
        if not (VENV / "bin" / "cinder-api").exists():
            sys.exit(f"no Cinder 29 in {VENV}: run {REFERENCE}/setup.sh first")
        self.work = pathlib.Path(tempfile.mkdtemp(prefix="cinder29-tempest-"))
        for sub in ("state", "locks", "coordination", "logs"):
            (self.work / sub).mkdir()
        self.rabbit = RabbitNode()
        self.rabbit.start()
        rabbit_url = f"rabbit://guest:guest@127.0.0.1:{self.rabbit.port}/"
        sqlalchemy_url = database_url.replace("postgres://", "postgresql+psycopg2://", 1)
        self.conf = self.work / "cinder.conf"
        self.conf.write_text(conf(self.work, port, sqlalchemy_url, keystone_url, users, password, glance_url,
                                  rabbit_url))
        env = {**os.environ, "PYTHONPATH": str(REFERENCE / "fakedriver"), "PYTHONWARNINGS": "ignore"}
        subprocess.run([str(VENV / "bin" / "cinder-manage"), "--config-file", str(self.conf), "db", "sync"],
                       check=True, env=env, cwd=self.work, capture_output=True)
        self.processes = []
        for service in ("api", "scheduler", "volume"):
            log = open(self.work / "logs" / f"cinder-{service}.out", "w")
            self.processes.append(subprocess.Popen(
                [str(VENV / "bin" / f"cinder-{service}"), "--config-file", str(self.conf),
                 "--log-file", str(self.work / "logs" / f"cinder-{service}.log")],
                env=env, cwd=self.work, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.time() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5):
                    break
            except urllib.error.HTTPError:
                break  # 300 Multiple Choices: it answers
            except OSError:
                if time.time() > deadline:
                    self.stop()
                    sys.exit(f"Cinder 29 did not start; see {self.work}/logs")
                time.sleep(1)
        # The volume services report to the scheduler every few seconds.
        time.sleep(15)

    def stop(self):
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        self.rabbit.stop()
        shutil.rmtree(self.rabbit.workdir, ignore_errors=True)
        if os.environ.get("REFERENCE_KEEP_LOGS"):
            print(f"Cinder 29's logs: {self.work}/logs", flush=True)
        else:
            shutil.rmtree(self.work, ignore_errors=True)
