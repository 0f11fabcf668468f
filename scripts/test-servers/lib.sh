# shellcheck shell=bash disable=SC2034  # constants used by the scripts that source this
# Shared by scripts/test-servers/*.sh and scripts/test (sourced, never run): paths, the fixed
# test identities, Debian installs, and process/port helpers.

TS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$TS_DIR/../.." && pwd)
# Base of all server state; OAUTH2_TEST_STATE_DIR moves it elsewhere.
STATE=${OAUTH2_TEST_STATE_DIR:-$ROOT/.build/test-servers}

# The fixed test identities: seeded into the servers and written to $STATE/env by up.sh.
# The ports can be moved (OAUTH2_TEST_*_PORT) so that two checkouts can run their servers side
# by side, each with its own OAUTH2_TEST_STATE_DIR or checkout.
REDIRECT_PORT=${OAUTH2_TEST_REDIRECT_PORT:-9999}
REDIRECT_URI=http://127.0.0.1:$REDIRECT_PORT/callback
# Where RP-initiated logout sends the browser back (registered where a server has the notion).
POST_LOGOUT_URI=http://127.0.0.1:$REDIRECT_PORT/logged-out
TEST_USER=alice TEST_PASSWORD=alice-pw
GLEWLWYD_PORT=${OAUTH2_TEST_GLEWLWYD_PORT:-4593} DOT_PORT=${OAUTH2_TEST_DOT_PORT:-8000}
TLS_PORT=${OAUTH2_TEST_TLS_PORT:-4443}
TLS_MTLS_PORT=${OAUTH2_TEST_TLS_MTLS_PORT:-4444}   # the HTTPS front that asks for client certificates
AUTHGENT_PORT=${OAUTH2_TEST_AUTHGENT_PORT:-8400}
LEMONLDAP_PORT=${OAUTH2_TEST_LEMONLDAP_PORT:-8300}
OIDCPROVIDER_PORT=${OAUTH2_TEST_OIDCPROVIDER_PORT:-8500}
POSTGRES_PORT=${OAUTH2_TEST_POSTGRES_PORT:-8700}
# A second PostgreSQL cluster that the fault tests stop and start (postgres.sh ... fault).
POSTGRES_FAULT_PORT=${OAUTH2_TEST_POSTGRES_FAULT_PORT:-8701}
GLEWLWYD_URL=http://127.0.0.1:$GLEWLWYD_PORT GLEWLWYD_ISSUER=http://127.0.0.1:$GLEWLWYD_PORT/api/oidc
DOT_URL=http://127.0.0.1:$DOT_PORT DOT_ISSUER=http://127.0.0.1:$DOT_PORT/o
TLS_URL=https://127.0.0.1:$TLS_PORT
MTLS_URL=https://127.0.0.1:$TLS_MTLS_PORT
AUTHGENT_URL=http://127.0.0.1:$AUTHGENT_PORT   # authgent-server: issuer = its URL
# LemonLDAP::NG: issuer = its URL exactly (no trailing slash); endpoints under /oauth2/.
LEMONLDAP_URL=http://127.0.0.1:$LEMONLDAP_PORT LEMONLDAP_ISSUER=http://127.0.0.1:$LEMONLDAP_PORT
# django-oidc-provider: issuer = its URL + the prefix its URLs are mounted under (no trailing slash).
OIDCPROVIDER_URL=http://127.0.0.1:$OIDCPROVIDER_PORT OIDCPROVIDER_ISSUER=http://127.0.0.1:$OIDCPROVIDER_PORT/openid
# PostgreSQL (postgres.sh): the tests' role and database; TLS verified with the test CA that
# issued its certificate. The password is a fixed test value, like the users' above.
POSTGRES_USER=oauth2 POSTGRES_PASSWORD=oauth2-test-pw POSTGRES_DB=oauth2_test
CONF_ID=code-conf CONF_SECRET=code-conf-secret PUBLIC_ID=code-public CC_ID=cc CC_SECRET=cc-secret
# DOT (one grant type per client) and django-oidc-provider (password grant scopes come from the
# client's registered scopes): pw/pw-secret; DOT only: device.
PW_ID=pw PW_SECRET=pw-secret DEVICE_ID=device
# DOT only: the fleet tests' own password client, so that the refreshes counted in DOT's database are theirs.
FLEET_ID=fleet FLEET_SECRET=fleet-secret
# The fleet's own user: no other test's logout at DOT (which deletes the user's tokens) reaches it.
FLEET_USER=dave FLEET_PASSWORD=dave-pw
# DOT only: the resource server tests' API, which introspects tokens with credentials of its own
# (DOT lets any confidential client introspect; this one holds no grant a user would use).
API_ID=orders-api API_SECRET=orders-api-secret
# Glewlwyd only: clients that authenticate with JWTs (RFC 7523 §2.2), the public keys of the
# private_key_jwt client (its private keys are test fixtures), and the two extra OIDC
# instances of the same server: one demands DPoP nonces, one pushed authorization requests.
JWT_SECRET_ID=jwt-secret JWT_SECRET_SECRET=jwt-secret-0123456789abcdef0123456789abcdef
JWT_KEY_ID=jwt-key JWT_KEY_JWKS=$ROOT/Tests/Fixtures/glewlwyd/jwt-client.jwks.json
GLEWLWYD_NONCE_ISSUER=$GLEWLWYD_URL/api/oidc-nonce GLEWLWYD_PAR_ISSUER=$GLEWLWYD_URL/api/oidc-par
# Glewlwyd only: an OIDC instance whose registration endpoint wants an initial access token
# (RFC 7591 §3): an access token of that instance with scope `read` (the cc client's, say).
GLEWLWYD_REG_ISSUER=$GLEWLWYD_URL/api/oidc-reg
# Glewlwyd only: a public client for the legacy implicit grant (response types token and
# id_token token), so that no other client has them.
IMPLICIT_ID=implicit-public
# An OIDC instance whose access tokens live 2 s: once one has expired, an implicit sign-in
# there (no refresh token) means signing in again.
GLEWLWYD_SHORT_ISSUER=$GLEWLWYD_URL/api/oidc-short
# Glewlwyd only: an OIDC instance with CIBA (poll and ping), its poll-mode client and its
# client whose authentication requests are signed (with the private_key_jwt client's keys).
GLEWLWYD_CIBA_ISSUER=$GLEWLWYD_URL/api/oidc-ciba
CIBA_POLL_ID=ciba-poll CIBA_POLL_SECRET=ciba-poll-secret CIBA_SIGNED_ID=ciba-signed
# Glewlwyd only: the API (RFC 8707 resource) that tokens of scope read may be asked for; the
# resource server tests verify such tokens with it as their audience. Never fetched.
GLEWLWYD_RESOURCE=https://api.example.test/orders
# Glewlwyd only: the MCP peers' OIDC instance (issue 27: the MCP Python SDK's client against the
# example MCP server, and the SDK's server as a resource our client signs into). Its tokens may
# name, as their audience (RFC 8707 resource), any resource the client's `resource` property
# lists, which a client sets when it registers (RFC 7591): MCP servers on ports picked per run.
# Its resource servers introspect every token of the instance as the confidential client
# MCP_RS_ID; MCP_USER holds the example MCP server's scopes mcp:read and mcp:write.
GLEWLWYD_MCP_ISSUER=$GLEWLWYD_URL/api/oidc-mcp
MCP_RS_ID=mcp-resource-server MCP_RS_SECRET=mcp-resource-server-secret
MCP_USER=erin MCP_PASSWORD=erin-pw
# Glewlwyd only: an OIDC instance with Rich Authorization Requests (RFC 9396, type
# payment_initiation) and a confidential client allowed that type; its introspection answers
# JWTs (RFC 9701) on request.
GLEWLWYD_RAR_ISSUER=$GLEWLWYD_URL/api/oidc-rar RAR_ID=rar-client RAR_SECRET=rar-client-secret
# Glewlwyd only: mutual TLS (RFC 8705) through the front at $MTLS_URL, which asks for client
# certificates and passes the presented one to Glewlwyd in the header SSL_CLIENT_CERT. The OIDC
# instance oidc-mtls reads it there, at its mtls_endpoint_aliases only; client $MTLS_CA_ID
# authenticates with tls_client_auth (a certificate of the test client CA, with
# the subjectAltName DNS:$MTLS_CA_SAN_DNS), client $MTLS_SELF_ID with self_signed_tls_client_auth. Their certificates
# and keys are made at start-up under $STATE/mtls (mtls_client_certs), never committed.
GLEWLWYD_MTLS_ISSUER=$GLEWLWYD_URL/api/oidc-mtls
# Glewlwyd only: an OIDC instance that decrypts encrypted request objects (RFC 9101 §6.1) with
# encryption keys of its own (RSA and P-256, test keys: the private JWK set below), beside the
# key it signs with.
GLEWLWYD_ENC_ISSUER=$GLEWLWYD_URL/api/oidc-enc ENC_SERVER_JWKS=$ROOT/Tests/Fixtures/glewlwyd/oidc-enc-server.jwks.json
MTLS_CA_ID=mtls-ca MTLS_SELF_ID=mtls-self MTLS_CA_SAN_DNS=oauth2-mtls-client.test

