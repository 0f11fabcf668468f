#!/usr/bin/env bash
# The official MCP Python SDK as a client of the example MCP server (Examples/MCPServer) with its
# embedded provider: journey.py (discovery, sign-in, tools, step-up; a pre-registered client, then
# one identified by a Client ID Metadata Document that journey.py serves over HTTPS with a
# certificate from a CA made here, which the server's embedded provider is told to trust).
# Each passing check appends
# "mcp python <check>" to $OAUTH2_INTEGRATION_LOG.
#   Tests/MCPPython/journey.sh SERVER_BINARY
# SERVER_BINARY: oauth2-mcp-server-example built with the traits Hummingbird and MCP.
# Environment: OAUTH2_MCP_PYTHON_STATE_DIR  the venv and logs (default .build/mcp-python)
# The venv is Tests/MCPPython/venv.sh's (`mcp` from PyPI, pinned). Exits non-zero if the venv,
# the server or a check failed.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STATE=${OAUTH2_MCP_PYTHON_STATE_DIR:-$ROOT/.build/mcp-python}
BIN=${1:?usage: journey.sh SERVER_BINARY}

log() { printf 'mcp-python: %s\n' "$*" >&2; }
die() { log "error: $*"; echo "mcp-python: FAILED ($*)"; exit 1; }

[ -x "$BIN" ] || die "$BIN is not an executable"
mkdir -p "$STATE"

PYTHON=$(OAUTH2_MCP_PYTHON_STATE_DIR=$STATE "$ROOT/Tests/MCPPython/venv.sh") || die "making the venv failed"

# A CA and a certificate for 127.0.0.1 from it, made for this run: journey.py serves its client
# metadata document with them, and the embedded provider trusts only that CA for documents.
TLS=$STATE/tls
rm -rf "$TLS" && mkdir -p "$TLS"
(
  cd "$TLS"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 \
    -subj "/CN=mcp python journey CA" -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr -subj "/CN=127.0.0.1"
  printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' >server.ext
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext
) >"$STATE/openssl.log" 2>&1 || die "openssl could not make the journey's CA (see $STATE/openssl.log)"

pid=""
cleanup() { [ -z "$pid" ] || { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Any free port; the server prints the embedded provider's client and its resource identifier.
OUT=$STATE/server.out
: >"$OUT"
OAUTH2_EXAMPLE_PORT=0 OAUTH2_EXAMPLE_CLIENT_METADATA_DOCUMENTS_CA="$TLS/ca.pem" "$BIN" >"$OUT" 2>"$STATE/server.log" &
pid=$!
url="" client=""
for _ in $(seq 1 600); do  # a hang bound (60 s), not a speed requirement
  client=$(awk '$1 == "PROVIDER" { print $3 }' "$OUT")
  url=$(awk '$1 == "LISTENING" { print $2 }' "$OUT")
  [ -n "$url" ] && break
  kill -0 "$pid" 2>/dev/null || die "the server stopped (log: $STATE/server.log)"
  sleep 0.1
done
[ -n "$url" ] && [ -n "$client" ] || die "the server did not start (log: $STATE/server.log)"
log "server at $url"
"$PYTHON" "$ROOT/Tests/MCPPython/journey.py" "$url" "$client" "$TLS/server.pem" "$TLS/server.key"
