"""Keys of encrypted volumes kept in a real Barbican (scripts/start-barbican), behind the
real Keystone, as Cinder's castellan keeps them: each volume gets a secret of its own in
the caller's project; a clone, an uploaded image and a volume made from that image each
get a copy of the key (same bytes, another secret); the data written from an image
opens with the volume's key; a transferred volume's key moves to the taker's project;
deleting a volume deletes its secret; a backup keeps a copy of its own, which a volume
restored from it copies again and which goes with the backup. Runs on SQLite and
on PostgreSQL with a real Glance that checks tokens with the same Keystone."""

import os
import signal
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from conftest import Server, _stores
from test_images import MIB
from test_keystone import ADMIN_PASSWORD, KEYSTONE, provision

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "glance"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "keystone"))
import glance_node  # noqa: E402
from keystone_admin import keystone, login  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not KEYSTONE, reason="KEYSTONE_URL is not set")


@pytest.fixture(scope="module")
def barbican():
    out = subprocess.run(
        [str(REPO / "scripts" / "start-barbican")],
        env={**os.environ, "BARBICAN_KEYSTONE_URL": KEYSTONE, "BARBICAN_KEYSTONE_ADMIN_PASSWORD": ADMIN_PASSWORD},
        check=True, capture_output=True, text=True, timeout=900,
    ).stdout
    found = dict(pair.split("=", 1) for pair in out.split()[1:])
    yield found
    try:
        os.killpg(int(found["BARBICAN_PID"]), signal.SIGKILL)
    except ProcessLookupError:
        pass
    shutil.rmtree(found["BARBICAN_WORK"], ignore_errors=True)


@pytest.fixture(scope="module")
def keyed_glance():
    env = glance_node.start({"GLANCE_KEYSTONE_URL": KEYSTONE, "GLANCE_KEYSTONE_ADMIN_PASSWORD": ADMIN_PASSWORD})
    yield env
    glance_node.stop(env)


@pytest.fixture(scope="module")
def accounts():
    made = provision(KEYSTONE, ADMIN_PASSWORD)
    # The service keeps the keys of volumes on offer in its own project: there it is a
    # member, as a deployment's cinder user is (devstack makes it an admin).
    call = lambda method, path, body=None: keystone(method, path, made["admin"], body, KEYSTONE)  # noqa: E731
    roles = {r["name"]: r["id"] for r in call("GET", "roles")[2]["roles"]}
    users = {u["name"]: u["id"] for u in call("GET", f"users?name={made['service_user']}")[2]["users"]}
    projects = {p["name"]: p["id"] for p in call("GET", f"projects?name={made['service_project']}")[2]["projects"]}
    granted = call("PUT", f"projects/{projects[made['service_project']]}/users/{users[made['service_user']]}"
                          f"/roles/{roles['member']}")
    assert granted[0] == 204, granted
    # Someone in another project, to accept transfers.
    other = provision(KEYSTONE, ADMIN_PASSWORD)
    made["taker"], made["taker_project"], made["taker_project_id"] = other["user"], other["project"], other["project_id"]
    return made


@pytest.fixture(params=_stores())
def server(request, accounts, barbican, keyed_glance):
    started = Server(request.param, [
        "--auth-strategy", "keystone", "--keystone-url", KEYSTONE,
        "--keystone-username", accounts["service_user"], "--keystone-password", "pw",
        "--keystone-project", accounts["service_project"],
        "--key-manager", "barbican", "--barbican-endpoint", barbican["BARBICAN_URL"],
        "--glance-api-servers", keyed_glance["GLANCE_URL"],
    ])
    yield started
    started.stop()