# The web example app of the browser journeys (Examples/HummingbirdWebApp, run by
# WebAppJourneyTests), as a confidential client `webapp` of Glewlwyd, of DOT and of LemonLDAP::NG.
# Its redirect, post-logout and back- or front-channel logout URIs are registered at the provider,
# so each provider's journeys run it on a port of their own (OAUTH2_TEST_WEBAPP_*_PORT moves them).
WEBAPP_GLEWLWYD_PORT=${OAUTH2_TEST_WEBAPP_GLEWLWYD_PORT:-8765} WEBAPP_DOT_PORT=${OAUTH2_TEST_WEBAPP_DOT_PORT:-8766}
WEBAPP_LEMONLDAP_PORT=${OAUTH2_TEST_WEBAPP_LEMONLDAP_PORT:-8767}
GLEWLWYD_WEBAPP_URL=http://127.0.0.1:$WEBAPP_GLEWLWYD_PORT DOT_WEBAPP_URL=http://127.0.0.1:$WEBAPP_DOT_PORT
LEMONLDAP_WEBAPP_URL=http://127.0.0.1:$WEBAPP_LEMONLDAP_PORT
WEBAPP_ID=webapp WEBAPP_SECRET=webapp-secret
# The single-page app of the same example (its /spa/ page and backend, issue 30), as a client of
# its own at Glewlwyd on a port of its own: its journey (SinglePageAppJourneyTests) runs beside
# the web app's without sharing a port or a registration.
WEBAPP_SPA_PORT=${OAUTH2_TEST_WEBAPP_SPA_PORT:-8768}
GLEWLWYD_SPA_URL=http://127.0.0.1:$WEBAPP_SPA_PORT SPA_ID=spa-webapp SPA_SECRET=spa-webapp-secret
GLEWLWYD_SPA_ISSUER=$GLEWLWYD_URL/api/oidc-spa
# DOT only: the web journeys' own user. DOT's RP-initiated logout revokes every token of the
# user who logs out (all clients, every grant): with alice it would revoke the tokens of the
# tests running beside it.
WEB_USER=carol WEB_PASSWORD=carol-pw

