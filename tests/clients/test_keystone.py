"""cinder-attach behind a real Keystone (--auth-strategy keystone): the cinder CLI with a
real password login works, and a wrong password or a bad token is refused."""

import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from conftest import Server

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "keystone"))
from keystone_admin import keystone, login  # noqa: E402

KEYSTONE = os.environ.get("KEYSTONE_URL")
ADMIN_PASSWORD = os.environ.get("KEYSTONE_ADMIN_PASSWORD")
KEYSTONE_TLS = os.environ.get("KEYSTONE_TLS_URL")
KEYSTONE_CAFILE = os.environ.get("KEYSTONE_CAFILE")

if not KEYSTONE and os.environ.get("CI"):
    raise RuntimeError("CI is set but KEYSTONE_URL is not: the Keystone tests must run")
pytestmark = pytest.mark.skipif(not KEYSTONE, reason="KEYSTONE_URL is not set")


def provision(url, admin_password, tls_url=None, cafile=None):
    """A service account (role service) and a member of a fresh project."""
    admin = login("admin", admin_password, "admin", url)

    def call(method, path, body=None):
        # A Keystone of short-lived tokens (test_expired_tokens_are_refused) can expire
        # the admin's token halfway through on a busy machine: log in again, once.
        nonlocal admin
        answer = keystone(method, path, admin, body, url)
        if answer[0] == 401:
            admin = login("admin", admin_password, "admin", url)
            answer = keystone(method, path, admin, body, url)
        return answer

    suffix = uuid.uuid4().hex[:8]
    call("POST", "roles", {"role": {"name": "service"}})
    roles = {r["name"]: r["id"] for r in call("GET", "roles")[2]["roles"]}
    ids = {}
    for project in (f"svc-{suffix}", f"proj-{suffix}"):
        ids[project] = call("POST", "projects", {"project": {"name": project, "domain_id": "default"}})[2]["project"]["id"]
    for user, project, granted in ((f"cinder-{suffix}", f"svc-{suffix}", ["service"]), (f"alice-{suffix}", f"proj-{suffix}", ["member", "reader"])):
        user_id = call("POST", "users", {"user": {"name": user, "domain_id": "default", "password": "pw"}})[2]["user"]["id"]
        for role in granted:
            assert call("PUT", f"projects/{ids[project]}/users/{user_id}/roles/{roles[role]}")[0] == 204
    return {"service_user": f"cinder-{suffix}", "service_project": f"svc-{suffix}", "user": f"alice-{suffix}",
            "project": f"proj-{suffix}", "project_id": ids[f"proj-{suffix}"], "admin": admin, "url": url,
            "tls_url": tls_url, "cafile": cafile}


@pytest.fixture(scope="module")
def accounts():
    return provision(KEYSTONE, ADMIN_PASSWORD, KEYSTONE_TLS, KEYSTONE_CAFILE)


def server_behind(accounts, *extra):
    # The service reaches Keystone over https when the suite started it that way.
    reach = ["--keystone-url", accounts["url"]]
    if accounts["tls_url"]:
        reach = ["--keystone-url", accounts["tls_url"], "--keystone-cafile", accounts["cafile"]]
    return Server("sqlite", [
        "--auth-strategy", "keystone", *reach,
        "--keystone-username", accounts["service_user"], "--keystone-password", "pw",
        "--keystone-project", accounts["service_project"], *extra,
    ])


@pytest.fixture
def keystone_server(accounts):
    started = server_behind(accounts)
    yield started
    started.stop()


def cinder(server, accounts, *args, password="pw"):
    env = dict(os.environ)
    for key in [k for k in env if k.startswith("OS_")]:
        del env[key]
    env.update(
        OS_AUTH_TYPE="password", OS_AUTH_URL=KEYSTONE, OS_USERNAME=accounts["user"], OS_PASSWORD=password,
        OS_PROJECT_NAME=accounts["project"], OS_USER_DOMAIN_ID="default", OS_PROJECT_DOMAIN_ID="default",
        CINDER_ENDPOINT=f"{server.url}/v3", OS_VOLUME_API_VERSION="3.71",
    )
    return subprocess.run(["cinder", *args], env=env, capture_output=True, text=True, timeout=120)


def test_real_login_works(keystone_server, accounts):
    created = cinder(keystone_server, accounts, "create", "--name", "kv", "1")
    assert created.returncode == 0, created.stdout + created.stderr
    listed = cinder(keystone_server, accounts, "list")
    assert listed.returncode == 0 and "kv" in listed.stdout, listed.stdout + listed.stderr
    attachments = cinder(keystone_server, accounts, "attachment-list")
    assert attachments.returncode == 0, attachments.stdout + attachments.stderr


