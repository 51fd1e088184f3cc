"""Backups on a Ceph pool as an operator configures them (cinder.conf's `backup_driver =
cinder.backup.drivers.ceph.CephBackupDriver`, a `client.cinder-backup` identity allowed
the `backups` pool only) and a user drives them with the `cinder` CLI: a full backup and
an incremental one of a file volume, the incremental one a clone of the full one's image,
both restored byte for byte. Runs on SQLite and on PostgreSQL."""

import hashlib
import json
import os
import subprocess
import time

import pytest

from conftest import Server, _stores, table
from test_images import api
from test_images_on_ceph import ceph_conf, rbd

MIB = 1 << 20
POOL = os.environ.get("CEPH_BACKUP_POOL", "backups")


@pytest.fixture(scope="module")
def backup_conf(tmp_path_factory):
    """A ceph.conf naming the keyring of an identity that may use the backups pool only,
    and a cinder.conf choosing Cinder's ceph backup driver with it."""
    conf = ceph_conf()
    work = tmp_path_factory.mktemp("ceph-backup")
    keyring = work / "ceph.client.cinder-backup.keyring"
    subprocess.run(
        ["ceph", "-c", conf, "auth", "get-or-create", "client.cinder-backup",
         "mon", "profile rbd", "osd", f"profile rbd pool={POOL}", "-o", str(keyring)],
        check=True, capture_output=True, text=True,
    )
    ceph = work / "ceph.conf"
    ceph.write_text(open(conf).read() + f"\n[client.cinder-backup]\nkeyring = {keyring}\n")
    cinder_conf = work / "cinder.conf"
    cinder_conf.write_text(
        "[DEFAULT]\nbackup_driver = cinder.backup.drivers.ceph.CephBackupDriver\n"
        f"backup_ceph_conf = {ceph}\nbackup_ceph_user = cinder-backup\nbackup_ceph_pool = {POOL}\n"
    )
    return cinder_conf


def cli(server, *args):
    env = dict(os.environ, OS_AUTH_TYPE="noauth", CINDER_ENDPOINT=f"{server.url}/v3",
               OS_USER_ID="admin", OS_PROJECT_ID="p1", OS_VOLUME_API_VERSION="3.64")
    result = subprocess.run(["cinder", *args], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"cinder {' '.join(args)}: {result.stdout}{result.stderr}"
    return table(result.stdout)


def wait(server, kind, id, status):
    """Polls the volume or backup over HTTP (a CLI call costs a second) until `status`."""
    for _ in range(1200):
        shown = api(server, "GET", f"/{kind}s/{id}").json()[kind]
        if shown["status"] == status:
            return shown
        time.sleep(0.05)
    raise AssertionError(f"{kind} {id} never {status}: {shown}")


def write_at(path, offset, data):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


@pytest.mark.parametrize("store", _stores())
def test_backups_go_to_the_pool_and_incrementals_are_clones(store, backup_conf):
    conf = ceph_conf()
    server = Server(store, extra_args=("--config-file", str(backup_conf)))
    try:
        volume = cli(server, "create", "--name", "db", "1")
        wait(server, "volume", volume["id"], "available")
        disk = server.volumes_dir / f"volume-{volume['id']}"
        write_at(disk, 0, os.urandom(2 * MIB))
        full = cli(server, "backup-create", "--name", "full", volume["id"])
        shown = wait(server, "backup", full["id"], "available")
        assert shown["container"] == POOL, shown
        before = digest(disk)

        write_at(disk, 5 * MIB, os.urandom(MIB))
        incremental = cli(server, "backup-create", "--incremental", volume["id"])
        wait(server, "backup", incremental["id"], "available")
        image = f"{POOL}/volume-{volume['id']}.backup-{incremental['id']}"
        info = json.loads(rbd(conf, "info", "--format", "json", image))
        assert info["parent"]["image"] == f"volume-{volume['id']}.backup-{full['id']}", info
        assert info["parent"]["snapshot"] == "backup", info

        for backup, data in [(incremental["id"], digest(disk)), (full["id"], before)]:
            restored = cli(server, "backup-restore", "--name", "back", backup)
            wait(server, "backup", backup, "available")
            wait(server, "volume", restored["volume_id"], "available")
            assert digest(server.volumes_dir / f"volume-{restored['volume_id']}") == data

        exported = cli(server, "backup-export", full["id"])
        assert exported["backup_service"] == "cinder.backup.drivers.ceph.CephBackupDriver"
        for backup in [incremental["id"], full["id"]]:
            cli(server, "backup-delete", backup)
            for _ in range(300):
                if f".backup-{backup}" not in rbd(conf, "ls", POOL):
                    break
                time.sleep(0.1)
            assert f".backup-{backup}" not in rbd(conf, "ls", POOL), "the image was not removed"
    finally:
        server.stop()
