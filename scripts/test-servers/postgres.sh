#!/usr/bin/env bash
# PostgreSQL 15 (Debian) for the OAuth2Postgres tests, on 127.0.0.1:${OAUTH2_TEST_POSTGRES_PORT:-8700},
# TLS only, with a server certificate issued by the project's test CA (tls.sh's, made here when
# tls.sh has not made it yet).
#   postgres.sh start [fault]   install postgresql-15 if missing, initdb if needed, start unless up
#   postgres.sh stop [fault]    stop the server and wait until the port is free
#   postgres.sh status [fault]  exit 0 if it accepts connections
#   postgres.sh env [fault]     print the export lines of its settings (also written to $DIR/env)
# `fault` names a second cluster, on 127.0.0.1:${OAUTH2_TEST_POSTGRES_FAULT_PORT:-8701} in
# $STATE/postgres-fault, for the tests that stop PostgreSQL in the middle of a renewal (and start
# it again) without disturbing the tests that share the first; its URL is
# OAUTH2_TEST_POSTGRES_FAULT_URL.
# initdb and the server refuse to run as root: both run as the `postgres` user, in a data
# directory it owns ($STATE/postgres/data); the scripts reach it through a socket directory of
# its own ($STATE/postgres/run), never the system cluster's.
# State: $STATE/postgres: data/ (the cluster), certs/ (server.pem and server.key, owned by
# postgres), ca.pem (the CA that issued server.pem: trust this), server.log, env, pid, ready.
# A checkout in a private folder (root's home and `mktemp -d` are 0700): the postgres user
# cannot reach $STATE/postgres, so what the server itself opens — data/, run/, certs/ and
# server.log — goes to a directory the script makes for it, /var/tmp/swift-oauth2-NAME-HASH
# (HASH: of the state directory's path; owned by postgres, mode 0700); ca.pem, env and the
# pid file stay in $STATE/postgres, where the tests read them. Nothing to set.
# Settings for the tests (up.sh copies them into $STATE/env; `fault`: only the URL, under its own name):
#   OAUTH2_TEST_POSTGRES_URL      postgres://USER:PASSWORD@127.0.0.1:PORT/DB?sslmode=verify-full&sslrootcert=CA
#   OAUTH2_TEST_POSTGRES_CA_FILE  the CA to trust
set -euo pipefail
NAME=postgres
# shellcheck source=scripts/test-servers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case "${2:-main}" in
  main) DIR=$STATE/postgres PORT=$POSTGRES_PORT URL_VAR=OAUTH2_TEST_POSTGRES_URL ;;
  fault) NAME=postgres-fault DIR=$STATE/postgres-fault PORT=$POSTGRES_FAULT_PORT URL_VAR=OAUTH2_TEST_POSTGRES_FAULT_URL ;;
  *) echo "usage: $0 start|stop|status|env [fault]" >&2; exit 2 ;;
esac
PIDFILE=$DIR/postgres.pid READY=$DIR/ready ENVFILE=$DIR/env CA=$DIR/ca.pem
# The test CA that tls.sh makes (and that this script makes when tls.sh has not yet).
TEST_CA=$STATE/tls/ca.pem TEST_CA_KEY=$STATE/tls/ca.key
BIN=/usr/lib/postgresql/15/bin
CMD_RE='bin/postgres -D '
ISS=postgres://$POSTGRES_USER@127.0.0.1:$PORT/$POSTGRES_DB   # what await_answer names (no password)
URL="postgres://$POSTGRES_USER:$POSTGRES_PASSWORD@127.0.0.1:$PORT/$POSTGRES_DB?sslmode=verify-full&sslrootcert=$CA"

# (From /: the caller's working directory may be one the postgres user cannot enter.)
as_postgres() {
  if [ "$(id -un)" = postgres ]; then (cd / && "$@")
  elif [ "$(id -u)" -eq 0 ]; then (cd / && runuser -u postgres -- "$@")
  else (cd / && sudo -u postgres "$@"); fi
}

# Where the server's own files go (CLUSTER: data/, run/, certs/, server.log): $DIR when the
# postgres user can reach it, else a directory of its own under /var/tmp named after $DIR
# (made by ensure_cluster_dir). Decided again by every command, the same way each time.
locate_cluster() {
  mkdir -p "$DIR"
  CLUSTER=$DIR
  if ! id postgres >/dev/null 2>&1 || ! as_postgres test -x "$DIR" 2>/dev/null; then
    CLUSTER=/var/tmp/swift-oauth2-$NAME-$(printf '%s' "$(cd "$DIR" && pwd -P)" | sha256sum | cut -c1-16)
  fi
  DATA=$CLUSTER/data CERTS=$CLUSTER/certs RUN=$CLUSTER/run LOG=$CLUSTER/server.log
}

