#!/usr/bin/env python3
"""The rbd backend's limit with no application: how many attach-and-detach pairs of
identity changes (`auth get-or-create` with per-volume caps, then `auth rm`) the cluster's
monitor takes per second from CLIENTS concurrent clients, through librados (Debian's
python3-rados, the same library the service calls), for SECONDS. Prints pairs/s and the
CPU the Ceph daemons spent per pair.

Usage: bench/ceph-identity-ceiling.py CEPH_CONF CEPH_PIDS [SECONDS] [CLIENTS]
(CEPH_PIDS: the daemons' pids, space-separated, as scripts/start-ceph prints them)
"""

import json
import os
import sys
import threading
import time
import uuid

import rados  # Debian's python3-rados

conf, pids = sys.argv[1], [int(p) for p in sys.argv[2].split()]
seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 10.0
clients = int(sys.argv[4]) if len(sys.argv) > 4 else 16
hz = os.sysconf("SC_CLK_TCK")


def ticks():
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total


# Caps of the size the backend gives (one image, its objects by prefix).
CAPS = ("allow r class-read pool=volumes object_prefix rbd_id.volume-{v}, "
        "allow rwx pool=volumes object_prefix rbd_header.0123456789ab, "
        "allow rwx pool=volumes object_prefix rbd_data.0123456789ab., "
        "allow rwx pool=volumes object_prefix rbd_object_map.0123456789ab, "
        "allow class-read pool=volumes object_prefix rbd_info, "
        "allow class-read pool=volumes object_prefix rbd_children, "
        "allow class-read pool=volumes object_prefix rbd_mirroring")

cluster = rados.Rados(conffile=conf, rados_id="admin")
cluster.connect()
deadline = time.monotonic() + seconds
counts = [0] * clients
errors = [0] * clients


def client(n):
    while time.monotonic() < deadline:
        volume = str(uuid.uuid4())
        entity = f"client.ca.bench.{volume}.000000000000.rw"
        made, _, _ = cluster.mon_command(json.dumps({
            "prefix": "auth get-or-create", "entity": entity,
            "caps": ["mon", "allow r", "osd", CAPS.format(v=volume)], "format": "json"}), b"")
        gone, _, _ = cluster.mon_command(json.dumps({"prefix": "auth rm", "entity": entity}), b"")
        if made or gone:
            errors[n] += 1
        else:
            counts[n] += 1


before, started = ticks(), time.monotonic()
threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
for t in threads:
    t.start()
for t in threads:
    t.join()
elapsed, spent = time.monotonic() - started, ticks() - before
pairs = sum(counts)
print(f"{clients} clients, {elapsed:.1f} s: {pairs / elapsed:.1f} identity pairs/s, "
      f"{sum(errors)} errors, ceph daemons {spent * 1000 / hz / max(pairs, 1):.3f} CPU ms/pair")
cluster.shutdown()
