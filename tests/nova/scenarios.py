"""What tempest cannot show under the fake virt driver, through the same real Nova.
Run by tests/tempest/run.py after tempest, against its Nova, Keystone, Glance and
cinder-attach (which it lets these scenarios stop and start):

- an in-use extend whose `volume-extended` call cannot reach Nova, the service killed
  before the call went out, and the event reaching Nova after the restart (the call is
  kept in the database, not in the process);
- a rebuild of a volume-backed server (compute 2.93): Nova has the volume re-imaged
  (`os-reimage` with `reimage_reserved`) and waits for our `volume-reimaged` event; the
  volume then holds the new image's bytes and its image metadata;
- a user's delete of an attachment Nova uses refused (409, Cinder's guard for bug
  #2004555) by every call that ends one, while Nova's own detach goes through;
- an in-use volume migrated to the other backend: Nova swaps the server onto the
  temporary volume and completes the migration; the volume keeps its id on the server.

Each scenario raises AssertionError with what it saw."""

import json
import os
import subprocess
import time
import urllib.error
import urllib.request


class Cloud:
    """The endpoints and a member's token; `server` starts and stops cinder-attach."""

    def __init__(self, cinder_url, nova_url, glance_url, token, project_id, flavor, image,
                 volumes_dir, database_url, server):
        self.cinder_url, self.nova_url, self.glance_url = cinder_url, nova_url, glance_url
        self.token, self.project_id = token, project_id
        self.flavor, self.image = flavor, image
        self.volumes_dir, self.database_url = volumes_dir, database_url
        self.server = server

    def call(self, method, url, body=None, headers=None, ok=(200, 201, 202, 204)):
        request = urllib.request.Request(url, method=method,
                                         data=json.dumps(body).encode() if body is not None else None)
        request.add_header("X-Auth-Token", self.token)
        request.add_header("Content-Type", "application/json")
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, text = response.status, response.read()
        except urllib.error.HTTPError as err:
            status, text = err.code, err.read()
        assert status in ok, f"{method} {url}: {status} {text[:500]!r}"
        return json.loads(text) if text else None

    def cinder(self, method, path, body=None, version="3.71", ok=(200, 202, 204)):
        return self.call(method, f"{self.cinder_url}/v3/{self.project_id}/{path}", body,
                         {"OpenStack-API-Version": f"volume {version}"}, ok)

    def nova(self, method, path, body=None, version="2.93", ok=(200, 202, 204)):
        return self.call(method, f"{self.nova_url}/{path}", body,
                         {"OpenStack-API-Version": f"compute {version}"}, ok)

    def pending_calls(self, volume_id):
        """The calls owed to Nova for a volume, as the database holds them."""
        sql = f"select kind || ':' || status from compute_calls where volume_id = '{volume_id}' order by kind"
        out = subprocess.run(["psql", self.database_url, "-Atc", sql], check=True,
                             capture_output=True, text=True).stdout
        return out.split()


def wait_for(what, check, timeout=120):
    deadline = time.time() + timeout
    while True:
        seen = check()
        if seen:
            return seen
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(1)


def volume_status(cloud, volume_id):
    return cloud.cinder("GET", f"volumes/{volume_id}")["volume"]["status"]


def new_volume(cloud, **fields):
    volume = cloud.cinder("POST", "volumes", {"volume": {"size": 1, **fields}})["volume"]
    wait_for(f"volume {volume['id']} available", lambda: volume_status(cloud, volume["id"]) == "available")
    return volume["id"]


def active_server(cloud, name, **fields):
    body = {"server": {"name": name, "flavorRef": cloud.flavor, "networks": "none", **fields}}
    server = cloud.nova("POST", "servers", body)["server"]

    def active():
        status = cloud.nova("GET", f"servers/{server['id']}")["server"]["status"]
        assert status != "ERROR", f"server {server['id']} went to ERROR"
        return status == "ACTIVE"
    wait_for(f"server {server['id']} ACTIVE", active)
    return server["id"]


