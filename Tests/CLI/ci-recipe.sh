#!/usr/bin/env bash
# Runs the CI recipe (docs/recipes/ci.sh, shown line by line in "The oauth2 command") against
# the embedded test provider, as a CI system would: the setup job, one job, the setup again,
# then four jobs at once on an expired token. Tests/CLI/e2e.sh runs it; it runs alone too:
#   OAUTH2_TEST_PROVIDER=.build/debug/oauth2-test-provider Tests/CLI/ci-recipe.sh PATH-TO-oauth2
# On 127.0.0.1, ephemeral ports: oauth2-test-provider (access tokens of 60 s) and a small API
# (Python) that records the SHA-256 of each Authorization header it gets, never the header.
# Each passing check appends "embedded-cli ci recipe: <name>" to $OAUTH2_INTEGRATION_LOG.
# Exits 1 if any check failed.
set -uo pipefail
BIN=${1:?usage: ci-recipe.sh PATH-TO-oauth2}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RECIPE=$HERE/../../docs/recipes/ci.sh
PROVIDER=${OAUTH2_TEST_PROVIDER:-$(dirname "$BIN")/oauth2-test-provider}
LOG=${OAUTH2_INTEGRATION_LOG:-/dev/null}
LIFETIME=60   # the access tokens' lifetime: renewed at half of it, 30 s after they were issued
WORK=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done; rm -rf "$WORK"; }
trap cleanup EXIT
failures=0 passed=0
check() {  # NAME COMMAND...: passes when COMMAND succeeds
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "embedded-cli ci recipe: $name" >>"$LOG"; echo "ok   ci recipe: $name"
  else failures=$((failures + 1)); echo "FAIL ci recipe: $name"; fi
}
# first_line FILE: waits (at most 60 s, a hang bound) for FILE's first line and prints it.
first_line() {
  local i; for i in $(seq 600); do [ -s "$1" ] && break; sleep 0.1; done
  head -n 1 "$1"
}
sha() { printf %s "$1" | sha256sum | cut -d' ' -f1; }

# The provider, until this script exits (its stdin is a pipe this script holds open).
mkfifo "$WORK/provider-in"
"$PROVIDER" --access-token-lifetime "$LIFETIME" --exit-on-stdin-close <"$WORK/provider-in" >"$WORK/provider.out" 2>"$WORK/provider.err" &
pids+=($!)
exec 9>"$WORK/provider-in"
ISSUER=$(first_line "$WORK/provider.out")
# The API: 200 to a request with an Authorization header (its hash appended to seen), else 401.
python3 -c '
import hashlib, http.server, sys
class API(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        header = self.headers.get("Authorization")
        if header:
            with open(sys.argv[1], "a") as seen:
                seen.write(hashlib.sha256(header.removeprefix("Bearer ").encode()).hexdigest() + "\n")
        self.send_response(200 if header else 401)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args): pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), API)
print("http://127.0.0.1:%d/deploy" % server.server_port, flush=True)
server.serve_forever()
' "$WORK/seen" >"$WORK/api.out" 2>"$WORK/api.err" &
pids+=($!)
API=$(first_line "$WORK/api.out")
if [ -z "$ISSUER" ] || [ -z "$API" ]; then
  echo "FAIL ci recipe: the provider ($ISSUER) or the API ($API) did not start"; cat "$WORK/provider.err" "$WORK/api.err"; exit 1
fi
touch "$WORK/seen"

umask 077
printf '%s\n' oauth2-demo-secret >"$WORK/ci-secret"
export OAUTH2=$BIN OAUTH2_CONFIG_DIR=$WORK/workspace/.oauth2 OAUTH2_CI_ISSUER=$ISSUER OAUTH2_CI_CLIENT_ID=oauth2-demo-confidential \
  OAUTH2_CI_SECRET_FILE=$WORK/ci-secret OAUTH2_CI_SCOPE=api OAUTH2_CI_API=$API
current() { "$BIN" --profile ci token; }   # the stored token, read by this test only
seen_since() { tail -n +"$(($1 + 1))" "$WORK/seen"; }
no_token_in() { ! grep -qF -- "$1" "${@:2}"; }

echo "== the CI recipe (docs/recipes/ci.sh) at $ISSUER"
"$RECIPE" setup >"$WORK/setup.out" 2>"$WORK/setup.err"; rc=$?
check "setup: exit 0" test "$rc" = 0
check "setup: prints nothing (the token goes nowhere)" test ! -s "$WORK/setup.out" -a ! -s "$WORK/setup.err"
first=$(current)
check "setup: the profile lives under OAUTH2_CONFIG_DIR, without the secret" \
  sh -c "test -s '$OAUTH2_CONFIG_DIR/profiles/ci.json' && ! grep -q oauth2-demo-secret '$OAUTH2_CONFIG_DIR/profiles/ci.json'"

before=$(wc -l <"$WORK/seen")
"$RECIPE" job >"$WORK/job.log" 2>&1; rc=$?
check "job: exit 0" test "$rc" = 0
check "job: the API answered 200 to each of the three forms" \
  test "$(cat "$WORK/job.log")" = "$(printf 'variable: 200\nheader: 200\nexec: 200')"
check "job: the API got the stored token three times" test "$(seen_since "$before" | sort | uniq -c | awk '{print $1 " " $2}')" = "3 $(sha "$first")"
check "job: its log holds no token" no_token_in "$first" "$WORK/job.log"

"$RECIPE" setup >/dev/null 2>&1
renewed_at=$(date +%s)
second=$(current)
check "setup again: token --grant asked for a new token" test -n "$second" -a "$second" != "$first"

# Wait, on this machine's clock, until the token is due for renewal, then run four jobs at once.
sleep $((renewed_at + LIFETIME / 2 + 1 - $(date +%s)))
before=$(wc -l <"$WORK/seen")
jobs=()
for n in 1 2 3 4; do "$RECIPE" job >"$WORK/job$n.log" 2>&1 & jobs+=($!); done
rc=0; for pid in "${jobs[@]}"; do wait "$pid" || rc=1; done
check "four jobs at once on an expired token: exit 0" test "$rc" = 0
third=$(current)
check "... one new token between them (client credentials once)" test -n "$third" -a "$third" != "$second"
check "... every request of every job carried that token" \
  test "$(seen_since "$before" | sort | uniq -c | awk '{print $1 " " $2}')" = "12 $(sha "$third")"
check "... and no job's log holds a token" no_token_in "$third" "$WORK"/job?.log
check "the provider's log holds no token" no_token_in "$third" "$WORK/provider.err"

exec 9>&-
echo "ci recipe: $passed passed, $failures failed"
[ "$failures" = 0 ]
