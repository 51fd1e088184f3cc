"""The python-cinderclient CLI against cinder-attach: quotas, limits and private types."""

import urllib.error
import urllib.request

from conftest import table


def test_quotas_and_limits(cinder):
    shown = table(cinder("quota-show", "p1").stdout)
    assert shown["volumes"] == "10"
    assert shown["gigabytes"] == "1000"
    assert shown["per_volume_gigabytes"] == "-1"

    cinder("quota-update", "--volumes", "2", "--gigabytes", "3", "p1")
    assert table(cinder("quota-show", "p1").stdout)["volumes"] == "2"
    assert table(cinder("quota-defaults", "p1").stdout)["volumes"] == "10"

    cinder("create", "--name", "a", "1")
    refused = cinder("create", "--name", "b", "5", check=False)
    assert refused.returncode != 0
    out = refused.stdout + refused.stderr
    assert "Requested volume or snapshot exceeds allowed gigabytes quota" in out, out
    assert "(HTTP 413)" in out, out

    usage = cinder("quota-usage", "p1").stdout
    row = next(line for line in usage.splitlines() if "| volumes " in line)
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    assert cells[:4] == ["volumes", "1", "0", "2"], row  # Type, In_use, Reserved, Limit (Allocated empty)

    limits = cinder("absolute-limits").stdout
    assert "maxTotalVolumes" in limits and "totalVolumesUsed" in limits

    cinder("quota-class-update", "--volumes", "7", "default")
    assert table(cinder("quota-class-show", "default").stdout)["volumes"] == "7"
    cinder("quota-delete", "p1")
    assert table(cinder("quota-show", "p1").stdout)["volumes"] == "7"


def test_private_type_access(server, cinder):
    cinder("type-create", "--is-public", "false", "vip")
    listed = cinder("type-list").stdout
    assert "vip" in listed  # admins see private types
    type_id = next(line.split("|")[1].strip() for line in listed.splitlines() if "| vip " in line)

    # Another project's member cannot see it until access is given.
    def other_sees():
        request = urllib.request.Request(
            f"{server.url}/v3/p2/types/{type_id}", headers={"X-Auth-Token": "eve:p2:member,reader"})
        try:
            with urllib.request.urlopen(request) as response:
                return response.status == 200
        except urllib.error.HTTPError as err:
            assert err.code == 404
            return False

    assert not other_sees()
    cinder("type-access-add", "--volume-type", type_id, "--project-id", "p2")
    access = cinder("type-access-list", "--volume-type", type_id).stdout
    assert "p2" in access
    assert other_sees()
    again = cinder("type-access-add", "--volume-type", type_id, "--project-id", "p2", check=False)
    assert again.returncode != 0 and "already exists" in again.stdout + again.stderr
    cinder("type-access-remove", "--volume-type", type_id, "--project-id", "p2")
    assert not other_sees()


def test_qos_specs_reach_the_attachment(server, cinder):
    created = table(cinder("qos-create", "fast", "consumer=front-end", "read_iops_sec=2000").stdout)
    qos_id = created["id"]
    cinder("qos-key", qos_id, "set", "write_iops_sec=1000")
    cinder("type-create", "--is-public", "true", "speedy")
    type_id = next(line.split("|")[1].strip() for line in cinder("type-list").stdout.splitlines()
                   if "| speedy " in line)
    cinder("qos-associate", qos_id, type_id)
    assert "speedy" in cinder("qos-get-association", qos_id).stdout
    assert "fast" in cinder("qos-list").stdout

    volume = table(cinder("create", "--volume-type", "speedy", "1").stdout)["id"]
    attached = cinder("attachment-create", "--connect", "True", "--initiator", "iqn.1993-08.org.debian:01:abc",
                      "--ip", "10.0.0.2", "--host", "cmp-1", "--platform", "x86_64", "--ostype", "linux",
                      "--multipath", "False", "--mountpoint", "/dev/vdb", volume,
                      "c1111111-1111-4111-8111-111111111111").stdout
    assert "'read_iops_sec': '2000'" in attached and "'write_iops_sec': '1000'" in attached, attached

    in_use = cinder("qos-delete", qos_id, check=False)
    assert in_use.returncode != 0 and "Qos specs still in use" in in_use.stdout + in_use.stderr
    cinder("qos-disassociate-all", qos_id)
    cinder("qos-delete", qos_id)
    assert "fast" not in cinder("qos-list").stdout