# Debian packages each server needs (up.sh installs them all in one apt-get run).
GLEWLWYD_DEBS="glewlwyd dbconfig-no-thanks sqlite3 jq curl openssl"
# strace: the CLI's end-to-end tests check which threads a cached `oauth2 token` starts.
DOT_DEBS="curl openssl strace"
AUTHGENT_DEBS="curl"
# LemonLDAP::NG 2.16 (portal + FastCGI server behind an nginx of its own). With
# --no-install-recommends these Recommends must be named: String::Random and IO::String (OIDC
# issuer), GD::SecurityImage and Image::Magick (the captcha module is always loaded),
# Email::Sender and MIME::Entity (lemonldap-ng-cli, for live configuration changes); DBI and
# DBD::SQLite hold the test user (the Demo backend wants password = user name).
LEMONLDAP_DEBS="liblemonldap-ng-portal-perl lemonldap-ng-fastcgi-server liblemonldap-ng-manager-perl
 libstring-random-perl libio-string-perl libgd-securityimage-perl libimage-magick-perl
 libemail-sender-perl libmime-tools-perl libdbi-perl libdbd-sqlite3-perl nginx jq curl openssl"
OIDCPROVIDER_DEBS="curl"
TLS_DEBS="nginx curl openssl"
POSTGRES_DEBS="postgresql-15 openssl"
KEYRING_DEBS="dbus dbus-x11 gnome-keyring libsecret-1-0 libsecret-tools"
# Not a server: the library the device sign-in's terminal QR code loads at run time (tested by
# OAuth2InteractiveSignInTests, which scripts/test tells to require it).
QR_DEBS="libqrencode4"
# Not a server: the JavaScript engine that runs the loopback listener's fragment relay script
# (the implicit grant) in OAuth2InteractiveSignInTests, which scripts/test tells to require it.
NODE_DEBS="nodejs"
# Not a server: the headless browser (Chromium and its WebDriver) that signs in on the servers'
# real login pages as $BROWSER (Tests/Support/browser/oauth2-browser; chromium.sh installs it
# with its Selenium venv).
CHROMIUM_DEBS="chromium chromium-driver"

