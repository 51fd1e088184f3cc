# Sourced by the bench scripts: a release server on a fresh database of either store.
# PGURL: the PostgreSQL server (default postgres://postgres@127.0.0.1:5432).
pg_server="${PGURL:-postgres://postgres@127.0.0.1:5432}"

# start_server BIN STORE PORT [BACKEND]: starts BIN on 127.0.0.1:PORT with a fresh SQLite
# file or a fresh PostgreSQL database (bench_<port>), and a file backend in a temporary
# directory, or BACKEND (a --backend spec; DIR in it becomes that directory); sets
# server_pid and server_work. SERVER_ARGS (an array, if set) adds flags.
start_server() {
  local bin="$1" store="$2" port="$3" backend="${4:-file=file,dir=DIR}" url
  server_work="$(mktemp -d)"
  if [ "$store" = postgres ]; then
    psql "$pg_server/postgres" -qc "drop database if exists bench_$port with (force)" \
      -c "create database bench_$port" 2>/dev/null
    url="$pg_server/bench_$port"
  else
    url="sqlite://$server_work/bench.db"
  fi
  (cd "$server_work" && RUST_LOG=warn "$bin" --listen "127.0.0.1:$port" --database-url "$url" \
     --db-max-connections 32 --backend "${backend//DIR/$server_work/volumes}" ${SERVER_ARGS[@]+"${SERVER_ARGS[@]}"} \
     >"$server_work/server.log" 2>&1 &)
  for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$port/" >/dev/null 2>&1 && break; sleep 0.1; done
  server_pid="$(pgrep -f -- "--listen 127.0.0.1:$port")"
}

stop_server() {
  kill "$server_pid"
  sleep 0.5
  rm -rf "$server_work"
}

# volume_from_image PORT GIB IMAGE_ID: creates a GIB volume from a Glance image on the
# server at PORT (noauth admin of project `bench`), waits until it is `available`, deletes
# it, and sets `elapsed` (seconds from the create request to `available`) and `made` (its
# id). Exits when the volume ends in `error`.
volume_from_image() {
  local api="http://127.0.0.1:$1/v3/bench" start end status
  local auth=(-H 'X-Auth-Token: admin:bench' -H 'Content-Type: application/json')
  start="$(date +%s.%N)"
  made="$(curl -sf -X POST "$api/volumes" "${auth[@]}" \
    -d "{\"volume\": {\"size\": $2, \"imageRef\": \"$3\"}}" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["volume"]["id"])')"
  while :; do
    status="$(curl -sf "$api/volumes/$made" "${auth[@]}" |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["volume"]["status"])')"
    [ "$status" = available ] || [ "$status" = error ] && break
    sleep 0.01
  done
  end="$(date +%s.%N)"
  [ "$status" = available ] || { echo "volume $made ended in $status" >&2; exit 1; }
  curl -sf -X DELETE "$api/volumes/$made" "${auth[@]}" >/dev/null
  elapsed="$(python3 -c "print($end - $start)")"
}
