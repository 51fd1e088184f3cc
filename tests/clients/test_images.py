"""Boot from volume against a real Glance (scripts/start-glance: Glance 33 from PyPI, its
file store, unauthenticated): volumes made from raw and qcow2 images with the cinder CLI,
a corrupted image, uploads of an available and of an in-use volume read back byte for
byte, Glance dying while a volume downloads, and a 1 GiB image streamed in little memory.
Each runs on SQLite and on PostgreSQL."""

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest
import requests

from conftest import REPO, Server, _stores, table

sys.path.insert(0, str(REPO / "tests" / "glance"))
from glance_node import start as start_glance, stop as stop_glance  # noqa: E402

MIB = 1 << 20
GIB = 1 << 30


@pytest.fixture(scope="module")
def glance():
    env = start_glance()
    yield env
    stop_glance(env)


def image_server(store, glance_url):
    conversion = tempfile.mkdtemp(prefix="cinder-attach-conversion-")
    started = Server(
        store,
        extra_args=(
            "--glance-api-servers", glance_url,
            "--glance-request-timeout", "5",
            "--enable-force-upload",
            "--image-conversion-dir", conversion,
        ),
    )
    started.conversion_dir = conversion
    return started


@pytest.fixture(params=_stores())
def server(request, glance):
    """The service pointed at the module's Glance (overrides conftest's `server`, so the
    `cinder` fixture drives this one)."""
    started = image_server(request.param, glance["GLANCE_URL"])
    yield started
    started.stop()
    assert not os.listdir(started.conversion_dir), "conversion scratch files were left"
    shutil.rmtree(started.conversion_dir, ignore_errors=True)


def upload_image(glance_url, name, data, disk_format, **properties):
    """An image in Glance holding `data` (bytes, or an iterable of chunks); its id."""
    body = {"name": name, "disk_format": disk_format, "container_format": "bare", **properties}
    created = requests.post(f"{glance_url}/v2/images", json=body, timeout=30)
    created.raise_for_status()
    image_id = created.json()["id"]
    put = requests.put(
        f"{glance_url}/v2/images/{image_id}/file", data=data,
        headers={"Content-Type": "application/octet-stream"}, timeout=600,
    )
    assert put.status_code == 204, put.text
    return image_id


def api(server, method, path, version="3.71", **kwargs):
    headers = {"X-Auth-Token": "admin:p1", "OpenStack-API-Version": f"volume {version}"}
    return requests.request(method, f"{server.url}/v3/p1{path}", headers=headers, timeout=60, **kwargs)


def wait_for(server, volume_id, wanted, timeout=180, on_status=None):
    """Polls the volume until its status is in `wanted`; returns every status seen."""
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = api(server, "GET", f"/volumes/{volume_id}").json()["volume"]["status"]
        if not seen or seen[-1] != status:
            seen.append(status)
            if on_status:
                on_status(status)
        if status in wanted:
            return seen
        time.sleep(0.02)
    raise AssertionError(f"volume {volume_id} never reached {wanted}: {seen}")


def as_raw(path, disk_format, tmp_path):
    if disk_format == "raw":
        return path
    raw = tmp_path / "converted.raw"
    subprocess.run(["qemu-img", "convert", "-f", disk_format, "-O", "raw", str(path), str(raw)], check=True)
    return raw


