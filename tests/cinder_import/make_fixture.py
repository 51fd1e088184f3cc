#!/usr/bin/env python3
"""Fills a fresh Cinder 29 database through Cinder's own API, for the import test.

Run by make-fixture.sh against the reference Cinder of ../shared/reference-cinder (noauth:
every caller is admin, `X-Auth-Token: <user>:<project>`). What it makes is what
tests/it/import_cinder.rs expects to find taken, refused or skipped; the ids are Cinder's
own, so the test reads them from the dump rather than from this file."""

import json
import sys
import time

import requests

BASE = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8776"
P1 = "3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60"
P2 = "0b1c2d3e4f5061728394a5b6c7d8e9f0"
CONNECTOR = {
    "host": "compute-1",
    "ip": "10.0.0.11",
    "initiator": "iqn.1993-08.org.debian:01:compute-1",
    "platform": "x86_64",
    "os_type": "linux",
    "multipath": False,
}


def call(method, path, body=None, project=P1, version="3.54", ok=(200, 202, 204)):
    headers = {
        "X-Auth-Token": f"admin:{project}",
        "OpenStack-API-Version": f"volume {version}",
        "Content-Type": "application/json",
    }
    r = requests.request(method, f"{BASE}/v3/{project}{path}", headers=headers,
                         data=json.dumps(body) if body is not None else None, timeout=60)
    if r.status_code not in ok:
        sys.exit(f"{method} {path}: {r.status_code} {r.text}")
    return r.json() if r.text else None


def wait_volume(vid, want, project=P1):
    for _ in range(120):
        status = call("GET", f"/volumes/{vid}", project=project)["volume"]["status"]
        if status == want:
            return
        if status == "error" and want != "error":
            sys.exit(f"volume {vid} went to error")
        time.sleep(0.5)
    sys.exit(f"volume {vid} never became {want}")


def wait_snapshot(sid, project=P1):
    for _ in range(120):
        if call("GET", f"/snapshots/{sid}", project=project)["snapshot"]["status"] == "available":
            return
        time.sleep(0.5)
    sys.exit(f"snapshot {sid} never became available")


def volume(name, size, project=P1, **extra):
    body = {"volume": {"name": name, "size": size, **extra}}
    vid = call("POST", "/volumes", body, project=project)["volume"]["id"]
    wait_volume(vid, "available", project)
    return vid


def attach(vid, instance, mode="rw", connector=CONNECTOR, complete=True):
    body = {"attachment": {"volume_uuid": vid, "instance_uuid": instance, "mode": mode}}
    if connector is not None:
        body["attachment"]["connector"] = connector
    aid = call("POST", "/attachments", body)["attachment"]["id"]
    if complete:
        call("POST", f"/attachments/{aid}/action", {"os-complete": None})
    return aid


def main():
    qos = call("POST", "/qos-specs", {"qos_specs": {
        "name": "gold-qos", "consumer": "back-end", "total_iops_sec": "500",
        "read_bytes_sec": "1048576"}})["qos_specs"]["id"]
    shared = call("POST", "/types", {"volume_type": {
        "name": "multiattach", "description": "shared disks",
        "extra_specs": {"multiattach": "<is> True"}}})["volume_type"]["id"]
    gold = call("POST", "/types", {"volume_type": {
        "name": "gold", "extra_specs": {"volume_backend_name": "fake", "acme:tier": "1"}}}
    )["volume_type"]["id"]
    call("GET", f"/qos-specs/{qos}/associate?vol_type_id={gold}")
    private = call("POST", "/types", {"volume_type": {
        "name": "private", "os-volume-type-access:is_public": False}})["volume_type"]["id"]
    call("POST", f"/types/{private}/action", {"addProjectAccess": {"project": P2}})
    # A type made and deleted: a soft-deleted row the import must skip.
    gone = call("POST", "/types", {"volume_type": {"name": "gone"}})["volume_type"]["id"]
    call("DELETE", f"/types/{gone}")

    call("PUT", f"/os-quota-sets/{P1}", {"quota_set": {
        "volumes": 20, "gigabytes": 500, "snapshots": 15, "volumes_gold": 5}})
    call("PUT", "/os-quota-class-sets/default", {"quota_class_set": {"backups": 7}})

    plain = volume("plain", 1, metadata={"owner": "ops", "tier": "bronze"})
    call("POST", f"/volumes/{plain}/action", {"os-set_bootable": {"bootable": True}})
    disk = volume("shared-disk", 2, volume_type="multiattach", description="quorum disk")
    attach(disk, "11111111-1111-4111-8111-111111111111", "rw")
    attach(disk, "22222222-2222-4222-8222-222222222222", "ro",
           dict(CONNECTOR, host="compute-2", ip="10.0.0.12"))
    data = volume("gold-data", 3, volume_type="gold")
    snap = call("POST", "/snapshots", {"snapshot": {
        "volume_id": data, "name": "nightly", "description": "before upgrade",
        "metadata": {"kind": "nightly"}}})["snapshot"]["id"]
    wait_snapshot(snap)
    volume("from-snapshot", 3, snapshot_id=snap)
    reserved = volume("reserved", 1)
    attach(reserved, "33333333-3333-4333-8333-333333333333", connector=None, complete=False)
    volume("no-storage", 1)
    broken = volume("broken", 1)
    call("POST", f"/volumes/{broken}/action", {"os-reset_status": {"status": "error"}})
    deleted = volume("deleted", 1)
    call("DELETE", f"/volumes/{deleted}")
    volume("other-project", 1, project=P2, volume_type="private")
    for _ in range(120):  # the delete is asynchronous
        if requests.get(f"{BASE}/v3/{P1}/volumes/{deleted}",
                        headers={"X-Auth-Token": f"admin:{P1}"}, timeout=60).status_code == 404:
            break
        time.sleep(0.5)
    print("fixture made")


if __name__ == "__main__":
    main()
