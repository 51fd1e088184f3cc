#!/usr/bin/env bash
# Creating a volume from a Glance image next to `qemu-img convert` of the same image on
# the same machine, in alternating runs: the service (release build, SQLite, file
# backend) gets a volume from a raw and from a qcow2 image through a real Glance
# (scripts/start-glance, its file store on this disk), timed from the create request to
# `available`; qemu-img converts the very file Glance stores to a raw file beside the
# volumes. Prints MiB/s per run and the ratio of the medians per format. The image is
# SIZE_MIB (default 1000, so that the qcow2 file with its tables still fits 1 GiB) of
# random data (incompressible, no zeros to skip).
#
# Usage: bench/image-create.sh [ROUNDS] [SIZE_MIB]
# Needs target/release/cinder-attach (cargo build --release) and qemu-img.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}" size_mib="${2:-1000}"
bin="$PWD/target/release/cinder-attach"
port=18782
. bench/lib.sh
eval "$(scripts/start-glance)"
scratch="$(mktemp -d)"
results="$scratch/results"
cleanup() {
  kill -9 -- "-$GLANCE_PID" 2>/dev/null || true
  rm -rf "$GLANCE_WORK" "$scratch"
  [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null || true
}
trap cleanup EXIT

head -c "$((size_mib << 20))" /dev/urandom >"$scratch/image.raw"
qemu-img convert -f raw -O qcow2 "$scratch/image.raw" "$scratch/image.qcow2"
upload() { # FORMAT FILE -> image id
  local id
  id="$(curl -sf -X POST "$GLANCE_URL/v2/images" -H 'Content-Type: application/json' \
    -d "{\"name\": \"bench-$1\", \"disk_format\": \"$1\", \"container_format\": \"bare\"}" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')"
  curl -sf -X PUT "$GLANCE_URL/v2/images/$id/file" -H 'Content-Type: application/octet-stream' \
    -T "$2" >/dev/null
  echo "$id"
}
raw_id="$(upload raw "$scratch/image.raw")"
qcow2_id="$(upload qcow2 "$scratch/image.qcow2")"
rm -f "$scratch/image.raw" "$scratch/image.qcow2"
gib=$(( (size_mib + 1023) / 1024 ))

SERVER_ARGS=(--glance-api-servers "$GLANCE_URL" --image-conversion-dir "$scratch/conversion")
start_server "$bin" sqlite "$port"
service_run() { # FORMAT IMAGE_ID
  volume_from_image "$port" "$gib" "$2"
  python3 -c "print(f'service $1 {$size_mib / $elapsed:.0f} MiB/s')" | tee -a "$results"
}

qemu_run() { # FORMAT IMAGE_ID
  local start end
  start="$(date +%s.%N)"
  qemu-img convert -f "$1" -O raw "$GLANCE_STORE/$2" "$scratch/converted.raw"
  sync -f "$scratch/converted.raw"
  end="$(date +%s.%N)"
  rm -f "$scratch/converted.raw"
  python3 -c "print(f'qemu-img $1 {$size_mib / ($end - $start):.0f} MiB/s')" | tee -a "$results"
}

for _ in $(seq 1 "$rounds"); do
  service_run raw "$raw_id"
  qemu_run raw "$raw_id"
  service_run qcow2 "$qcow2_id"
  qemu_run qcow2 "$qcow2_id"
done
stop_server
server_pid=""
python3 - "$results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    who, fmt, rate, _ = line.split()
    runs.setdefault((who, fmt), []).append(float(rate))
for fmt in ("raw", "qcow2"):
    service, qemu = statistics.median(runs[("service", fmt)]), statistics.median(runs[("qemu-img", fmt)])
    print(f"{fmt}: service {service:.0f} MiB/s, qemu-img convert {qemu:.0f} MiB/s, ratio {service / qemu:.2f}")
PY
