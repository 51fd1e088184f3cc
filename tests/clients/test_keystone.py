"""cinder-attach behind a real Keystone (--auth-strategy keystone): the cinder CLI with a
real password login works, and a wrong password or a bad token is refused."""

import json
import os
import subprocess
import urllib.request
import uuid

import pytest

from conftest import Server

KEYSTONE = os.environ.get("KEYSTONE_URL")
ADMIN_PASSWORD = os.environ.get("KEYSTONE_ADMIN_PASSWORD")

if not KEYSTONE and os.environ.get("CI"):
    raise RuntimeError("CI is set but KEYSTONE_URL is not: the Keystone tests must run")
pytestmark = pytest.mark.skipif(not KEYSTONE, reason="KEYSTONE_URL is not set")


def keystone(method, path, token=None, body=None):
    request = urllib.request.Request(f"{KEYSTONE}/{path}", method=method, data=json.dumps(body).encode() if body else None)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("X-Auth-Token", token)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read()
            return response.status, response.headers.get("X-Subject-Token"), json.loads(text) if text else None
    except urllib.error.HTTPError as err:
        return err.code, None, None


def login(user, password, project):
    status, token, _ = keystone("POST", "auth/tokens", body={"auth": {
        "identity": {"methods": ["password"], "password": {"user": {"name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}})
    assert status == 201, f"login {user}: {status}"
    return token


@pytest.fixture(scope="module")
def accounts():
    admin = login("admin", ADMIN_PASSWORD, "admin")
    suffix = uuid.uuid4().hex[:8]
    keystone("POST", "roles", admin, {"role": {"name": "service"}})
    roles = {r["name"]: r["id"] for r in keystone("GET", "roles", admin)[2]["roles"]}
    ids = {}
    for project in (f"svc-{suffix}", f"proj-{suffix}"):
        ids[project] = keystone("POST", "projects", admin, {"project": {"name": project, "domain_id": "default"}})[2]["project"]["id"]
    for user, project, granted in ((f"cinder-{suffix}", f"svc-{suffix}", ["service"]), (f"alice-{suffix}", f"proj-{suffix}", ["member", "reader"])):
        user_id = keystone("POST", "users", admin, {"user": {"name": user, "domain_id": "default", "password": "pw"}})[2]["user"]["id"]
        for role in granted:
            status = keystone("PUT", f"projects/{ids[project]}/users/{user_id}/roles/{roles[role]}", admin)[0]
            assert status == 204
    return {"service_user": f"cinder-{suffix}", "service_project": f"svc-{suffix}", "user": f"alice-{suffix}", "project": f"proj-{suffix}"}


@pytest.fixture
def keystone_server(accounts):
    started = Server("sqlite", [
        "--auth-strategy", "keystone", "--keystone-url", KEYSTONE,
        "--keystone-username", accounts["service_user"], "--keystone-password", "pw",
        "--keystone-project", accounts["service_project"],
    ])
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
