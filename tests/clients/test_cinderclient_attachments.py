"""Nova's attach flow driven by the real `cinder attachment-*` commands: two instances on
one multiattach volume, one read-write and one read-only, and the refusal of a second
instance on an ordinary volume."""

import uuid

from conftest import table

I1 = str(uuid.uuid4())
I2 = str(uuid.uuid4())


def attachment_create(cinder, volume, server, *extra):
    return table(cinder("attachment-create", volume, server, *extra, version="3.54").stdout)


def test_multiattach_rw_and_ro(cinder):
    cinder("type-create", "multiattach")
    cinder("type-key", "multiattach", "set", "multiattach=<is> True")
    volume = table(cinder("create", "--volume-type", "multiattach", "--name", "shared", "1").stdout)["id"]

    first = attachment_create(
        cinder, volume, I1, "--connect", "True", "--initiator", "iqn.2004-10.com.ubuntu:01:a",
        "--ip", "10.0.0.5", "--host", "cmp-1", "--mountpoint", "/dev/vdb", "--mode", "rw",
    )
    assert first["status"] == "attaching"
    cinder("attachment-complete", first["id"], version="3.54")

    second = attachment_create(cinder, volume, I2, "--mode", "ro")
    assert second["status"] == "reserved"
    assert table(cinder("show", volume).stdout)["status"] == "reserved"
    cinder(
        "attachment-update", second["id"], "--initiator", "iqn.2004-10.com.ubuntu:01:b",
        "--ip", "10.0.0.6", "--host", "cmp-2", "--mountpoint", "/dev/vdc", version="3.54",
    )
    cinder("attachment-complete", second["id"], version="3.54")

    shown = table(cinder("attachment-show", second["id"], version="3.54").stdout)
    assert shown["status"] == "attached"
    assert shown["attach_mode"] == "ro"
    assert shown["access_mode"] == "ro"
    assert table(cinder("attachment-show", first["id"], version="3.54").stdout)["attach_mode"] == "rw"

    volume_view = table(cinder("show", volume).stdout)
    assert volume_view["status"] == "in-use"
    assert first["id"] in volume_view["attachment_ids"] and second["id"] in volume_view["attachment_ids"]

    listed = cinder("attachment-list", "--volume-id", volume).stdout
    assert first["id"] in listed and second["id"] in listed
    assert first["id"] in cinder("attachment-list", "--all-tenants", "1").stdout

    cinder("attachment-delete", first["id"], version="3.54")
    assert table(cinder("show", volume).stdout)["status"] == "in-use"
    cinder("attachment-delete", second["id"], version="3.54")
    assert table(cinder("show", volume).stdout)["status"] == "available"


def test_second_instance_refused_on_an_ordinary_volume(cinder):
    volume = table(cinder("create", "--name", "single", "1").stdout)["id"]
    attachment_create(cinder, volume, I1)
    refused = cinder("attachment-create", volume, I2, version="3.54", check=False)
    assert refused.returncode != 0
    message = refused.stdout + refused.stderr
    assert "status must be available or downloading to reserve" in message, message
    assert "(HTTP 400)" in message
