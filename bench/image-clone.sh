#!/usr/bin/env bash
# On the rbd backend, a volume from a raw image Glance keeps in the same Ceph cluster (a
# copy-on-write clone of Glance's snapshot) next to a volume from the same image in a
# Glance with its file store (the data streamed through librbd), alternating: seconds
# from the create request to `available`. The release server uses SQLite and the Ceph of
# scripts/start-ceph (CEPH_CONF, CEPH_POOL); two Glances are started (scripts/start-glance,
# one with GLANCE_CEPH_CONF). The image is SIZE_MIB (default 1000) of random data.
#
# Usage: bench/image-clone.sh [ROUNDS] [SIZE_MIB]    (CEPH_CONF set; eval "$(scripts/start-ceph)")
# Needs target/release/cinder-attach (cargo build --release).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}" size_mib="${2:-1000}"
: "${CEPH_CONF:?start a Ceph first: eval \"\$(scripts/start-ceph)\"}"
pool="${CEPH_POOL:-volumes}"
bin="$PWD/target/release/cinder-attach"
port=18783
. bench/lib.sh
eval "$(scripts/start-glance | sed 's/GLANCE_/FILE_GLANCE_/g')"
eval "$(GLANCE_CEPH_CONF="$CEPH_CONF" scripts/start-glance | sed 's/GLANCE_/CEPH_GLANCE_/g')"
scratch="$(mktemp -d)"
results="$scratch/results"
cleanup() {
  kill -9 -- "-$FILE_GLANCE_PID" "-$CEPH_GLANCE_PID" 2>/dev/null || true
  rm -rf "$FILE_GLANCE_WORK" "$CEPH_GLANCE_WORK" "$scratch"
  [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null || true
}
trap cleanup EXIT

head -c "$((size_mib << 20))" /dev/urandom >"$scratch/image.raw"
upload() { # GLANCE_URL -> image id
  local id
  id="$(curl -sf -X POST "$1/v2/images" -H 'Content-Type: application/json' \
    -d '{"name": "bench", "disk_format": "raw", "container_format": "bare"}' |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')"
  curl -sf -X PUT "$1/v2/images/$id/file" -H 'Content-Type: application/octet-stream' \
    -T "$scratch/image.raw" >/dev/null
  echo "$id"
}
file_id="$(upload "$FILE_GLANCE_URL")"
ceph_id="$(upload "$CEPH_GLANCE_URL")"
rm -f "$scratch/image.raw"
gib=$(( (size_mib + 1023) / 1024 ))

run() { # LABEL GLANCE_URL IMAGE_ID
  SERVER_ARGS=(--glance-api-servers "$2" --image-conversion-dir "$scratch/conversion")
  start_server "$bin" sqlite "$port" "ceph=rbd,conf=$CEPH_CONF,pool=$pool"
  volume_from_image "$port" "$gib" "$3"
  while rbd -c "$CEPH_CONF" ls "$pool" | grep -q "volume-$made"; do sleep 0.1; done
  stop_server
  python3 -c "print(f'$1 {$elapsed:.2f} s')" | tee -a "$results"
}

for _ in $(seq 1 "$rounds"); do
  run clone "$CEPH_GLANCE_URL" "$ceph_id"
  run copy "$FILE_GLANCE_URL" "$file_id"
done
curl -sf -X DELETE "$CEPH_GLANCE_URL/v2/images/$ceph_id" >/dev/null
python3 - "$results" "$size_mib" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    label, seconds, _ = line.split()
    runs.setdefault(label, []).append(float(seconds))
clone, copy = statistics.median(runs["clone"]), statistics.median(runs["copy"])
print(f"median: clone {clone:.2f} s, copy {copy:.2f} s ({int(sys.argv[2]) / copy:.0f} MiB/s); copy / clone {copy / clone:.0f}x")
PY
