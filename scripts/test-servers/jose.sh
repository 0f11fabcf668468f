#!/usr/bin/env bash
# An independent JOSE implementation for the tests: Python joserfc (pinned, from PyPI) in a
# venv of its own. The DPoP tests of OAuth2Web check proofs that it makes, not only proofs
# made by our own DPoP code (Tests/Support/dpop/make-proofs.py). Not a server.
#   jose.sh install   make the venv if it lacks the pinned versions
#   jose.sh python    print the venv's python
# State: $STATE/jose/venv, $STATE/jose/pip.log.
set -euo pipefail
NAME="jose"
# shellcheck source=scripts/test-servers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DIR=$STATE/jose VENV=$STATE/jose/venv
PINS=(joserfc==1.8.0 cryptography==48.0.0)

case "${1:-}" in
  install) take_lock jose; mkdir -p "$DIR"; ensure_pinned_venv "$VENV" "$DIR/pip.log" "${PINS[@]}" ;;
  python) echo "$VENV/bin/python" ;;
  *) echo "usage: $0 install|python" >&2; exit 2 ;;
esac
