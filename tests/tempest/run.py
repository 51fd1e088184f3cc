#!/usr/bin/env python3
"""Runs OpenStack's tempest volume API tests against cinder-attach behind the real
Keystone (tests/keystone/start.sh) on a fresh PostgreSQL database.

It provisions a project with admin, member and reader users (pre-provisioned
accounts, no dynamic credentials), starts a real Glance behind the same Keystone
(scripts/start-glance) with one public image for the tests that boot from it, registers
cinder-attach as the `volumev3` service and Glance as `image` in Keystone's catalog,
starts the binary with `--auth-strategy keystone` and `--glance-api-servers`, writes
tempest.conf (services we do not have switched off) and runs the scoped tests. Tests
excluded by name are listed in exclude.txt with the reason. Afterwards
`cinder-attach check` must find the database consistent.

Usage: run.py BINARY        (KEYSTONE_URL, KEYSTONE_ADMIN_PASSWORD, TEST_DATABASE_URL)
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "keystone"))
sys.path.insert(0, str(HERE.parent / "glance"))
from keystone_admin import Admin  # noqa: E402
import glance_node  # noqa: E402
sys.path.insert(0, str(HERE.parent / "nova"))
import nova_node  # noqa: E402
from nova_node import free_port, with_database  # noqa: E402
import scenarios  # noqa: E402
from reference import ReferenceCinder  # noqa: E402
from keystone_admin import login  # noqa: E402

SCOPE = (r"^tempest\.api\.volume\.(test_versions|test_volumes_get|test_volumes_list|"
         r"test_volumes_negative|test_volumes_actions|admin\.test_volumes_actions|"
         r"admin\.test_volume_types|admin\.test_volume_retype\.VolumeRetypeMultiattachTest|"
         r"test_availability_zone|test_extensions|test_volume_metadata|admin\.test_volume_quotas|"
         r"admin\.test_volume_quotas_negative|admin\.test_volume_quota_classes|"
         r"admin\.test_volume_type_access|test_volume_absolute_limits|admin\.test_qos|"
         r"test_volumes_snapshots|test_volumes_snapshots_list|test_volumes_snapshots_negative|"
         r"test_snapshot_metadata|admin\.test_snapshots_actions|"
         r"admin\.test_volume_snapshot_quotas_negative|test_volumes_clone|"
         r"test_volumes_clone_negative|test_volumes_extend|admin\.test_volume_services|"
         r"admin\.test_volume_services_negative|admin\.test_volume_pools|admin\.test_volume_hosts|"
         r"admin\.test_backends_capabilities|admin\.test_user_messages|test_volume_transfers|"
         r"admin\.test_group_types|admin\.test_group_type_specs|admin\.test_groups|admin\.test_group_snapshots|"
         r"test_volumes_backup|admin\.test_volumes_backup|admin\.test_volume_manage|admin\.test_snapshot_manage)\.")
# Under a real Nova (tests/nova/nova_node.py, fake virt driver): the compute API's volume
# tests, and the volume tests that need servers or two backends. compute_tests.txt names
# the tests in this scope that must pass: each that passes on the real Cinder 29 in the
# same set-up, and those that pass only here.
COMPUTE_SCOPE = (r"^tempest\.api\.(compute\.(volumes\.|admin\.test_volume_swap|"
                 r"admin\.test_volumes_negative|servers\.test_create_server\.ServersTestBootFromVolume|"
                 r"servers\.test_delete_server|admin\.test_delete_server|"
                 r"servers\.test_server_actions\.(ServerActionsV293TestJSON|"
                 r"ServerActionsTestOtherA\.test_(rebuild_server_with_volume_attached|resize_volume_backed)|"
                 r"ServerActionsTestOtherB\.test_resize_server_revert_with_volume_attached))|"
                 r"volume\.(test_volumes_extend|admin\.test_volume_retype|admin\.test_encrypted_volumes_extend)\.)")
SCOPE = f"(?:{SCOPE})|(?:{COMPUTE_SCOPE})"
# TEMPEST_SCOPE narrows a local run to some tests (CI runs the whole scope); `compute`
# names the Nova part alone (what TEMPEST_TARGET=reference is run with).
SCOPE = {"compute": COMPUTE_SCOPE}.get(os.environ.get("TEMPEST_SCOPE"), os.environ.get("TEMPEST_SCOPE", SCOPE))
# TEMPEST_TARGET=reference runs the same tempest under the same Nova against the real
# Cinder 29 (tests/tempest/reference.py; by hand, not in CI).
REFERENCE = os.environ.get("TEMPEST_TARGET") == "reference"
PASSWORD = "tempest-secret"


def provision(keystone_url, admin_password, port):
    admin = Admin(keystone_url, admin_password)
    suffix = uuid.uuid4().hex[:8]
    service_project = admin.project(f"service-{suffix}")
    project = admin.project(f"tempest-{suffix}")
    # Nova takes server events only from a `service` caller, and finds another project's
    # servers only for an admin (as devstack makes Cinder's own user).
    admin.user(f"cinder-{suffix}", PASSWORD, service_project, ["admin", "service"])
    accounts = []
    # Two of each kind (tempest locks an account per test class), members before readers:
    # tempest gives a test's `alt` credentials the first free non-admin account, and an
    # alt user must be a member to act (accept a transfer).
    # Tempest asks for a `service` account too (the admin calls Nova makes on Cinder's
    # behalf, as in a volume swap).
    for kind, roles in (("admin", ["admin", "member", "reader"]), ("member", ["member", "reader"]),
                        ("reader", ["reader"]), ("service", ["admin", "member", "reader", "service"])):
        for n in (1, 2):
            name = f"{kind}{n}-{suffix}"
            admin.user(name, PASSWORD, project, roles)
            accounts.append({"username": name, "project_name": f"tempest-{suffix}", "password": PASSWORD,
                             "domain_name": "Default", "roles": roles})
    # A region of its own, so that catalog entries of other runs on this Keystone never
    # answer for this one.
    region = f"tempest-{suffix}"
    service = admin.endpoint("volumev3", f"cinderv3-{suffix}", f"http://127.0.0.1:{port}/v3/%(project_id)s",
                             region=region)
    return {"service_user": f"cinder-{suffix}", "service_project": f"service-{suffix}", "accounts": accounts,
            "region": region, "service_id": service, "admin": admin, "project_id": project}


def public_image(glance_url, token):
    """A 1 MiB raw image every account can boot from (tempest's compute.image_ref)."""
    headers = {"X-Auth-Token": token, "Content-Type": "application/json"}
    body = json.dumps({"name": "tempest-boot", "disk_format": "raw", "container_format": "bare",
                       "visibility": "public"}).encode()
    request = urllib.request.Request(f"{glance_url}/v2/images", data=body, headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        image_id = json.loads(response.read())["id"]
    data = os.urandom(1 << 20)
    headers["Content-Type"] = "application/octet-stream"
    request = urllib.request.Request(f"{glance_url}/v2/images/{image_id}/file", data=data,
                                     headers=headers, method="PUT")
    with urllib.request.urlopen(request, timeout=60):
        pass
    return image_id


def passed_tests(tempest, work_ws):
    """The ids (without their tags) of the tests that passed in the workspace's last run."""
    stestr = tempest.with_name("stestr")
    stream = subprocess.run([str(stestr), "last", "--subunit"], cwd=work_ws, capture_output=True).stdout
    passed = subprocess.run([str(tempest.with_name("subunit-filter")), "-s", "--no-skip", "--no-passthrough"],
                            input=stream, capture_output=True).stdout
    names = subprocess.run([str(tempest.with_name("subunit-ls"))], input=passed,
                           capture_output=True).stdout.decode().split()
    return {name.split("[")[0] for name in names}


def listed_tests_missing(passed):
    """The tests of compute_tests.txt (those that pass on the real Cinder 29 under the same
    Nova) that did not pass here: skipped, failed or not run are all a failure."""
    listed = [line.strip() for line in (HERE / "compute_tests.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    return [name for name in listed if name not in passed]


def multiattach_type(port, token):
    """The `multiattach` type tempest's compute tests make shared volumes of."""
    body = json.dumps({"volume_type": {"name": "multiattach",
                                       "extra_specs": {"multiattach": "<is> True"}}}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v3/types", data=body, method="POST",
                                     headers={"X-Auth-Token": token, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60):
        pass


def accounts_yaml(accounts):
    lines = []
    for account in accounts:
        lines.append(f"- username: '{account['username']}'")
        lines.append(f"  project_name: '{account['project_name']}'")
        lines.append(f"  password: '{account['password']}'")
        lines.append(f"  domain_name: '{account['domain_name']}'")
        lines.append("  roles: [" + ", ".join(f"'{r}'" for r in account["roles"]) + "]")
    return "\n".join(lines) + "\n"


def tempest_conf(work, keystone_url, region, image_id, flavors, protocol="local", vendor="Open Source"):
    return f"""[DEFAULT]
log_file = {work}/tempest.log

[auth]
use_dynamic_credentials = False
test_accounts_file = {work}/etc/accounts.yaml
default_credentials_domain_name = Default
admin_domain_name = Default
create_isolated_networks = False

[identity]
uri_v3 = {keystone_url}
auth_version = v3
region = RegionOne

[service_available]
cinder = True
# A real Nova with the fake virt driver (tests/nova/nova_node.py), and Neutron's API
# (no networks: servers boot without ports).
nova = True
glance = True
neutron = True
swift = False

[validation]
# Fake servers have no guest to log in to.
run_validation = False

[volume]
catalog_type = volumev3
endpoint_type = publicURL
region = {region}
min_microversion = 3.0
max_microversion = latest
build_timeout = 60
build_interval = 1
volume_size = 1
# What the file backend reports; tempest's typed-volume tests ask for these.
storage_protocol = {protocol}
# The service's two file backends (volume_backend_name), for retypes that migrate.
backend_names = file,file2
vendor_name = {vendor}
# Made by run.py, as devstack makes it (tempest's multiattach compute tests).
volume_type_multiattach = multiattach
# An unmanaged volume's storage is renamed so (no stray volume file is left behind).
manage_volume_ref = source-name,unmanaged-volume-%s
# And an unmanaged snapshot's data so.
manage_snapshot_ref = source-name,unmanaged-snapshot-%s

[volume-feature-enabled]
backup = True
snapshot = True
clone = True
manage_volume = True
manage_snapshot = True
extend_attached_volume = True
# Two file backends (run.py starts the service with both), for retypes that migrate.
multi_backend = True
api_extensions = all

[compute-feature-enabled]
volume_multiattach = True
swap_volume = True
shelve = True
# The fake virt driver has no console, no config drive, no rescue image.
console_output = False
config_drive = False
rescue = False
stable_rescue = False
attach_encrypted_volume = False
# One compute host, which Nova lets resize to itself (tests/nova/nova_node.py).
resize = True
cold_migration = False
live_migration = False

[compute]
# The public image servers and volumes are booted from.
image_ref = {image_id}
image_ref_alt = {image_id}
flavor_ref = {flavors[0]}
flavor_ref_alt = {flavors[1]}
region = {region}
catalog_type = compute
endpoint_type = publicURL
min_microversion = 2.1
max_microversion = latest
build_timeout = 120
build_interval = 1

[image]
catalog_type = image
endpoint_type = publicURL
region = {region}
container_formats = bare
disk_formats = raw,qcow2

[enforce_scope]
cinder = True
"""


def keystone_reach(keystone_url):
    """The service reaches Keystone over https (a private CA) when the suite offers it."""
    tls_url, cafile = os.environ.get("KEYSTONE_TLS_URL"), os.environ.get("KEYSTONE_CAFILE")
    if tls_url and cafile:
        return ["--keystone-url", tls_url, "--keystone-cafile", cafile]
    return ["--keystone-url", keystone_url]


def backends(work):
    """Two file backends: retypes with migration move volumes from one to the other."""
    return ["--backend", f"file=file,dir={work}/volumes", "--backend", f"file2=file,dir={work}/volumes2"]


def start_server(binary, work, port, database_url, keystone_url, users, glance_url, extra=()):
    """Starts the service (its log appended to server.log) and waits until it listens."""
    log_path = work / "server.log"
    log = open(log_path, "a")
    offset = log_path.stat().st_size
    server = subprocess.Popen(
        [binary, "serve", "--listen", f"127.0.0.1:{port}", "--log-format", "json",
         "--database-url", database_url, *backends(work),
         "--host", "tempest", "--auth-strategy", "keystone", *keystone_reach(keystone_url),
         "--keystone-username", users["service_user"], "--keystone-password", PASSWORD,
         "--keystone-project", users["service_project"], "--glance-api-servers", glance_url,
         "--image-conversion-dir", f"{work}/conversion", "--backup-posix-path", f"{work}/backups",
         # Nova, found in the run's region of the catalog, called as the service's own user
         # (its `service` role is what Nova asks of a caller of server events).
         "--nova-region-name", users["region"], *extra],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "RUST_LOG": "info"})
    for _ in range(300):
        if "cinder-attach listening" in log_path.read_text()[offset:]:
            return server
        if server.poll() is not None:
            sys.exit(f"server exited: {log_path.read_text()[offset:]}")
        time.sleep(0.1)
    sys.exit("server did not start")


class ServerControl:
    """The running service, which tests/nova/scenarios.py may kill and start again
    (with extra flags) on the same port and database."""

    def __init__(self, start):
        self.start = start
        self.process = start(())

    def kill(self):
        self.process.kill()
        self.process.wait(timeout=30)

    def restart(self, extra):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        self.process = self.start(tuple(extra))

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


def main():
    binary = sys.argv[1]
    keystone_url = os.environ["KEYSTONE_URL"]
    admin_url = os.environ["TEST_DATABASE_URL"]
    tempest = pathlib.Path(sys.executable).with_name("tempest")
    port = free_port()
    database = f"t_{uuid.uuid4().hex}"
    subprocess.run(["psql", admin_url, "-qc", f'create database "{database}"'], check=True)
    database_url = with_database(admin_url, database)
    work = pathlib.Path(tempfile.mkdtemp(prefix="cinder-attach-tempest-"))
    server = None
    users = None
    glance = None
    image_service = None
    nova = None
    registered = False
    try:
        admin_password = os.environ["KEYSTONE_ADMIN_PASSWORD"]
        users = provision(keystone_url, admin_password, port)
        # Glance checking tokens with the same Keystone.
        glance = glance_node.start({"GLANCE_KEYSTONE_URL": keystone_url,
                                    "GLANCE_KEYSTONE_ADMIN_PASSWORD": admin_password})
        image_service = users["admin"].endpoint("image", f"glance-{users['region']}", glance["GLANCE_URL"],
                                                region=users["region"])
        image_id = public_image(glance["GLANCE_URL"], users["admin"].token)
        nova = nova_node.start(keystone_url, admin_password, os.environ["TEST_MYSQL_URL"], glance["GLANCE_URL"],
                               users["region"])
        print(f"Nova started in {nova['NOVA_START_SECONDS']} s (databases {nova['NOVA_DB_SYNC_SECONDS']} s)",
              flush=True)
        if REFERENCE:
            server = ReferenceCinder(port, database_url, keystone_url, users, PASSWORD, glance["GLANCE_URL"])
        else:
            server = ServerControl(lambda extra: start_server(binary, work, port, database_url, keystone_url,
                                                             users, glance["GLANCE_URL"], extra))
        multiattach_type(port, users["admin"].token)
        # Workspaces are registered by name in ~/.tempest; each run gets its own.
        subprocess.run([str(tempest), "init", "--name", work.name, str(work / "ws")],
                       check=True, capture_output=True)
        registered = True
        work_ws = work / "ws"
        (work_ws / "etc" / "accounts.yaml").write_text(accounts_yaml(users["accounts"]))
        (work_ws / "etc" / "tempest.conf").write_text(
            tempest_conf(work_ws, keystone_url, users["region"], image_id, (nova["NOVA_FLAVOR"], nova["NOVA_FLAVOR_ALT"]),
                         *(("iSCSI", "Anchor") if REFERENCE else ())))
        # TEMPEST_SCOPE=- runs only the Nova scenarios (a local shortcut).
        failed = tempest_failed = 0
        missing = []
        if SCOPE != "-":
            result = subprocess.run(
                [str(tempest), "run", "--regex", SCOPE, "--exclude-list", str(HERE / "exclude.txt"),
                 # One worker: all accounts share one project, so a second worker's volumes
                 # would show up in the first one's listings (tempest's pagination tests).
                 "--concurrency", "1"], cwd=work_ws)
            failed = tempest_failed = result.returncode
            passed = passed_tests(tempest, work_ws)
            if os.environ.get("TEMPEST_PASSED"):
                pathlib.Path(os.environ["TEMPEST_PASSED"]).write_text("".join(f"{n}\n" for n in sorted(passed)))
            missing = [] if REFERENCE or "TEMPEST_SCOPE" in os.environ else listed_tests_missing(passed)
            for name in missing:
                print(f"listed in compute_tests.txt but did not pass: {name}", file=sys.stderr)
            failed = failed or len(missing)
        if REFERENCE:
            return failed
        # Then what tempest cannot show under the fake driver (tests/nova/scenarios.py).
        member = next(a for a in users["accounts"] if a["roles"] == ["member", "reader"])
        cloud = scenarios.Cloud(f"http://127.0.0.1:{port}", nova["NOVA_URL"], glance["GLANCE_URL"],
                                login(member["username"], PASSWORD, member["project_name"], keystone_url),
                                users["project_id"], nova["NOVA_FLAVOR"], image_id, str(work / "volumes"),
                                database_url, server)
        scenario_failures = scenarios.run_all(cloud, users["admin"].token)
        failed = failed or len(scenario_failures)
        if failed:
            print((work / "server.log").read_text()[-20000:], file=sys.stderr)
        check = subprocess.run(
            [binary, "check", "--json", "--host", "tempest", "--database-url", database_url,
             *backends(work)], capture_output=True, text=True)
        print(check.stdout, flush=True)
        # Said last, after the service's log, so that the end of CI's output names it.
        said = [f"tempest run ended {tempest_failed}"] if tempest_failed else []
        said += [f"not passed, though listed in compute_tests.txt: {name}" for name in missing]
        said += [f"nova scenario {failure}" for failure in scenario_failures]
        if check.returncode:
            said.append(f"the consistency check ended {check.returncode}")
        for line in said:
            print(f"FAILED {line}", file=sys.stderr)
        return failed or check.returncode
    finally:
        if users:
            users["admin"].call("DELETE", f"services/{users['service_id']}")
        if image_service:
            users["admin"].call("DELETE", f"services/{image_service}")
        if nova:
            nova_node.stop(nova)
        if glance:
            glance_node.stop(glance)
        if server:
            server.stop()
        subprocess.run(["psql", admin_url, "-qc", f'drop database if exists "{database}" with (force)'])
        # Leave nothing behind: the workspace's registration in ~/.tempest and its files.
        if registered:
            subprocess.run([str(tempest), "workspace", "remove", "--name", work.name],
                           capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
