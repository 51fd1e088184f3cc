"""Nova's attach flow driven by the real `cinder attachment-*` commands: two instances on
one multiattach volume, one read-write and one read-only; three servers on a volume whose
type caps it at three attachments; a single-writer type; and the refusal of a second
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
    # The first server keeps using the volume while the second attaches.
    assert table(cinder("show", volume).stdout)["status"] == "in-use"
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


def connect_args(host, mode):
    return ("--connect", "True", "--initiator", f"iqn.2004-10.com.ubuntu:01:{host}", "--ip", "10.0.0.9",
            "--host", host, "--mountpoint", "/dev/vdb", "--mode", mode)


def test_three_servers_and_the_limits(cinder):
    cinder("type-create", "shared3")
    cinder("type-key", "shared3", "set", "multiattach=<is> True", "attach:max_attachments=3")
    volume = table(cinder("create", "--volume-type", "shared3", "--name", "three", "1").stdout)["id"]

    # Two rw and one ro, all connected before any completes.
    made = [attachment_create(cinder, volume, str(uuid.uuid4()), *connect_args(host, mode))
            for host, mode in (("cmp-1", "rw"), ("cmp-2", "rw"), ("cmp-3", "ro"))]
    assert [a["status"] for a in made] == ["attaching"] * 3
    for attachment in made:
        cinder("attachment-complete", attachment["id"], version="3.54")
    assert table(cinder("show", volume).stdout)["status"] == "in-use"
    modes = [table(cinder("attachment-show", a["id"], version="3.54").stdout)["attach_mode"] for a in made]
    assert modes == ["rw", "rw", "ro"]

    refused = cinder("attachment-create", volume, str(uuid.uuid4()), version="3.54", check=False)
    message = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert "already has 3 attachments" in message and "(HTTP 400)" in message, message

    # A single-writer type: readers beside one writer, a second writer refused.
    cinder("type-create", "onewriter")
    cinder("type-key", "onewriter", "set", "multiattach=<is> True", "attach:single_writer=<is> True")
    shared = table(cinder("create", "--volume-type", "onewriter", "--name", "sw", "1").stdout)["id"]
    writer = attachment_create(cinder, shared, str(uuid.uuid4()), *connect_args("cmp-1", "rw"))
    attachment_create(cinder, shared, str(uuid.uuid4()), *connect_args("cmp-2", "ro"))
    refused = cinder("attachment-create", shared, str(uuid.uuid4()), *connect_args("cmp-3", "rw"),
                     version="3.54", check=False)
    message = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert f"attachment {writer['id']} holds write access" in message, message

    bad = cinder("type-key", "onewriter", "set", "attach:max_attachments=lots", check=False)
    assert bad.returncode != 0
