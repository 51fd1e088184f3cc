"""The python-cinderclient CLI against cinder-attach: types, extra specs, volumes."""

from conftest import table


def test_multiattach_volume_lifecycle(server, cinder):
    cinder("type-create", "multiattach")
    cinder("type-key", "multiattach", "set", "multiattach=<is> True")
    specs = cinder("extra-specs-list").stdout
    assert "<is> True" in specs

    created = table(cinder("create", "--volume-type", "multiattach", "--name", "v1", "1").stdout)
    volume_id = created["id"]
    data = server.volumes_dir / f"volume-{volume_id}"
    assert data.exists(), "the backend created the volume's file"

    shown = table(cinder("show", "v1").stdout)
    assert shown["multiattach"] == "True"
    assert shown["status"] == "available"
    assert shown["volume_type"] == "multiattach"

    cinder("retype", "v1", "__DEFAULT__")
    shown = table(cinder("show", "v1").stdout)
    assert shown["volume_type"] == "__DEFAULT__"
    assert shown["multiattach"] == "False"

    cinder("delete", "v1")
    assert not data.exists(), "deleting removed the file"
    assert "v1" not in cinder("list").stdout


def test_refusals_reach_the_user(cinder):
    refused = cinder("create", "--volume-type", "nope", "1", check=False)
    assert refused.returncode != 0
    assert "Volume type with name nope could not be found" in refused.stdout + refused.stderr
    cinder("type-create", "dup")
    again = cinder("type-create", "dup", check=False)
    assert again.returncode != 0
    assert "already exists" in again.stdout + again.stderr


def test_version_discovery(server, cinder):
    listed = cinder("version-list").stdout
    assert "3.71" in listed and "3.0" in listed
