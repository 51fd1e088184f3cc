"""The python-cinderclient CLI against cinder-attach: what an operator runs first
(service-list, get-pools, get-capabilities, availability zones, extensions) and what a
user runs every week (extend, transfers)."""

import time

from conftest import table


def rows(output):
    """The data rows of a cinder CLI table, as lists of cells."""
    found = []
    for line in output.splitlines():
        if line.startswith("|") and not line.startswith("+"):
            found.append([c.strip() for c in line.strip().strip("|").split("|")])
    return found[1:]


def test_service_views(cinder):
    services = rows(cinder("service-list").stdout)
    binaries = sorted(r[0] for r in services)
    assert binaries == ["cinder-backup", "cinder-scheduler", "cinder-volume"], services
    volume = next(r for r in services if r[0] == "cinder-volume")
    host = volume[1]
    assert host.endswith("@file") and volume[3] == "enabled" and volume[4] == "up", volume

    cinder("service-disable", "--reason", "maintenance", host, "cinder-volume")
    disabled = next(r for r in rows(cinder("service-list", "--withreplication").stdout)
                    if r[0] == "cinder-volume")
    assert "disabled" in disabled and "maintenance" in disabled, disabled
    cinder("service-enable", host, "cinder-volume")

    pools = cinder("get-pools", "--detail").stdout
    assert f"{host}#file" in pools
    for key in ("volume_backend_name", "vendor_name", "storage_protocol", "free_capacity_gb"):
        assert key in pools, pools
    capabilities = table(cinder("get-capabilities", host).stdout)
    assert capabilities["volume_backend_name"] == "file"
    assert capabilities["vendor_name"] == "Open Source"
    assert capabilities["storage_protocol"] == "local"

    zones = cinder("availability-zone-list").stdout
    assert "nova" in zones and "available" in zones
    extensions = cinder("list-extensions").stdout
    assert "os-volume-actions" in extensions


def test_placement_error_volume_has_a_message(cinder):
    cinder("type-create", "fibre")
    cinder("type-key", "fibre", "set", "storage_protocol=FC")
    created = table(cinder("create", "--volume-type", "fibre", "1").stdout)
    assert created["status"] == "error"
    messages = cinder("message-list").stdout
    assert created["id"] in messages
    assert "schedule allocate volume" in messages or "VOLUME_VOLUME_001_003" in messages, messages


def test_extend_and_transfer(cinder):
    volume = table(cinder("create", "--name", "grow", "1").stdout)["id"]
    cinder("extend", volume, "3")
    assert table(cinder("show", volume).stdout)["size"] == "3"

    offered = table(cinder("transfer-create", "--name", "to-p2", volume).stdout)
    assert offered["volume_id"] == volume and len(offered["auth_key"]) == 16
    assert table(cinder("show", volume).stdout)["status"] == "awaiting-transfer"
    assert offered["id"] in cinder("transfer-list").stdout
    assert table(cinder("transfer-show", offered["id"]).stdout)["name"] == "to-p2"

    wrong = cinder("transfer-accept", offered["id"], "0" * 16, project="p2", check=False)
    assert wrong.returncode != 0 and "Invalid auth key" in wrong.stdout + wrong.stderr
    cinder("transfer-accept", offered["id"], offered["auth_key"], project="p2")
    moved = table(cinder("show", volume, project="p2").stdout)
    assert moved["status"] == "available"
    assert moved["os-vol-tenant-attr:tenant_id"] == "p2"
    assert offered["id"] not in cinder("transfer-list").stdout

    # A withdrawn offer gives the volume back.
    other = table(cinder("create", "--name", "stay", "1").stdout)["id"]
    withdrawn = table(cinder("transfer-create", other).stdout)["id"]
    cinder("transfer-delete", withdrawn)
    assert table(cinder("show", other).stdout)["status"] == "available"


def test_encryption_types(cinder):
    """encryption-type-create/-show/-update/-list/-delete as an operator runs them; with
    no key manager configured, a volume of the encrypted type is refused, naming why."""
    cinder("type-create", "luks")
    created = rows(cinder("encryption-type-create", "--cipher", "aes-xts-plain64", "--key-size", "256",
                          "--control-location", "front-end", "luks", "luks").stdout)
    assert created and created[0][1:] == ["luks", "aes-xts-plain64", "256", "front-end"], created
    shown = rows(cinder("encryption-type-show", "luks").stdout)
    assert shown[0][1:] == ["luks", "aes-xts-plain64", "256", "front-end"], shown
    cinder("encryption-type-update", "--key-size", "512", "luks")
    assert rows(cinder("encryption-type-show", "luks").stdout)[0][3] == "512"
    listed = cinder("encryption-type-list").stdout
    assert "luks" in listed and "512" in listed, listed
    refused = cinder("create", "--volume-type", "luks", "1", check=False)
    assert refused.returncode != 0
    assert "no key manager is configured" in refused.stdout + refused.stderr
    cinder("encryption-type-delete", "luks")
    assert rows(cinder("encryption-type-show", "luks").stdout) == []
    plain = table(cinder("create", "--volume-type", "luks", "1").stdout)
    assert plain["encrypted"] == "False", plain