class Caller:
    """One Keystone user's calls to the service, Glance and Barbican."""

    def __init__(self, server, token, project_id, barbican_url, glance_url):
        self.server, self.token, self.project_id = server, token, project_id
        self.barbican_url, self.glance_url = barbican_url, glance_url

    def api(self, method, path, **kwargs):
        headers = {"X-Auth-Token": self.token, "OpenStack-API-Version": "volume 3.71"}
        return requests.request(method, f"{self.server.url}/v3/{self.project_id}{path}",
                                headers=headers, timeout=120, **kwargs)

    def secret(self, key_id):
        """The key's bytes as Barbican gives them to this caller; None when it is gone."""
        got = self.read_secret(key_id)
        if got.status_code == 404:
            return None
        assert got.status_code == 200, got.text
        return got.content

    def read_secret(self, key_id):
        return requests.get(f"{self.barbican_url}/v1/secrets/{key_id}/payload", timeout=30,
                            headers={"X-Auth-Token": self.token, "Accept": "application/octet-stream"})

    def key_of(self, volume_id):
        shown = self.api("GET", f"/volumes/{volume_id}/encryption")
        assert shown.status_code == 200, shown.text
        return shown.json()["encryption_key_id"]

    def wait(self, volume_id, wanted=("available",)):
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            status = self.api("GET", f"/volumes/{volume_id}").json()["volume"]["status"]
            if status in wanted or status == "error":
                # Why a volume failed is only in the service's log.
                assert status in wanted, (status, self.server.lines_about(volume_id))
                return
            time.sleep(0.05)
        raise AssertionError(f"volume {volume_id} never became {wanted}")

    def wait_backup(self, backup_id, wanted):
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            backup = self.api("GET", f"/backups/{backup_id}").json()["backup"]
            if backup["status"] in (wanted, "error"):
                assert backup["status"] == wanted, backup
                return backup
            time.sleep(0.05)
        raise AssertionError(f"backup {backup_id} never became {wanted}")

    def backup(self, volume_id):
        made = self.api("POST", "/backups", json={"backup": {"volume_id": volume_id}})
        assert made.status_code == 202, made.text
        return self.wait_backup(made.json()["backup"]["id"], "available")

    def create(self, **body):
        made = self.api("POST", "/volumes", json={"volume": {"size": 1, "volume_type": "luks-barbican", **body}})
        assert made.status_code == 202, made.text
        volume_id = made.json()["volume"]["id"]
        self.wait(volume_id)
        return volume_id

    def upload_image(self, data):
        glance = {"X-Auth-Token": self.token}
        made = requests.post(f"{self.glance_url}/v2/images", headers=glance, timeout=30, json={
            "name": "plain", "disk_format": "raw", "container_format": "bare"})
        made.raise_for_status()
        image_id = made.json()["id"]
        put = requests.put(f"{self.glance_url}/v2/images/{image_id}/file", data=data, timeout=120,
                           headers={**glance, "Content-Type": "application/octet-stream"})
        assert put.status_code == 204, put.text
        return image_id


def luks_type(accounts, server):
    admin = Caller(server, accounts["admin"], None, None, None)
    project = requests.get(f"{KEYSTONE}/auth/tokens", timeout=30,
                           headers={"X-Auth-Token": admin.token, "X-Subject-Token": admin.token}).json()
    admin.project_id = project["token"]["project"]["id"]
    made = admin.api("POST", "/types", json={"volume_type": {"name": "luks-barbican"}})
    assert made.status_code == 200, made.text
    type_id = made.json()["volume_type"]["id"]
    encryption = admin.api("POST", f"/types/{type_id}/encryption", json={"encryption": {
        "provider": "luks", "cipher": "aes-xts-plain64", "key_size": 256, "control_location": "front-end"}})
    assert encryption.status_code == 200, encryption.text


def decrypted(volume_file, passphrase, out):
    subprocess.run(
        ["qemu-img", "convert", "--object", f"secret,id=sec0,data={passphrase}", "--image-opts",
         f"driver=luks,key-secret=sec0,file.filename={volume_file}", "-O", "raw", str(out)],
        check=True, capture_output=True, text=True,
    )
    return out.read_bytes()


