#!/usr/bin/env bash
# The venv of the official MCP Python SDK (`mcp` from PyPI at a pinned version, and the versions
# it resolved to), shared by every MCP Python peer: journey.sh and journey-glewlwyd.sh (the
# SDK's client against the example MCP server, with its embedded provider or Glewlwyd), resource.sh (the SDK's server as a protected resource) and
# identity_assertion.py (SEP-990). Kept while it has exactly these pins; prints its python.
#   Tests/MCPPython/venv.sh
# Environment: OAUTH2_MCP_PYTHON_STATE_DIR  where the venv lives (default .build/mcp-python)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STATE=${OAUTH2_MCP_PYTHON_STATE_DIR:-$ROOT/.build/mcp-python}
VENV=$STATE/venv
PINS=(mcp==2.3.0 mcp-types==2.3.0 httpx2==2.16.2 anyio==4.16.0 pydantic==2.14.4)

log() { printf 'mcp-python: %s\n' "$*" >&2; }
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
echo "$VENV/bin/python"