# Makes the directory of locate_cluster when it is not $DIR; one of that name that is not a
# directory of the postgres user's alone (made by someone else, a link) is never used.
ensure_cluster_dir() {
  [ "$CLUSTER" != "$DIR" ] || return 0
  if [ ! -e "$CLUSTER" ] && [ ! -L "$CLUSTER" ]; then
    as_root mkdir -m 700 "$CLUSTER" && as_root chown postgres: "$CLUSTER"
  fi
  [ -d "$CLUSTER" ] && [ ! -L "$CLUSTER" ] && [ "$(stat -c '%U %a' "$CLUSTER")" = "postgres 700" ] \
    || die "$CLUSTER is not the postgres user's own directory (mode 0700): remove it, or set OAUTH2_TEST_STATE_DIR to a folder the postgres user can reach"
  log "the postgres user cannot reach $DIR: the cluster's data, socket and certificate are in $CLUSTER"
}

answers() { "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" -d "$POSTGRES_DB" -t 2 >/dev/null 2>&1; }

# Runs SQL as the superuser over the cluster's own socket directory.
psql_admin() { as_postgres "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$RUN" -p "$PORT" -d postgres "$@"; }

do_status() { [ -n "$(our_pid "$PIDFILE" "$CMD_RE")" ] && answers; }

# The server certificate is kept while it verifies against the CA copy, the test CA has not
# changed since it was issued, and both stay valid for 2 more days.
certs_ok() {
  [ -s "$CA" ] && [ -s "$CERTS/server.pem" ] && [ -s "$CERTS/server.key" ] \
    && { [ ! -s "$TEST_CA" ] || cmp -s "$TEST_CA" "$CA"; } \
    && openssl x509 -checkend 172800 -noout -in "$CA" >/dev/null \
    && openssl x509 -checkend 172800 -noout -in "$CERTS/server.pem" >/dev/null \
    && openssl verify -CAfile "$CA" -purpose sslserver "$CERTS/server.pem" >/dev/null 2>&1
}

# The test CA as tls.sh makes it (same subject, same files), when tls.sh has not made it yet.
ensure_test_ca() {
  if [ -s "$TEST_CA" ] && [ -s "$TEST_CA_KEY" ] && openssl x509 -checkend 172800 -noout -in "$TEST_CA" >/dev/null; then
    return 0
  fi
  log "making the test CA in $STATE/tls"
  mkdir -p "$STATE/tls"
  (umask 077
   openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TEST_CA_KEY" -out "$TEST_CA" -days 3650 -sha256 \
     -subj "/O=swift-oauth2 tests/CN=swift-oauth2 test CA" \
     -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null)
  chmod 644 "$TEST_CA"
}

make_certs() {
  log "issuing the server certificate (127.0.0.1, localhost) from the test CA"
  ensure_test_ca
  rm -rf "$CERTS"; mkdir -p "$CERTS"
  (umask 077
   openssl req -newkey rsa:2048 -nodes -keyout "$CERTS/server.key" -out "$CERTS/server.csr" -subj "/CN=127.0.0.1" 2>/dev/null
   printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
     "extendedKeyUsage=serverAuth" "subjectAltName=IP:127.0.0.1,DNS:localhost" \
     "subjectKeyIdentifier=hash" "authorityKeyIdentifier=keyid,issuer" >"$CERTS/server.ext"
   openssl x509 -req -in "$CERTS/server.csr" -CA "$TEST_CA" -CAkey "$TEST_CA_KEY" -set_serial "0x$(openssl rand -hex 16)" \
     -days 825 -sha256 -extfile "$CERTS/server.ext" -out "$CERTS/server.pem" 2>/dev/null)
  rm -f "$CERTS/server.csr" "$CERTS/server.ext"
  cp "$TEST_CA" "$CA.tmp" && chmod 644 "$CA.tmp" && mv "$CA.tmp" "$CA"
  chmod 644 "$CERTS/server.pem"; chmod 600 "$CERTS/server.key"
  chown -R postgres: "$CERTS" 2>/dev/null || as_root chown -R postgres: "$CERTS"
  certs_ok || die "the server certificate does not verify against the test CA"
}

# The settings this script owns; the cluster's postgresql.conf includes this file.
write_conf() {
  as_postgres tee "$DATA/oauth2-test.conf" >/dev/null <<CONF
# Generated by scripts/test-servers/postgres.sh at every start.
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$RUN'
max_connections = 300
shared_buffers = 64MB
ssl = on
ssl_cert_file = '$CERTS/server.pem'
ssl_key_file = '$CERTS/server.key'
ssl_min_protocol_version = 'TLSv1.2'
password_encryption = 'scram-sha-256'
log_destination = 'stderr'
log_line_prefix = '%m [%p] %u@%d '
log_connections = off
CONF
  # TCP only with TLS; the superuser only through the socket directory, by peer.
  as_postgres tee "$DATA/pg_hba.conf" >/dev/null <<HBA
# Generated by scripts/test-servers/postgres.sh at every start.
local     all  postgres                peer
hostssl   all  all       127.0.0.1/32  scram-sha-256
hostnossl all  all       127.0.0.1/32  reject
HBA
}

init_cluster() {
  log "initdb in $DATA"
  rm -rf "$DATA"; mkdir -p "$DATA"; chown postgres: "$DATA"; chmod 700 "$DATA"
  as_postgres "$BIN/initdb" -D "$DATA" -U postgres --auth-local=peer --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 \
    >"$DIR/initdb.log" 2>&1 || { cat "$DIR/initdb.log" >&2; die "initdb failed"; }
  echo "include = 'oauth2-test.conf'" | as_postgres tee -a "$DATA/postgresql.conf" >/dev/null
}

# The tests' role and database (idempotent; the password is reset to the fixed one).
setup_database() {
  psql_admin -v user="$POSTGRES_USER" -v password="$POSTGRES_PASSWORD" -v db="$POSTGRES_DB" <<'SQL'
SELECT format('CREATE ROLE %I LOGIN', :'user') WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'user') \gexec
ALTER ROLE :"user" WITH LOGIN PASSWORD :'password';
SELECT format('CREATE DATABASE %I OWNER %I', :'db', :'user') WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = :'db') \gexec
SQL
  # (The fault tests end connections with pg_terminate_backend: a role may end its own
  # backends without any grant.)
}

