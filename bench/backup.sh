#!/usr/bin/env bash
# Backup and restore throughput next to `cp --sparse=always` of the same file on the same
# machine, in alternating runs. The service (release build, SQLite, file backend, the
# backup repository on the same disk) backs up a 1 GiB volume holding FILL_MIB of random
# data (incompressible: every chunk is checksummed, compressed and stored) and the rest
# zeros, timed from the create request to `available`; then restores it onto a new
# volume, timed from the restore request until the volume is `available`. The baseline
# copies the volume file to the backup disk and back, each followed by `sync -f` (the
# service syncs what it writes before it answers `available`). Also the incremental
# backup after 1 MiB changed: its time and the bytes it stored. Prints MiB/s of the
# volume (1024 MiB) per run and the ratios of the medians.
#
# DATA=text fills with base64 of random bytes instead (compresses to about 3/4).
# TARGET=ceph keeps the backups on the Ceph cluster CEPH_CONF describes (as client.admin,
# in the pool CEPH_BACKUP_POOL, default `backups`; scripts/start-ceph makes one) instead
# of a directory; the incremental backup's stored bytes are then what its image holds of
# its own (`rbd du`).
#
# SOURCE=rbd keeps the volume on an rbd backend on the same cluster (pool CEPH_POOL,
# default `volumes`) instead of a file: a backup then reads a snapshot of the image, and
# the incremental one only the chunks changed since its parent's snapshot. The volume is
# filled with `rbd import`, the MiB changed through python3-rbd, and restored volumes are
# compared with `rbd export`.
#
# Usage: [DATA=random|text] [TARGET=posix|ceph] [SOURCE=file|rbd] bench/backup.sh [ROUNDS] [FILL_MIB]
# Needs target/release/cinder-attach (cargo build --release), or the binary BIN names.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}" fill_mib="${2:-1024}"
bin="${BIN:-$PWD/target/release/cinder-attach}"
port=18783
. bench/lib.sh
scratch="$(mktemp -d)"
results="$scratch/results"
cleanup() {
  [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT

target="${TARGET:-posix}" backup_pool="${CEPH_BACKUP_POOL:-backups}"
if [ "$target" = ceph ]; then
  : "${CEPH_CONF:?TARGET=ceph needs CEPH_CONF (eval \"\$(scripts/start-ceph)\")}"
  SERVER_ARGS=(--backup-driver ceph --backup-ceph-conf "$CEPH_CONF" --backup-ceph-user admin
    --backup-ceph-pool "$backup_pool")
else
  SERVER_ARGS=(--backup-posix-path "$scratch/backups")
fi
source="${SOURCE:-file}" volume_pool="${CEPH_POOL:-volumes}"
backend_spec="file=file,dir=DIR"
if [ "$source" = rbd ]; then
  : "${CEPH_CONF:?SOURCE=rbd needs CEPH_CONF (eval \"\$(scripts/start-ceph)\")}"
  backend_spec="ceph=rbd,conf=$CEPH_CONF,pool=$volume_pool"
fi
rbd_() { rbd -c "$CEPH_CONF" "$@"; }
start_server "$bin" sqlite "$port" "$backend_spec"
api="http://127.0.0.1:$port/v3/bench"
auth=(-H 'X-Auth-Token: admin:bench' -H 'Content-Type: application/json' -H 'OpenStack-API-Version: volume 3.64')
field() { python3 -c 'import json, sys; d = json.load(sys.stdin); print(d[sys.argv[1]][sys.argv[2]])' "$1" "$2"; }
now() { date +%s.%N; }
rate() { python3 -c "print(f'{1024 / ($2 - $1):.0f}')"; }
wait_status() { # KIND ID STATUS
  local status
  while :; do
    status="$(curl -sf "${auth[@]}" "$api/$1s/$2" | field "$1" status)"
    [ "$status" = "$3" ] && return
    [ "$status" = error ] && { echo "$1 $2 ended in error" >&2; exit 1; }
    sleep 0.01
  done
}

volume="$(curl -sf "${auth[@]}" -d '{"volume": {"size": 1}}' "$api/volumes" | field volume id)"
file="$server_work/volumes/volume-$volume"
[ "$source" = rbd ] && file="$scratch/volume" && truncate -s 1G "$file"
if [ "${DATA:-random}" = text ]; then
  { base64 -w 0 /dev/urandom || true; } | head -c "$((fill_mib << 20))" | dd of="$file" conv=notrunc status=none
else
  head -c "$((fill_mib << 20))" /dev/urandom | dd of="$file" conv=notrunc status=none
fi
sync -f "$file"
if [ "$source" = rbd ]; then
  # The image the service made, replaced by one holding the data, with its features.
  rbd_ rm --no-progress "$volume_pool/volume-$volume"
  rbd_ import --no-progress --image-feature layering --image-feature deep-flatten "$file" \
    "$volume_pool/volume-$volume"
fi
# Checks a restored volume holds what the volume held when it was backed up.
same_as_volume() { # RESTORED
  if [ "$source" = rbd ]; then
    rbd_ export --no-progress "$volume_pool/volume-$1" "$scratch/restored"
    cmp "$scratch/at-backup" "$scratch/restored"
    rm -f "$scratch/restored"
  else
    cmp "$file" "$server_work/volumes/volume-$1"
  fi
}
mkdir -p "$scratch/cp"

for _ in $(seq 1 "$rounds"); do
  start="$(now)"
  backup="$(curl -sf "${auth[@]}" -d "{\"backup\": {\"volume_id\": \"$volume\"}}" "$api/backups" | field backup id)"
  wait_status backup "$backup" available
  end="$(now)"
  echo "service backup $(rate "$start" "$end")" | tee -a "$results"
  start="$(now)"
  restored="$(curl -sf "${auth[@]}" -d '{"restore": {}}' "$api/backups/$backup/restore" | field restore volume_id)"
  wait_status volume "$restored" available
  end="$(now)"
  echo "service restore $(rate "$start" "$end")" | tee -a "$results"
  if [ "$source" = rbd ]; then
    rm -f "$scratch/at-backup"
    rbd_ export --no-progress "$volume_pool/volume-$volume" "$scratch/at-backup"
  fi
  same_as_volume "$restored"
  curl -sf -X DELETE "${auth[@]}" "$api/volumes/$restored" >/dev/null

  start="$(now)"
  cp --sparse=always "$file" "$scratch/cp/copy"
  sync -f "$scratch/cp/copy"
  end="$(now)"
  echo "cp backup $(rate "$start" "$end")" | tee -a "$results"
  start="$(now)"
  cp --sparse=always "$scratch/cp/copy" "$scratch/cp/back"
  sync -f "$scratch/cp/back"
  end="$(now)"
  echo "cp restore $(rate "$start" "$end")" | tee -a "$results"
  rm -f "$scratch/cp/copy" "$scratch/cp/back"

  if [ "$source" = rbd ]; then
    /usr/bin/python3 - "$CEPH_CONF" "$volume_pool" "volume-$volume" <<'PY'
import os, sys, rados, rbd  # python3-rbd, which ceph-common brings
with rados.Rados(conffile=sys.argv[1]) as cluster, cluster.open_ioctx(sys.argv[2]) as io:
    with rbd.Image(io, sys.argv[3]) as image:
        image.write(os.urandom(1 << 20), 300 << 20)
PY
  else
    head -c $((1 << 20)) /dev/urandom | dd of="$file" bs=1M seek=300 conv=notrunc status=none
  fi
  start="$(now)"
  incremental="$(curl -sf "${auth[@]}" -d "{\"backup\": {\"volume_id\": \"$volume\", \"incremental\": true}}" "$api/backups" | field backup id)"
  wait_status backup "$incremental" available
  end="$(now)"
  if [ "$target" = ceph ]; then
    stored="$(rbd -c "$CEPH_CONF" du --format json 2>/dev/null "$backup_pool/volume-$volume.backup-$incremental" |
      python3 -c 'import json, sys; print(sum(i["used_size"] for i in json.load(sys.stdin)["images"]))')"
  else
    stored="$(find "$scratch/backups" -name "backup-$incremental.data" -printf '%s')"
  fi
  python3 -c "print(f'incremental 1 MiB changed: {$end - $start:.2f} s, {$stored / 1048576:.2f} MiB stored')"
  curl -sf -X DELETE "${auth[@]}" "$api/backups/$incremental" >/dev/null
  curl -sf -X DELETE "${auth[@]}" "$api/backups/$backup" >/dev/null
done
stop_server
server_pid=""
python3 - "$results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    who, what, rate = line.split()
    runs.setdefault((who, what), []).append(float(rate))
for what in ("backup", "restore"):
    service, cp = statistics.median(runs[("service", what)]), statistics.median(runs[("cp", what)])
    print(f"{what}: service {service:.0f} MiB/s, cp --sparse {cp:.0f} MiB/s, ratio {service / cp:.2f}")
PY
