"""A real Nova of the tests' own (scripts/start-nova): Nova 34 and Placement 16 from PyPI,
with Neutron 29's API (Nova asks Neutron for a server's ports on every delete, so a
Nova without it cannot delete a server), behind the tests' real Keystone and Glance, on
MariaDB (fresh databases per run; Neutron 29's migrations are MySQL's own, `ALTER TABLE
... CONVERT TO CHARACTER SET utf8mb4` fails on PostgreSQL) and a private RabbitMQ node. nova-api, placement and
neutron's API run under gunicorn; nova-conductor, nova-scheduler and one nova-compute
with the fake virt driver (no guest OS, no hypervisor) run as Nova ships them. The cell
set-up is Nova's own: `api_db sync`, `cell_v2 map_cell0`, `create_cell`, `db sync`,
`discover_hosts`.

    start(keystone_url, admin_password, mysql_url, glance_url, region) -> env
    stop(env)

Everything listens on 127.0.0.1; every file is under one work directory, removed by stop.
"""

import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
VENV = REPO / ".venv-nova"
sys.path.insert(0, str(REPO / "tests" / "keystone"))
sys.path.insert(0, str(REPO / "tests" / "clients"))
from keystone_admin import Admin, login  # noqa: E402
from rabbitmq_node import RabbitNode  # noqa: E402

PASSWORD = "nova-node-secret"
COMPUTE_HOST = "fake-compute-1"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_database(url, name):
    base, _, query = url.partition("?")
    server = base.rsplit("/", 1)[0] if base.count("/") > 2 else base
    return f"{server}/{name}" + (f"?{query}" if query else "")


def sqlalchemy_url(url):
    """A mysql:// URL as SQLAlchemy's PyMySQL dialect takes it."""
    return "mysql+pymysql://" + url.split("://", 1)[1] + "?charset=utf8"


def mysql(server_url, statement):
    """One statement on the MariaDB server at `server_url` (mysql://user@host:port/)."""
    rest = server_url.split("://", 1)[1].rstrip("/")
    user, _, hostport = rest.rpartition("@")
    host, _, port = hostport.partition(":")
    subprocess.run(["mariadb", "-h", host, "-P", port or "3306", "-u", user or "root", "-e", statement],
                   check=True, capture_output=True)


def keystone_auth(section, keystone_url, user, project, region):
    return f"""[{section}]
auth_type = password
auth_url = {keystone_url}
username = {user}
password = {PASSWORD}
project_name = {project}
user_domain_name = Default
project_domain_name = Default
region_name = {region}
valid_interfaces = public
"""


def authtoken(keystone_url, user, project):
    return f"""[keystone_authtoken]
www_authenticate_uri = {keystone_url}
auth_url = {keystone_url}
auth_type = password
username = {user}
password = {PASSWORD}
project_name = {project}
user_domain_name = Default
project_domain_name = Default
interface = public
service_token_roles_required = true
"""


def nova_conf(work, ports, urls, names, region):
    keystone = urls["keystone"]
    user, project = names["nova_user"], names["service_project"]
    return f"""[DEFAULT]
transport_url = {urls["rabbit"]}
compute_driver = fake.FakeDriver
host = {COMPUTE_HOST}
my_ip = 127.0.0.1
state_path = {work}/state
instances_path = {work}/instances
log_dir = {work}/logs
debug = true
# One worker each: a test bed on two cores.
osapi_compute_workers = 1
metadata_workers = 1
# Tempest waits for volumes and servers; a second try of a boot goes nowhere else here.
scheduler_max_attempts = 1
# One compute host: a resize (tempest's volume-backed resize tests) stays on it.
allow_resize_to_same_host = True
[api]
auth_strategy = keystone
[wsgi]
api_paste_config = {work}/nova/api-paste.ini
[api_database]
connection = {sqlalchemy_url(urls["nova_api_db"])}
[database]
connection = {sqlalchemy_url(urls["nova_db"])}
[conductor]
workers = 1
[scheduler]
workers = 1
discover_hosts_in_cells_interval = 2
[filter_scheduler]
track_instance_changes = false
{authtoken(keystone, user, project)}
{keystone_auth("placement", keystone, user, project, region)}
{keystone_auth("neutron", keystone, user, project, region)}
{keystone_auth("service_user", keystone, user, project, region)}
send_service_user_token = true
[cinder]
catalog_info = volumev3::publicURL
os_region_name = {region}
auth_type = password
auth_url = {keystone}
username = {user}
password = {PASSWORD}
project_name = {project}
user_domain_name = Default
project_domain_name = Default
[glance]
api_servers = {urls["glance"]}
[oslo_concurrency]
lock_path = {work}/locks
[oslo_messaging_notifications]
driver = noop
[vnc]
enabled = false
[serial_console]
enabled = false
[spice]
enabled = false
[key_manager]
backend = nova.keymgr.conf_key_mgr.ConfKeyManager
fixed_key = {"0" * 64}
"""


