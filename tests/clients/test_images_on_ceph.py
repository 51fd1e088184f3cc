"""Boot from volume where Glance keeps its images in the same Ceph cluster as the rbd
backend (scripts/start-glance with GLANCE_CEPH_CONF): a volume made from a raw image is a
copy-on-write clone of Glance's snapshot of it, as Cinder's RBD driver makes it, and a
host's per-attachment key reads the image's data through the clone; a qcow2 image is
still converted and copied. Runs on SQLite and on PostgreSQL."""

import json
import os
import subprocess
import sys
import tempfile
import time

import pytest
import requests

from conftest import REPO, Server, _stores
from test_images import MIB, api, connector, image_file, messages_of, upload_image, wait_for

sys.path.insert(0, str(REPO / "tests" / "glance"))
from glance_node import start as start_glance, stop as stop_glance  # noqa: E402


def ceph_conf():
    conf = os.environ.get("CEPH_CONF")
    if not conf:
        if os.environ.get("CI"):
            raise AssertionError("CI is set but CEPH_CONF is not (scripts/start-ceph)")
        pytest.skip("no Ceph here (scripts/start-ceph)")
    return conf


@pytest.fixture(scope="module")
def ceph_glance():
    env = start_glance({"GLANCE_CEPH_CONF": ceph_conf(), "GLANCE_CEPH_POOL": "images"})
    yield env
    stop_glance(env)


def rbd(conf, *args):
    return subprocess.run(["rbd", "-c", conf, *args], check=True, capture_output=True, text=True).stdout


def read_as_host(info, tmp_path, size):
    """The volume's first `size` bytes as a host reads them with what its connection info
    gives it (the monitors, its own identity and key), no ceph.conf."""
    keyring = tmp_path / "host.keyring"
    keyring.write_text(info["keyring"])
    out = tmp_path / "as-host.raw"
    out.unlink(missing_ok=True)
    subprocess.run(
        ["rbd", "-c", "/dev/null", "-m", f"{info['hosts'][0]}:{info['ports'][0]}",
         "--id", info["auth_username"], "--keyring", str(keyring), "export", info["name"], str(out)],
        check=True, capture_output=True, text=True, timeout=120,
    )
    with open(out, "rb") as f:
        return f.read(size)


def test_a_raw_image_in_the_same_cluster_becomes_the_parent_of_the_volume(ceph_glance, tmp_path):
    conf = ceph_conf()
    pool = os.environ.get("CEPH_POOL", "volumes")
    glance_url = ceph_glance["GLANCE_URL"]
    data = os.urandom(3 * MIB) + bytes(MIB) + os.urandom(4321)
    raw_id = upload_image(glance_url, "on-ceph", data, "raw")
    image = requests.get(f"{glance_url}/v2/images/{raw_id}", timeout=30).json()
    assert image["direct_url"].endswith(f"/images/{raw_id}/snap"), image
    qcow2 = image_file(tmp_path, data, "qcow2")
    qcow2_id = upload_image(glance_url, "on-ceph-qcow2", qcow2.read_bytes(), "qcow2")
    for store in _stores():
        conversion = tempfile.mkdtemp(prefix="cinder-attach-conversion-")
        server = Server(store, extra_args=(
            "--backend", f"ceph=rbd,conf={conf},pool={pool},credentials=per-attachment",
            "--glance-api-servers", glance_url, "--image-conversion-dir", conversion))
        try:
            assert api(server, "POST", "/types", json={"volume_type": {
                "name": "ceph", "extra_specs": {"volume_backend_name": "ceph"}}}).status_code == 200
            made = {}
            for name, image_id in [("raw", raw_id), ("qcow2", qcow2_id)]:
                created = api(server, "POST", "/volumes", json={"volume": {
                    "size": 2, "imageRef": image_id, "volume_type": "ceph"}})
                assert created.status_code == 202, created.text
                made[name] = created.json()["volume"]["id"]
            seen = wait_for(server, made["raw"], {"available", "error"})
            # A clone moves no data: the volume never shows `downloading`.
            assert seen[-1] == "available" and "downloading" not in seen, (seen, messages_of(server, made["raw"]))
            wait_for(server, made["qcow2"], {"available", "error"})
            for volume in made.values():
                shown = api(server, "GET", f"/volumes/{volume}").json()["volume"]
                assert shown["status"] == "available" and shown["bootable"] == "true", shown
                assert shown["volume_image_metadata"]["image_id"] in (raw_id, qcow2_id)

            info = json.loads(rbd(conf, "info", "--format", "json", f"{pool}/volume-{made['raw']}"))
            assert info["parent"]["pool"] == "images", info
            assert (info["parent"]["image"], info["parent"]["snapshot"]) == (raw_id, "snap")
            assert info["size"] == 2 << 30
            copied = json.loads(rbd(conf, "info", "--format", "json", f"{pool}/volume-{made['qcow2']}"))
            assert "parent" not in copied, copied

            # A host's own key, made for its attachment, reaches the image's data in
            # Glance's pool read-only, through the clone.
            attached = api(server, "POST", "/attachments", version="3.54", json={"attachment": {
                "volume_uuid": made["raw"], "instance_uuid": "3f1a5b0e-7c0e-4d7b-9a50-0f4d3b6b2c11",
                "connector": connector(), "mode": "rw"}})
            assert attached.status_code == 200, attached.text
            connection = attached.json()["attachment"]["connection_info"]
            assert read_as_host(connection, tmp_path, len(data)) == data
            attachment = attached.json()["attachment"]["id"]
            assert api(server, "DELETE", f"/attachments/{attachment}", version="3.54").status_code == 200

            for volume in made.values():
                assert api(server, "DELETE", f"/volumes/{volume}").status_code == 202
            deadline = time.monotonic() + 60
            while any(f"volume-{v}" in rbd(conf, "ls", pool).split() for v in made.values()):
                assert time.monotonic() < deadline, "the volumes' images were not removed"
                time.sleep(0.2)
            # Glance's image is its own again: the volume's removal let go of its snapshot.
            assert rbd(conf, "children", f"images/{raw_id}@snap").strip() == ""
        finally:
            server.stop()
            subprocess.run(["rm", "-rf", conversion], check=False)
    assert requests.delete(f"{glance_url}/v2/images/{raw_id}", timeout=60).status_code == 204
