"""Validates responses against tempest's own response schemas
(tempest.lib.api_schema.response.volume), the way tempest's RestClient does, so that a
renamed field or a changed timestamp format fails here as it would fail tempest.

`validate(response)` is a `requests` response hook: attach it to a session and every
version, volume, metadata and type response it sees is checked; responses of other
operations pass through."""

import copy
import http.server
import json
import re
import threading
import urllib.error
import urllib.request
from urllib.parse import urlparse

from tempest.lib.api_schema.response.volume import (backups, capabilities, group_snapshots,
                                                   groups,
                                                   hosts, limits,
                                                   quota_classes, quotas, scheduler_stats,
                                                   services, transfers, versions, volume_types,
                                                   volumes)
from tempest.lib.api_schema.response.volume.v3_7 import services as services_v37
from tempest.lib.api_schema.response.volume.v3_64 import backups as backups_v364
from tempest.lib.api_schema.response.volume.v3_55 import transfers as transfers_v355
from tempest.lib.api_schema.response.volume.v3_57 import transfers as transfers_v357
from tempest.lib.api_schema.response.volume.v3_61 import volumes as volumes_v361
from tempest.lib.api_schema.response.volume.v3_63 import volumes as volumes_v363
from tempest.lib.api_schema.response.volume.v3_64 import volumes as volumes_v364
from tempest.lib.api_schema.response.volume.v3_65 import volumes as volumes_v365
from tempest.lib.api_schema.response.volume.v3_69 import volumes as volumes_v369
from tempest.lib.common.rest_client import RestClient

# As tempest's volumes_client.schema_versions_info: (lowest minor, module).
VOLUME_SCHEMAS = [(69, volumes_v369), (65, volumes_v365), (64, volumes_v364), (63, volumes_v363),
                  (61, volumes_v361), (0, volumes)]