def delete_server(cloud, server_id):
    cloud.nova("DELETE", f"servers/{server_id}", ok=(204,))

    def gone():
        try:
            return cloud.nova("GET", f"servers/{server_id}", ok=(200,))["server"]["status"] == "DELETED"
        except AssertionError:  # 404: gone
            return True
    wait_for(f"server {server_id} gone", gone, timeout=60)


def extend_event_survives_a_restart(cloud):
    """The `volume-extended` call is recorded with the extend and sent after a restart."""
    volume_id = new_volume(cloud, name="extend-restart")
    server_id = active_server(cloud, "extend-restart", imageRef=cloud.image)
    cloud.nova("POST", f"servers/{server_id}/os-volume_attachments",
               {"volumeAttachment": {"volumeId": volume_id}}, version="2.79")
    wait_for("volume in-use", lambda: volume_status(cloud, volume_id) == "in-use")

    # Nova unreachable (a port nothing listens on), then the in-use extend (3.42+).
    cloud.server.restart(["--nova-endpoint", "http://127.0.0.1:9/v2.1"])
    cloud.cinder("POST", f"volumes/{volume_id}/action", {"os-extend": {"new_size": 2}}, version="3.42")
    wait_for("the extend", lambda: cloud.cinder("GET", f"volumes/{volume_id}")["volume"]["size"] == 2)
    assert cloud.pending_calls(volume_id) == ["volume-extended:pending"], cloud.pending_calls(volume_id)

    # Killed before the call reached Nova; restarted with Nova where it is. Killed while it
    # was trying the call, the call waits out its lease first: 70 s with the default
    # 30 s [nova] timeout (twice it, and 10 s).
    cloud.server.kill()
    assert cloud.pending_calls(volume_id) == ["volume-extended:pending"], cloud.pending_calls(volume_id)
    cloud.server.restart([])

    def extended():
        actions = cloud.nova("GET", f"servers/{server_id}/os-instance-actions", version="2.1")
        return any(a["action"] == "extend_volume" for a in actions["instanceActions"])
    wait_for("Nova's extend_volume action for the server", extended, timeout=90)
    wait_for("the call settled", lambda: cloud.pending_calls(volume_id) == ["volume-extended:sent"], timeout=30)
    assert volume_status(cloud, volume_id) == "in-use"

    cloud.nova("DELETE", f"servers/{server_id}/os-volume_attachments/{volume_id}", version="2.79")
    wait_for("volume available", lambda: volume_status(cloud, volume_id) == "available")
    delete_server(cloud, server_id)
    cloud.cinder("DELETE", f"volumes/{volume_id}")


def upload_image(cloud, data):
    """A public raw image holding `data`."""
    image = cloud.call("POST", f"{cloud.glance_url}/v2/images",
                       {"name": "rebuild-target", "disk_format": "raw", "container_format": "bare",
                        "visibility": "public"}, ok=(201,))
    request = urllib.request.Request(f"{cloud.glance_url}/v2/images/{image['id']}/file", data=data,
                                     method="PUT", headers={"X-Auth-Token": cloud.token,
                                                            "Content-Type": "application/octet-stream"})
    with urllib.request.urlopen(request, timeout=60):
        pass
    return image["id"]