NAME=${NAME:-test-servers}
log() { printf '%s: %s\n' "$NAME" "$*" >&2; }
die() { log "error: $*"; exit 1; }

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# Prints the packages among "$@" that are not installed.
missing_debs() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || echo "$p"
  done
}

# Installs whichever of "$@" is missing; does nothing (no apt-get at all) when none is.
ensure_debs() {
  local missing policy=/usr/sbin/policy-rc.d made_policy="" rc=0 aptlog
  missing=$(missing_debs "$@" | sort -u | tr '\n' ' ')
  [ -n "${missing// /}" ] || return 0
  log "installing Debian packages: $missing"
  mkdir -p "$STATE"; aptlog=$STATE/apt.log
  # Without this answer glewlwyd's postinst wants a database and fails.
  echo "glewlwyd glewlwyd/config_type select No configuration" | as_root debconf-set-selections
  # Keep packaged services (nginx, glewlwyd) from starting on install: we run our own.
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null && as_root chmod +x "$policy" && made_policy=1
  fi
  local apt=(as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=300)
  # Package lists absent or older than a day: refresh them first.
  if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -mmin -1440 2>/dev/null | head -n 1)" ]; then
    "${apt[@]}" update >"$aptlog" 2>&1 || true
  fi
  # shellcheck disable=SC2086  # $missing is a word list
  if ! "${apt[@]}" install --no-install-recommends $missing >>"$aptlog" 2>&1; then
    # Stale lists give 404s: refresh once and retry.
    "${apt[@]}" update >>"$aptlog" 2>&1 || true
    # shellcheck disable=SC2086
    "${apt[@]}" install --no-install-recommends $missing >>"$aptlog" 2>&1 || rc=$?
  fi
  [ -z "$made_policy" ] || as_root rm -f "$policy"
  if [ "$rc" -ne 0 ]; then tail -n 30 "$aptlog" >&2; die "apt-get install $missing failed (see $aptlog)"; fi
}

# Serializes start/stop of one server across concurrent callers (fd 9; children must close it).
take_lock() {
  mkdir -p "$STATE"
  command -v flock >/dev/null || return 0
  exec 9>"$STATE/.lock-$1"
  flock -w 600 9 || die "timed out waiting for $STATE/.lock-$1"
}

pid_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
# The pid recorded in file $1 if that process is alive and its command line matches
# regex $2 (a recycled pid is never ours); empty otherwise.
our_pid() {
  local pid cmd
  pid=$( { [ -s "$1" ] && tr -dc '0-9' <"$1"; } 2>/dev/null || true)
  pid_alive "$pid" || return 0
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
  if [[ $cmd =~ $2 ]]; then echo "$pid"; fi
}