def placement_conf(urls, names):
    return f"""[DEFAULT]
debug = true
[api]
auth_strategy = keystone
[placement_database]
connection = {sqlalchemy_url(urls["placement_db"])}
{authtoken(urls["keystone"], names["placement_user"], names["service_project"])}
"""


def neutron_conf(work, urls, names, region):
    keystone = urls["keystone"]
    return f"""[DEFAULT]
core_plugin = ml2
# Neutron reads ports with their port forwardings (db_base_plugin_v2), whose model only
# the port forwarding plugin loads.
service_plugins = router,port_forwarding
auth_strategy = keystone
transport_url = {urls["rabbit"]}
api_paste_config = {VENV}/etc/neutron/api-paste.ini
api_workers = 1
rpc_workers = 0
rpc_state_report_workers = 0
notify_nova_on_port_status_changes = false
notify_nova_on_port_data_changes = false
state_path = {work}/neutron-state
debug = true
[database]
connection = {sqlalchemy_url(urls["neutron_db"])}
[oslo_concurrency]
lock_path = {work}/locks
[oslo_messaging_notifications]
driver = noop
{authtoken(keystone, names["neutron_user"], names["service_project"])}
{keystone_auth("nova", keystone, names["neutron_user"], names["service_project"], region)}
"""


ML2_CONF = """[ml2]
type_drivers = flat
tenant_network_types =
mechanism_drivers =
extension_drivers = port_security
[ml2_type_flat]
flat_networks = *
"""


def run(args, env, log, what):
    result = subprocess.run(args, env=env, stdout=log, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {result.returncode}); see {log.name}")


def spawn(args, env, log_path, cwd):
    log = open(log_path, "ab")
    return subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                            start_new_session=True)


def wait_http(url, process, log_path, seconds=180):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except urllib.error.HTTPError:
            return  # it answers (401 or 300 is an answer)
        except (urllib.error.URLError, ConnectionError, socket.timeout):
            pass
        if process.poll() is not None:
            raise RuntimeError(f"{url} exited; its log:\n{pathlib.Path(log_path).read_text()[-6000:]}")
        time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer within {seconds} s; see {log_path}")


# Nova and Neutron read sys.argv with oslo.config when their application loads: gunicorn's
# own arguments are taken out first, as tests/keystone/serve.py does for Keystone. Neutron's
# database models are configured by the first query: until then its ports query (which
# names `Port.port_forwardings`, a backref) fails, so they are configured at load.
WSGI_SHIM = """import importlib, os, sys
sys.argv = sys.argv[:1]
application = importlib.import_module(os.environ["WSGI_MODULE"]).application
if os.environ["WSGI_MODULE"].startswith("neutron."):
    from sqlalchemy import orm
    orm.configure_mappers()
"""


def gunicorn(module, port, env, log, cwd):
    (cwd / "wsgi_shim.py").write_text(WSGI_SHIM)
    return spawn([str(VENV / "bin" / "gunicorn"), "--no-control-socket", "--bind", f"127.0.0.1:{port}",
                  "--workers", "1", "--threads", "8", "--timeout", "600", "--chdir", str(cwd),
                  "wsgi_shim:application"], {**env, "WSGI_MODULE": module}, log, cwd)


