#!/usr/bin/env bash
# The official MCP Python SDK as a client of the example MCP server (Examples/MCPServer) whose
# authorization server is Glewlwyd (its OIDC instance oidc-mcp): journey_glewlwyd.py (discovery,
# dynamic registration at Glewlwyd, sign-in in headless Chromium on Glewlwyd's login page, tools,
# step-up through the browser again). Each passing check appends
# "mcp python-glewlwyd <check>" to $OAUTH2_INTEGRATION_LOG.
#   Tests/MCPPython/journey-glewlwyd.sh SERVER_BINARY
# SERVER_BINARY: oauth2-mcp-server-example built with the traits Hummingbird and MCP.
# Environment (scripts/test-servers/up.sh's env; the journey fails without them, it does not skip):
#   OAUTH2_TEST_GLEWLWYD_MCP_ISSUER, OAUTH2_TEST_GLEWLWYD_MCP_RS_ID, OAUTH2_TEST_GLEWLWYD_MCP_RS_SECRET,
#   OAUTH2_TEST_GLEWLWYD_MCP_USER, OAUTH2_TEST_GLEWLWYD_MCP_PASSWORD, OAUTH2_TEST_STATE_DIR (Chromium's venv)
#   OAUTH2_MCP_PYTHON_STATE_DIR  the venv, logs and the browser's cookies (default .build/mcp-python)
# The venv is Tests/MCPPython/venv.sh's. Exits non-zero if a part is missing or a check failed.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STATE=${OAUTH2_MCP_PYTHON_STATE_DIR:-$ROOT/.build/mcp-python}
BIN=${1:?usage: journey-glewlwyd.sh SERVER_BINARY}

log() { printf 'mcp-python-glewlwyd: %s\n' "$*" >&2; }
die() { log "error: $*"; echo "mcp-python-glewlwyd: FAILED ($*)"; exit 1; }

[ -x "$BIN" ] || die "$BIN is not an executable"
for name in OAUTH2_TEST_GLEWLWYD_MCP_ISSUER OAUTH2_TEST_GLEWLWYD_MCP_RS_ID OAUTH2_TEST_GLEWLWYD_MCP_RS_SECRET \
  OAUTH2_TEST_GLEWLWYD_MCP_USER OAUTH2_TEST_GLEWLWYD_MCP_PASSWORD; do
  [ -n "${!name:-}" ] || die "$name is not set (source scripts/test-servers/up.sh's env)"
done
mkdir -p "$STATE"
curl -sf -o /dev/null --max-time 10 "$OAUTH2_TEST_GLEWLWYD_MCP_ISSUER/.well-known/openid-configuration" \
  || die "Glewlwyd's instance $OAUTH2_TEST_GLEWLWYD_MCP_ISSUER does not answer (glewlwyd.sh extras seeds it)"

PYTHON=$(OAUTH2_MCP_PYTHON_STATE_DIR=$STATE "$ROOT/Tests/MCPPython/venv.sh") || die "making the venv failed"

pid=""
cleanup() { [ -z "$pid" ] || { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Any free port; the server trusts Glewlwyd and introspects there as the resource servers' client.
OUT=$STATE/server-glewlwyd.out
: >"$OUT"
OAUTH2_EXAMPLE_PORT=0 OAUTH2_EXAMPLE_ISSUER="$OAUTH2_TEST_GLEWLWYD_MCP_ISSUER" \
  OAUTH2_EXAMPLE_CLIENT_ID="$OAUTH2_TEST_GLEWLWYD_MCP_RS_ID" OAUTH2_EXAMPLE_CLIENT_SECRET="$OAUTH2_TEST_GLEWLWYD_MCP_RS_SECRET" \
  "$BIN" >"$OUT" 2>"$STATE/server-glewlwyd.log" &
pid=$!
url=""
for _ in $(seq 1 600); do  # a hang bound (60 s), not a speed requirement
  url=$(awk '$1 == "LISTENING" { print $2 }' "$OUT")
  [ -n "$url" ] && break
  kill -0 "$pid" 2>/dev/null || die "the server stopped (log: $STATE/server-glewlwyd.log)"
  sleep 0.1
done
[ -n "$url" ] || die "the server did not start (log: $STATE/server-glewlwyd.log)"
log "server at $url, authorization server $OAUTH2_TEST_GLEWLWYD_MCP_ISSUER"
OAUTH2_MCP_PYTHON_STATE_DIR=$STATE "$PYTHON" "$ROOT/Tests/MCPPython/journey_glewlwyd.py" "$url"
