#!/usr/bin/env bash
# Starts a real Keystone (from PyPI, SQLite database) on 127.0.0.1 for the tests and
# prints the environment they need: KEYSTONE_URL (http), KEYSTONE_TLS_URL (the same Keystone
# over https, its certificate signed by a CA made here: KEYSTONE_CAFILE), KEYSTONE_MTLS_URL (over
# https taking only clients with a certificate from that CA: KEYSTONE_CLIENT_CERT and
# KEYSTONE_CLIENT_KEY), KEYSTONE_ADMIN_PASSWORD, KEYSTONE_PID, KEYSTONE_WORK.
# Usage: eval "$(tests/keystone/start.sh)"   (KEYSTONE_TOKEN_EXPIRATION: token lifetime, default 3600 s)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/.venv-keystone"
if [ ! -x "$venv/bin/keystone-manage" ] || ! cmp -s "$here/requirements.txt" "$venv/requirements.txt"; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
  cp "$here/requirements.txt" "$venv/requirements.txt"
fi
work="$(mktemp -d /tmp/cinder-attach-keystone.XXXXXX)"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
cat > "$work/keystone.conf" <<CONF
[database]
connection = sqlite:///$work/keystone.db
[token]
provider = fernet
expiration = ${KEYSTONE_TOKEN_EXPIRATION:-3600}
[fernet_tokens]
key_repository = $work/fernet-keys
[fernet_receipts]
key_repository = $work/fernet-receipts
[credential]
key_repository = $work/credential-keys
CONF
manage() { "$venv/bin/keystone-manage" --config-file "$work/keystone.conf" "$@" >>"$work/setup.log" 2>&1; }
manage db_sync
manage fernet_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)"
manage credential_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)"
manage bootstrap --bootstrap-password admin-secret \
  --bootstrap-admin-url "http://127.0.0.1:$port/v3/" --bootstrap-public-url "http://127.0.0.1:$port/v3/" \
  --bootstrap-region-id RegionOne
# The same Keystone over https on a second port, with a certificate from a CA made here
# (the tests trust it through KEYSTONE_CAFILE).
tls_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
tls="$work/tls"
mkdir -p "$tls"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${ec[@]}" -keyout "$tls/ca.key" -out "$tls/ca.pem" -days 3 \
  -subj "/CN=cinder-attach test CA" -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" >>"$work/setup.log" 2>&1
openssl req "${ec[@]}" -keyout "$tls/server.key" -out "$tls/server.csr" -subj "/CN=localhost" \
  >>"$work/setup.log" 2>&1
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
  >"$tls/server.ext"
openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
  -out "$tls/server.pem" -days 3 -extfile "$tls/server.ext" >>"$work/setup.log" 2>&1
# A client certificate from the same CA, for the port that asks for one.
mtls_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
openssl req "${ec[@]}" -keyout "$tls/client.key" -out "$tls/client.csr" -subj "/CN=cinder-attach" \
  >>"$work/setup.log" 2>&1
printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n' >"$tls/client.ext"
openssl x509 -req -in "$tls/client.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
  -out "$tls/client.pem" -days 3 -extfile "$tls/client.ext" >>"$work/setup.log" 2>&1
OS_KEYSTONE_CONFIG_FILES="$work/keystone.conf" KEYSTONE_TLS_CERT="$tls/server.pem" \
  KEYSTONE_TLS_KEY="$tls/server.key" KEYSTONE_TLS_CLIENT_CA="$tls/ca.pem" \
  nohup "$venv/bin/python" "$here/serve.py" "$port" "$tls_port" "$mtls_port" \
  >"$work/keystone.log" 2>&1 &
pid=$!
for _ in $(seq 1 60); do
  if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/v3', timeout=2)" 2>/dev/null; then
    echo "export KEYSTONE_URL=http://127.0.0.1:$port/v3 KEYSTONE_TLS_URL=https://localhost:$tls_port/v3" \
         "KEYSTONE_MTLS_URL=https://localhost:$mtls_port/v3 KEYSTONE_CLIENT_CERT=$tls/client.pem" \
         "KEYSTONE_CLIENT_KEY=$tls/client.key" \
         "KEYSTONE_CAFILE=$tls/ca.pem KEYSTONE_ADMIN_PASSWORD=admin-secret KEYSTONE_PID=$pid KEYSTONE_WORK=$work"
    exit 0
  fi
  sleep 1
done
echo "Keystone did not start; see $work/keystone.log" >&2
kill "$pid" 2>/dev/null || true
exit 1
