#!/usr/bin/env python3
"""Runs schemathesis against api-ref/openapi.yaml and a freshly started cinder-attach.

The server gets a fresh SQLite database on 127.0.0.1 and a seeded volume, multiattach
volume, attachment and volume type, whose ids schemathesis uses for path parameters so
that generated requests reach real objects, not only 404s. Every check runs except
`ignored_auth` (noauth accepts any token by design, as Cinder's does). Afterwards
`cinder-attach check` must find the database consistent.

Usage: run.py BINARY [--max-examples N] [--seed S]
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
TOKEN = "admin:p1"


def call(base, method, path, body=None, version="3.54"):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("X-Auth-Token", TOKEN)
    request.add_header("OpenStack-API-Version", f"volume {version}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read()
        return json.loads(text) if text else None


def start_server(binary, work):
    log = open(work / "server.log", "w")
    server = subprocess.Popen(
        [binary, "serve", "--listen", "127.0.0.1:0", "--log-format", "json",
         "--database-url", f"sqlite://{work}/db.sqlite",
         "--backend", f"file=file,dir={work}/volumes", "--host", "schemathesis",
         "--backup-posix-path", f"{work}/backups"],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "RUST_LOG": "info"})
    for _ in range(300):
        for line in open(work / "server.log"):
            if "cinder-attach listening" in line:
                return server, "http://" + json.loads(line)["address"]
        if server.poll() is not None:
            sys.exit(f"server exited: {(work / 'server.log').read_text()}")
        time.sleep(0.1)
    sys.exit("server did not start")


def seed(base):
    """Objects for the generated requests to find: (shared ids, ids only deletes use)."""
    def new_type(name):
        return call(base, "POST", "/v3/p1/types", {"volume_type": {
            "name": name, "extra_specs": {"multiattach": "<is> True"}}})["volume_type"]["id"]

    def new_volume(**fields):
        return call(base, "POST", "/v3/p1/volumes", {"volume": {"size": 1, **fields}})["volume"]["id"]

    def new_attachment(volume, instance):
        """Attached and completed, so that the multiattach volume takes the next one."""
        attachment = call(base, "POST", "/v3/p1/attachments", {"attachment": {
            "volume_uuid": volume, "instance_uuid": instance,
            "connector": {"host": "compute-1", "initiator": "iqn.1993-08.org.debian:01:abc"}}})["attachment"]["id"]
        call(base, "POST", f"/v3/p1/attachments/{attachment}/action", {"os-complete": None})
        return attachment

    # The generated creates and extends would soon pass Cinder's default quota (10
    # volumes, 1,000 GiB) and get 413 for everything after; p1 has no limits.
    call(base, "PUT", "/v3/p1/os-quota-sets/p1", {"quota_set": {
        "volumes": -1, "gigabytes": -1, "groups": -1, "backups": -1, "backup_gigabytes": -1}})
    def new_snapshot(volume):
        return call(base, "POST", "/v3/p1/snapshots", {"snapshot": {
            "volume_id": volume, "metadata": {"k": "v"}}})["snapshot"]["id"]

    def new_qos(name):
        return call(base, "POST", "/v3/p1/qos-specs", {"qos_specs": {
            "name": name, "consumer": "front-end", "read_iops_sec": "100"}})["qos_specs"]["id"]

    def new_group_type(name, specs=None):
        return call(base, "POST", "/v3/p1/group_types", {"group_type": {
            "name": name, "group_specs": {"k": "v"} if specs is None else specs}})["group_type"]["id"]

    def new_group(name):
        """Of a group type without specs, so that a backend takes it (`available`)."""
        return call(base, "POST", "/v3/p1/groups", {"group": {
            "name": name, "group_type": groups_type, "volume_types": [type_id]}})["group"]["id"]

    type_id = new_type("schemathesis-multiattach")
    groups_type = new_group_type("schemathesis-groups", specs={})
    shared = new_volume(volume_type=type_id)
    ids = {
        "type_id": type_id,
        "volume_id": new_volume(metadata={"k": "v"}),
        "attachment_id": new_attachment(shared, "3f1a7c52-0d4e-4b7a-9c1e-5a2b3c4d5e6f"),
        "qos_id": new_qos("schemathesis-qos"),
        "group_type_id": new_group_type("schemathesis-group-type"),
        "group_id": new_group("schemathesis-group"),
    }
    ids["snapshot_id"] = new_snapshot(ids["volume_id"])

    def new_group_snapshot(group, name):
        return call(base, "POST", "/v3/p1/group_snapshots", {"group_snapshot": {
            "group_id": group, "name": name}})["group_snapshot"]["id"]

    # A group of its own, so that the spare group's delete is not refused for them.
    snapshotted = new_group("schemathesis-group-snapshotted")
    ids["group_snapshot_id"] = new_group_snapshot(snapshotted, "schemathesis-group-snapshot")
    def new_backup(volume, name):
        """Waited for, so that restores and deletes find it `available`."""
        backup = call(base, "POST", "/v3/p1/backups", {"backup": {
            "volume_id": volume, "name": name}})["backup"]["id"]
        for _ in range(300):
            if call(base, "GET", f"/v3/p1/backups/{backup}")["backup"]["status"] == "available":
                return backup
            time.sleep(0.1)
        sys.exit(f"backup {backup} never became available")

    backed_up = new_volume()
    ids["backup_id"] = new_backup(backed_up, "schemathesis-backup")
    spares = {
        "@SPARE_BACKUP_ID@": new_backup(backed_up, "schemathesis-backup-spare"),
        "@SPARE_ACTION_BACKUP_ID@": new_backup(backed_up, "schemathesis-backup-action"),
        "@SPARE_VOLUME_ID@": new_volume(),
        "@SPARE_ACTION_VOLUME_ID@": new_volume(),
        "@SPARE_ATTACHMENT_ID@": new_attachment(shared, "7d2c9e41-6a3b-4f8e-b1d0-2c3e4f5a6b7c"),
        "@SPARE_QOS_ID@": new_qos("schemathesis-qos-spare"),
        "@SPARE_GROUP_TYPE_ID@": new_group_type("schemathesis-group-type-spare"),
        "@SPARE_GROUP_ID@": new_group("schemathesis-group-spare"),
        "@SPARE_SNAPSHOT_ID@": new_snapshot(ids["volume_id"]),
        "@SPARE_GROUP_SNAPSHOT_ID@": new_group_snapshot(snapshotted, "schemathesis-gs-spare"),
        "@SPARE_ACTION_GROUP_SNAPSHOT_ID@": new_group_snapshot(snapshotted, "schemathesis-gs-action"),
        "@SPARE_ACTION_SNAPSHOT_ID@": new_snapshot(ids["volume_id"]),
    }
    return ids, spares


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--max-examples", default="50")
    parser.add_argument("--seed", default="20261122")
    args = parser.parse_args()
    st = pathlib.Path(sys.executable).with_name("st")
    with tempfile.TemporaryDirectory(prefix="cinder-attach-st-") as tmp:
        work = pathlib.Path(tmp)
        server, base = start_server(args.binary, work)
        try:
            ids, spares = seed(base)
            config = (HERE / "schemathesis.toml").read_text()
            for placeholder, value in {**spares, "@TYPE_ID@": ids["type_id"]}.items():
                config = config.replace(placeholder, value)
            config += "\n[parameters]\n\"path.project_id\" = \"p1\"\n"
            config += "".join(f'"path.{name}" = "{value}"\n' for name, value in ids.items())
            (work / "schemathesis.toml").write_text(config)
            result = subprocess.run(
                [str(st), "--config-file", str(work / "schemathesis.toml"), "run",
                 str(ROOT / "api-ref" / "openapi.yaml"), "--url", base,
                 "-H", f"X-Auth-Token: {TOKEN}", "--checks", "all",
                 "--exclude-checks", "ignored_auth", "--max-examples", args.max_examples,
                 "--seed", args.seed, "--generation-codec", "utf-8",
                 "--generation-allow-x00", "false", "--no-color"],
                cwd=work)
        finally:
            server.terminate()
            server.wait(timeout=30)
        check = subprocess.run(
            [args.binary, "check", "--json", "--host", "schemathesis",
             "--database-url", f"sqlite://{work}/db.sqlite",
             "--backend", f"file=file,dir={work}/volumes"],
            capture_output=True, text=True)
        print(check.stdout)
        if check.returncode != 0:
            print("cinder-attach check found violations after the schemathesis run", file=sys.stderr)
            return check.returncode
        return result.returncode


if __name__ == "__main__":
    sys.exit(main())