def api(method, url, token, body=None, version=None):
    request = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body else None)
    request.add_header("Content-Type", "application/json")
    request.add_header("X-Auth-Token", token)
    if version:
        request.add_header("OpenStack-API-Version", f"compute {version}")
    with urllib.request.urlopen(request, timeout=60) as response:
        text = response.read()
        return json.loads(text) if text else None


def start(keystone_url, admin_password, database_url, glance_url, region):
    """`database_url`: a MariaDB server (mysql://root@127.0.0.1:port/)."""
    """Starts Placement, Neutron's API and Nova; returns the environment (NOVA_URL,
    NOVA_FLAVOR, NOVA_WORK, NOVA_PIDS, the service user's name and password, ...)."""
    started_at = time.time()
    work = pathlib.Path(tempfile.mkdtemp(prefix="cinder-attach-nova-"))
    env = {"NOVA_WORK": str(work), "NOVA_PIDS": "", "NOVA_DATABASES": ""}
    try:
        _start(work, env, keystone_url, admin_password, database_url, glance_url, region)
    except BaseException:
        # The logs of what failed are shown before everything goes.
        for log in sorted((work / "logs").glob("*.log")):
            print(f"--- {log.name}\n{log.read_text()[-4000:]}", file=sys.stderr)
        stop(env)
        raise
    env["NOVA_START_SECONDS"] = f"{time.time() - started_at:.1f}"
    return env


