#!/usr/bin/env bash
# Stops the integration-test servers started by up.sh. Idempotent; keeps logs, certificates
# and the Python venvs for the next start.
set -euo pipefail
NAME="down"
# shellcheck source=scripts/test-servers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# In parallel: each waits up to a few seconds for its server to go.
pids=()
for s in postgres keyring tls oidcprovider lemonldap authgent dot glewlwyd; do "$TS_DIR/$s.sh" stop & pids+=($!); done
"$TS_DIR/postgres.sh" stop fault & pids+=($!)
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit "$rc"
