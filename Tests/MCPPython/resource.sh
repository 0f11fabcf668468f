#!/usr/bin/env bash
# The official MCP Python SDK's server side as a protected resource whose tokens Glewlwyd issues
# (resource_server.py), for the Swift integration test MCPPythonResourceServerTests.
#   Tests/MCPPython/resource.sh python   ensure the venv, print its python (the tests' OAUTH2_TEST_MCP_PYTHON)
#   Tests/MCPPython/resource.sh          ensure the venv, start the server on a free port, print
#                                        "LISTENING <url>", serve until stopped
# Environment: OAUTH2_MCP_PYTHON_STATE_DIR  the venv (default .build/mcp-python; journey.sh's)
# and, to serve, those resource_server.py names (MCP_RS_*). The venv is venv.sh's, shared with
# journey.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STATE=${OAUTH2_MCP_PYTHON_STATE_DIR:-$ROOT/.build/mcp-python}
PYTHON=$(OAUTH2_MCP_PYTHON_STATE_DIR=$STATE "$ROOT/Tests/MCPPython/venv.sh")

log() { printf 'mcp-python-server: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

case "${1:-}" in
  python) echo "$PYTHON" ;;
  "") exec "$PYTHON" "$ROOT/Tests/MCPPython/resource_server.py" ;;
  *) die "usage: resource.sh [python]" ;;
esac