def rebuild_reimages_the_root_volume(cloud, admin_token):
    """Nova's rebuild of a volume-backed server goes through os-reimage and our event."""
    root = new_volume(cloud, name="rebuild-root", imageRef=cloud.image)
    server_id = active_server(cloud, "rebuild", imageRef="", block_device_mapping_v2=[{
        "boot_index": 0, "uuid": root, "source_type": "volume", "destination_type": "volume",
        "delete_on_termination": False}])
    wait_for("root volume in-use", lambda: volume_status(cloud, root) == "in-use")

    data = bytes((i * 7 + 3) % 251 for i in range(1 << 20))
    member_token, cloud.token = cloud.token, admin_token
    try:
        image = upload_image(cloud, data)
    finally:
        cloud.token = member_token
    cloud.nova("POST", f"servers/{server_id}/action", {"rebuild": {"imageRef": image}}, version="2.93")

    def rebuilt():
        server = cloud.nova("GET", f"servers/{server_id}")["server"]
        assert server["status"] != "ERROR", f"rebuild failed: {server.get('fault')}"
        return server["status"] == "ACTIVE" and server.get("OS-EXT-STS:task_state") is None
    wait_for("the rebuild", rebuilt, timeout=180)
    volume = cloud.cinder("GET", f"volumes/{root}")["volume"]
    assert volume["status"] == "in-use", volume["status"]
    assert volume["volume_image_metadata"]["image_id"] == image, volume["volume_image_metadata"]
    with open(os.path.join(cloud.volumes_dir, f"volume-{root}"), "rb") as stored:
        assert stored.read(len(data)) == data, "the volume does not hold the new image"
    assert cloud.pending_calls(root) == ["volume-reimaged:sent"], cloud.pending_calls(root)

    delete_server(cloud, server_id)
    wait_for("root volume available", lambda: volume_status(cloud, root) == "available")
    cloud.cinder("DELETE", f"volumes/{root}")
    member_token, cloud.token = cloud.token, admin_token
    try:
        cloud.call("DELETE", f"{cloud.glance_url}/v2/images/{image}", ok=(204,))
    finally:
        cloud.token = member_token


def a_users_detach_of_a_servers_volume_goes_through_nova(cloud):
    """Cinder's guard (bug #2004555): a user ending an attachment Nova uses is sent to Nova
    (409), whichever call ends it and whatever X-Service-Roles the user sends; Nova's own
    detach, with its service token, goes through."""
    volume_id = new_volume(cloud, name="guarded")
    server_id = active_server(cloud, "guarded", imageRef=cloud.image)
    cloud.nova("POST", f"servers/{server_id}/os-volume_attachments",
               {"volumeAttachment": {"volumeId": volume_id}}, version="2.79")
    wait_for("volume in-use", lambda: volume_status(cloud, volume_id) == "in-use")
    attachment = cloud.cinder("GET", f"volumes/{volume_id}")["volume"]["attachments"][0]["attachment_id"]
    message = f"Detach volume from instance {server_id} using the Compute API"
    connector = {"host": "guarded-host", "initiator": "iqn.1993-08.org.debian:01:guarded"}
    refused = [
        ("DELETE", f"attachments/{attachment}", None, {}),
        ("DELETE", f"attachments/{attachment}", None, {"X-Service-Roles": "service"}),
        ("POST", f"volumes/{volume_id}/action", {"os-detach": {"attachment_id": attachment}}, {}),
        ("POST", f"volumes/{volume_id}/action", {"os-terminate_connection": {"connector": connector}}, {}),
    ]
    for method, path, body, extra in refused:
        answer = cloud.call(method, f"{cloud.cinder_url}/v3/{cloud.project_id}/{path}", body,
                            {"OpenStack-API-Version": "volume 3.44", **extra}, ok=(409,))
        assert answer["conflictingRequest"]["message"] == message, (path, answer)
    volume = cloud.cinder("GET", f"volumes/{volume_id}")["volume"]
    assert volume["status"] == "in-use" and len(volume["attachments"]) == 1, volume

    cloud.nova("DELETE", f"servers/{server_id}/os-volume_attachments/{volume_id}", version="2.79")
    wait_for("volume available after Nova's detach", lambda: volume_status(cloud, volume_id) == "available")
    delete_server(cloud, server_id)
    cloud.cinder("DELETE", f"volumes/{volume_id}")


