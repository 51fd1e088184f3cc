"""A real hypervisor as the host: a libvirt domain under QEMU (KVM where /dev/kvm is there,
else TCG), started by scripts/start-libvirt, with no guest OS. Volumes on a real Ceph with
the shared credentials stock Nova uses (cinder.conf's rbd_user and rbd_secret_uuid, the
key held in a libvirt secret defined beforehand, as on a Nova hypervisor) are attached to
it from the XML Nova's own libvirt volume driver makes of our connection info
(tests/nova/libvirt_disk.py), and written and read through the monitor's `qemu-io`
command, which QEMU runs on the disk's own block backend.

Shown: the bytes land in the volume's image; an `ro` attachment's disk refuses writes;
and with `fence=on`, once the attachment is deleted while the domain still holds the disk
(a partitioned or evacuated hypervisor), the disk's next write fails within 2 s of the
delete's answer while the same domain's disk of another volume goes on writing. Runs on
SQLite and on PostgreSQL."""

import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from conftest import REPO, Server, _stores
from test_images import api, connector
from test_images_on_ceph import ceph_conf

SECRET_UUID = "5b9b5e1e-7d3f-4a4e-9f57-0c1b0de3a1f2"
NOVA_PYTHON = REPO / ".venv-nova" / "bin" / "python"
FENCED_WITHIN = 2.0


def start_libvirt():
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            raise AssertionError("CI is set but this is not root: scripts/start-libvirt needs it")
        pytest.skip("libvirtd needs root here (scripts/start-libvirt)")
    started = subprocess.run([str(REPO / "scripts" / "start-libvirt")], capture_output=True, text=True)
    if started.returncode != 0:
        if os.environ.get("CI"):
            raise AssertionError(f"scripts/start-libvirt failed: {started.stderr}")
        pytest.skip(f"no libvirtd here: {started.stderr.strip()[-300:]}")
    env = {}
    for line in started.stdout.splitlines():
        key, _, value = line.partition("=")
        env[key] = value.strip("'")
    return env


