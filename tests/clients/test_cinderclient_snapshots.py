"""The python-cinderclient CLI against cinder-attach: snapshots, volumes from them, clones."""

from conftest import table


def test_snapshots_clones_and_cascade(server, cinder):
    volume = table(cinder("create", "--name", "origin", "1").stdout)["id"]
    data = server.volumes_dir / f"volume-{volume}"
    with open(data, "r+b") as f:
        f.seek(4096)
        f.write(b"kept")

    snap = table(cinder("snapshot-create", "--name", "s1", "--metadata", "k=v", volume).stdout)
    assert snap["status"] == "available"
    assert (server.volumes_dir / f"snapshot-{snap['id']}").exists()
    assert "s1" in cinder("snapshot-list").stdout
    cinder("snapshot-rename", snap["id"], "s2")
    shown = table(cinder("snapshot-show", snap["id"]).stdout)
    assert shown["name"] == "s2"
    assert "'k': 'v'" in shown["metadata"]

    restored = table(cinder("create", "--snapshot-id", snap["id"], "--name", "restored").stdout)
    assert restored["status"] == "available"
    with open(server.volumes_dir / f"volume-{restored['id']}", "rb") as f:
        f.seek(4096)
        assert f.read(4) == b"kept"
    clone = table(cinder("create", "--source-volid", volume, "--name", "clone").stdout)
    assert clone["source_volid"] == volume

    refused = cinder("delete", volume, check=False)
    assert refused.returncode != 0 and "have snapshots" in refused.stdout + refused.stderr
    cinder("delete", "--cascade", volume)
    assert not (server.volumes_dir / f"snapshot-{snap['id']}").exists()
    assert "s2" not in cinder("snapshot-list").stdout