def test_group_types(cinder):
    """Group types as an operator makes them with the CLI (3.11+), answers checked
    against tempest's response schemas by the proxy."""
    [made] = rows(cinder("group-type-create", "--description", "consistent", "cg-type").stdout)
    type_id = made[0]
    assert made[1:] == ["cg-type", "consistent"], made
    cinder("group-type-key", "cg-type", "set", "consistent_group_snapshot_enabled=<is> True")
    specs = cinder("group-specs-list").stdout
    assert "consistent_group_snapshot_enabled" in specs and "<is> True" in specs, specs
    cinder("group-type-update", "--name", "cg-renamed", "--is-public", "false", type_id)
    shown = table(cinder("group-type-show", type_id).stdout)
    assert shown["name"] == "cg-renamed" and shown["is_public"] == "False", shown
    assert "cg-renamed" in cinder("group-type-list").stdout, "admins list private types too"
    cinder("group-type-key", "cg-renamed", "unset", "consistent_group_snapshot_enabled")
    assert "consistent_group_snapshot_enabled" not in cinder("group-type-show", type_id).stdout
    cinder("group-type-delete", type_id)
    gone = cinder("group-type-show", type_id, check=False)
    assert gone.returncode != 0 and "No grouptype with a name or ID" in gone.stderr, gone.stderr


def test_groups(cinder):
    """Generic volume groups as a user drives them with the CLI (3.13+): a group, a volume
    made in it, another added and removed, a clone of the group, an admin's reset, and
    deletes with the volumes. At 3.57: from 3.58 Cinder shows admins the project id, which
    tempest's schemas (checked by the proxy) do not allow."""
    v = "3.57"
    cinder("type-create", "grp-gold", version=v)
    cinder("group-type-create", "grp-generic", version=v)
    made = table(cinder("group-create", "--name", "g1", "grp-generic", "grp-gold", version=v).stdout)
    group = made["id"]
    shown = table(cinder("group-show", group, version=v).stdout)
    assert shown["status"] == "available" and shown["name"] == "g1", shown
    inside = table(cinder("create", "--group-id", group, "--volume-type", "grp-gold",
                          "--name", "in-g1", "1", version=v).stdout)
    outside = table(cinder("create", "--volume-type", "grp-gold", "--name", "out", "1",
                           version=v).stdout)
    assert inside["group_id"] == group, inside
    cinder("group-update", "--add-volumes", outside["id"], "--name", "g1-renamed", group,
           version=v)
    members = cinder("list", "--group_id", group, version=v).stdout
    assert inside["id"] in members and outside["id"] in members, members
    cinder("group-update", "--remove-volumes", outside["id"], group, version=v)
    assert outside["id"] not in cinder("list", "--group_id", group, version=v).stdout
    refused = cinder("group-update", "--remove-volumes", outside["id"], group, version=v,
                     check=False)
    assert refused.returncode != 0 and "is not in the group" in refused.stderr, refused.stderr

    copy = table(cinder("group-create-from-src", "--source-group", group, "--name", "g2",
                        version=v).stdout)
    listed = cinder("group-list", version=v).stdout
    assert "g1-renamed" in listed and "g2" in listed, listed
    assert len(rows(cinder("list", "--group_id", copy["id"], version=v).stdout)) == 1

    snap = table(cinder("group-snapshot-create", "--name", "gs1", group, version=v).stdout)
    shown = table(cinder("group-snapshot-show", snap["id"], version=v).stdout)
    assert shown["status"] == "available" and shown["group_id"] == group, shown
    assert "gs1" in cinder("group-snapshot-list", version=v).stdout
    restored = table(cinder("group-create-from-src", "--group-snapshot", snap["id"],
                            "--name", "g3", version=v).stdout)
    assert len(rows(cinder("list", "--group_id", restored["id"], version=v).stdout)) == 1
    cinder("group-delete", "--delete-volumes", restored["id"], version=v)
    cinder("group-snapshot-delete", snap["id"], version=v)
    assert "gs1" not in cinder("group-snapshot-list", version=v).stdout

    cinder("reset-state", "--type", "group", "--state", "error", copy["id"], version=v)
    assert table(cinder("group-show", copy["id"], version=v).stdout)["status"] == "error"
    kept = cinder("group-delete", group, version=v, check=False)
    assert kept.returncode != 0 and "delete-volumes flag is required" in kept.stdout, kept.stdout
    cinder("group-delete", "--delete-volumes", group, copy["id"], version=v)
    assert "g1-renamed" not in cinder("group-list", version=v).stdout
    assert inside["id"] not in cinder("list", version=v).stdout
    cinder("delete", outside["id"], version=v)