class Hypervisor:
    """The private libvirtd, and a cephx identity shared by every host (what an operator
    gives Cinder and Nova) with its key in a libvirt secret."""

    def __init__(self, conf, pool, work):
        self.env = start_libvirt()
        self.uri = self.env["LIBVIRT_URI"]
        self.user = f"nova{uuid.uuid4().hex[:8]}"
        key = subprocess.run(
            ["ceph", "-c", conf, "auth", "get-or-create-key", f"client.{self.user}",
             "mon", "profile rbd", "osd", f"profile rbd pool={pool}"],
            check=True, capture_output=True, text=True).stdout.strip()
        self.keyring = work / f"{self.user}.keyring"
        self.keyring.write_text(f"[client.{self.user}]\n\tkey = {key}\n")
        secret = work / "secret.xml"
        secret.write_text(
            f"<secret ephemeral='no' private='yes'><uuid>{SECRET_UUID}</uuid>"
            f"<usage type='ceph'><name>client.{self.user} secret</name></usage></secret>")
        self.virsh("secret-define", str(secret))
        key_file = work / "key"
        key_file.write_text(key)
        self.virsh("secret-set-value", SECRET_UUID, "--file", str(key_file))
        self.work = work

    def virsh(self, *args):
        done = subprocess.run(["virsh", "-c", self.uri, *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"virsh {' '.join(args)}: {done.stdout}{done.stderr}"
        return done.stdout

    def start_domain(self):
        return Domain(self)

    def stop(self):
        subprocess.run(["virsh", "-c", self.uri, "secret-undefine", SECRET_UUID], capture_output=True)
        pid = int(self.env["LIBVIRT_PID"])
        try:
            os.kill(pid, 15)
        except ProcessLookupError:
            pass
        shutil.rmtree(self.env["LIBVIRT_WORK"], ignore_errors=True)


class Domain:
    """A running domain with no disk and no OS: the firmware finds nothing to boot and
    waits, which is all a disk's hot-plug and the monitor need (ACPI for the PCI hot-plug).
    Without a guest nothing acknowledges a hot-unplug, so each test has one of its own."""

    def __init__(self, hypervisor):
        self.hypervisor = hypervisor
        kind = "kvm" if os.access("/dev/kvm", os.R_OK | os.W_OK) else "qemu"
        self.domain = f"cinder-attach-{uuid.uuid4().hex[:8]}"
        xml = hypervisor.work / f"{self.domain}.xml"
        xml.write_text(
            f"<domain type='{kind}'><name>{self.domain}</name><memory unit='MiB'>64</memory>"
            "<vcpu>1</vcpu><os><type arch='x86_64' machine='pc'>hvm</type></os>"
            "<features><acpi/></features><devices><memballoon model='none'/></devices></domain>")
        hypervisor.virsh("create", str(xml))
        self.log = Path(hypervisor.env["LIBVIRT_WORK"]) / "log" / "qemu" / f"{self.domain}.log"

    def attach(self, *disks):
        """Attaches the disks Nova's libvirt driver makes of each (connection info, dev);
        for each, the XML and the path of its block backend for the monitor's qemu-io."""
        request = {"libvirt_uri": self.hypervisor.uri,
                   "disks": [{"connection_info": info, "dev": dev} for info, dev in disks]}
        made = subprocess.run([str(NOVA_PYTHON), str(REPO / "tests" / "nova" / "libvirt_disk.py")],
                              input=json.dumps(request), capture_output=True, text=True, timeout=120)
        assert made.returncode == 0, made.stderr
        attached = []
        for (info, dev), disk_xml in zip(disks, json.loads(made.stdout)):
            xml = self.hypervisor.work / f"{self.domain}-{dev}.xml"
            xml.write_text(disk_xml)
            self.hypervisor.virsh("attach-device", self.domain, str(xml), "--live")
            alias = f"ua-{info['data']['volume_id']}"
            attached.append((disk_xml, f"/machine/peripheral/{alias}/virtio-backend"))
        return attached

    def io(self, disk, command):
        """Runs one qemu-io command on the disk's backend inside QEMU: what the monitor
        answered when it refused the command, else the result QEMU printed on its standard
        output, the domain's log (the lines it added)."""
        before = self.log.stat().st_size
        answered = self.hypervisor.virsh("qemu-monitor-command", self.domain, "--hmp", f'qemu-io -d {disk} "{command}"')
        if answered.strip():
            return answered.strip()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(self.log, "rb") as log:
                log.seek(before)
                added = log.read().decode(errors="replace")
            if "ops/sec)" in added or "failed" in added:
                return added
            time.sleep(0.02)
        raise AssertionError(f"qemu-io {command!r} printed nothing: {added!r}")

    def write(self, disk, pattern, offset):
        printed = self.io(disk, f"write -P {pattern:#x} {offset} 4k")
        return "wrote 4096/4096" in printed, printed

    def read(self, disk, pattern, offset):
        printed = self.io(disk, f"read -P {pattern:#x} {offset} 4k")
        return "read 4096/4096" in printed and "verification failed" not in printed, printed

    def destroy(self):
        subprocess.run(["virsh", "-c", self.hypervisor.uri, "destroy", self.domain], capture_output=True)


@pytest.fixture(scope="module")
def hypervisor(tmp_path_factory):
    conf = ceph_conf()
    started = Hypervisor(conf, os.environ.get("CEPH_POOL", "volumes"), tmp_path_factory.mktemp("hypervisor"))
    yield started
    started.stop()


def image_bytes(conf, pool, volume, offset, length):
    """What the volume's image holds at `offset` (inside its first 4 MiB object), read from
    the object itself with the rados CLI, not through the domain."""
    info = json.loads(subprocess.run(["rbd", "-c", conf, "info", "--format", "json", f"{pool}/volume-{volume}"],
                                     check=True, capture_output=True, text=True).stdout)
    assert offset + length <= 1 << info["order"], info
    obj = f"{info['block_name_prefix']}.{0:016x}"
    out = subprocess.run(["rados", "-c", conf, "-p", pool, "get", obj, "-"], check=True, capture_output=True).stdout
    return out[offset:offset + length]


def watchers(conf, pool, volume):
    status = subprocess.run(["rbd", "-c", conf, "status", "--format", "json", f"{pool}/volume-{volume}"],
                            check=True, capture_output=True, text=True).stdout
    return [w["address"] for w in json.loads(status)["watchers"]]


def attach(server, volume, mode):
    hv = dict(connector(), host="hypervisor-1")
    made = api(server, "POST", "/attachments", version="3.54", json={"attachment": {
        "volume_uuid": volume, "instance_uuid": str(uuid.uuid4()), "connector": hv, "mode": mode}})
    assert made.status_code == 200, made.text
    attachment = made.json()["attachment"]
    done = api(server, "POST", f"/attachments/{attachment['id']}/action", version="3.54",
               json={"os-complete": None})
    assert done.status_code == 204, done.text
    # Nova's shape of it (nova/volume/cinder.py, _translate_attachment_ref): the volume
    # type taken out, the rest under `data`.
    data = dict(attachment["connection_info"])
    data.pop("attachment_id", None)
    return attachment["id"], {"driver_volume_type": data.pop("driver_volume_type"), "data": data}


def first_failure_after_delete(server, attachment, io):
    """Deletes the attachment, then repeats `io` until it fails: how long after the
    delete's answer that was, and what QEMU printed."""
    started = time.monotonic()
    deleted = api(server, "DELETE", f"/attachments/{attachment}", version="3.54")
    assert deleted.status_code == 200, deleted.text
    answered = time.monotonic()
    while time.monotonic() - answered < 10:
        ok, printed = io()
        if not ok:
            failed_after = time.monotonic() - answered
            print(f"delete answered in {answered - started:.3f} s; the next I/O failed after {failed_after:.3f} s")
            return failed_after, printed
    raise AssertionError(f"the disk of {attachment} went on after its attachment was deleted")


@pytest.mark.parametrize("store", _stores())
def test_nova_built_disks_on_a_libvirt_domain_and_the_detached_one_fenced(store, hypervisor):
    conf = ceph_conf()
    pool = os.environ.get("CEPH_POOL", "volumes")
    server = Server(store, extra_args=(
        "--backend", f"ceph=rbd,conf={conf},pool={pool},user={hypervisor.user},"
                     f"keyring={hypervisor.keyring},secret_uuid={SECRET_UUID},fence=on"))
    domain = hypervisor.start_domain()
    try:
        assert api(server, "POST", "/types", json={"volume_type": {
            "name": "ceph", "extra_specs": {"volume_backend_name": "ceph"}}}).status_code == 200
        volumes = {}
        for name in ("a", "b", "c"):
            created = api(server, "POST", "/volumes", json={"volume": {"size": 1, "volume_type": "ceph"}})
            assert created.status_code == 202, created.text
            volumes[name] = created.json()["volume"]["id"]
        for volume in volumes.values():
            for _ in range(600):
                if api(server, "GET", f"/volumes/{volume}").json()["volume"]["status"] == "available":
                    break
                time.sleep(0.05)
        a_attachment, a_info = attach(server, volumes["a"], "rw")
        _, b_info = attach(server, volumes["b"], "rw")
        c_attachment, c_info = attach(server, volumes["c"], "ro")
        # Cinder's shared connection info: the backend's user and the hypervisor's secret.
        assert a_info["data"]["auth_username"] == hypervisor.user
        assert a_info["data"]["secret_uuid"] == SECRET_UUID
        assert "keyring" not in a_info["data"]

        (a_xml, a), (_, b), (c_xml, c) = domain.attach((a_info, "vdb"), (b_info, "vdc"), (c_info, "vdd"))
        assert f'<secret type="ceph" uuid="{SECRET_UUID}"/>' in a_xml, a_xml
        assert f'name="{pool}/volume-{volumes["a"]}"' in a_xml, a_xml
        assert "<readonly/>" in c_xml, c_xml
        # Each disk QEMU opens is a librados client of its own, watching the image's
        # header: the read-only one too (QEMU opens every image with rbd_open, librbd's
        # read-only open would not watch), so a fence finds it as well.
        seen = [watchers(conf, pool, volumes[name]) for name in ("a", "b", "c")]
        assert all(len(addresses) == 1 and addresses[0].startswith("127.0.0.1:") for addresses in seen), seen
        assert len({addresses[0] for addresses in seen}) == 3, seen

        for disk, pattern in [(a, 0x5A), (b, 0xB2)]:
            wrote, printed = domain.write(disk, pattern, 1 << 20)
            assert wrote, printed
            read, printed = domain.read(disk, pattern, 1 << 20)
            assert read, printed
        assert image_bytes(conf, pool, volumes["a"], 1 << 20, 4096) == bytes([0x5A]) * 4096
        assert image_bytes(conf, pool, volumes["b"], 1 << 20, 4096) == bytes([0xB2]) * 4096
        wrote, printed = domain.write(c, 0x11, 0)
        assert not wrote and "read-only" in printed.lower(), printed

        # The attachment ends while the domain still holds the disk: its next write fails.
        failed_after, printed = first_failure_after_delete(
            server, a_attachment, lambda: domain.write(a, 0x5B, 1 << 20))
        assert failed_after < FENCED_WITHIN, failed_after
        # A blocklisted client's requests end in ESHUTDOWN.
        assert "transport endpoint shutdown" in printed, printed
        # The same domain's disk of another volume is another client: it goes on.
        wrote, printed = domain.write(b, 0xB3, 1 << 20)
        assert wrote, printed
        assert image_bytes(conf, pool, volumes["b"], 1 << 20, 4096) == bytes([0xB3]) * 4096
        assert image_bytes(conf, pool, volumes["a"], 1 << 20, 4096) == bytes([0x5A]) * 4096

        events = api(server, "GET", f"/events?volume_id={volumes['a']}&event_type=volume.host_fence").json()
        assert [e["payload"]["outcome"] for e in events["events"]] == ["fenced"], events
        assert events["events"][0]["payload"]["host_ip"] == "127.0.0.1"

        # The read-only disk's client is cut off the same way: it reads no more.
        read, printed = domain.read(c, 0, 0)
        assert read, printed
        failed_after, printed = first_failure_after_delete(server, c_attachment, lambda: domain.read(c, 0, 0))
        assert failed_after < FENCED_WITHIN, failed_after
        wrote, printed = domain.write(b, 0xB4, 1 << 20)
        assert wrote, printed
    finally:
        domain.destroy()
        server.stop()