def _start(work, env, keystone_url, admin_password, database_url, glance_url, region):
    for sub in ("logs", "state", "instances", "locks", "nova", "placement", "neutron", "neutron-state"):
        (work / sub).mkdir()
    suffix = uuid.uuid4().hex[:8]
    pids = []

    def keep(process):
        pids.append(str(process.pid))
        env["NOVA_PIDS"] = " ".join(pids)
        return process

    rabbit = RabbitNode()
    rabbit.start()
    env["NOVA_RABBIT_WORKDIR"], env["NOVA_RABBIT_NODE"] = str(rabbit.workdir), rabbit.node
    databases = {kind: f"{kind}_{suffix}" for kind in ("nova_api", "nova_cell0", "nova", "placement", "neutron")}
    for name in databases.values():
        mysql(database_url, f"create database `{name}` character set utf8")
    env["NOVA_DATABASES"] = " ".join(databases.values())
    env["NOVA_ADMIN_DATABASE_URL"] = database_url
    ports = {kind: free_port() for kind in ("nova", "placement", "neutron")}
    urls = {
        "keystone": keystone_url,
        "glance": glance_url,
        "rabbit": f"rabbit://guest:guest@127.0.0.1:{rabbit.port}/",
        **{f"{kind}_db": with_database(database_url, name) for kind, name in databases.items()},
    }
    names = {"service_project": f"nova-service-{suffix}", "nova_user": f"nova-{suffix}",
             "placement_user": f"placement-{suffix}", "neutron_user": f"neutron-{suffix}"}

    admin = Admin(keystone_url, admin_password)
    env["NOVA_KEYSTONE_URL"], env["NOVA_KEYSTONE_ADMIN_PASSWORD"] = keystone_url, admin_password
    project = admin.project(names["service_project"])
    for user in ("nova_user", "placement_user", "neutron_user"):
        admin.user(names[user], PASSWORD, project, ["admin", "service"])
    services = []
    for service_type, name, url in (
            ("compute", f"nova-{suffix}", f"http://127.0.0.1:{ports['nova']}/v2.1"),
            ("placement", f"placement-{suffix}", f"http://127.0.0.1:{ports['placement']}"),
            ("network", f"neutron-{suffix}", f"http://127.0.0.1:{ports['neutron']}")):
        services.append(admin.endpoint(service_type, name, url, region=region))
        env["NOVA_KEYSTONE_SERVICES"] = " ".join(services)
    env["NOVA_KEYSTONE_SERVICES"] = " ".join(services)
    env["NOVA_KEYSTONE_USERS"] = " ".join(
        admin.call("GET", f"users?name={names[u]}")[2]["users"][0]["id"]
        for u in ("nova_user", "placement_user", "neutron_user"))
    env["NOVA_KEYSTONE_PROJECT"] = project

    (work / "nova" / "nova.conf").write_text(nova_conf(work, ports, urls, names, region))
    shutil.copy(VENV / "etc" / "nova" / "api-paste.ini", work / "nova" / "api-paste.ini")
    (work / "placement" / "placement.conf").write_text(placement_conf(urls, names))
    (work / "neutron" / "neutron.conf").write_text(neutron_conf(work, urls, names, region))
    (work / "neutron" / "ml2_conf.ini").write_text(ML2_CONF)

    bin_ = VENV / "bin"
    setup_started = time.time()
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("OS_", "CINDER_ATTACH_"))}
    nova_conf_file = str(work / "nova" / "nova.conf")
    with open(work / "logs" / "setup.log", "ab") as log:
        placement_env = {**base_env, "OS_PLACEMENT_CONFIG_DIR": str(work / "placement")}
        run([str(bin_ / "placement-manage"), "--config-file", str(work / "placement" / "placement.conf"),
             "db", "sync"], placement_env, log, "placement-manage db sync")
        neutron_files = ["--config-file", str(work / "neutron" / "neutron.conf"),
                         "--config-file", str(work / "neutron" / "ml2_conf.ini")]
        run([str(bin_ / "neutron-db-manage"), *neutron_files, "upgrade", "heads"], base_env, log,
            "neutron-db-manage upgrade heads")
        manage = [str(bin_ / "nova-manage"), "--config-file", nova_conf_file]
        run([*manage, "api_db", "sync"], base_env, log, "nova-manage api_db sync")
        run([*manage, "cell_v2", "map_cell0", "--database_connection",
             sqlalchemy_url(urls["nova_cell0_db"])], base_env, log, "nova-manage cell_v2 map_cell0")
        run([*manage, "cell_v2", "create_cell", "--name", "cell1", "--verbose"], base_env, log,
            "nova-manage cell_v2 create_cell")
        # Both cells: cell1 (servers) and cell0 (servers no host took).
        run([*manage, "db", "sync"], base_env, log, "nova-manage db sync")
    env["NOVA_DB_SYNC_SECONDS"] = f"{time.time() - setup_started:.1f}"

    # In order: each service finds the one before it answering (conductor and scheduler
    # ask placement for its versions as they start).
    placement_log = work / "logs" / "placement.log"
    placement = keep(gunicorn("placement.wsgi.api", ports["placement"], placement_env, placement_log, work))
    wait_http(f"http://127.0.0.1:{ports['placement']}/", placement, placement_log)
    neutron_env = {**base_env, "OS_NEUTRON_CONFIG_DIR": str(work / "neutron"),
                   "OS_NEUTRON_CONFIG_FILES": "neutron.conf;ml2_conf.ini"}
    neutron_log = work / "logs" / "neutron-api.log"
    neutron = keep(gunicorn("neutron.wsgi.api", ports["neutron"], neutron_env, neutron_log, work))
    nova_env = {**base_env, "OS_NOVA_CONFIG_DIR": str(work / "nova")}
    nova_log = work / "logs" / "nova-api.log"
    nova_api = keep(gunicorn("nova.wsgi.osapi_compute", ports["nova"], nova_env, nova_log, work))
    for binary in ("nova-conductor", "nova-scheduler", "nova-compute"):
        keep(spawn([str(bin_ / binary), "--config-file", nova_conf_file], base_env,
                   work / "logs" / f"{binary}.log", work))
    wait_http(f"http://127.0.0.1:{ports['neutron']}/", neutron, neutron_log)
    wait_http(f"http://127.0.0.1:{ports['nova']}/", nova_api, nova_log)
    env["NOVA_SETUP_SECONDS"] = f"{time.time() - setup_started:.1f}"

    # The compute service up, its host mapped into cell1, its resources in placement.
    token = login(names["nova_user"], PASSWORD, names["service_project"], keystone_url)
    nova_url = f"http://127.0.0.1:{ports['nova']}/v2.1"
    deadline = time.time() + 180
    while True:
        services = api("GET", f"{nova_url}/os-services?binary=nova-compute", token)["services"]
        if any(s["state"] == "up" for s in services):
            break
        if time.time() > deadline:
            raise RuntimeError(f"nova-compute never came up; see {work}/logs/nova-compute.log")
        time.sleep(1)
    with open(work / "logs" / "setup.log", "ab") as log:
        run([str(bin_ / "nova-manage"), "--config-file", nova_conf_file, "cell_v2", "discover_hosts",
             "--verbose"], base_env, log, "nova-manage cell_v2 discover_hosts")
    deadline = time.time() + 120
    while True:
        listed = api("GET", f"{nova_url}/os-hypervisors", token, version="2.53")["hypervisors"]
        if listed:
            break
        if time.time() > deadline:
            raise RuntimeError("the fake hypervisor never showed up")
        time.sleep(1)
    flavor, flavor_alt = (api("POST", f"{nova_url}/flavors", token, {"flavor": {
        "name": f"{name}-{suffix}", "ram": ram, "vcpus": 1, "disk": 1, "id": None}})["flavor"]["id"]
        for name, ram in (("tiny", 64), ("small", 128)))
    env.update({
        "NOVA_URL": nova_url,
        "NOVA_FLAVOR": flavor,
        # A second flavor to resize to (the one compute host takes resizes to itself).
        "NOVA_FLAVOR_ALT": flavor_alt,
        "NOVA_REGION": region,
        "NOVA_SERVICE_USER": names["nova_user"],
        "NOVA_SERVICE_PASSWORD": PASSWORD,
        "NOVA_SERVICE_PROJECT": names["service_project"],
        "NOVA_COMPUTE_HOST": COMPUTE_HOST,
    })