def _wait_backup(cinder, backup, status):
    for _ in range(600):
        shown = table(cinder("backup-show", backup).stdout)
        if shown["status"] == status:
            return shown
        time.sleep(0.1)
    raise AssertionError(f"backup {backup} never {status}: {shown}")


def test_backups(cinder):
    """Backups as a user drives them with the CLI: a full backup and an incremental one,
    a restore to a new volume, the record exported (and refused back while it exists),
    an admin's reset and force delete. Every answer passes tempest's backup schemas."""
    source = table(cinder("create", "--name", "bk-src", "--metadata", "tier=gold", "1").stdout)
    full = table(cinder("backup-create", "--name", "bk-full", source["id"]).stdout)
    shown = _wait_backup(cinder, full["id"], "available")
    assert shown["is_incremental"] == "False" and shown["size"] == "1", shown
    incremental = table(cinder("backup-create", "--incremental", source["id"]).stdout)
    shown = _wait_backup(cinder, incremental["id"], "available")
    assert shown["is_incremental"] == "True", shown
    assert "bk-full" in cinder("backup-list").stdout

    restored = table(cinder("backup-restore", "--name", "bk-back", full["id"]).stdout)
    _wait_backup(cinder, full["id"], "available")
    for _ in range(600):
        shown = cinder("show", restored["volume_id"]).stdout
        volume = table(shown)
        if volume["status"] == "available":
            break
        time.sleep(0.1)
    # The metadata cell spans lines: the source's item is in it, beside src_backup_id.
    assert volume["name"] == "bk-back" and "tier" in shown and "gold" in shown, shown

    exported = table(cinder("backup-export", full["id"]).stdout)
    assert exported["backup_service"].startswith("cinder.backup.drivers"), exported
    again = cinder("backup-import", exported["backup_service"], exported["backup_url"], check=False)
    assert again.returncode != 0 and "already exists" in again.stderr, again.stderr
    refused = cinder("backup-delete", full["id"], check=False)
    assert "Incremental backups exist" in refused.stdout + refused.stderr, refused

    cinder("backup-reset-state", "--state", "error", incremental["id"])
    _wait_backup(cinder, incremental["id"], "error")
    cinder("backup-delete", "--force", incremental["id"])
    for _ in range(600):
        if incremental["id"] not in cinder("backup-list").stdout:
            break
        time.sleep(0.1)
    cinder("backup-delete", full["id"])


def test_manage_and_unmanage(cinder, server):
    """An operator adopts a disk file made outside the service with the CLI, then lets it
    go again: `manageable-list`, `manage` by source-name, `unmanage`."""
    pool = next(r[1] for r in rows(cinder("get-pools").stdout) if r[0] == "name")
    server.volumes_dir.mkdir(parents=True, exist_ok=True)
    (server.volumes_dir / "old-disk.img").write_bytes(b"made before the service")
    listed = cinder("manageable-list", pool, version="3.8").stdout
    assert "old-disk.img" in listed, listed
    made = table(cinder("manage", "--name", "adopted", pool, "old-disk.img").stdout)
    assert made["status"] == "available" and made["size"] == "1", made
    volume = server.volumes_dir / f"volume-{made['id']}"
    assert volume.read_bytes().startswith(b"made before the service")
    cinder("unmanage", made["id"])
    kept = server.volumes_dir / f"unmanaged-volume-{made['id']}"
    assert kept.exists() and not volume.exists()
    assert made["id"] not in cinder("list", "--all-tenants").stdout


def test_snapshot_unmanage_and_manage(cinder, server):
    """A snapshot let go with `snapshot-unmanage` keeps its data, and `snapshot-manage`
    takes it back as a snapshot of its volume."""
    volume = table(cinder("create", "--name", "with-history", "1").stdout)["id"]
    snapshot = table(cinder("snapshot-create", "--name", "old", volume).stdout)["id"]
    cinder("snapshot-unmanage", snapshot)
    kept = server.volumes_dir / f"unmanaged-snapshot-{snapshot}"
    assert kept.exists()
    assert snapshot not in cinder("snapshot-list", "--all-tenants").stdout
    made = table(cinder("snapshot-manage", "--name", "back", "--metadata", "k=v",
                        volume, f"unmanaged-snapshot-{snapshot}").stdout)
    assert made["status"] == "available" and made["volume_id"] == volume, made
    assert made["name"] == "back", made
    assert not kept.exists()
    cinder("snapshot-delete", made["id"])
