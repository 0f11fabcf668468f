#!/usr/bin/env bash
# The official MCP Python SDK's server side as a protected resource whose tokens Glewlwyd issues
# (resource_server.py), for the Swift integration test MCPPythonResourceServerTests.
#   Tests/MCPPython/resource.sh python   ensure the venv, print its python (the tests' OAUTH2_TEST_MCP_PYTHON)
#   Tests/MCPPython/resource.sh          ensure the venv, start the server on a free port, print
#                                        "LISTENING <url>", serve until stopped
# Environment: OAUTH2_MCP_PYTHON_STATE_DIR  the venv (default .build/mcp-python; journey.sh's)
# and, to serve, those resource_server.py names (MCP_RS_*). The venv has the pins of
# journey.sh (kept in step: the same venv serves both).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STATE=${OAUTH2_MCP_PYTHON_STATE_DIR:-$ROOT/.build/mcp-python}
VENV=$STATE/venv
PINS=(mcp==2.3.0 mcp-types==2.3.0 httpx2==2.16.2 anyio==4.16.0 pydantic==2.14.4)

log() { printf 'mcp-python-server: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

mkdir -p "$STATE"
venv_ok() {
  "$VENV/bin/python" - "${PINS[@]}" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if all(version(n) == v for n, v in (p.split("==") for p in sys.argv[1:])) else 1)
PY
}
if ! venv_ok; then
  log "creating venv with ${PINS[*]}"
  rm -rf "$VENV"
  python3 -m venv "$VENV" >/dev/null 2>&1 || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${PINS[@]}" >"$STATE/pip.log" 2>&1 \
    || { tail -n 20 "$STATE/pip.log" >&2; rm -rf "$VENV"; die "pip install failed (see $STATE/pip.log)"; }
  venv_ok || die "the venv lacks the pinned versions after pip install"
fi

case "${1:-}" in
  python) echo "$VENV/bin/python" ;;
  "") exec "$VENV/bin/python" "$ROOT/Tests/MCPPython/resource_server.py" ;;
  *) die "usage: resource.sh [python]" ;;
esac
