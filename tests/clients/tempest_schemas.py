"""Validates responses against tempest's own response schemas
(tempest.lib.api_schema.response.volume), the way tempest's RestClient does, so that a
renamed field or a changed timestamp format fails here as it would fail tempest.

`validate(response)` is a `requests` response hook: attach it to a session and every
version, volume, metadata and type response it sees is checked; responses of other
operations pass through."""

import copy
import re
from urllib.parse import urlparse

from tempest.lib.api_schema.response.volume import versions, volume_types, volumes
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
]

checked = []


class _Resp(dict):
    """What RestClient.validate_response expects: headers as a dict, plus `status`."""

    def __init__(self, response):
        super().__init__({k.lower(): v for k, v in response.headers.items()})
        self.status = response.status_code


def _minor(response):
    match = re.search(r"volume 3\.(\d+)", response.headers.get("OpenStack-API-Version", ""))
    return int(match.group(1)) if match else 0


def schema_for(method, path, minor):
    if path == "/":
        return versions.list_versions if method == "GET" else None
    if re.fullmatch(r"/v3/?", path):
        return versions.volume_api_version_details if method == "GET" else None
    below = re.sub(r"^/v3/[^/]+", "", path, count=1)
    for op_method, pattern, kind, name in OPERATIONS:
        if method == op_method and re.fullmatch(pattern, below):
            if kind == "types":
                return getattr(volume_types, name)
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


def validate(response, *args, **kwargs):
    """requests response hook: raises if tempest's schema rejects the response."""
    request = response.request
    path = urlparse(request.url).path
    schema = schema_for(request.method, path, _minor(response))
    if schema is None or response.status_code >= 400:
        return response
    body = response.json() if response.content else None
    RestClient.validate_response(schema, _Resp(response), body)
    checked.append((request.method, path, response.status_code))
    return response
