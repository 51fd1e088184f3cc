"""The libvirt <disk> elements Nova's own libvirt driver makes of volumes' connection
info: reads {"libvirt_uri": ..., "disks": [{"connection_info": ..., "dev": "vdb"}, ...]}
as JSON on stdin and prints, as a JSON list, the XML that nova.virt.libvirt.volume's
driver hands to libvirt's attach for each (one process: importing Nova takes seconds). Run with
the virtualenv that holds Nova (.venv-nova), as tests/clients/test_libvirt_host.py does.

Only the drivers that need no host-side connector are taken (network disks: `rbd`, and
the rest the same class serves), so nothing here logs in to a target or maps a device."""

import json
import subprocess
import sys
import warnings

warnings.simplefilter("ignore")

from nova import conf as nova_conf  # noqa: E402
from nova.virt.libvirt.volume import net  # noqa: E402


class VirshHost:
    """The part of Nova's libvirt Host the volume drivers call for a network disk: the
    lookup of a libvirt secret by its usage (an encrypted volume's passphrase), asked of
    the hypervisor's libvirtd through virsh (no libvirt-python in this virtualenv)."""

    def __init__(self, uri):
        self.uri = uri

    def find_secret(self, usage_type, usage_id):
        listed = subprocess.run(["virsh", "-c", self.uri, "secret-list"], check=True,
                                capture_output=True, text=True).stdout
        for line in listed.splitlines()[2:]:
            fields = line.split()
            if fields[1:] == [usage_type, usage_id]:
                return Secret(fields[0])
        return None


class Secret:
    def __init__(self, uuid):
        self.uuid = uuid

    def UUIDString(self):  # noqa: N802 (libvirt's name)
        return self.uuid


def main():
    request = json.load(sys.stdin)
    config = nova_conf.CONF
    config([], project="nova", default_config_files=[])
    config.set_override("virt_type", "kvm", group="libvirt")
    driver = net.LibvirtNetVolumeDriver(VirshHost(request["libvirt_uri"]))
    made = []
    for disk in request["disks"]:
        connection_info = dict(disk["connection_info"])
        # Nova keeps the volume's id as the disk's serial (nova/virt/block_device.py).
        connection_info.setdefault("serial", connection_info["data"].get("volume_id"))
        disk_info = {"type": "disk", "dev": disk["dev"], "bus": "virtio"}
        made.append(driver.get_config(connection_info, disk_info).to_xml())
    json.dump(made, sys.stdout)

if __name__ == "__main__":
    main()