# Socket inodes listening on TCP port $1 (any address, IPv4 or IPv6), from /proc.
listen_inodes() {
  local hex; hex=$(printf '%04X' "$1")
  awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { print $10 }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
port_busy() { [ -n "$(listen_inodes "$1")" ]; }

# Pids holding a socket that listens on port $1.
port_pids() {
  local inodes ino fd pid
  inodes=$(listen_inodes "$1"); [ -n "$inodes" ] || return 0
  for fd in /proc/[0-9]*/fd/*; do
    ino=$(readlink "$fd" 2>/dev/null) || continue
    case $ino in socket:\[*\]) ino=${ino#socket:[}; ino=${ino%]} ;; *) continue ;; esac
    if grep -qx "$ino" <<<"$inodes"; then pid=${fd#/proc/}; echo "${pid%%/*}"; fi
  done | sort -un
}

wait_port_free() {  # port [tenths of a second]
  local i
  for ((i = 0; i < ${2:-100}; i++)); do port_busy "$1" || return 0; sleep 0.1; done
  return 1
}

# TERM, then KILL after 5 s.
stop_pids() {
  local pid i
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    for pid in "$@"; do pid_alive "$pid" && break; pid=""; done
    [ -n "$pid" ] || return 0
    sleep 0.1
  done
  kill -KILL "$@" 2>/dev/null || true
}

# True when process $1 belongs to this checkout's servers: its command line names $STATE, or it
# runs in $STATE or in $ROOT (an nginx worker's command line names nothing: its master's does).
# A server of another checkout (another $STATE) on the same fixed port is not ours.
of_this_checkout() {
  local pid=$1 cmd cwd ppid state root
  state=$(cd "$STATE" 2>/dev/null && pwd -P || echo "$STATE") root=$(cd "$ROOT" && pwd -P)
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
  cwd=$(readlink "/proc/$pid/cwd" 2>/dev/null || true)
  [[ $cmd == *"$STATE/"* || $cwd == "$state" || $cwd == "$state/"* || $cwd == "$root" ]] && return 0
  ppid=$(awk '{ print $4 }' "/proc/$pid/stat" 2>/dev/null || true)
  [[ $ppid =~ ^[0-9]+$ && $ppid -gt 1 ]] || return 1
  cmd=$(tr '\0' ' ' <"/proc/$ppid/cmdline" 2>/dev/null || true)
  [[ $cmd == *"$STATE/"* ]]
}

# Frees port $1: stops listeners whose command line matches regex $2 and that belong to this
# checkout (ours, e.g. left behind when .build was deleted under a running server); refuses to
# touch anything else: another program, or the same server started by another checkout (its
# own down.sh stops it), so that one checkout's run never stops another's servers.
free_port() {
  local port=$1 re=$2 pid cmd ours=() others="" theirs=""
  for pid in $(port_pids "$port"); do
    cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
    if ! [[ $cmd =~ $re ]]; then others+=" $pid($cmd)"
    elif of_this_checkout "$pid"; then ours+=("$pid")
    else theirs+=" $pid($(readlink "/proc/$pid/cwd" 2>/dev/null || echo "?"))"; fi
  done
  [ -z "$others" ] || die "port $port is used by another program:$others"
  [ -z "$theirs" ] || die "port $port is used by the test servers of another checkout (pid and folder:$theirs); its scripts/test-servers/down.sh stops them, or set OAUTH2_TEST_STATE_DIR to that checkout's state"
  if [ ${#ours[@]} -gt 0 ]; then log "stopping leftover server on port $port (pid ${ours[*]})"; stop_pids "${ours[@]}"; fi
  wait_port_free "$port" || die "port $port still busy"
}

# True when the venv $1 runs and has exactly the pinned versions "$2"... (NAME==VERSION).
venv_has_pins() {
  local venv=$1; shift
  "$venv/bin/python" - "$@" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if all(version(n) == v for n, v in (p.split("==") for p in sys.argv[1:])) else 1)
PY
}

# Keeps venv $1 if it has exactly the pins "$3"..., else makes it anew with pip (log in $2).
ensure_pinned_venv() {
  local venv=$1 piplog=$2; shift 2
  venv_has_pins "$venv" "$@" && return 0
  log "creating venv with $*"
  rm -rf "$venv"
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    # Debian's python3 without ensurepip: add python3-venv and use that python.
    rm -rf "$venv"; ensure_debs python3 python3-venv
    /usr/bin/python3 -m venv "$venv"
  fi
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@" >"$piplog" 2>&1 \
    || { tail -n 30 "$piplog" >&2; rm -rf "$venv"; die "pip install failed (see $piplog)"; }
  venv_has_pins "$venv" "$@" || die "venv lacks the pinned versions after pip install"
}

# Fingerprint of the scripts that configure a server: a running server started by an
# older version of them is restarted rather than reused.
fingerprint() { cat "$TS_DIR/lib.sh" "$@" | sha256sum | cut -c1-16; }

# Stops the server a script describes with PIDFILE, CMD_RE, READY, PORT (and PORT_RE, the
# command line of whatever may still hold the port; default CMD_RE), and frees its port.
do_stop() {
  local pid; pid=$(our_pid "$PIDFILE" "$CMD_RE")
  [ -z "$pid" ] || stop_pids "$pid"
  rm -f "$PIDFILE" "$READY"
  free_port "$PORT" "${PORT_RE:-$CMD_RE}"
}

# True (and says so) when the server is ours, answers, and was started by this same
# version of its script (fingerprint $1); a changed script means a restart.
already_running() {
  local pid; pid=$(our_pid "$PIDFILE" "$CMD_RE")
  [ -n "$pid" ] && [ "$(cat "$READY" 2>/dev/null)" = "$1" ] && answers || return 1
  log "already running (pid $pid)"
}

# Waits up to 20 s for the server just started (pid $1) to answer (the calling script's
# `answers`); dies with its log ($LOG) if the process exits first, stops it (`do_stop`) if it
# never answers.
await_answer() {
  local pid=$1 i
  for ((i = 0; i < 200; i++)); do
    answers && return 0
    pid_alive "$pid" || { cat "$LOG" >&2; die "the server exited at start (log: $LOG)"; }
    sleep 0.1
  done
  answers || { do_stop; die "no answer from $ISS after 20 s (log: $LOG)"; }
}

# The client certificates of the mutual TLS tests (RFC 8705), under $STATE/mtls, made when
# missing (kept while they stay valid for 2 more days): client-ca.pem/.key (the test client
# CA, which the front at $MTLS_URL names), client.pem/.key (issued by it, subjectAltName
# DNS:$MTLS_CA_SAN_DNS), self.pem/.key (self-signed) and self.jwks.json (its public key with the
# certificate in x5c, as Glewlwyd registers a self_signed_tls_client_auth client).
mtls_client_certs() {
  local dir=$STATE/mtls f ok=1
  for f in client-ca.pem client.pem self.pem; do
    [ -s "$dir/$f" ] && openssl x509 -checkend 172800 -noout -in "$dir/$f" >/dev/null 2>&1 || ok=0
  done
  [ "$ok" = 1 ] && [ -s "$dir/self.jwks.json" ] && return 0
  mkdir -p "$dir"
  (umask 077
   openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/client-ca.key" -out "$dir/client-ca.pem" -days 3650 -sha256 \
     -subj "/O=swift-oauth2 tests/CN=swift-oauth2 test client CA" \
     -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
   openssl req -newkey rsa:2048 -nodes -keyout "$dir/client.key" -out "$dir/client.csr" -subj "/CN=$MTLS_CA_SAN_DNS" 2>/dev/null
   printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" "extendedKeyUsage=clientAuth" \
     "subjectAltName=DNS:$MTLS_CA_SAN_DNS" >"$dir/client.ext"
   openssl x509 -req -in "$dir/client.csr" -CA "$dir/client-ca.pem" -CAkey "$dir/client-ca.key" \
     -set_serial "0x$(openssl rand -hex 16)" -days 825 -sha256 -extfile "$dir/client.ext" -out "$dir/client.pem" 2>/dev/null
   openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/self.key" -out "$dir/self.pem" -days 825 -sha256 \
     -subj "/CN=oauth2-mtls-self-signed" -addext "extendedKeyUsage=clientAuth" 2>/dev/null)
  rm -f "$dir/client.csr" "$dir/client.ext"
  local n x5c
  # shellcheck disable=SC2059  # the format is the modulus's bytes as \xHH escapes
  n=$(printf "$(openssl x509 -in "$dir/self.pem" -noout -modulus | cut -d= -f2 | sed 's/../\\x&/g')" | base64 -w0 | tr '+/' '-_' | tr -d '=')
  x5c=$(openssl x509 -in "$dir/self.pem" -outform DER | base64 -w0)
  jq -n --arg n "$n" --arg x5c "$x5c" '{keys:[{kty:"RSA", e:"AQAB", n:$n, use:"sig", kid:"mtls-self", x5c:[$x5c]}]}' >"$dir/self.jwks.json"
  chmod 644 "$dir"/*.pem "$dir/self.jwks.json"
  openssl verify -CAfile "$dir/client-ca.pem" -purpose sslclient "$dir/client.pem" >/dev/null 2>&1 || die "made client certificates do not verify"
}