def stop_rabbit(workdir, node):
    """Stops the private broker (from any process: its cookie is in its work directory)."""
    ctl = "/usr/lib/rabbitmq/bin/rabbitmqctl"
    subprocess.run([ctl, "-n", node, "stop"], env={**os.environ, "HOME": str(workdir)},
                   capture_output=True, timeout=90, check=False)
    pid_file = workdir / "pid"
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    shutil.rmtree(workdir, ignore_errors=True)


def stop(env):
    """Stops every process, then removes the catalog entries, users, databases and files."""
    for pid in env.get("NOVA_PIDS", "").split():
        try:
            os.killpg(int(pid), signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    time.sleep(1)
    for pid in env.get("NOVA_PIDS", "").split():
        try:
            os.killpg(int(pid), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if env.get("NOVA_KEYSTONE_URL"):
        admin = Admin(env["NOVA_KEYSTONE_URL"], env["NOVA_KEYSTONE_ADMIN_PASSWORD"])
        for service in env.get("NOVA_KEYSTONE_SERVICES", "").split():
            admin.call("DELETE", f"services/{service}")
        for user in env.get("NOVA_KEYSTONE_USERS", "").split():
            admin.call("DELETE", f"users/{user}")
        if env.get("NOVA_KEYSTONE_PROJECT"):
            admin.call("DELETE", f"projects/{env['NOVA_KEYSTONE_PROJECT']}")
    if env.get("NOVA_RABBIT_WORKDIR"):
        stop_rabbit(pathlib.Path(env["NOVA_RABBIT_WORKDIR"]), env["NOVA_RABBIT_NODE"])
    for name in env.get("NOVA_DATABASES", "").split():
        try:
            mysql(env["NOVA_ADMIN_DATABASE_URL"], f"drop database if exists `{name}`")
        except subprocess.CalledProcessError:
            pass
    if not os.environ.get("NOVA_KEEP_WORK"):  # kept for a look at its logs
        shutil.rmtree(env.get("NOVA_WORK", ""), ignore_errors=True)


def main():
    if sys.argv[1:2] == ["start"]:
        found = start(os.environ["KEYSTONE_URL"], os.environ["KEYSTONE_ADMIN_PASSWORD"],
                      os.environ["TEST_MYSQL_URL"], os.environ["GLANCE_URL"],
                      os.environ.get("NOVA_REGION") or f"nova-{uuid.uuid4().hex[:8]}")
        print("export " + " ".join(f"{k}='{v}'" for k, v in found.items()))
    elif sys.argv[1:2] == ["stop"]:
        stop(dict(os.environ))
    else:
        sys.exit("usage: nova_node.py start|stop")


if __name__ == "__main__":
    main()
