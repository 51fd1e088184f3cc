"""A volume of an encrypted (LUKS) type made from a Glance image: the data is written as a
LUKS container under the volume's key (the fixed key of Cinder's ConfKeyManager, whose
passphrase is the key in hex, as os-brick derives it), so a host that opens the volume
with its key reads the image. An image whose encrypted form does not fit ends in `error`.
Runs on SQLite and on PostgreSQL against a real Glance."""

import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import Server, _stores
from test_images import MIB, api, glance, image_file, messages_of, upload_image, wait_for  # noqa: F401

KEY = "bae3516cc1c0eb18b05440eba8012a4a880a2ee04d584a9c1579445e675b12de"


@pytest.fixture(params=_stores())
def keyed_server(request, glance):  # noqa: F811
    conversion = tempfile.mkdtemp(prefix="cinder-attach-conversion-")
    started = Server(request.param, extra_args=(
        "--glance-api-servers", glance["GLANCE_URL"], "--image-conversion-dir", conversion,
        "--key-manager-fixed-key", KEY.upper()))
    yield started
    started.stop()
    assert not os.listdir(conversion), "conversion scratch files (the passphrase among them) were left"
    shutil.rmtree(conversion, ignore_errors=True)


def luks_type(server):
    made = api(server, "POST", "/types", json={"volume_type": {"name": "luks"}})
    assert made.status_code == 200, made.text
    type_id = made.json()["volume_type"]["id"]
    encryption = api(server, "POST", f"/types/{type_id}/encryption", json={"encryption": {
        "provider": "luks", "cipher": "aes-xts-plain64", "key_size": 256, "control_location": "front-end"}})
    assert encryption.status_code == 200, encryption.text
    return "luks"


def decrypted(volume_file, tmp_path):
    """The volume's plaintext, as a host with the key reads it."""
    out = tmp_path / "plain.raw"
    subprocess.run(
        ["qemu-img", "convert", "--object", f"secret,id=sec0,data={KEY}", "--image-opts",
         f"driver=luks,key-secret=sec0,file.filename={volume_file}", "-O", "raw", str(out)],
        check=True, capture_output=True, text=True,
    )
    return out.read_bytes()


@pytest.mark.parametrize("disk_format", ["raw", "qcow2"])
def test_an_encrypted_volume_from_an_image_holds_it_under_its_key(keyed_server, glance, disk_format, tmp_path):  # noqa: F811
    server = keyed_server
    data = os.urandom(2 * MIB) + bytes(MIB) + os.urandom(777)
    sent = image_file(tmp_path, data, disk_format)
    image_id = upload_image(glance["GLANCE_URL"], f"for-luks-{os.urandom(4).hex()}", sent.read_bytes(), disk_format)
    volume_type = luks_type(server)

    created = api(server, "POST", "/volumes", json={"volume": {
        "size": 1, "imageRef": image_id, "volume_type": volume_type}})
    assert created.status_code == 202, created.text
    volume_id = created.json()["volume"]["id"]
    seen = wait_for(server, volume_id, {"available", "error"})
    assert seen[-1] == "available", (messages_of(server, volume_id), server.lines_about(volume_id))
    shown = api(server, "GET", f"/volumes/{volume_id}").json()["volume"]
    assert shown["encrypted"] is True and shown["bootable"] == "true"
    assert shown["volume_image_metadata"]["image_id"] == image_id

    volume_file = server.volumes_dir / f"volume-{volume_id}"
    with open(volume_file, "rb") as f:
        header = f.read(MIB)
    assert header.startswith(b"LUKS\xba\xbe"), header[:16]
    assert data[:4096] not in header, "the image's bytes are in the clear"
    assert decrypted(volume_file, tmp_path)[:len(data)] == data
    assert api(server, "DELETE", f"/volumes/{volume_id}").status_code == 202


def test_an_image_that_fills_the_volume_leaves_no_room_for_the_luks_header(keyed_server, glance, tmp_path):  # noqa: F811
    server = keyed_server
    full = tmp_path / "full.qcow2"
    subprocess.run(["qemu-img", "create", "-f", "qcow2", str(full), "1G"], check=True, capture_output=True)
    image_id = upload_image(glance["GLANCE_URL"], f"full-{os.urandom(4).hex()}", full.read_bytes(), "qcow2")
    volume_type = luks_type(server)
    created = api(server, "POST", "/volumes", json={"volume": {
        "size": 1, "imageRef": image_id, "volume_type": volume_type}})
    assert created.status_code == 202, created.text
    volume_id = created.json()["volume"]["id"]
    assert wait_for(server, volume_id, {"available", "error"})[-1] == "error"
    [message] = messages_of(server, volume_id)
    assert message["user_message"] == "copy image to volume: An unknown error occurred.", message
    assert server.logged("does not fit in the volume's 1 GiB")
    assert not (server.volumes_dir / f"volume-{volume_id}").exists()