write_env() {
  { printf 'export %s=%q\n' "$URL_VAR" "$URL"
    [ "$URL_VAR" != OAUTH2_TEST_POSTGRES_URL ] || printf 'export %s=%q\n' OAUTH2_TEST_POSTGRES_CA_FILE "$CA"; } >"$ENVFILE.tmp"
  chmod 600 "$ENVFILE.tmp"; mv "$ENVFILE.tmp" "$ENVFILE"
}

do_stop() {
  if [ -s "$DATA/postmaster.pid" ] && [ -n "$(our_pid "$PIDFILE" "$CMD_RE")" ]; then
    as_postgres "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 20 stop >/dev/null 2>&1 || true
  fi
  local pid; pid=$(our_pid "$PIDFILE" "$CMD_RE")
  [ -z "$pid" ] || stop_pids "$pid"
  rm -f "$PIDFILE" "$READY"
  free_port "$PORT" "$CMD_RE"
}

do_start() {
  local fp pid t0=$SECONDS
  fp=$(fingerprint "${BASH_SOURCE[0]}")
  if already_running "$fp" && certs_ok; then write_env; return 0; fi
  [ -x "$BIN/postgres" ] || ensure_debs postgresql-15
  ensure_debs openssl
  [ -x "$BIN/postgres" ] || die "$BIN/postgres not found after installing postgresql-15"
  id postgres >/dev/null 2>&1 || die "no postgres user (postgresql-15's install makes it)"
  locate_cluster  # again: before the install there was no postgres user to ask
  do_stop
  ensure_cluster_dir
  certs_ok || make_certs
  [ -s "$DATA/PG_VERSION" ] || init_cluster
  mkdir -p "$RUN"; chown postgres: "$RUN"
  : >"$LOG"; chown postgres: "$LOG"
  write_conf
  as_postgres "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 30 start >/dev/null 9>&- \
    || { tail -n 30 "$LOG" >&2; die "PostgreSQL failed to start (log: $LOG)"; }
  head -n 1 "$DATA/postmaster.pid" >"$PIDFILE"
  pid=$(our_pid "$PIDFILE" "$CMD_RE")
  [ -n "$pid" ] || die "PostgreSQL started but its pid is unknown (log: $LOG)"
  await_answer "$pid"
  setup_database
  # TLS is required and the certificate verifies for 127.0.0.1 with the test CA.
  PGPASSWORD=$POSTGRES_PASSWORD "$BIN/psql" -X -Atq \
    "host=127.0.0.1 port=$PORT dbname=$POSTGRES_DB user=$POSTGRES_USER sslmode=verify-full sslrootcert=$CA" \
    -c 'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()' | grep -qx t \
    || { do_stop; die "no verified TLS connection to $ISS (log: $LOG)"; }
  write_env
  echo "$fp" >"$READY"
  log "started (pid $pid) in $((SECONDS - t0)) s, $ISS, CA $CA"
}

case "${1:-}" in
  start) take_lock "$NAME"; locate_cluster; do_start ;;
  stop) take_lock "$NAME"; locate_cluster; do_stop; log "stopped" ;;
  status) locate_cluster; do_status ;;
  env) [ -s "$ENVFILE" ] || write_env; cat "$ENVFILE" ;;
  *) echo "usage: $0 start|stop|status|env [fault]" >&2; exit 2 ;;
esac