def test_every_encrypted_volume_has_a_barbican_secret_of_its_own(server, accounts, barbican, keyed_glance, tmp_path):
    luks_type(accounts, server)
    token = login(accounts["user"], "pw", accounts["project"], KEYSTONE)
    alice = Caller(server, token, accounts["project_id"], barbican["BARBICAN_URL"], keyed_glance["GLANCE_URL"])

    # A new volume: a 256-bit AES key, made in Barbican in alice's project.
    empty = alice.create()
    key = alice.key_of(empty)
    assert len(alice.secret(key)) == 32

    # From a plain image: written as LUKS under the volume's own key.
    data = os.urandom(2 * MIB) + bytes(MIB) + os.urandom(999)
    image_id = alice.upload_image(data)
    from_image = alice.create(imageRef=image_id)
    image_key = alice.key_of(from_image)
    assert image_key != key
    volume_file = server.volumes_dir / f"volume-{from_image}"
    passphrase = alice.secret(image_key).hex()
    assert decrypted(volume_file, passphrase, tmp_path / "a.raw")[:len(data)] == data

    # A clone: another secret holding the same bytes.
    clone = alice.create(source_volid=from_image)
    clone_key = alice.key_of(clone)
    assert clone_key not in (key, image_key)
    assert alice.secret(clone_key) == alice.secret(image_key)

    # Uploaded to an image: the image names a copy of the key, and a volume made from it
    # holds the same LUKS container, under a copy of its own.
    upload = alice.api("POST", f"/volumes/{from_image}/action", json={
        "os-volume_upload_image": {"image_name": "sealed", "disk_format": "raw", "container_format": "bare"}})
    assert upload.status_code == 202, upload.text
    sealed = upload.json()["os-volume_upload_image"]["image_id"]
    alice.wait(from_image)
    image = requests.get(f"{alice.glance_url}/v2/images/{sealed}", headers={"X-Auth-Token": token}, timeout=30).json()
    assert image["status"] == "active", image
    sealed_key = image["cinder_encryption_key_id"]
    assert sealed_key not in (image_key, clone_key)
    assert alice.secret(sealed_key) == alice.secret(image_key)
    reopened = alice.create(imageRef=sealed)
    reopened_key = alice.key_of(reopened)
    assert reopened_key not in (sealed_key, image_key)
    reopened_file = server.volumes_dir / f"volume-{reopened}"
    assert reopened_file.read_bytes()[:MIB] == volume_file.read_bytes()[:MIB], "copied as it is, not encrypted twice"
    assert decrypted(reopened_file, alice.secret(reopened_key).hex(), tmp_path / "b.raw")[:len(data)] == data

    # A transfer (3.70+) moves the key with the volume: held by the service's project
    # while offered, back to alice when she withdraws it, to the taker's when accepted.
    original = alice.secret(key)
    offered = alice.api("POST", "/volume-transfers", json={"transfer": {"volume_id": empty}})
    assert offered.status_code == 202, offered.text
    held = alice.key_of(empty)
    assert held != key and alice.secret(key) is None, "alice's secret went with the offer"
    assert alice.read_secret(held).status_code in (403, 404), "the service's secret is not alice's"
    withdrawn = alice.api("DELETE", f"/volume-transfers/{offered.json()['transfer']['id']}")
    assert withdrawn.status_code == 202, withdrawn.text
    key = alice.key_of(empty)
    assert key != held and alice.secret(key) == original
    offered = alice.api("POST", "/volume-transfers", json={"transfer": {"volume_id": empty}}).json()["transfer"]
    taker_token = login(accounts["taker"], "pw", accounts["taker_project"], KEYSTONE)
    taker = Caller(server, taker_token, accounts["taker_project_id"], alice.barbican_url, alice.glance_url)
    accepted = taker.api("POST", f"/volume-transfers/{offered['id']}/accept",
                         json={"accept": {"auth_key": offered["auth_key"]}})
    assert accepted.status_code == 202, accepted.text
    taken_key = taker.key_of(empty)
    assert taker.secret(taken_key) == original
    assert alice.read_secret(taken_key).status_code in (403, 404)
    assert taker.api("DELETE", f"/volumes/{empty}").status_code == 202
    deadline = time.monotonic() + 60
    while taker.api("GET", f"/volumes/{empty}").status_code != 404:
        assert time.monotonic() < deadline, "the taken volume was not deleted"
        time.sleep(0.05)
    assert taker.secret(taken_key) is None, "the volume's key outlived it"

    # A backup keeps a copy of the volume's key (3.64 shows it), so it outlives the volume.
    backup = alice.backup(from_image)
    backup_key = backup["encryption_key_id"]
    assert backup_key not in (image_key, clone_key)
    assert alice.secret(backup_key) == alice.secret(image_key)

    # Deleting a volume deletes its secret, and only its own.
    for volume_id, volume_key in ((clone, clone_key), (reopened, reopened_key), (from_image, image_key)):
        assert alice.api("DELETE", f"/volumes/{volume_id}").status_code == 202
        deadline = time.monotonic() + 60
        while alice.api("GET", f"/volumes/{volume_id}").status_code != 404:
            assert time.monotonic() < deadline, f"volume {volume_id} was not deleted"
            time.sleep(0.05)
        assert alice.secret(volume_key) is None, "the volume's key outlived it"
    assert alice.secret(sealed_key) is not None, "the image's key is the image's"
    assert alice.secret(backup_key) is not None, "the backup's key is the backup's"

    # Restored, the backup makes a volume of the volume's type holding a copy of its own
    # of the backup's key, which opens the restored data.
    restored = alice.api("POST", f"/backups/{backup['id']}/restore", json={"restore": {}})
    assert restored.status_code == 202, restored.text
    restored_id = restored.json()["restore"]["volume_id"]
    alice.wait(restored_id)
    shown = alice.api("GET", f"/volumes/{restored_id}").json()["volume"]
    assert shown["volume_type"] == "luks-barbican" and shown["encrypted"], shown
    restored_key = alice.key_of(restored_id)
    assert restored_key not in (backup_key, image_key)
    assert alice.secret(restored_key) == alice.secret(backup_key)
    restored_file = server.volumes_dir / f"volume-{restored_id}"
    assert decrypted(restored_file, alice.secret(restored_key).hex(), tmp_path / "c.raw")[:len(data)] == data

    # Deleting the backup deletes its copy of the key.
    alice.wait_backup(backup["id"], "available")
    assert alice.api("DELETE", f"/backups/{backup['id']}").status_code == 202
    deadline = time.monotonic() + 60
    while alice.api("GET", f"/backups/{backup['id']}").status_code != 404:
        assert time.monotonic() < deadline, "the backup was not deleted"
        time.sleep(0.05)
    assert alice.secret(backup_key) is None, "the backup's key outlived it"
    assert alice.secret(restored_key) is not None