ID = r"[0-9a-f-]{36}"
# (method, path below /v3/<project>, schema module kind, schema name)
OPERATIONS = [
    ("POST", r"/volumes", "volumes", "create_volume"),
    ("GET", r"/volumes", "volumes", "list_volumes_no_detail"),
    ("GET", r"/volumes/detail", "volumes", "list_volumes_with_detail"),
    ("GET", rf"/volumes/{ID}", "volumes", "show_volume"),
    ("PUT", rf"/volumes/{ID}", "volumes", "update_volume"),
    ("DELETE", rf"/volumes/{ID}", "volumes", "delete_volume"),
    ("POST", rf"/volumes/{ID}/metadata", "volumes", "create_volume_metadata"),
    ("GET", rf"/volumes/{ID}/metadata", "volumes", "show_volume_metadata"),
    ("PUT", rf"/volumes/{ID}/metadata", "volumes", "update_volume_metadata"),
    ("GET", rf"/volumes/{ID}/metadata/[^/]+", "volumes", "show_volume_metadata_item"),
    ("PUT", rf"/volumes/{ID}/metadata/[^/]+", "volumes", "update_volume_metadata_item"),
    ("DELETE", rf"/volumes/{ID}/metadata/[^/]+", "volumes", "delete_volume_metadata_item"),
    ("POST", r"/types", "types", "create_volume_type"),
    ("GET", r"/types", "types", "list_volume_types"),
    ("GET", rf"/types/{ID}", "types", "show_volume_type"),
    ("PUT", rf"/types/{ID}", "types", "update_volume_types"),
    ("DELETE", rf"/types/{ID}", "types", "delete_volume_type"),
    ("GET", rf"/types/{ID}/extra_specs", "types", "list_volume_types_extra_specs"),
    ("POST", rf"/types/{ID}/extra_specs", "types", "create_volume_types_extra_specs"),
    ("GET", rf"/types/{ID}/extra_specs/[^/]+", "types", "show_volume_types_extra_specs"),
    ("PUT", rf"/types/{ID}/extra_specs/[^/]+", "types", "update_volume_type_extra_specs"),
    ("DELETE", rf"/types/{ID}/extra_specs/[^/]+", "types", "delete_volume_types_extra_specs"),
    ("GET", rf"/types/{ID}/os-volume-type-access", "types", "list_type_access"),
    ("GET", r"/os-quota-sets/[^/]+", "quotas", "show_quota_set"),
    ("GET", r"/os-quota-sets/[^/]+/defaults", "quotas", "show_quota_set"),
    ("PUT", r"/os-quota-sets/[^/]+", "quotas", "update_quota_set"),
    ("DELETE", r"/os-quota-sets/[^/]+", "quotas", "delete_quota_set"),
    ("GET", r"/os-quota-class-sets/[^/]+", "quota_classes", "show_quota_classes"),
    ("PUT", r"/os-quota-class-sets/[^/]+", "quota_classes", "update_quota_classes"),
    ("GET", r"/limits", "limits", "show_limits"),
    ("GET", r"/os-services", "services", "list_services"),
    ("GET", r"/capabilities/[^/]+", "capabilities", "show_backend_capabilities"),
    ("GET", r"/os-hosts", "hosts", "list_hosts"),
    ("GET", r"/os-hosts/[^/]+", "hosts", "show_host"),
    ("POST", r"/(os-volume-transfer|volume-transfers)", "transfers", "create_volume_transfer"),
    ("GET", r"/(os-volume-transfer|volume-transfers)", "transfers",
     "list_volume_transfers_no_detail"),
    ("GET", r"/(os-volume-transfer|volume-transfers)/detail", "transfers",
     "list_volume_transfers_with_detail"),
    ("GET", rf"/(os-volume-transfer|volume-transfers)/{ID}", "transfers", "show_volume_transfer"),
    ("POST", rf"/(os-volume-transfer|volume-transfers)/{ID}/accept", "transfers",
     "accept_volume_transfer"),
    ("POST", r"/groups", "groups", "create_group"),
    ("GET", r"/groups", "groups", "list_groups_no_detail"),
    ("GET", r"/groups/detail", "groups", "list_groups_with_detail"),
    ("GET", rf"/groups/{ID}", "groups", "show_group"),
    ("PUT", rf"/groups/{ID}", "groups", "update_group"),
    ("POST", rf"/groups/{ID}/action", "groups", "delete_group"),
    ("POST", r"/groups/action", "groups", "create_group_from_source"),
    ("POST", r"/group_snapshots", "group_snapshots", "create_group_snapshot"),
    ("GET", r"/group_snapshots", "group_snapshots", "list_group_snapshots_no_detail"),
    ("GET", r"/group_snapshots/detail", "group_snapshots", "list_group_snapshots_with_detail"),
    ("GET", rf"/group_snapshots/{ID}", "group_snapshots", "show_group_snapshot"),
    ("DELETE", rf"/group_snapshots/{ID}", "group_snapshots", "delete_group_snapshot"),
    ("POST", rf"/group_snapshots/{ID}/action", "group_snapshots", "reset_group_snapshot_status"),
    ("POST", r"/backups", "backups", "create_backup"),
    ("GET", r"/backups", "backups", "list_backups_no_detail"),
    ("GET", r"/backups/detail", "backups", "list_backups_with_detail"),
    ("POST", r"/backups/import_record", "backups", "import_backup"),
    ("GET", rf"/backups/{ID}", "backups", "show_backup"),
    ("PUT", rf"/backups/{ID}", "backups", "update_backup"),
    ("DELETE", rf"/backups/{ID}", "backups", "delete_backup"),
    ("POST", rf"/backups/{ID}/restore", "backups", "restore_backup"),
    ("GET", rf"/backups/{ID}/export_record", "backups", "export_backup"),
    ("POST", rf"/backups/{ID}/action", "backups", "reset_backup_status"),
]

KINDS = {"groups": groups, "group_snapshots": group_snapshots, "types": volume_types, "quotas": quotas, "quota_classes": quota_classes, "limits": limits,
         "capabilities": capabilities, "hosts": hosts}