def test_bad_credentials_are_refused(keystone_server, accounts):
    refused = cinder(keystone_server, accounts, "list", password="wrong")
    assert refused.returncode != 0
    request = urllib.request.Request(f"{keystone_server.url}/v3/volumes", headers={"X-Auth-Token": "bogus"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=30)
    assert caught.value.code == 401
    assert "unauthorized" in json.loads(caught.value.read())


def test_openstack_cli_lists_volumes(keystone_server, accounts):
    """`openstack volume list` finds the service in Keystone's catalog, as operators use it."""
    admin, url = accounts["admin"], accounts["url"]
    status, _, created = keystone("POST", "services", admin, {"service": {"type": "block-storage", "name": f"cinder-{uuid.uuid4().hex[:6]}"}})
    assert status == 201
    service_id = created["service"]["id"]
    endpoint = {"endpoint": {"service_id": service_id, "interface": "public", "region_id": "RegionOne",
                             "url": f"{keystone_server.url}/v3/%(project_id)s"}}
    assert keystone("POST", "endpoints", admin, endpoint)[0] == 201
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        env.update(OS_AUTH_URL=url, OS_USERNAME=accounts["user"], OS_PASSWORD="pw", OS_PROJECT_NAME=accounts["project"],
                   OS_USER_DOMAIN_ID="default", OS_PROJECT_DOMAIN_ID="default", OS_IDENTITY_API_VERSION="3",
                   OS_REGION_NAME="RegionOne", OS_INTERFACE="public")
        made = cinder(keystone_server, accounts, "create", "--name", "osc-visible", "1")
        assert made.returncode == 0, made.stdout + made.stderr
        listed = subprocess.run(["openstack", "volume", "list"], env=env, capture_output=True, text=True, timeout=180)
        assert listed.returncode == 0, listed.stdout + listed.stderr
        assert "osc-visible" in listed.stdout
        env["OS_PASSWORD"] = "wrong"
        refused = subprocess.run(["openstack", "volume", "list"], env=env, capture_output=True, text=True, timeout=180)
        assert refused.returncode != 0
    finally:
        keystone("DELETE", f"services/{service_id}", admin)


TOKEN_LIFE = 15


def test_expired_tokens_are_refused():
    """A Keystone whose tokens live 15 seconds: the token works, then it does not, even
    though the service would cache it for 300 seconds. (15, not fewer: the first request
    must be answered within the token's life on a machine busy with other tests.)"""
    here = os.path.dirname(os.path.abspath(__file__))
    start = os.path.join(here, "..", "keystone", "start.sh")
    env = dict(os.environ, KEYSTONE_TOKEN_EXPIRATION=str(TOKEN_LIFE))
    exports = subprocess.run([start], env=env, capture_output=True, text=True, timeout=900, check=True).stdout
    values = dict(part.split("=", 1) for part in exports.split()[1:])
    try:
        accounts = provision(values["KEYSTONE_URL"], values["KEYSTONE_ADMIN_PASSWORD"],
                             values.get("KEYSTONE_TLS_URL"), values.get("KEYSTONE_CAFILE"))
        server = server_behind(accounts, "--keystone-cache-seconds", "300")
        try:
            token = login(accounts["user"], "pw", accounts["project"], accounts["url"])
            # Keystone dated the token before its answer came: it expires before this + TOKEN_LIFE.
            issued = time.monotonic()
            request = lambda: urllib.request.Request(f"{server.url}/v3/volumes", headers={"X-Auth-Token": token})  # noqa: E731
            with urllib.request.urlopen(request(), timeout=60) as response:
                assert response.status == 200
            time.sleep(max(0.0, issued + TOKEN_LIFE + 2 - time.monotonic()))
            with pytest.raises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(request(), timeout=60)
            assert caught.value.code == 401
        finally:
            server.stop()
    finally:
        subprocess.run(["kill", values["KEYSTONE_PID"]], check=False)
        subprocess.run(["rm", "-rf", values["KEYSTONE_WORK"]], check=False)


@pytest.mark.skipif(not os.environ.get("KEYSTONE_MTLS_URL"), reason="the test Keystone has no client-certificate port")
def test_a_keystone_that_asks_for_a_client_certificate_gets_one(accounts):
    """`[keystone_authtoken] certfile`/`keyfile`: a Keystone that takes only clients with a
    certificate from its CA is reached with one; without it, tokens cannot be checked and
    nothing is served (503, not a pass)."""
    mtls = ["--keystone-url", os.environ["KEYSTONE_MTLS_URL"], "--keystone-cafile", KEYSTONE_CAFILE]
    common = ["--auth-strategy", "keystone", *mtls, "--keystone-username", accounts["service_user"],
              "--keystone-password", "pw", "--keystone-project", accounts["service_project"]]
    token = login(accounts["user"], "pw", accounts["project"], accounts["url"])

    def list_volumes(server):
        request = urllib.request.Request(f"{server.url}/v3/{accounts['project_id']}/volumes",
                                         headers={"X-Auth-Token": token})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status
        except urllib.error.HTTPError as err:
            return err.code

    with_certificate = Server("sqlite", [*common, "--keystone-certfile", os.environ["KEYSTONE_CLIENT_CERT"],
                                         "--keystone-keyfile", os.environ["KEYSTONE_CLIENT_KEY"]])
    try:
        assert list_volumes(with_certificate) == 200
    finally:
        with_certificate.stop()
    without = Server("sqlite", common)
    try:
        assert list_volumes(without) == 503
    finally:
        without.stop()