def same_bytes(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(MIB), fb.read(MIB)
            if x != y:
                return False
            if not x:
                return True


def messages_of(server, volume_id):
    listed = api(server, "GET", "/messages").json()["messages"]
    return [m for m in listed if m["resource_uuid"] == volume_id]


def image_file(tmp_path, data, disk_format):
    """`data` in a file of `disk_format` (raw or qcow2) under tmp_path."""
    raw = tmp_path / "image.raw"
    raw.write_bytes(data)
    if disk_format == "raw":
        return raw
    converted = tmp_path / f"image.{disk_format}"
    subprocess.run(["qemu-img", "convert", "-f", "raw", "-O", disk_format, str(raw), str(converted)], check=True)
    return converted


@pytest.mark.parametrize("disk_format", ["raw", "qcow2"])
def test_a_volume_made_from_an_image_holds_its_data(server, cinder, glance, disk_format, tmp_path):
    data = os.urandom(3 * MIB) + bytes(MIB) + os.urandom(12345)
    sent = image_file(tmp_path, data, disk_format)
    # Both stores' runs share the module's Glance: a name of this run's own.
    name = f"boot-{disk_format}-{os.urandom(4).hex()}"
    image_id = upload_image(
        glance["GLANCE_URL"], name, sent.read_bytes(), disk_format, hw_disk_bus="scsi", min_disk=1,
    )

    created = table(cinder("create", "--image", image_id, "--name", "boot", "1").stdout)
    # The CLI shows the volume as read right after the create.
    assert created["status"] in ("creating", "downloading", "available")
    wait_for(server, created["id"], {"available", "error"})
    shown = api(server, "GET", f"/volumes/{created['id']}").json()["volume"]
    assert shown["status"] == "available", messages_of(server, created["id"])
    assert shown["bootable"] == "true"
    metadata = shown["volume_image_metadata"]
    assert metadata["image_id"] == image_id
    assert metadata["image_name"] == name
    assert metadata["disk_format"] == disk_format
    assert metadata["hw_disk_bus"] == "scsi"
    assert metadata["min_disk"] == "1"
    shown_by_action = api(
        server, "POST", f"/volumes/{created['id']}/action", json={"os-show_image_metadata": {}}
    ).json()["metadata"]
    assert shown_by_action == metadata

    volume_file = server.volumes_dir / f"volume-{created['id']}"
    assert volume_file.stat().st_size == GIB
    with open(volume_file, "rb") as f:
        assert f.read(len(data)) == data
        assert f.read(MIB) == bytes(MIB), "past the image, the volume reads zeros"

    # By name too, as Cinder resolves imageRef; a name two images have is Cinder's 409.
    by_name = api(server, "POST", "/volumes", json={"volume": {"size": 1, "imageRef": name}})
    assert by_name.status_code == 202, by_name.text
    wait_for(server, by_name.json()["volume"]["id"], {"available"})
    upload_image(glance["GLANCE_URL"], name, sent.read_bytes(), disk_format)
    twice = api(server, "POST", "/volumes", json={"volume": {"size": 1, "imageRef": name}})
    assert twice.status_code == 409, twice.text
    assert twice.json()["conflictingRequest"]["message"] == (
        f"Multiple matches found for '{name}', use an ID to be more specific.")


def test_images_that_cannot_be_used_are_refused(server, glance):
    image_id = upload_image(glance["GLANCE_URL"], "needs-5", os.urandom(MIB), "raw", min_disk=5)
    source = api(server, "POST", "/volumes", json={"volume": {"size": 1}}).json()["volume"]["id"]
    cases = [
        ({"size": 1, "imageRef": image_id}, "cannot be smaller than the image minDisk size 5GB"),
        ({"size": 1, "imageRef": "no-such-image"}, "Invalid image identifier or unable to access requested image."),
        ({"imageRef": image_id}, "must be an integer"),
        ({"size": 5, "imageRef": image_id, "source_volid": source}, "May specify only one of"),
    ]
    for body, why in cases:
        refused = api(server, "POST", "/volumes", json={"volume": body})
        assert refused.status_code == 400, refused.text
        assert why in refused.json()["badRequest"]["message"], refused.text
    listed = [v["id"] for v in api(server, "GET", "/volumes").json()["volumes"]]
    assert listed == [source], "a refusal records nothing"


def test_a_corrupted_image_ends_in_error_with_a_message(server, glance):
    image_id = upload_image(glance["GLANCE_URL"], "corrupt", os.urandom(2 * MIB), "raw")
    stored = f"{glance['GLANCE_STORE']}/{image_id}"
    with open(stored, "r+b") as f:  # one byte changed behind Glance's back
        f.seek(MIB)
        byte = f.read(1)
        f.seek(MIB)
        f.write(bytes([byte[0] ^ 0xFF]))

    created = api(server, "POST", "/volumes", json={"volume": {"size": 1, "imageRef": image_id}})
    assert created.status_code == 202, created.text
    volume_id = created.json()["volume"]["id"]
    wait_for(server, volume_id, {"error", "available"})
    shown = api(server, "GET", f"/volumes/{volume_id}").json()["volume"]
    assert shown["status"] == "error"
    assert shown["bootable"] == "false"
    assert not (server.volumes_dir / f"volume-{volume_id}").exists(), "no half-written volume"
    [message] = messages_of(server, volume_id)
    assert message["event_id"] == "VOLUME_VOLUME_005_001"
    # Cinder's fixed words for the user; why goes to the log.
    assert message["user_message"] == "copy image to volume: An unknown error occurred."
    assert server.logged("the image's data does not match")
    assert api(server, "DELETE", f"/volumes/{volume_id}").status_code == 202


def connector():
    return {"initiator": "iqn.1994-05.com.redhat:host1", "ip": "127.0.0.1", "platform": "x86_64",
            "host": "host1", "os_type": "linux2", "multipath": False}


def download(glance_url, image_id, path):
    with requests.get(f"{glance_url}/v2/images/{image_id}/file", stream=True, timeout=120) as got:
        got.raise_for_status()
        digest = hashlib.md5()
        with open(path, "wb") as f:
            for chunk in got.iter_content(MIB):
                digest.update(chunk)
                f.write(chunk)
    return digest.hexdigest()


def test_uploads_of_available_and_in_use_volumes_read_back_byte_for_byte(server, cinder, glance, tmp_path):
    glance_url = glance["GLANCE_URL"]
    data = os.urandom(2 * MIB) + bytes(MIB) + os.urandom(MIB)
    source = upload_image(glance_url, "source", data, "raw", hw_qemu_guest_agent="yes")
    created = api(server, "POST", "/volumes", json={"volume": {"size": 1, "imageRef": source, "name": "src"}})
    volume_id = created.json()["volume"]["id"]
    wait_for(server, volume_id, {"available"})
    volume_file = server.volumes_dir / f"volume-{volume_id}"

    # An available volume, raw, through the real CLI.
    out = cinder("upload-to-image", "--disk-format", "raw", volume_id, "copy-raw").stdout
    uploaded = table(out)
    assert uploaded["status"] == "uploading"
    seen = wait_for(server, volume_id, {"available"})
    assert seen[-1] == "available"
    image = requests.get(f"{glance_url}/v2/images/{uploaded['image_id']}", timeout=30).json()
    assert image["status"] == "active"
    assert image["size"] == GIB
    assert image["hw_qemu_guest_agent"] == "yes", "the volume's image properties go with it"
    got = tmp_path / "raw.img"
    assert download(glance_url, image["id"], got) == image["checksum"]
    assert same_bytes(got, volume_file)
    got.unlink()
    requests.delete(f"{glance_url}/v2/images/{image['id']}", timeout=30)

    # In use (attached through the attachments API), qcow2, with force.
    attachment = api(server, "POST", "/attachments", json={"attachment": {
        "volume_uuid": volume_id, "instance_uuid": "5f3e2f7c-6f8e-4d55-9d5a-5e8f8b7c1a11",
        "connector": connector(), "mode": "rw"}}).json()["attachment"]
    assert api(server, "POST", f"/attachments/{attachment['id']}/action",
               json={"os-complete": {}}).status_code == 204
    assert api(server, "GET", f"/volumes/{volume_id}").json()["volume"]["status"] == "in-use"
    unforced = api(server, "POST", f"/volumes/{volume_id}/action",
                   json={"os-volume_upload_image": {"image_name": "nope"}})
    assert unforced.status_code == 400
    assert f"Volume {volume_id} status must be available" in unforced.text
    started = api(server, "POST", f"/volumes/{volume_id}/action", json={"os-volume_upload_image": {
        "image_name": "copy-qcow2", "disk_format": "qcow2", "force": True, "visibility": "shared"}})
    assert started.status_code == 202, started.text
    answer = started.json()["os-volume_upload_image"]
    assert answer["status"] == "uploading" and answer["visibility"] == "shared"
    assert answer["volume_type"]["name"] == "__DEFAULT__"
    seen = wait_for(server, volume_id, {"in-use"})
    assert seen[-1] == "in-use", "the upload gives the volume back to its attachment"
    image = requests.get(f"{glance_url}/v2/images/{answer['image_id']}", timeout=30).json()
    assert image["status"] == "active" and image["disk_format"] == "qcow2"
    got = tmp_path / "copy.qcow2"
    assert download(glance_url, image["id"], got) == image["checksum"]
    assert same_bytes(as_raw(got, "qcow2", tmp_path), volume_file)


def test_glance_dying_mid_download_ends_in_error_and_leaves_nothing(tmp_path):
    for store in _stores():
        dying = start_glance()
        server = image_server(store, dying["GLANCE_URL"])
        try:
            block = os.urandom(MIB)
            image_id = upload_image(dying["GLANCE_URL"], "big", (block for _ in range(512)), "raw")
            created = api(server, "POST", "/volumes", json={"volume": {"size": 1, "imageRef": image_id}})
            volume_id = created.json()["volume"]["id"]

            def kill_when_downloading(status):
                if status == "downloading":
                    os.killpg(int(dying["GLANCE_PID"]), signal.SIGKILL)

            seen = wait_for(server, volume_id, {"error", "available"}, on_status=kill_when_downloading)
            assert seen[-2:] == ["downloading", "error"], seen
            assert not (server.volumes_dir / f"volume-{volume_id}").exists()
            [message] = messages_of(server, volume_id)
            assert message["user_message"] == "copy image to volume: An unknown error occurred.", message
        finally:
            server.stop()
            stop_glance(dying)


def test_a_1_gib_image_streams_in_little_memory(server, glance):
    """The service's peak resident memory (VmHWM) stays under 64 MiB while 1 GiB of image
    data passes through it, checked against its hash."""
    block = os.urandom(MIB)
    image_id = upload_image(glance["GLANCE_URL"], "one-gib", (block for _ in range(1024)), "raw")
    created = api(server, "POST", "/volumes", json={"volume": {"size": 1, "imageRef": image_id}})
    volume_id = created.json()["volume"]["id"]
    wait_for(server, volume_id, {"available", "error"}, timeout=600)
    assert api(server, "GET", f"/volumes/{volume_id}").json()["volume"]["status"] == "available"
    with open(f"/proc/{server.process.pid}/status") as f:
        peak_kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    assert peak_kib < 64 * 1024, f"peak resident memory {peak_kib} KiB"
    with open(server.volumes_dir / f"volume-{volume_id}", "rb") as f:
        f.seek(1000 * MIB)
        assert f.read(MIB) == block
    requests.delete(f"{glance['GLANCE_URL']}/v2/images/{image_id}", timeout=30)


def test_an_rbd_volume_from_a_qcow2_image_and_back(glance, tmp_path):
    """On the rbd backend (the Ceph of scripts/start-ceph) the converted image streams
    into the volume through librbd, and an upload reads it back out the same way."""
    conf = os.environ.get("CEPH_CONF")
    if not conf:
        if os.environ.get("CI"):
            raise AssertionError("CI is set but CEPH_CONF is not (scripts/start-ceph)")
        pytest.skip("no Ceph here (scripts/start-ceph)")
    pool = os.environ.get("CEPH_POOL", "volumes")
    data = os.urandom(2 * MIB) + bytes(MIB) + os.urandom(MIB + 7)
    qcow2 = image_file(tmp_path, data, "qcow2")
    image_id = upload_image(glance["GLANCE_URL"], "for-rbd", qcow2.read_bytes(), "qcow2")
    for store in _stores():
        conversion = tempfile.mkdtemp(prefix="cinder-attach-conversion-")
        server = Server(store, extra_args=(
            "--backend", f"ceph=rbd,conf={conf},pool={pool}",
            "--glance-api-servers", glance["GLANCE_URL"], "--image-conversion-dir", conversion))
        try:
            assert api(server, "POST", "/types", json={"volume_type": {
                "name": "ceph", "extra_specs": {"volume_backend_name": "ceph"}}}).status_code == 200
            created = api(server, "POST", "/volumes", json={"volume": {
                "size": 1, "imageRef": image_id, "volume_type": "ceph"}}).json()["volume"]
            wait_for(server, created["id"], {"available", "error"})
            shown = api(server, "GET", f"/volumes/{created['id']}").json()["volume"]
            assert shown["status"] == "available", messages_of(server, created["id"])
            assert shown["os-vol-host-attr:host"].endswith("@ceph#ceph")
            exported = tmp_path / f"export-{store}.raw"
            subprocess.run(["rbd", "-c", conf, "export", f"{pool}/volume-{created['id']}", str(exported)],
                           check=True, capture_output=True)
            with open(exported, "rb") as f:
                assert f.read(len(data)) == data
            started = api(server, "POST", f"/volumes/{created['id']}/action", json={
                "os-volume_upload_image": {"image_name": "from-rbd", "disk_format": "qcow2"}})
            assert started.status_code == 202, started.text
            wait_for(server, created["id"], {"available"})
            copy = started.json()["os-volume_upload_image"]["image_id"]
            image = requests.get(f"{glance['GLANCE_URL']}/v2/images/{copy}", timeout=30).json()
            assert image["status"] == "active"
            got = tmp_path / f"copy-{store}.qcow2"
            download(glance["GLANCE_URL"], copy, got)
            assert same_bytes(as_raw(got, "qcow2", tmp_path), exported)
            assert api(server, "DELETE", f"/volumes/{created['id']}").status_code == 202
            assert not os.listdir(conversion), "conversion scratch files were left"
        finally:
            server.stop()
            shutil.rmtree(conversion, ignore_errors=True)


def test_glance_is_found_in_keystones_catalog(glance):
    """Without --glance-api-servers, a service behind Keystone finds Glance in the
    catalog its own login gets (Cinder's glance_catalog_info, in [glance] region_name)."""
    import uuid
    sys.path.insert(0, str(REPO / "tests" / "keystone"))
    from keystone_admin import Admin, login
    from test_keystone import provision, server_behind

    keystone_url = os.environ.get("KEYSTONE_URL")
    if not keystone_url:
        if os.environ.get("CI"):
            raise AssertionError("CI is set but KEYSTONE_URL is not")
        pytest.skip("no Keystone here (tests/keystone/start.sh)")
    password = os.environ["KEYSTONE_ADMIN_PASSWORD"]
    accounts = provision(keystone_url, password)
    admin = Admin(keystone_url, password)
    region = f"images-{uuid.uuid4().hex[:8]}"
    service_id = admin.endpoint("image", "glance", glance["GLANCE_URL"], region=region)
    server = server_behind(accounts, "--glance-region-name", region)
    try:
        token = login(accounts["user"], "pw", accounts["project"], keystone_url)
        image_id = upload_image(glance["GLANCE_URL"], "from-catalog", os.urandom(MIB), "raw")
        headers = {"X-Auth-Token": token, "OpenStack-API-Version": "volume 3.71"}
        base = f"{server.url}/v3/{accounts['project_id']}"
        created = requests.post(f"{base}/volumes", headers=headers, timeout=60,
                                json={"volume": {"size": 1, "imageRef": image_id}})
        assert created.status_code == 202, created.text
        volume_id = created.json()["volume"]["id"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status = requests.get(f"{base}/volumes/{volume_id}", headers=headers, timeout=60).json()["volume"]["status"]
            if status in ("available", "error"):
                break
            time.sleep(0.05)
        assert status == "available"
    finally:
        server.stop()
        admin.call("DELETE", f"services/{service_id}")


def test_a_volume_reserved_while_it_downloads_keeps_its_reservation(server, glance):
    """Cinder lets an attachment reserve a volume that is still downloading (Nova's boot
    from volume); the download then finishes under the reservation: the volume stays
    `reserved`, bootable, with all of its data."""
    block = os.urandom(MIB)
    image_id = upload_image(glance["GLANCE_URL"], "reserve-me", (block for _ in range(384)), "raw")
    created = api(server, "POST", "/volumes", json={"volume": {"size": 1, "imageRef": image_id}})
    volume_id = created.json()["volume"]["id"]
    reserved = []

    def reserve_when_downloading(status):
        if status == "downloading" and not reserved:
            answer = api(server, "POST", "/attachments", json={"attachment": {
                "volume_uuid": volume_id, "instance_uuid": "0e9cd5a2-2b9f-4b57-8b6e-3c1b2d9a7f10"}})
            assert answer.status_code == 200, answer.text
            reserved.append(answer.json()["attachment"]["id"])

    wait_for(server, volume_id, {"downloading"}, on_status=reserve_when_downloading)
    assert reserved, "the download was over before it could be reserved"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        shown = api(server, "GET", f"/volumes/{volume_id}").json()["volume"]
        if shown["bootable"] == "true":
            break
        time.sleep(0.05)
    assert shown["status"] == "reserved" and shown["bootable"] == "true", shown
    assert shown["volume_image_metadata"]["image_id"] == image_id
    with open(server.volumes_dir / f"volume-{volume_id}", "rb") as f:
        f.seek(383 * MIB)
        assert f.read(MIB) == block
    assert api(server, "DELETE", f"/attachments/{reserved[0]}").status_code == 200
    assert api(server, "GET", f"/volumes/{volume_id}").json()["volume"]["status"] == "available"