# Kinds whose schema depends on the microversion, as tempest's clients choose them.
VERSIONED_KINDS = {"services": [(7, services_v37), (0, services)],
                   "backups": [(64, backups_v364), (0, backups)],
                   "transfers": [(57, transfers_v357), (55, transfers_v355), (0, transfers)]}

checked = []


class _Resp(dict):
    """What RestClient.validate_response expects: headers as a dict, plus `status`."""

    def __init__(self, status, headers):
        super().__init__({k.lower(): v for k, v in headers.items()})
        self.status = status


def schema_for(method, path, minor, query=""):
    if method == "GET" and re.search(r"/os-quota-sets/[^/]+$", path) and re.search(
            r"(^|&)usage=(true|1|yes|on)", query, flags=re.I):
        return quotas.show_quota_set_usage
    if path == "/":
        return versions.list_versions if method == "GET" else None
    if re.fullmatch(r"/v3/?", path):
        return versions.volume_api_version_details if method == "GET" else None
    below = re.sub(r"^/v3/[^/]+", "", path, count=1)
    if method == "GET" and below == "/scheduler-stats/get_pools":
        detailed = re.search(r"(^|&)detail=(true|1|yes|on)", query, flags=re.I)
        return scheduler_stats.get_pools_with_detail if detailed else scheduler_stats.get_pools_no_detail
    for op_method, pattern, kind, name in OPERATIONS:
        if method == op_method and re.fullmatch(pattern, below):
            if kind in KINDS:
                return getattr(KINDS[kind], name)
            if kind in VERSIONED_KINDS:
                return getattr(next(m for lowest, m in VERSIONED_KINDS[kind] if minor >= lowest), name)
            module = next(m for lowest, m in VOLUME_SCHEMAS if minor >= lowest)
            if name in ("create_volume", "update_volume") and minor >= 61:
                # Tempest sends these at 3.0 and keeps their schemas at the 3.60 shape;
                # Cinder answers them with the detail view of the negotiated version,
                # which the show schema of that version describes.
                schema = copy.deepcopy(module.show_volume)
                schema["status_code"] = getattr(volumes, name)["status_code"]
                return schema
            return getattr(module, name)
    return None


def check(method, path, status, headers, content, query=""):
    """Validates one response; raises tempest's InvalidHTTPResponseBody (or a status
    mismatch) when its schema rejects it."""
    match = re.search(r"volume 3\.(\d+)", headers.get("OpenStack-API-Version", ""))
    schema = schema_for(method, path, int(match.group(1)) if match else 0, query)
    if schema is None or status >= 400:
        return
    resp = _Resp(status, headers)
    RestClient.validate_response(schema, resp, json.loads(content) if content else None)
    checked.append((method, path, status))


def validate(response, *args, **kwargs):
    """requests response hook: raises if tempest's schema rejects the response."""
    request = response.request
    check(request.method, urlparse(request.url).path, response.status_code, response.headers,
          response.content, urlparse(request.url).query)
    return response


class ValidatingProxy:
    """A loopback HTTP proxy in front of the server for clients that run as separate
    processes (the `cinder` CLI): it passes every request through and checks every
    response; what failed is in `failures`."""

    def __init__(self, upstream):
        self.failures = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                request = urllib.request.Request(upstream + self.path, data=body, method=self.command)
                for name, value in self.headers.items():
                    if name.lower() not in ("host", "content-length", "connection"):
                        request.add_header(name, value)
                try:
                    response = urllib.request.urlopen(request, timeout=60)
                except urllib.error.HTTPError as err:
                    response = err
                content = response.read()
                try:
                    check(self.command, urlparse(self.path).path, response.status, response.headers, content,
                          urlparse(self.path).query)
                except Exception as err:  # noqa: BLE001 - every failure is reported
                    proxy.failures.append(f"{self.command} {self.path}: {err}")
                self.send_response(response.status)
                for name, value in response.headers.items():
                    if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