def an_attached_volume_moves_through_novas_swap(cloud, admin_token):
    """os-migrate_volume of an in-use volume: Nova is asked to swap the server onto a
    temporary volume on the other backend, calls os-migrate_volume_completion, and the
    volume keeps its id on the server, living where the new storage is (name_id)."""
    volume_id = new_volume(cloud, name="swap-move")
    server_id = active_server(cloud, "swap-move", imageRef=cloud.image)
    cloud.nova("POST", f"servers/{server_id}/os-volume_attachments",
               {"volumeAttachment": {"volumeId": volume_id}}, version="2.79")
    wait_for("volume in-use", lambda: volume_status(cloud, volume_id) == "in-use")
    member_token, cloud.token = cloud.token, admin_token

    def as_admin(method, path, body=None):
        # The admin's own project is in its token: no project in the URL.
        return cloud.call(method, f"{cloud.cinder_url}/v3/{path}", body,
                          {"OpenStack-API-Version": "volume 3.71"}, (200, 202))
    try:
        here = as_admin("GET", f"volumes/{volume_id}")["volume"]["os-vol-host-attr:host"]
        there = "tempest@file2#file2" if "@file#" in here else "tempest@file#file"
        as_admin("POST", f"volumes/{volume_id}/action", {"os-migrate_volume": {"host": there}})

        def moved():
            volume = as_admin("GET", f"volumes/{volume_id}")["volume"]
            assert volume["migration_status"] != "error", volume
            return volume if volume["migration_status"] == "success" else None
        volume = wait_for("the move through Nova's swap", moved, timeout=120)
    finally:
        cloud.token = member_token
    assert volume["os-vol-host-attr:host"] == there, volume
    assert volume["status"] == "in-use", volume
    name_id = volume["os-vol-mig-status-attr:name_id"]
    assert name_id and name_id != volume_id, volume
    assert [a["server_id"] for a in volume["attachments"]] == [server_id], volume
    # Nova records the new attachment in its block device mapping only after our answer
    # to os-migrate_volume_completion (ComputeManager._swap_volume), so a look at once can
    # still find the old one.
    attachment = volume["attachments"][0]["attachment_id"]

    def on_server():
        listed = cloud.nova("GET", f"servers/{server_id}/os-volume_attachments", version="2.89")
        listed = listed["volumeAttachments"]
        assert [a["volumeId"] for a in listed] == [volume_id], listed
        return listed[0]["attachment_id"] == attachment
    wait_for("Nova's mapping to name the moved volume's attachment", on_server, timeout=60)
    assert cloud.pending_calls(volume_id) == ["swap-volume:sent"], cloud.pending_calls(volume_id)
    dirs = {"tempest@file#file": cloud.volumes_dir, "tempest@file2#file2": cloud.volumes_dir + "2"}
    assert os.path.exists(os.path.join(dirs[there], f"volume-{name_id}")), "the new storage"
    assert not os.path.exists(os.path.join(dirs[here], f"volume-{volume_id}")), "the old storage stays"

    cloud.nova("DELETE", f"servers/{server_id}/os-volume_attachments/{volume_id}", version="2.79")
    wait_for("volume available", lambda: volume_status(cloud, volume_id) == "available")
    delete_server(cloud, server_id)
    cloud.cinder("DELETE", f"volumes/{volume_id}")
    wait_for("the storage it lived in gone",
             lambda: not os.path.exists(os.path.join(dirs[there], f"volume-{name_id}")), timeout=60)


def run_all(cloud, admin_token):
    """Runs each scenario; returns those that failed, each as `name: error`."""
    failed = []
    for name, scenario in (("extend_event_survives_a_restart", lambda: extend_event_survives_a_restart(cloud)),
                           ("a_users_detach_of_a_servers_volume_goes_through_nova",
                            lambda: a_users_detach_of_a_servers_volume_goes_through_nova(cloud)),
                           ("an_attached_volume_moves_through_novas_swap",
                            lambda: an_attached_volume_moves_through_novas_swap(cloud, admin_token)),
                           ("rebuild_reimages_the_root_volume",
                            lambda: rebuild_reimages_the_root_volume(cloud, admin_token))):
        started = time.time()
        try:
            scenario()
            print(f"nova scenario {name} ... ok ({time.time() - started:.1f} s)", flush=True)
        except Exception as err:  # noqa: BLE001 - reported and counted
            print(f"nova scenario {name} ... FAILED: {err!r}", flush=True)
            failed.append(f"{name}: {err!r}")
    return failed
