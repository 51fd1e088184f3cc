"""Talking to the test Keystone as its admin: requests, logins, and provisioning of
projects, users with roles, and catalog entries. Used by tests/clients and tests/tempest."""

import json
import os
import urllib.error
import urllib.request


def keystone(method, path, token=None, body=None, url=None):
    """One Keystone API call: (status, X-Subject-Token, parsed body); `url` defaults
    to KEYSTONE_URL."""
    url = url or os.environ["KEYSTONE_URL"]
    request = urllib.request.Request(f"{url}/{path}", method=method,
                                     data=json.dumps(body).encode() if body else None)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("X-Auth-Token", token)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read()
            return response.status, response.headers.get("X-Subject-Token"), json.loads(text) if text else None
    except urllib.error.HTTPError as err:
        return err.code, None, None


def login(user, password, project, url=None):
    status, token, _ = keystone("POST", "auth/tokens", url=url, body={"auth": {
        "identity": {"methods": ["password"], "password": {"user": {"name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}})
    assert status == 201, f"login {user}: {status}"
    return token


class Admin:
    """The bootstrap admin, creating what a test needs."""

    def __init__(self, url, password):
        self.url = url
        self.token = login("admin", password, "admin", url)

    def call(self, method, path, body=None):
        return keystone(method, path, self.token, body, self.url)

    def roles(self):
        self.call("POST", "roles", {"role": {"name": "service"}})  # 409 when it exists
        return {r["name"]: r["id"] for r in self.call("GET", "roles")[2]["roles"]}

    def project(self, name):
        return self.call("POST", "projects", {"project": {"name": name, "domain_id": "default"}})[2]["project"]["id"]

    def user(self, name, password, project_id, roles):
        role_ids = self.roles()
        user_id = self.call("POST", "users", {"user": {"name": name, "domain_id": "default", "password": password}})[2]["user"]["id"]
        for role in roles:
            assert self.call("PUT", f"projects/{project_id}/users/{user_id}/roles/{role_ids[role]}")[0] == 204
        return user_id

    def endpoint(self, service_type, name, url, region="RegionOne"):
        """Registers a service with one URL on every interface; returns the service id."""
        if region != "RegionOne":
            self.call("POST", "regions", {"region": {"id": region}})
        service = self.call("POST", "services", {"service": {"type": service_type, "name": name}})[2]["service"]["id"]
        for interface in ("public", "internal", "admin"):
            status = self.call("POST", "endpoints", {"endpoint": {
                "service_id": service, "interface": interface, "url": url, "region_id": region}})[0]
            assert status == 201, f"endpoint {interface}: {status}"
        return service
