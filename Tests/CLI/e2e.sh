#!/usr/bin/env bash
# End-to-end tests of the built `oauth2` binary against Glewlwyd, django-oauth-toolkit, authgent-server and
# LemonLDAP::NG (on Glewlwyd's and LemonLDAP::NG's own pages also in headless Chromium),
# through the CLI surface README documents only (no test-only flags or variables; the
# "browser" is $BROWSER, as a user's would be). scripts/test runs this with the servers up
# and their environment exported:
#   Tests/CLI/e2e.sh PATH-TO-oauth2
#   OAUTH2_E2E_ONLY=embedded Tests/CLI/e2e.sh PATH-TO-oauth2   # only the checks that need no outside server
# Each passing check appends "<server>-cli <name>" to $OAUTH2_INTEGRATION_LOG. Exits 1 if
# any check failed.
set -uo pipefail
BIN=${1:?usage: e2e.sh PATH-TO-oauth2}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
: >"$WORK/out"
export OAUTH2_CONFIG_DIR=$WORK/config OAUTH2_E2E_JAR=$WORK/jar
LOG=${OAUTH2_INTEGRATION_LOG:-/dev/null}
GLEWLWYD=${OAUTH2_TEST_GLEWLWYD_ISSUER:-http://127.0.0.1:4593/api/oidc}
DOT=${OAUTH2_TEST_DOT_ISSUER:-http://127.0.0.1:8000/o}
DOT_URL=${OAUTH2_TEST_DOT_URL:-http://127.0.0.1:8000}
REDIRECT=${OAUTH2_TEST_REDIRECT_URI:-http://127.0.0.1:9999/callback}
failures=0 passed=0
# Secrets reach the tool as README teaches: from files, pipes or stdin, never the command line
# (but where a check is about that form).
umask 077
printf '%s\n' not-the-secret >"$WORK/wrong-credential"
printf '%s\n' "${OAUTH2_TEST_DOT_CC_SECRET:-cc-secret}" >"$WORK/cc-credential"
printf '%s\n' "${OAUTH2_TEST_DOT_PW_SECRET:-pw-secret}" >"$WORK/pw-credential"

# What a person must never read on stderr: a Swift type name (README "The oauth2 command":
# errors are a sentence and a hint, even with -v).
TYPE_NAMES='OAuth2Error|CLIError|URLError|TokenStoreError|JOSEError|ValidationError|DecodingError|EncodingError|CocoaError|HTTPClientError|IOError|\bNIO|Swift\.|Foundation\.'
# check SERVER NAME EXPECTED-RC COMMAND...: runs COMMAND (stdout to $WORK/out, stderr to
# $WORK/err) and expects its exit code. When it expects a failure, its stderr must name no
# Swift type (a failure of its own when it does).
check() {
  local server=$1 name=$2 want=$3; shift 3
  "$@" >"$WORK/out" 2>"$WORK/err"; local rc=$?
  if [ "$rc" = "$want" ]; then
    passed=$((passed + 1)); echo "$server-cli $name" >>"$LOG"; echo "ok   $server: $name"
  else
    failures=$((failures + 1)); echo "FAIL $server: $name (exit $rc, expected $want)"
    sed 's/^/     | /' "$WORK/err" | tail -n 15
  fi
  if [ "$want" != 0 ] && grep -Eq -- "$TYPE_NAMES" "$WORK/err"; then
    failures=$((failures + 1)); echo "FAIL   $server: $name: stderr names a Swift type"
    grep -E -- "$TYPE_NAMES" "$WORK/err" | head -n 3 | sed 's/^/     | /'
  fi
}
# expect CONDITION-DESCRIPTION COMMAND...: an extra assertion on the last check's output.
expect() {
  local what=$1; shift
  if ! "$@"; then failures=$((failures + 1)); echo "FAIL   $what"; sed 's/^/     | /' "$WORK/out" | head -n 5; fi
}
out() { cat "$WORK/out"; }
err() { cat "$WORK/err"; }

# A full journey through one server's authorization-code login.
journey() {
  local server=$1 issuer=$2 client=$3 browser=$4 userinfo=$5; shift 5
  local p="--profile $server"
  rm -f "$OAUTH2_E2E_JAR"
  check "$server" "login (loopback, \$BROWSER)" 0 env BROWSER="$browser" "$BIN" login $p --store file --issuer "$issuer" \
    --client-id "$client" --redirect-uri "$REDIRECT" --scope "openid profile read" --timeout 60 "$@"
  expect "login printed the authorization URL on stderr" grep -q "response_type=code" "$WORK/err"
  expect "login printed nothing on stdout" test ! -s "$WORK/out"
  check "$server" "token (global option before the command)" 0 "$BIN" $p token
  local first; first=$(out)
  expect "token prints the bare token and a newline" test "$(out | wc -l)" = 1 -a -n "$first"
  check "$server" "token (global option after the command)" 0 "$BIN" token $p
  expect "a valid token is reused" test "$(out)" = "$first"
  check "$server" "userinfo" 0 "$BIN" $p userinfo
  expect "userinfo prints JSON with sub" grep -q '"sub"' "$WORK/out"
  check "$server" "request (authorized GET)" 0 "$BIN" $p request "$userinfo"
  expect "request prints the body" grep -q '"sub"' "$WORK/out"
  check "$server" "token --force-refresh" 0 "$BIN" $p token --force-refresh
  expect "a forced refresh gives a new token" test "$(out)" != "$first"
  check "$server" "introspect" 0 "$BIN" $p introspect
  expect "introspect says active" grep -q '"active" : true' "$WORK/out"
  local current; current=$("$BIN" $p token)
  check "$server" "status (no token value)" 0 "$BIN" status $p --json
  expect "status names the profile" grep -q "\"profile\" : \"$server\"" "$WORK/out"
  expect "status shows no token" sh -c "! grep -qF -- '$current' '$WORK/out'"
}

echo "== the binary"
# scripts/test builds the tool as README ships it: without the package's URLSession trait, so
# that no process start loads libcurl and its thirty-odd shared libraries.
expect "the tool links no libcurl and no FoundationNetworking" sh -c "! ldd '$BIN' | grep -Eq 'libcurl|FoundationNetworking'"
check embedded "--version" 0 "$BIN" --version
expect "--version prints one line, oauth2 and the version" sh -c "test \"\$(wc -l <'$WORK/out')\" = 1 && grep -Eq '^oauth2 [0-9]+\.[0-9]+\.[0-9]+' '$WORK/out'"
for shell in bash zsh fish; do
  check embedded "--generate-completion-script $shell" 0 "$BIN" --generate-completion-script "$shell"
  expect "the $shell completion knows the commands" sh -c "grep -q login '$WORK/out' && grep -q register '$WORK/out'"
done
check embedded "a network failure reads as a sentence and a hint (3)" 3 "$BIN" --profile down --store memory discover http://127.0.0.1:1/o
expect "... naming the host and the cause, on one line" sh -c "test \"\$(wc -l <'$WORK/err')\" = 1 && grep -q '^oauth2: cannot reach 127.0.0.1:1 (connection refused); ' '$WORK/err'"

echo "== demo"
check embedded "demo: the whole journey against the embedded provider" 0 "$BIN" demo
expect "demo reported its nine steps" test "$(grep -c '✔' "$WORK/err")" = 9

echo "== a cached token, its formats, and exec (the embedded test provider)"
# oauth2-test-provider (OAUTH2_TEST_PROVIDER, which scripts/test sets, else beside the tool)
# on 127.0.0.1, an ephemeral port; it exits when its stdin (fd 8 here) closes.
PROVIDER=${OAUTH2_TEST_PROVIDER:-$(dirname "$BIN")/oauth2-test-provider}
mkfifo "$WORK/provider-in"
"$PROVIDER" --exit-on-stdin-close <"$WORK/provider-in" >"$WORK/provider-issuer" 2>"$WORK/provider.log" &
exec 8>"$WORK/provider-in"
for _ in $(seq 100); do [ -s "$WORK/provider-issuer" ] && break; sleep 0.1; done
EMBEDDED=$(head -n 1 "$WORK/provider-issuer")
expect "the test provider started ($PROVIDER)" test -n "$EMBEDDED"
printf '%s\n' oauth2-demo-secret >"$WORK/demo-credential"
e="--profile embedded"
check embedded "machine profile at the test provider, file store" 0 "$BIN" $e --store file token --grant client_credentials \
  --issuer "$EMBEDDED" --client-id oauth2-demo-confidential --client-secret-file "$WORK/demo-credential" --scope api
check embedded "token: a cached token" 0 "$BIN" $e token
cached=$(out)
expect "... is the one the sign-in printed" test -n "$cached"
# Threads and processes are made by clone/clone3 (fork and vfork too): a cached token makes none.
jq_true() { jq -e "$@" >/dev/null; }
clones() { grep -cE '^[0-9]+ +(clone|clone3|fork|vfork)\(' "$WORK/clones"; }
check embedded "a cached token starts no thread (strace -f)" 0 strace -f -e trace=clone,clone3,fork,vfork -o "$WORK/clones" "$BIN" $e token
expect "... no clone, clone3, fork or vfork" test "$(clones)" = 0
expect "... and prints the cached token" test "$(out)" = "$cached"
check embedded "a forced refresh does start threads (strace -f)" 0 strace -f -e trace=clone,clone3,fork,vfork -o "$WORK/clones" "$BIN" $e token --force-refresh
expect "... (the check above can see them)" test "$(clones)" -gt 0
refreshed=$(out)
expect "... and gets a new token" test -n "$refreshed" -a "$refreshed" != "$cached"
check embedded "token --format header" 0 "$BIN" $e token --format header
expect "... is one Authorization line" test "$(out)" = "Authorization: Bearer $refreshed"
check embedded "token --format json" 0 "$BIN" $e token --format json
expect "... has the token, its type, an RFC 3339 expiry and the scope" jq_true --arg t "$refreshed" \
  '.access_token == $t and .token_type == "Bearer" and .scope == "api" and (.expires_at | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"))' "$WORK/out"
expect "... and nothing else (no refresh token)" jq_true 'keys == ["access_token", "expires_at", "scope", "token_type"]' "$WORK/out"
check embedded "token --format env" 0 "$BIN" $e token --format env
expect "... is a line a shell reads back" sh -c "eval \"\$(cat '$WORK/out')\"; test \"\$OAUTH2_ACCESS_TOKEN\" = '$refreshed'"
check embedded "token --format env --env-var GH_TOKEN" 0 "$BIN" $e token --format env --env-var GH_TOKEN
expect "... names the variable" grep -q "^GH_TOKEN='" "$WORK/out"
check embedded "token --format json after a forced refresh" 0 "$BIN" $e token --force-refresh --format json
expect "... the session's way prints the same form" jq_true '.token_type == "Bearer" and (.access_token | length > 0)' "$WORK/out"
current=$("$BIN" $e token)
check embedded "token --format yaml: usage error (2)" 2 "$BIN" $e token --format yaml
check embedded "token --env-var without --format env: usage error (2)" 2 "$BIN" $e token --env-var T

# exec: the command replaces the tool (its parent is this script), sees the token in its
# environment only, and its exit status is the tool's.
check embedded "exec: the command sees the token in OAUTH2_ACCESS_TOKEN" 0 env -u OAUTH2_ACCESS_TOKEN "$BIN" $e exec -- \
  sh -c 'test -n "$OAUTH2_ACCESS_TOKEN" && printf %s "$OAUTH2_ACCESS_TOKEN" >"$1" && echo "$PPID" && tr "\0" " " </proc/$$/cmdline' sh "$WORK/seen"
expect "... the token, renewed by the same rule as token" test "$(cat "$WORK/seen")" = "$current"
expect "... the command replaced the tool: its parent is this script" test "$(head -n 1 "$WORK/out")" = "$$"
expect "... and the token is not on its command line" sh -c "! grep -qF -- '$current' '$WORK/out'"
check embedded "exec --env-var GH_TOKEN" 0 env -u OAUTH2_ACCESS_TOKEN "$BIN" $e exec --env-var GH_TOKEN -- \
  sh -c 'test "$GH_TOKEN" = "$1" && test -z "${OAUTH2_ACCESS_TOKEN+set}"' sh "$current"
check embedded "exec: the command's exit status is the tool's (7)" 7 "$BIN" $e exec -- sh -c 'exit 7'
check embedded "exec without a command: usage error (2)" 2 "$BIN" $e exec --
expect "... says so" grep -q "needs a command" "$WORK/err"
check embedded "exec of a command that does not exist (127)" 127 "$BIN" $e exec -- no-such-command-oauth2-e2e
expect "... names it" grep -q "command not found: no-such-command-oauth2-e2e" "$WORK/err"
check embedded "exec for a profile without a sign-in (5)" 5 "$BIN" --profile never-signed-in exec -- true
# The session's way (-vv; with no discovery cache, so that SwiftNIO starts and ignores
# SIGPIPE): the command still gets the signal mask, ignored signals and descriptors this
# script gave the tool.
rm -rf "$OAUTH2_CONFIG_DIR/metadata"
check embedded "exec the session's way: the command's signal state is the caller's" 0 "$BIN" -vv $e exec -- grep -E '^Sig(Blk|Ign)' /proc/self/status
expect "... (SigBlk and SigIgn as here)" sh -c "grep -E '^Sig(Blk|Ign)' /proc/self/status | diff - '$WORK/out' >/dev/null"
expect "... and SwiftNIO ran (a discovery request)" grep -q "$EMBEDDED" "$WORK/err"
check embedded "exec the session's way: no descriptor of the tool's is left open" 0 "$BIN" -vv $e exec -- ls /proc/self/fd
ls /proc/self/fd >"$WORK/fds" 2>/dev/null
expect "... (the same descriptors as a command run here)" diff "$WORK/fds" "$WORK/out"
exec 8>&-  # the test provider exits

echo "== the CI recipe (docs/recipes/ci.sh, its own test provider)"
if OAUTH2_TEST_PROVIDER=$PROVIDER "$HERE/ci-recipe.sh" "$BIN"; then
  passed=$((passed + 1)); echo "embedded-cli ci recipe" >>"$LOG"
else
  failures=$((failures + 1)); echo "FAIL embedded: the CI recipe (Tests/CLI/ci-recipe.sh)"
fi

# OAUTH2_E2E_ONLY=embedded: only the sections above, which need no outside server.
if [ "${OAUTH2_E2E_ONLY:-}" = embedded ]; then
  echo "e2e: $passed passed, $failures failed (OAUTH2_E2E_ONLY=embedded)"
  [ "$failures" = 0 ]; exit
fi

echo "== Glewlwyd"
# Glewlwyd's introspection and revocation want an authenticated client: the confidential
# one, whose secret the profile keeps in the token store (never in the profile file).
journey glewlwyd "$GLEWLWYD" "${OAUTH2_TEST_GLEWLWYD_CONF_ID:-code-conf}" "$HERE/browser-glewlwyd.sh" \
  "${OAUTH2_TEST_GLEWLWYD_URL:-http://127.0.0.1:4593}/api/oidc/userinfo" \
  --client-secret-file <(printf '%s\n' "${OAUTH2_TEST_GLEWLWYD_CONF_SECRET:-code-conf-secret}")
expect "a secret read from a pipe is kept in the store, not as the pipe's path" \
  sh -c "! grep -q '/dev/fd' '$OAUTH2_CONFIG_DIR/profiles/glewlwyd.json'"
check glewlwyd "decode - (the JWT from stdin)" 0 sh -c "\"$BIN\" --profile glewlwyd token | \"$BIN\" decode -"
expect "decode prints header, claims, verified false" sh -c "grep -q '\"verified\" : false' '$WORK/out' && grep -q '\"claims\"' '$WORK/out'"
expect "decode - printed no warning" test ! -s "$WORK/err"
"$BIN" --profile glewlwyd token >"$WORK/jwt"
check glewlwyd "decode --file" 0 "$BIN" decode --file "$WORK/jwt"
expect "decode --file prints the claims" grep -q '"claims"' "$WORK/out"
check glewlwyd "decode TOKEN (on the command line: still works)" 0 "$BIN" decode "$(cat "$WORK/jwt")"
expect "decode TOKEN warned in one line on stderr" sh -c "test \"\$(grep -c 'warning: decode TOKEN on the command line' '$WORK/err')\" = 1 && test \"\$(wc -l <'$WORK/err')\" = 1"
expect "the warning does not show the token" sh -c "! grep -qF -- \"\$(cat '$WORK/jwt')\" '$WORK/err'"
check glewlwyd "revoke" 0 "$BIN" --profile glewlwyd revoke
check glewlwyd "token after revoke: sign in again" 5 "$BIN" --profile glewlwyd token

echo "== implicit grant (legacy, Glewlwyd)"
# The fragment reaches the listener through its relay page, whose script node runs.
IMPLICIT=${OAUTH2_TEST_GLEWLWYD_IMPLICIT_ID:-implicit-public}
implicit_login() {  # NAME EXPECTED-RC PROFILE ISSUER CLIENT ARGS...
  local name=$1 want=$2 profile=$3 issuer=$4 client=$5; shift 5
  rm -f "$OAUTH2_E2E_JAR"
  check glewlwyd "$name" "$want" env BROWSER="$HERE/browser-glewlwyd.sh" "$BIN" --profile "$profile" login --store file \
    --issuer "$issuer" --client-id "$client" --redirect-uri "$REDIRECT" --scope "openid read" --timeout 60 "$@"
}
implicit_login "login --implicit (response_type=token)" 0 implicit "$GLEWLWYD" "$IMPLICIT" --implicit
expect "login --implicit warned on stderr that the grant is deprecated" grep -q "implicit grant is deprecated" "$WORK/err"
expect "the authorization URL asked for response_type=token" grep -q "response_type=token&" "$WORK/err"
check glewlwyd "token after login --implicit" 0 "$BIN" --profile implicit token
implicit_token=$(out)
expect "token printed the implicit access token" test -n "$implicit_token"
check glewlwyd "userinfo with the implicit access token" 0 "$BIN" --profile implicit userinfo
expect "userinfo prints JSON with sub" grep -q '"sub"' "$WORK/out"
check glewlwyd "token --force-refresh: no refresh token, sign in again (5)" 5 "$BIN" --profile implicit token --force-refresh
expect "the profile records the implicit grant" grep -q '"grant" : "implicit"' "$OAUTH2_CONFIG_DIR/profiles/implicit.json"
implicit_login "login --implicit-id-token (response_type=id_token token, ID token verified)" 0 implicit-oidc "$GLEWLWYD" "$IMPLICIT" --implicit-id-token
expect "the authorization URL asked for id_token token with a nonce" grep -q "response_type=id_token+token&.*&nonce=" "$WORK/err"
expect "login named the verified subject" grep -q "Signed in as " "$WORK/err"
implicit_login "login --implicit-id-token where tokens live 2 s" 0 implicit-short \
  "${OAUTH2_TEST_GLEWLWYD_SHORT_ISSUER:-http://127.0.0.1:4593/api/oidc-short}" "$IMPLICIT" --implicit-id-token
sleep 3   # the token's whole lifetime: what follows is about an expired token
check glewlwyd "token once the implicit token has expired: sign in again (5)" 5 "$BIN" --profile implicit-short token
expect "token said to sign in again" grep -q "sign in again" "$WORK/err"
implicit_login "login --implicit with a client not allowed the implicit grant (1)" 1 implicit-refused "$GLEWLWYD" \
  "${OAUTH2_TEST_GLEWLWYD_PUBLIC_ID:-code-public}" --implicit
check glewlwyd "usage: --implicit with --device (2)" 2 "$BIN" login --issuer "$GLEWLWYD" --client-id x --implicit --device
check glewlwyd "usage: --implicit-id-token without openid (2)" 2 "$BIN" login --issuer "$GLEWLWYD" --client-id x --implicit-id-token --scope read

echo "== django-oauth-toolkit"
journey dot "$DOT" "${OAUTH2_TEST_DOT_PUBLIC_ID:-code-public}" "$HERE/browser-dot.sh" "$DOT_URL/o/userinfo/"
check dot "logout (revoke, forget, end session on the listener)" 0 env BROWSER="$HERE/browser-dot.sh" "$BIN" --profile dot logout --timeout 60
expect "logout reported each step and the checked state" grep -q "post-logout state checked" "$WORK/err"
check dot "token after logout: sign in again" 5 "$BIN" --profile dot token

# The device flow: the test approves the code shown on stderr, as a user on a phone would.
device_login() {
  local server=$1; shift
  "$BIN" --profile "$server-device" --store file login --device --timeout 60 "$@" >"$WORK/dev.out" 2>"$WORK/dev.err" &
  local pid=$! code="" i
  for i in $(seq 1 100); do
    code=$(awk '/and enter the code:/ { getline; getline; print $1; exit }' "$WORK/dev.err")
    [ -n "$code" ] && break; sleep 0.1
  done
  approve_"$server" "$code"
  wait "$pid"; local rc=$?
  cp "$WORK/dev.out" "$WORK/out"; cp "$WORK/dev.err" "$WORK/err"
  if [ "$rc" = 0 ] && [ -n "$code" ]; then passed=$((passed + 1)); echo "$server-cli login --device" >>"$LOG"; echo "ok   $server: login --device"
  else failures=$((failures + 1)); echo "FAIL $server: login --device (exit $rc, user code '${code}')"; tail -n 15 "$WORK/err" | sed 's/^/     | /'; fi
}
approve_dot() {
  local jar=$WORK/device-jar csrf
  curl -s -c "$jar" -b "$jar" -o /dev/null "$DOT_URL/accounts/login/"
  csrf=$(awk '$6=="csrftoken"{print $7}' "$jar")
  curl -s -c "$jar" -b "$jar" -o /dev/null -d "csrfmiddlewaretoken=$csrf" -d "username=${OAUTH2_TEST_USER:-alice}" \
    -d "password=${OAUTH2_TEST_PASSWORD:-alice-pw}" -d next=/ "$DOT_URL/accounts/login/"
  csrf=$(awk '$6=="csrftoken"{print $7}' "$jar")
  curl -s -c "$jar" -b "$jar" -o /dev/null -d "csrfmiddlewaretoken=$csrf" -d "user_code=$1" "$DOT/device/"
  csrf=$(awk '$6=="csrftoken"{print $7}' "$jar")
  curl -s -c "$jar" -b "$jar" -o /dev/null -d "csrfmiddlewaretoken=$csrf" -d action=accept "$DOT/device-confirm/${OAUTH2_TEST_DOT_DEVICE_ID:-device}/$1"
}
echo "== device flow"
device_login dot --issuer "$DOT" --client-id "${OAUTH2_TEST_DOT_DEVICE_ID:-device}" --scope "openid read" \
  --device-authorization-endpoint "$DOT/device-authorization/"
expect "the user code and verification URL went to stderr" grep -q "/device" "$WORK/err"
check dot "token after the device flow" 0 "$BIN" --profile dot-device token

# CIBA (OpenID Connect, poll mode) at Glewlwyd's oidc-ciba instance: login prints the binding
# message on stderr and waits; the test, as the user, signs in to Glewlwyd, finds the request
# with that message among their pending ones (ciba_user_list) and approves it (ciba_user_check).
echo "== CIBA"
CIBA_ISSUER=${OAUTH2_TEST_GLEWLWYD_CIBA_ISSUER:-http://127.0.0.1:4593/api/oidc-ciba}
GLEWLWYD_URL=${OAUTH2_TEST_GLEWLWYD_URL:-http://127.0.0.1:4593}
printf '%s\n' "${OAUTH2_TEST_GLEWLWYD_CIBA_POLL_SECRET:-ciba-poll-secret}" >"$WORK/ciba-credential"
approve_ciba() {  # BINDING-MESSAGE
  local jar=$WORK/ciba-jar id
  curl -s -c "$jar" -b "$jar" -o /dev/null -H 'Content-Type: application/json' \
    -d "{\"username\":\"${OAUTH2_TEST_USER:-alice}\",\"password\":\"${OAUTH2_TEST_PASSWORD:-alice-pw}\"}" "$GLEWLWYD_URL/api/auth/"
  curl -s -c "$jar" -b "$jar" -o /dev/null -X PUT -H 'Content-Type: application/json' -d '{"scope":"openid read"}' \
    "$GLEWLWYD_URL/api/auth/grant/${OAUTH2_TEST_GLEWLWYD_CIBA_POLL_ID:-ciba-poll}"
  id=$(curl -s -b "$jar" "$CIBA_ISSUER/ciba_user_list" | jq -r --arg m "$1" '.[] | select(.binding_message == $m) | .user_req_id')
  [ -n "$id" ] && curl -s -b "$jar" -c "$jar" -o /dev/null "$CIBA_ISSUER/ciba_user_check?user_req_id=$id&g_continue"
}
message="E2E$RANDOM$RANDOM"
"$BIN" --profile glewlwyd-ciba --store file login --ciba --issuer "$CIBA_ISSUER" \
  --client-id "${OAUTH2_TEST_GLEWLWYD_CIBA_POLL_ID:-ciba-poll}" --client-secret-file "$WORK/ciba-credential" --scope "openid read" \
  --login-hint "{\"username\":\"${OAUTH2_TEST_USER:-alice}\"}" --binding-message "$message" --timeout 60 \
  >"$WORK/ciba.out" 2>"$WORK/ciba.err" &
ciba_pid=$!
for i in $(seq 1 100); do grep -q "$message" "$WORK/ciba.err" && break; sleep 0.1; done
approve_ciba "$message"
wait "$ciba_pid"; rc=$?
cp "$WORK/ciba.out" "$WORK/out"; cp "$WORK/ciba.err" "$WORK/err"
if [ "$rc" = 0 ]; then passed=$((passed + 1)); echo "glewlwyd-cli login --ciba" >>"$LOG"; echo "ok   glewlwyd: login --ciba"
else failures=$((failures + 1)); echo "FAIL glewlwyd: login --ciba (exit $rc)"; tail -n 15 "$WORK/err" | sed 's/^/     | /'; fi
expect "login --ciba showed the binding message on stderr" grep -q "$message" "$WORK/err"
expect "login --ciba printed nothing on stdout" test ! -s "$WORK/out"
check glewlwyd "token after login --ciba" 0 "$BIN" --profile glewlwyd-ciba token
check glewlwyd "userinfo after login --ciba" 0 "$BIN" --profile glewlwyd-ciba userinfo
check glewlwyd "usage: --ciba with --device (2)" 2 "$BIN" login --issuer "$CIBA_ISSUER" --client-id x --ciba --device
check glewlwyd "usage: --binding-message without --ciba (2)" 2 "$BIN" login --issuer "$CIBA_ISSUER" --client-id x --binding-message m

echo "== exit codes"
check glewlwyd "refused login: wrong client secret (1)" 1 env BROWSER="$HERE/browser-glewlwyd.sh" "$BIN" --profile wrong login \
  --store memory --issuer "$GLEWLWYD" --client-id "${OAUTH2_TEST_GLEWLWYD_CONF_ID:-code-conf}" --client-secret-file "$WORK/wrong-credential" \
  --redirect-uri "$REDIRECT" --scope "openid read" --timeout 60
check dot "refused machine token: wrong client secret from stdin (1)" 1 sh -c "\"$BIN\" --profile wrong-cc --store memory token \
  --grant client_credentials --issuer '$DOT' --client-id '${OAUTH2_TEST_DOT_CC_ID:-cc}' --client-secret-stdin <'$WORK/wrong-credential'"
expect "the refused secret is not echoed" sh -c "! grep -q 'not-the-secret' '$WORK/err' '$WORK/out'"
check dot "cancelled login: the sign-in wait ran out (4)" 4 env BROWSER=true "$BIN" --profile slow login --store memory \
  --issuer "$DOT" --client-id "${OAUTH2_TEST_DOT_PUBLIC_ID:-code-public}" --redirect-uri "$REDIRECT" --timeout 2
check dot "network failure: nothing listens at the issuer (3)" 3 "$BIN" --profile down --store memory token \
  --grant client_credentials --issuer http://127.0.0.1:1/o --client-id cc --client-secret-file "$WORK/wrong-credential"
check dot "usage error (2)" 2 "$BIN" token --no-such-option
check dot "no stored sign-in (5)" 5 "$BIN" --profile never-signed-in token
check dot "machine profile: client credentials, secret from a file" 0 "$BIN" --profile machine --store file token --grant client_credentials \
  --issuer "$DOT" --client-id "${OAUTH2_TEST_DOT_CC_ID:-cc}" --client-secret-file "$WORK/cc-credential" --scope read
expect "no warning for a secret from a file" test ! -s "$WORK/err"
expect "the profile remembers the file's path, not the secret" sh -c "grep -qF '$WORK/cc-credential' '$OAUTH2_CONFIG_DIR/profiles/machine.json'"
check dot "--client-secret on the command line still works" 0 "$BIN" --profile machine-argv --store memory token --grant client_credentials \
  --issuer "$DOT" --client-id "${OAUTH2_TEST_DOT_CC_ID:-cc}" --client-secret "${OAUTH2_TEST_DOT_CC_SECRET:-cc-secret}" --scope read
expect "... with a one-line warning on stderr, without the secret" sh -c "test \"\$(wc -l <'$WORK/err')\" = 1 && grep -q 'warning: --client-secret on the command line' '$WORK/err' && ! grep -qF -- '${OAUTH2_TEST_DOT_CC_SECRET:-cc-secret}' '$WORK/err'"
check dot "two secret forms at once: usage error (2)" 2 "$BIN" --profile x --store memory token --grant client_credentials \
  --issuer "$DOT" --client-id cc --client-secret-file "$WORK/cc-credential" --client-secret-stdin
check dot "machine profile: later calls need no secret on the command line" 0 "$BIN" --profile machine token --force-refresh
check dot "machine profile: a valid token is answered from the store" 0 "$BIN" -vv --profile machine token
expect "... with no request at all (discovery is cached on disk, the token is valid)" sh -c "! grep -q '$DOT_URL' '$WORK/err'"
# Threads are named as they start (prctl PR_SET_NAME): SwiftNIO's are NIO-…; without a request
# there must be none (a cached token is answered before any thread starts: no name at all).
check dot "machine profile: a cached token starts no event loop" 0 strace -f -e trace=prctl -o "$WORK/threads" "$BIN" --profile machine token
expect "... no NIO thread was named" sh -c "test -e '$WORK/threads' && ! grep -q '\"NIO-' '$WORK/threads'"
check dot "machine profile: a forced refresh does start one" 0 strace -f -e trace=prctl -o "$WORK/threads" "$BIN" --profile machine token --force-refresh
expect "... (the check above can see NIO's threads)" grep -q '"NIO-' "$WORK/threads"
expect "the discovery cache holds DOT's metadata, private (0600)" sh -c "grep -q '\"issuer\":\"$DOT\"' '$OAUTH2_CONFIG_DIR'/metadata/*.json && test \"\$(stat -c %a '$OAUTH2_CONFIG_DIR'/metadata/*.json | sort -u)\" = 600"

# agent_checks SERVER PROFILE: `oauth2 agent` hands out PROFILE's token over its socket (a
# signed-in profile of the file store); a client with OAUTH2_AGENT_SOCK opens no file of the
# config directory; SIGTERM stops the agent and removes its socket.
agent_checks() {
  local server=$1 profile=$2 dir sock pid i rc stored
  dir=$(mktemp -d); sock=$dir/agent.sock
  "$BIN" agent --socket "$sock" 2>"$WORK/agent.err" &
  pid=$!
  for i in $(seq 1 200); do grep -qs "listening on" "$WORK/agent.err" && break; sleep 0.05; done
  stored=$("$BIN" --profile "$profile" token)
  check "$server" "agent: token through OAUTH2_AGENT_SOCK" 0 env OAUTH2_AGENT_SOCK="$sock" "$BIN" --profile "$profile" token
  expect "... the token the store holds" test "$(out)" = "$stored"
  expect "the socket is private (0600)" test "$(stat -c %a "$sock")" = 600
  check "$server" "agent: the client opens no file of the config directory" 0 env OAUTH2_AGENT_SOCK="$sock" \
    strace -f -e trace=open,openat -o "$WORK/opens" "$BIN" --profile "$profile" token
  expect "... (no profile, no token store)" sh -c "grep -q openat '$WORK/opens' && ! grep -qF -- '$OAUTH2_CONFIG_DIR' '$WORK/opens'"
  check "$server" "agent: a profile never signed in: sign in again (5)" 5 env OAUTH2_AGENT_SOCK="$sock" "$BIN" --profile never-signed-in token
  expect "... said as a sentence" grep -q "^oauth2: no stored sign-in for profile" "$WORK/err"
  check "$server" "agent: --force-refresh does not go through the agent (2)" 2 env OAUTH2_AGENT_SOCK="$sock" "$BIN" --profile "$profile" token --force-refresh
  check "$server" "agent: a second agent does not take the socket over (1)" 1 "$BIN" agent --socket "$sock"
  expect "... and says why" grep -q "already listening" "$WORK/err"
  chmod 777 "$dir"
  check "$server" "agent: the client refuses a socket directory others can write to (1)" 1 env OAUTH2_AGENT_SOCK="$sock" "$BIN" --profile "$profile" token
  expect "... and says why" grep -q "can be written by others" "$WORK/err"
  chmod 700 "$dir"
  kill -TERM "$pid"; wait "$pid"; rc=$?
  check "$server" "agent: SIGTERM stops it (exit 0)" 0 test "$rc" = 0
  expect "... and removes its socket" test ! -e "$sock"
  expect "... and its log holds no token" sh -c "! grep -qF -- '$stored' '$WORK/agent.err'"
  check "$server" "agent: no agent listening: transient (3)" 3 env OAUTH2_AGENT_SOCK="$sock" "$BIN" --profile "$profile" token
  rm -rf "$dir"
}
agent_checks dot machine
check dot "request: a final 4xx exits 1" 1 "$BIN" --profile machine request "$DOT_URL/o/no-such-endpoint/"
expect "the final status went to stderr" grep -q "HTTP 404" "$WORK/err"
printf '%s\n' "${OAUTH2_TEST_PASSWORD:-alice-pw}" >"$WORK/pw"
check dot "machine profile: password grant, password from stdin" 0 sh -c "\"$BIN\" --profile pw --store file token --grant password \
  --issuer '$DOT' --client-id '${OAUTH2_TEST_DOT_PW_ID:-pw}' --client-secret-file '$WORK/pw-credential' \
  --username '${OAUTH2_TEST_USER:-alice}' --password-stdin --scope read <'$WORK/pw'"
expect "the password is not in the profile" sh -c "! grep -rq '${OAUTH2_TEST_PASSWORD:-alice-pw}' '$OAUTH2_CONFIG_DIR/profiles'"
expect "no client secret is in a profile file" sh -c "! grep -rq 'secret' '$OAUTH2_CONFIG_DIR/profiles'"
check dot "refresh token refused: sign in again (5)" 0 "$BIN" --profile pw revoke --token refresh
check dot "token after the refresh token was revoked (5)" 5 "$BIN" --profile pw token --force-refresh

echo "== Glewlwyd: DPoP, PAR, JWT client authentication"
G_URL=${OAUTH2_TEST_GLEWLWYD_URL:-http://127.0.0.1:4593}
G_NONCE=${OAUTH2_TEST_GLEWLWYD_NONCE_ISSUER:-$G_URL/api/oidc-nonce}
G_PAR=${OAUTH2_TEST_GLEWLWYD_PAR_ISSUER:-$G_URL/api/oidc-par}
CONF_ID=${OAUTH2_TEST_GLEWLWYD_CONF_ID:-code-conf} CONF_SECRET=${OAUTH2_TEST_GLEWLWYD_CONF_SECRET:-code-conf-secret}
JWT_SECRET_ID=${OAUTH2_TEST_GLEWLWYD_JWT_SECRET_ID:-jwt-secret}
JWT_SECRET_SECRET=${OAUTH2_TEST_GLEWLWYD_JWT_SECRET_SECRET:-jwt-secret-0123456789abcdef0123456789abcdef}
printf '%s\n' "$CONF_SECRET" >"$WORK/conf-credential"; printf '%s\n' "$JWT_SECRET_SECRET" >"$WORK/jwt-credential"
JWT_KEY_ID=${OAUTH2_TEST_GLEWLWYD_JWT_KEY_ID:-jwt-key}
KEYS=$HERE/../Fixtures/glewlwyd
# glogin PROFILE ISSUER ARGS...: an authorization-code login through the Glewlwyd "browser".
glogin() {
  local profile=$1 issuer=$2; shift 2
  rm -f "$OAUTH2_E2E_JAR"
  env BROWSER="$HERE/browser-glewlwyd.sh" "$BIN" login --profile "$profile" --store file --issuer "$issuer" \
    --redirect-uri "$REDIRECT" --scope "openid profile read" --timeout 60 "$@"
}
# jkt: the cnf.jkt of the access token `decode` printed last.
jkt() { jq -r '.claims.cnf.jkt // empty' "$WORK/out"; }

# DPoP: a key made at login, kept with the tokens; each later command is a new process that
# reads it back from the store and sends proofs with it.
check glewlwyd "login --dpop" 0 glogin dpop "$GLEWLWYD" --client-id "$CONF_ID" --client-secret-file "$WORK/conf-credential" --dpop
expect "the authorization request carried dpop_jkt" grep -q "dpop_jkt=" "$WORK/err"
expect "the profile says DPoP ES256 and holds no key" sh -c "grep -q '\"dpop\" : \"ES256\"' '$OAUTH2_CONFIG_DIR/profiles/dpop.json' \
  && ! grep -q '\"d\"' '$OAUTH2_CONFIG_DIR/profiles/dpop.json'"
check glewlwyd "token (DPoP profile)" 0 "$BIN" --profile dpop token
dpop_at=$(out)
check glewlwyd "decode of a DPoP-bound token shows cnf" 0 "$BIN" decode --file <(printf %s "$dpop_at")
dpop_jkt=$(jkt)
expect "cnf.jkt is there" test -n "$dpop_jkt"
check glewlwyd "status shows the stored DPoP key's thumbprint" 0 "$BIN" --profile dpop status --json
expect "the stored key is the one the token is bound to" grep -q "\"dpop_jkt\" : \"$dpop_jkt\"" "$WORK/out"
check glewlwyd "userinfo with a proof (key restored from the store)" 0 "$BIN" --profile dpop userinfo
expect "userinfo prints sub" grep -q '"sub"' "$WORK/out"
check glewlwyd "request with a proof (key restored from the store)" 0 "$BIN" --profile dpop request "$G_URL/api/oidc/userinfo"
expect "request prints the body" grep -q '"sub"' "$WORK/out"
check glewlwyd "the same token as Bearer (curl) is refused" 0 sh -c \
  "test \"\$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer $dpop_at' '$G_URL/api/oidc/userinfo')\" = 401"
check glewlwyd "token --force-refresh (DPoP: the refresh is proven with the stored key)" 0 "$BIN" --profile dpop token --force-refresh
expect "a new token" test "$(out)" != "$dpop_at"
out >"$WORK/jwt"; "$BIN" decode --file "$WORK/jwt" >"$WORK/out" 2>/dev/null
expect "the refreshed token is bound to the same key" test "$(jkt)" = "$dpop_jkt"
check glewlwyd "introspect (DPoP profile)" 0 "$BIN" --profile dpop introspect
expect "introspect says active" grep -q '"active" : true' "$WORK/out"
check glewlwyd "revoke (DPoP profile)" 0 "$BIN" --profile dpop revoke
check glewlwyd "token after revoke: sign in again" 5 "$BIN" --profile dpop token

# A machine profile with an EdDSA key against the instance that demands DPoP nonces: each new
# process starts without a nonce, is refused with use_dpop_nonce and sends the proof again.
printf '%s\n' "${OAUTH2_TEST_PASSWORD:-alice-pw}" >"$WORK/gpw"
check glewlwyd "DPoP nonce: password grant with --dpop EdDSA" 0 sh -c "\"$BIN\" --profile nonce --store file token --grant password \
  --issuer '$G_NONCE' --client-id '$CONF_ID' --client-secret-file '$WORK/conf-credential' --username '${OAUTH2_TEST_USER:-alice}' \
  --password-stdin --scope 'openid read' --dpop EdDSA <'$WORK/gpw'"
out >"$WORK/jwt"; "$BIN" decode --file "$WORK/jwt" >"$WORK/out" 2>/dev/null
expect "bound to an Ed25519 key" sh -c "test -n \"\$(jq -r '.claims.cnf.jkt // empty' '$WORK/out')\" \
  && grep -q '\"dpop\" : \"EdDSA\"' '$OAUTH2_CONFIG_DIR/profiles/nonce.json'"
check glewlwyd "DPoP nonce: token --force-refresh in a new process" 0 "$BIN" --profile nonce -v token --force-refresh
expect "the token endpoint refused the nonce-less proof (400), then took the proof with its nonce (200)" \
  sh -c "grep -q '/token → 400' '$WORK/err' && grep -q '/token → 200' '$WORK/err'"
check glewlwyd "DPoP nonce: userinfo in a new process (resource server's nonce challenge)" 0 "$BIN" --profile nonce -v userinfo
expect "userinfo prints sub" grep -q '"sub"' "$WORK/out"
expect "UserInfo refused the nonce-less proof (401), then answered (200)" \
  sh -c "grep -q '/userinfo → 401' '$WORK/err' && grep -q '/userinfo → 200' '$WORK/err'"
check glewlwyd "DPoP nonce: request in a new process" 0 "$BIN" --profile nonce request "$G_NONCE/userinfo"

# PAR: pushed on request (--par) and, unasked, where the server requires it.
check glewlwyd "login --par" 0 glogin par "$GLEWLWYD" --client-id "$CONF_ID" --client-secret-file "$WORK/conf-credential" --par
expect "the browser got only client_id and request_uri" sh -c "grep -q 'request_uri=urn' '$WORK/err' && ! grep -q 'code_challenge=' '$WORK/err'"
expect "the profile says PAR" grep -q '"par" : "true"' "$OAUTH2_CONFIG_DIR/profiles/par.json"
check glewlwyd "userinfo after login --par" 0 "$BIN" --profile par userinfo
check glewlwyd "login against the server that requires PAR (no --par)" 0 glogin par-required "$G_PAR" --client-id "$CONF_ID" \
  --client-secret-file "$WORK/conf-credential" --dpop
expect "the request was pushed" sh -c "grep -q 'request_uri=urn' '$WORK/err' && ! grep -q 'code_challenge=' '$WORK/err'"
check glewlwyd "userinfo on the PAR-requiring instance (DPoP too)" 0 "$BIN" --profile par-required userinfo

# JWT client authentication (RFC 7523): Glewlwyd wants each assertion's aud to be the URL
# of the endpoint it goes to (--assertion-audience endpoint) and refuses the issuer.
check glewlwyd "client_secret_jwt: machine token" 0 "$BIN" --profile jwt-secret --store file token --grant client_credentials \
  --issuer "$GLEWLWYD" --client-id "$JWT_SECRET_ID" --client-secret-file "$WORK/jwt-credential" --auth-method client_secret_jwt \
  --assertion-audience endpoint --scope read
check glewlwyd "client_secret_jwt: introspect" 0 "$BIN" --profile jwt-secret introspect
expect "introspect says active" grep -q '"active" : true' "$WORK/out"
check glewlwyd "client_secret_jwt: revoke the access token" 0 "$BIN" --profile jwt-secret revoke --token access
check glewlwyd "client_secret_jwt: introspect after revoke" 0 "$BIN" --profile jwt-secret introspect
expect "introspect says inactive" grep -q '"active" : false' "$WORK/out"
check glewlwyd "client_secret_jwt: a wrong secret is refused (1)" 1 "$BIN" --profile jwt-wrong --store memory token \
  --grant client_credentials --issuer "$GLEWLWYD" --client-id "$JWT_SECRET_ID" --client-secret-file <(echo not-the-secret-0123456789abcdef0123) \
  --auth-method client_secret_jwt --assertion-audience endpoint --scope read
check glewlwyd "private_key_jwt (EC JWK file): machine token" 0 "$BIN" --profile jwt-key --store file token --grant client_credentials \
  --issuer "$GLEWLWYD" --client-id "$JWT_KEY_ID" --auth-method private_key_jwt --private-key "$KEYS/jwt-client-ec.jwk.json" \
  --assertion-audience endpoint --scope read
expect "the profile keeps the key's path, not the key" sh -c "grep -q 'jwt-client-ec.jwk.json' '$OAUTH2_CONFIG_DIR/profiles/jwt-key.json' \
  && ! grep -q '\"d\"' '$OAUTH2_CONFIG_DIR/profiles/jwt-key.json'"
check glewlwyd "private_key_jwt: a new process reads the key from its path" 0 "$BIN" --profile jwt-key token --force-refresh
check glewlwyd "private_key_jwt: introspect" 0 "$BIN" --profile jwt-key introspect
expect "introspect says active" grep -q '"active" : true' "$WORK/out"
check glewlwyd "private_key_jwt: revoke" 0 "$BIN" --profile jwt-key revoke --token access
check glewlwyd "private_key_jwt + --dpop PS256: machine token" 0 "$BIN" --profile jwt-dpop --store file token --grant client_credentials \
  --issuer "$GLEWLWYD" --client-id "$JWT_KEY_ID" --private-key "$KEYS/jwt-client-ec.jwk.json" --assertion-audience endpoint \
  --scope read --dpop PS256
out >"$WORK/jwt"; "$BIN" decode --file "$WORK/jwt" >"$WORK/out" 2>/dev/null; cc_jkt=$(jkt)
expect "the machine token is DPoP-bound" test -n "$cc_jkt"
check glewlwyd "private_key_jwt + DPoP: a new client_credentials token in a new process" 0 "$BIN" --profile jwt-dpop token --force-refresh
out >"$WORK/jwt"; "$BIN" decode --file "$WORK/jwt" >"$WORK/out" 2>/dev/null
expect "bound to the same (stored) key" test "$(jkt)" = "$cc_jkt"
check glewlwyd "private_key_jwt (RSA PEM, --key-id): machine token" 0 "$BIN" --profile jwt-rsa --store memory token \
  --grant client_credentials --issuer "$GLEWLWYD" --client-id "$JWT_KEY_ID" --private-key "$KEYS/jwt-client-rsa.pem" --key-id rsa-1 \
  --assertion-audience endpoint --scope read
check glewlwyd "private_key_jwt: aud = the issuer is refused by Glewlwyd (1)" 1 "$BIN" --profile jwt-iss --store memory token \
  --grant client_credentials --issuer "$GLEWLWYD" --client-id "$JWT_KEY_ID" --private-key "$KEYS/jwt-client-ec.jwk.json" \
  --assertion-audience issuer --scope read
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$WORK/impostor.pem" 2>/dev/null
check glewlwyd "private_key_jwt: a wrong key is refused (1)" 1 "$BIN" --profile jwt-wrong --store memory token \
  --grant client_credentials --issuer "$GLEWLWYD" --client-id "$JWT_KEY_ID" --private-key "$WORK/impostor.pem" --key-id ec-1 \
  --assertion-audience endpoint --scope read
expect "the refusal is invalid_client" grep -q "invalid_client" "$WORK/err"
check glewlwyd "login with private_key_jwt, --par and --dpop EdDSA (Ed25519 PEM)" 0 glogin jwt-login "$GLEWLWYD" --client-id "$JWT_KEY_ID" \
  --private-key "$KEYS/jwt-client-ed25519.pem" --key-id ed-1 --assertion-audience endpoint --par --dpop EdDSA
check glewlwyd "userinfo (private_key_jwt + PAR + DPoP profile)" 0 "$BIN" --profile jwt-login userinfo
check glewlwyd "logout (revocation authenticated with the key, DPoP profile)" 0 "$BIN" --profile jwt-login logout --no-end-session
check glewlwyd "login --help (exit 0) documents the new flags" 0 "$BIN" login --help
expect "--dpop, --par, --private-key, --key-id, --assertion-audience in the help" sh -c "for f in dpop par private-key key-id \
  assertion-audience; do grep -q -- \"--\$f\" '$WORK/out' || exit 1; done"
check glewlwyd "usage: private_key_jwt without --private-key (2)" 2 "$BIN" token --profile x --grant client_credentials \
  --issuer "$GLEWLWYD" --client-id "$JWT_KEY_ID" --auth-method private_key_jwt
check glewlwyd "usage: --dpop with an unknown algorithm (2)" 2 "$BIN" login --profile x --issuer "$GLEWLWYD" --client-id x --dpop HS256
check glewlwyd "usage: an unreadable private key file (2)" 2 "$BIN" --profile x --store memory token --grant client_credentials \
  --issuer "$GLEWLWYD" --client-id "$JWT_KEY_ID" --private-key "$WORK/no-such-key.pem"
echo "== authgent-server (token exchange, JWT bearer)"
AUTHGENT=${OAUTH2_TEST_AUTHGENT_ISSUER:-http://127.0.0.1:8400}
AG_ID=${OAUTH2_TEST_AUTHGENT_CLIENT_ID:-} AG_SECRET=${OAUTH2_TEST_AUTHGENT_CLIENT_SECRET:-}
printf '%s\n' "$AG_SECRET" >"$WORK/ag-credential"
check authgent "machine profile for token exchange: client credentials" 0 "$BIN" --profile ag --store file token \
  --grant client_credentials --issuer "$AUTHGENT" --client-id "$AG_ID" --client-secret-file "$WORK/ag-credential"
subject=$(out)
check authgent "exchange: the profile's access token is the subject" 0 "$BIN" --profile ag exchange --audience https://backend.example.test
exchanged=$(out)
expect "exchange printed one new token" test "$(out | wc -l)" = 1 -a -n "$exchanged" -a "$exchanged" != "$subject"
check authgent "decode the exchanged token" 0 "$BIN" decode --file <(printf %s "$exchanged")
expect "its aud is the audience asked for" grep -q '"aud" : "https://backend.example.test"' "$WORK/out"
check authgent "exchange: nothing is stored, the profile keeps its token" 0 "$BIN" --profile ag token
expect "token is still the profile's own" test "$(out)" = "$subject"
check authgent "exchange --json: subject from stdin, short type names, a JWT requested" 0 sh -c \
  "printf %s '$subject' | \"$BIN\" --profile ag --json exchange --subject-token - --subject-token-type access_token \
   --requested-token-type jwt --audience '$AUTHGENT'"
expect "--json shows issued_token_type jwt and token_type N_A" sh -c \
  "grep -q '\"issued_token_type\" : \"urn:ietf:params:oauth:token-type:jwt\"' '$WORK/out' && grep -q '\"token_type\" : \"N_A\"' '$WORK/out'"
python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["access_token"])' "$WORK/out" >"$WORK/assertion" 2>/dev/null || : >"$WORK/assertion"
check authgent "token --grant jwt-bearer --assertion FILE (the JWT just issued)" 0 "$BIN" --profile ag-jwt --store file token \
  --grant jwt-bearer --issuer "$AUTHGENT" --client-id "$AG_ID" --client-secret-file "$WORK/ag-credential" --assertion "$WORK/assertion"
check authgent "jwt-bearer: a replayed assertion is refused (1)" 1 sh -c "\"$BIN\" --profile ag-jwt2 --store memory token \
  --grant jwt-bearer --issuer '$AUTHGENT' --client-id '$AG_ID' --client-secret-file '$WORK/ag-credential' --assertion - <'$WORK/assertion'"
expect "the refusal says invalid_grant" grep -q "invalid_grant" "$WORK/err"
check authgent "token --grant jwt-bearer --assertion-key (an assertion signed here)" 0 "$BIN" --profile ag-signed --store memory token \
  --grant jwt-bearer --issuer "$AUTHGENT" --client-id "$AG_ID" --client-secret-file "$WORK/ag-credential" \
  --assertion-key "${OAUTH2_TEST_AUTHGENT_ASSERTION_KEY:-}" --assertion-key-id "${OAUTH2_TEST_AUTHGENT_ASSERTION_KID:-oauth2-test-assertion}" \
  --assertion-issuer "$AUTHGENT" --assertion-subject user:alice
signed=$(out)
check authgent "decode the jwt-bearer token" 0 "$BIN" decode --file <(printf %s "$signed")
expect "its sub is the assertion's" grep -q '"sub" : "user:alice"' "$WORK/out"
check authgent "exchange: a bad subject token from a file is refused (1)" 1 "$BIN" --profile ag exchange --subject-token-file <(echo not-a-token) --audience x
expect "the refusal says invalid_grant, without the token" sh -c "grep -q invalid_grant '$WORK/err' && ! grep -q not-a-token '$WORK/err'"
check authgent "exchange: --actor-token without its type is a usage error (2)" 2 "$BIN" --profile ag exchange --actor-token t
check authgent "exchange: an unknown short type is a usage error (2)" 2 "$BIN" --profile ag exchange --subject-token t --subject-token-type 'no such'
check authgent "exchange without a profile: sign in first (5)" 5 "$BIN" --profile nobody exchange --audience x

echo "== dynamic registration (RFC 7591, RFC 7592)"
# The registration's client secret as the file store keeps it (the token store, not the
# profile): a registration document in tokens/registrations/, never a session document.
stored_secret() {
  jq -r --arg id "$1" 'select(.kind == "registration" and .key.client_id == $id) | .registration.client_secret' \
    "$OAUTH2_CONFIG_DIR"/tokens/registrations/*.json 2>/dev/null | grep -v null | head -n 1
}
rm -f "$OAUTH2_E2E_JAR"
check glewlwyd "register: a new client saved as a profile" 0 "$BIN" --profile reg --store file register --issuer "$GLEWLWYD" \
  --redirect-uri "$REDIRECT" --name "oauth2 e2e" --scope "openid profile read" --auth-method client_secret_basic \
  --grant-type authorization_code --grant-type refresh_token --grant-type client_credentials
reg_id=$(out)
reg_secret=$(stored_secret "$reg_id")
expect "register printed the new client id" test -n "$reg_id"
expect "the client secret is in the token store" test -n "$reg_secret"
expect "the registration is no session document" sh -c "! cat '$OAUTH2_CONFIG_DIR'/tokens/*.json 2>/dev/null | grep -qF -- '$reg_secret'"
expect "the secret is not in the profile file" sh -c "! grep -qF -- '$reg_secret' '$OAUTH2_CONFIG_DIR/profiles/reg.json'"
expect "the profile names the new client" grep -qF "\"$reg_id\"" "$OAUTH2_CONFIG_DIR/profiles/reg.json"
check glewlwyd "login with the registered profile (no --client-id)" 0 env BROWSER="$HERE/browser-glewlwyd.sh" "$BIN" --profile reg login \
  --timeout 60
check glewlwyd "token --force-refresh: the registered client authenticates" 0 "$BIN" --profile reg token --force-refresh
expect "a token was printed" test -n "$(out)"
check glewlwyd "register --show reads the registration" 0 "$BIN" --profile reg register --show
expect "--show prints the client id and name" sh -c "grep -qF '\"$reg_id\"' '$WORK/out' && grep -q 'oauth2 e2e' '$WORK/out'"
expect "--show prints no secret" sh -c "! grep -qF -- '$reg_secret' '$WORK/out'"
# Glewlwyd gives registered clients no client_credentials scope: a known client is refused
# the scope (invalid_scope), an unknown one is refused itself (invalid_client).
check glewlwyd "the registered client authenticates at the token endpoint (1: only the scope refused)" 1 "$BIN" \
  --profile reg-known --store memory token --grant client_credentials --issuer "$GLEWLWYD" --client-id "$reg_id" \
  --client-secret-file <(printf %s "$reg_secret") --scope read
expect "refused the scope, not the client" grep -q "invalid_scope" "$WORK/err"
check glewlwyd "register --delete" 0 "$BIN" --profile reg register --delete
expect "the profile is gone" test ! -e "$OAUTH2_CONFIG_DIR/profiles/reg.json"
expect "the credentials are gone from the store" test -z "$(stored_secret "$reg_id")"
check glewlwyd "the deleted client is refused (1)" 1 "$BIN" --profile reg-gone --store memory token --grant client_credentials \
  --issuer "$GLEWLWYD" --client-id "$reg_id" --client-secret "$reg_secret" --scope read
expect "refused as an unknown client" grep -q "invalid_client" "$WORK/err"
check glewlwyd "register --show without a registration (5)" 5 "$BIN" --profile reg register --show
check dot "register --json: the registration as JSON" 0 "$BIN" --profile reg-json --store file --json register --issuer "$DOT" \
  --grant-type client_credentials --scope read --name "oauth2 e2e json"
reg_json_id=$(jq -r '.client_id // empty' "$WORK/out" 2>/dev/null)
reg_json_secret=$(stored_secret "$reg_json_id")
expect "--json: client_id, registration_client_uri, profile, issuer and store" sh -c "jq -e '.client_id != null and \
  .registration_client_uri != null and .profile == \"reg-json\" and .store == \"file\" and .issuer == \"$DOT\"' '$WORK/out' >/dev/null"
expect "--json: no client secret, no registration access token" sh -c "jq -e 'has(\"client_secret\") or has(\"registration_access_token\") \
  | not' '$WORK/out' >/dev/null && { test -z '$reg_json_secret' || ! grep -qF -- '$reg_json_secret' '$WORK/out'; }"
check dot "register --delete (the --json client)" 0 "$BIN" --profile reg-json register --delete
rm -f "$OAUTH2_E2E_JAR"
check glewlwyd "login without a client id registers one first" 0 env BROWSER="$HERE/browser-glewlwyd.sh" "$BIN" --profile auto \
  --store file login --issuer "$GLEWLWYD" --scope "openid read" --timeout 60
expect "login said it registered a client" grep -q "Registered client" "$WORK/err"
check glewlwyd "token with the auto-registered client" 0 "$BIN" --profile auto token --force-refresh
check glewlwyd "register --delete the auto-registered client" 0 "$BIN" --profile auto register --delete
check dot "register: a client_credentials client at DOT" 0 "$BIN" --profile reg-dot --store file register --issuer "$DOT" \
  --grant-type client_credentials --scope read --name "oauth2 e2e machine"
check dot "register --show at DOT" 0 "$BIN" --profile reg-dot register --show
expect "DOT echoes the grant type" grep -q client_credentials "$WORK/out"
check dot "register --delete at DOT" 0 "$BIN" --profile reg-dot register --delete
# A registration kept the old way: before registrations had a store of their own, the file
# store kept one as a session document (LegacyRegistrationRecord) under the account
# ".registration", its registration access token as the "access token" (empty when none) and
# its other members in "registration". Written here by hand, from a fresh registration, it
# must move to tokens/registrations/ the first time the tool reads it.
# store_hash PART...: the end of FileTokenStore's file names, 16 hex digits of the SHA-256 of
# "<length>:<part>;" for each part.
store_hash() { local part; for part in "$@"; do printf '%s:%s;' "${#part}" "$part"; done | sha256sum | cut -c1-16; }
# store_name HASH PART...: the non-empty slugs of the parts, then HASH, joined by "-". A slug
# (FileTokenStore.slug) is lowercase; a-z, 0-9, "." and "_" are kept, any other run becomes
# one "-"; at most 32 characters, no "-" or "." at either end.
store_name() {
  local name="" part slug hash=$1; shift
  for part in "$@"; do
    slug=$(printf %s "$part" | tr '[:upper:]' '[:lower:]' | sed -E 's/[^a-z0-9._]+/-/g' | cut -c1-32 | sed -E 's/^[-.]+//; s/[-.]+$//')
    [ -z "$slug" ] || name+="$slug-"
  done
  printf '%s%s.json' "$name" "$hash"
}
issuer_host() { local host=${1#*://}; printf %s "${host%%[:/]*}"; }
# The session document of (issuer, client id, account); the registration document of (issuer, client id).
session_file() { store_name "$(store_hash "$1" "$2" "$3")" "$3" "$(issuer_host "$1")" "$2"; }
registration_file() { store_name "$(store_hash registration "$1" "$2")" "$(issuer_host "$1")" "$2"; }
check dot "register: a client whose registration is then rewritten the old way" 0 "$BIN" --profile reg-old --store file \
  register --issuer "$DOT" --grant-type client_credentials --scope read --name "oauth2 e2e old record"
old_id=$(out)
new_doc=$OAUTH2_CONFIG_DIR/tokens/registrations/$(registration_file "$DOT" "$old_id")
old_doc=$OAUTH2_CONFIG_DIR/tokens/$(session_file "$DOT" "$old_id" .registration)
old_secret=$(stored_secret "$old_id")
expect "the registration document is where FileTokenStore names it, with a secret" test -n "$old_id" -a -f "$new_doc" -a -n "$old_secret"
# Version 2 of the session document, as the store wrote it: mode 0600, the registration document gone.
jq '{version: 2, key: {issuer: .key.issuer, client_id: .key.client_id, account: ".registration"},
  session: {tokens: {access_token: (.registration.registration_access_token // ""), token_type: "Bearer", issued_at: 1767222000},
    updated_at: 1767222000, registration: (.registration | del(.client_id, .registration_access_token))}}' "$new_doc" >"$old_doc.tmp" \
  && chmod 600 "$old_doc.tmp" && mv "$old_doc.tmp" "$old_doc" && rm -f "$new_doc"
expect "the old session document holds the secret, the registration document is gone" \
  sh -c "grep -qF -- '$old_secret' '$old_doc' && test ! -e '$new_doc'"
check dot "register --show: a registration kept the old way is read" 0 "$BIN" --profile reg-old register --show
expect "--show prints the client id" grep -qF "\"$old_id\"" "$WORK/out"
expect "--show prints no secret" sh -c "! grep -qF -- '$old_secret' '$WORK/out'"
expect "the old session document is gone" test ! -e "$old_doc"
expect "a registration document (0600) holds the registration now" sh -c "test -f '$new_doc' && test \"\$(stat -c %a '$new_doc')\" = 600"
expect "... with the client secret" test "$(stored_secret "$old_id")" = "$old_secret"
expect "the secret is in no session document" sh -c "! cat '$OAUTH2_CONFIG_DIR'/tokens/*.json 2>/dev/null | grep -qF -- '$old_secret'"
check dot "the moved secret authenticates the client (client_credentials)" 0 "$BIN" --profile reg-old-cc --store memory token \
  --grant client_credentials --issuer "$DOT" --client-id "$old_id" --client-secret-file <(printf %s "$old_secret") --scope read
check dot "register --delete with the moved registration" 0 "$BIN" --profile reg-old register --delete
expect "its registration document is gone" test ! -e "$new_doc"
GLEWLWYD_REG=${OAUTH2_TEST_GLEWLWYD_REG_ISSUER:-http://127.0.0.1:4593/api/oidc-reg}
check glewlwyd "register without the initial access token the server wants (1)" 1 "$BIN" --profile reg-iat --store file \
  register --issuer "$GLEWLWYD_REG"
expect "refused as invalid_token" grep -q "invalid_token" "$WORK/err"
check glewlwyd "an initial access token: the cc client's token with scope read" 0 "$BIN" --profile iat --store memory token \
  --grant client_credentials --issuer "$GLEWLWYD_REG" --client-id "${OAUTH2_TEST_GLEWLWYD_CC_ID:-cc}" \
  --client-secret "${OAUTH2_TEST_GLEWLWYD_CC_SECRET:-cc-secret}" --scope read
out >"$WORK/iat"
check glewlwyd "register --initial-access-token-file" 0 "$BIN" --profile reg-iat --store file register --issuer "$GLEWLWYD_REG" \
  --initial-access-token-file "$WORK/iat"
expect "the initial access token is not in the profile" sh -c "! grep -qF -- \"\$(cat '$WORK/iat')\" '$OAUTH2_CONFIG_DIR/profiles/reg-iat.json'"
check glewlwyd "register --delete (initial-token instance)" 0 "$BIN" --profile reg-iat register --delete
check glewlwyd "register: invalid metadata is refused (1)" 1 "$BIN" --profile bad --store memory register --issuer "$GLEWLWYD" \
  --redirect-uri "http://127.0.0.1:1/callback" --auth-method no_such_method
expect "the typed error is on stderr" grep -q "invalid_client_metadata" "$WORK/err"

echo "== PostgreSQL store: one sign-in shared by many processes (and machines)"
# README "The oauth2 command": --store postgres with OAUTH2_POSTGRES_URL and OAUTH2_POSTGRES_KEYS.
# pg_login PROFILE ISSUER: a machine profile (password grant, Glewlwyd) kept in PostgreSQL.
pg_login() {
  "$BIN" --profile "$1" --store postgres token --grant password --issuer "$2" --client-id "$CONF_ID" \
    --client-secret-file "$WORK/conf-credential" --username "${OAUTH2_TEST_USER:-alice}" --password-stdin --scope "openid read" <"$WORK/gpw"
}
if [ -z "${OAUTH2_TEST_POSTGRES_URL:-}" ]; then
  failures=$((failures + 1)); echo "FAIL postgres: OAUTH2_TEST_POSTGRES_URL is not set (scripts/test-servers/postgres.sh)"
else
  export OAUTH2_POSTGRES_URL=$OAUTH2_TEST_POSTGRES_URL OAUTH2_POSTGRES_SCHEMA=e2e_$$
  export OAUTH2_POSTGRES_KEYS="k1:$(head -c 32 /dev/urandom | base64)"
  pg_password=$(printf '%s' "$OAUTH2_POSTGRES_URL" | sed -E 's#^[^:]+://[^:/@]+:([^@]*)@.*#\1#')
  pg_rows() { psql "$OAUTH2_TEST_POSTGRES_URL" -X -Atq -c "SELECT ${1:-count(*)} FROM $OAUTH2_POSTGRES_SCHEMA.oauth2_sessions"; }
  pg_none="'$BIN' --profile pg-none --store postgres token --grant password --issuer '$GLEWLWYD' --client-id '$CONF_ID' \
    --client-secret-file '$WORK/conf-credential' --username '${OAUTH2_TEST_USER:-alice}' --password-stdin --scope read <'$WORK/gpw'"
  check postgres "--store postgres without OAUTH2_POSTGRES_URL: usage error (2)" 2 sh -c "OAUTH2_POSTGRES_URL= $pg_none"
  expect "... saying which variable" grep -q OAUTH2_POSTGRES_URL "$WORK/err"
  check postgres "--store postgres without OAUTH2_POSTGRES_KEYS: usage error (2)" 2 sh -c "OAUTH2_POSTGRES_KEYS= $pg_none"
  check postgres "an unreachable database: transient (3)" 3 sh -c \
    "OAUTH2_POSTGRES_URL='postgres://oauth2:$pg_password@127.0.0.1:1/x?sslmode=disable' $pg_none"
  expect "... and the URL's password is not printed" sh -c "! grep -qF -- '$pg_password' '$WORK/err'"
  check postgres "machine profile in PostgreSQL: password grant" 0 pg_login pg "$GLEWLWYD"
  first=$(out)
  expect "the profile remembers the store" grep -q '"store" : "postgres"' "$OAUTH2_CONFIG_DIR/profiles/pg.json"
  expect "one row in PostgreSQL, sealed: no token in it" sh -c "test '$(pg_rows)' = 1 \
    && ! psql '$OAUTH2_TEST_POSTGRES_URL' -X -Atq -c \"SELECT encode(sealed, 'escape') FROM $OAUTH2_POSTGRES_SCHEMA.oauth2_sessions\" | grep -qF -- '$first'"
  check postgres "a valid token comes from PostgreSQL with no request (-vv shows no password)" 0 "$BIN" -vv --profile pg token
  expect "... the same token, no request, no password" sh -c "test \"\$(cat '$WORK/out')\" = '$first' \
    && ! grep -q '/token' '$WORK/err' && ! grep -qF -- '$pg_password' '$WORK/err'"
  check postgres "logout removes the row" 0 "$BIN" --profile pg logout --no-end-session
  expect "... (no row left)" test "$(pg_rows)" = 0
  check postgres "token after logout: sign in again (5)" 5 "$BIN" --profile pg token

  # Glewlwyd's oidc-short instance: access tokens live 2 s (renewed after 1 s), refresh tokens
  # roll (a refresh token used twice is refused, and its process would exit 5). 100 processes
  # at once on the expired session: each renewal is made by one of them while the others wait
  # for the lock and take it — so no process fails, each token comes from one refresh, and
  # there is at most one refresh per second of the run (one in all when the run takes less
  # than a second; the bound does not depend on the machine's speed).
  G_SHORT=${OAUTH2_TEST_GLEWLWYD_SHORT_ISSUER:-$G_URL/api/oidc-short}
  check postgres "machine profile in PostgreSQL, tokens that live 2 s" 0 pg_login pg-short "$G_SHORT"
  first=$(out)
  sleep 3   # the token's whole lifetime: what follows is about an expired token
  fleet() {
    local i pids=() bad=0 started=$SECONDS
    for i in $(seq 1 100); do "$BIN" -v --profile pg-short token >"$WORK/fleet.$i.out" 2>"$WORK/fleet.$i.err" & pids+=($!); done
    for i in "${pids[@]}"; do wait "$i" || bad=$((bad + 1)); done
    echo "failed=$bad tokens=$(cat "$WORK"/fleet.*.out | sort -u | wc -l) refreshes=$(grep -l '/token → 200' "$WORK"/fleet.*.err | wc -l)" \
      "seconds=$((SECONDS - started + 1)) first=$(grep -c -xF -- "$first" "$WORK"/fleet.*.out | grep -c ':1$')"
    [ "$bad" = 0 ]
  }
  check postgres "100 oauth2 token processes at once on an expired session" 0 fleet
  expect "... no process used the expired token, each token came from one refresh, at most one refresh a second" \
    awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
      END { exit !(v["failed"] == 0 && v["first"] == 0 && v["refreshes"] >= 1 && v["tokens"] == v["refreshes"] && v["refreshes"] <= v["seconds"]) }' "$WORK/out"
  cat "$WORK/out" | sed 's/^/     · /'
  psql "$OAUTH2_TEST_POSTGRES_URL" -X -Atq -c "DROP SCHEMA IF EXISTS $OAUTH2_POSTGRES_SCHEMA CASCADE" >/dev/null 2>&1 || true
fi

echo "== Faults: the fault suite's scenarios (docs/fault-suite.md) against the tool"
# OAuth2TestWorker fault-server serves every FaultScenario and prints "<name> <url> <exit>".
# Each against the token endpoint (client credentials: the documented exit status, no secret
# in the -vv log, nothing stored), and the transport faults against an API called with a
# stored token (exit 3, the store byte-identical). SSL_CERT_FILE trusts the suite's CA, so
# that a TLS case fails for its own defect. `timeout 60` only catches a hang.
WORKER=${OAUTH2_TEST_WORKER:?e2e.sh needs OAUTH2_TEST_WORKER, the OAuth2TestWorker binary (scripts/test sets it)}
FAULT_CA=$HERE/../Fixtures/tls/ca.pem
"$WORKER" fault-server >"$WORK/faults" &
fault_pid=$!
for _ in $(seq 100); do grep -q '^ready$' "$WORK/faults" 2>/dev/null && break; sleep 0.1; done
grep -q '^ready$' "$WORK/faults" || { failures=$((failures + 1)); echo "FAIL   the fault server did not start"; }
check dot "fault-machine: a stored token for the API checks" 0 "$BIN" --profile fault-machine --store file token --grant client_credentials \
  --issuer "$DOT" --client-id "${OAUTH2_TEST_DOT_CC_ID:-cc}" --client-secret-file "$WORK/cc-credential" --scope read
store_sum() { find "$OAUTH2_CONFIG_DIR/tokens" -type f -name '*.json' -exec sha256sum {} + | sort; }
while read -r name url want; do
  [ "$name" = ready ] && continue
  check fault "token: $name (exit $want)" "$want" timeout 60 env SSL_CERT_FILE="$FAULT_CA" "$BIN" -vv --http-timeout 2 \
    --profile "f-$name" --store file token --grant client_credentials --token-endpoint "$url/token" --client-id fault-client \
    --client-secret-file "$WORK/cc-credential"
  expect "$name: no secret in the -vv log" sh -c "! grep -qF -- \"\$(cat '$WORK/cc-credential')\" '$WORK/err'"
  expect "$name: nothing stored" sh -c "! ls '$OAUTH2_CONFIG_DIR/tokens' | grep -q '^f-$name-'"
  [ "$name" != dripping ] || expect "dripping: the error says the deadline passed" grep -q "No complete answer within 2 s" "$WORK/err"
  case "$name" in
    connection-refused|reset-*|no-answer|dripping|short-body|truncated-chunked|tls-*)
      before=$(store_sum)
      check fault "request to an API: $name (3)" 3 timeout 60 env SSL_CERT_FILE="$FAULT_CA" "$BIN" -vv --http-timeout 2 \
        --profile fault-machine request "$url/api"
      expect "$name: the stored tokens are byte-identical" test "$(store_sum)" = "$before"
      expect "$name: no token in the -vv log" sh -c "! grep -qF -- \"\$('$BIN' --profile fault-machine token)\" '$WORK/err'"
      ;;
  esac
done <"$WORK/faults"
# DNS: in a network namespace of its own (unshare -n) the tool has no network at all, so the
# name cannot resolve and no query leaves the machine.
check fault "token: dns-failure (3)" 3 timeout 60 unshare -n "$BIN" --http-timeout 5 --profile f-dns --store memory token \
  --grant client_credentials --token-endpoint https://id.example.com/token --client-id fault-client --client-secret-file "$WORK/cc-credential"
check fault "--http-timeout 0 is a usage error (2)" 2 "$BIN" --http-timeout 0 discover "http://127.0.0.1:1"
kill "$fault_pid" 2>/dev/null; wait "$fault_pid" 2>/dev/null

# A real browser: `$BROWSER` is headless Chromium (Tests/Support/browser/oauth2-browser), signing
# in and out on the providers' own pages as a person would. The listener's pages are checked by
# their rendered text; page texts and screenshots stay in $OAUTH2_TEST_BROWSER_ARTIFACTS. Each
# passing step also counts as a "browser" journey.
CHROMIUM="$HERE/../Support/browser/oauth2-browser"
ART=${OAUTH2_TEST_BROWSER_ARTIFACTS:-$WORK/browser}
# in_chromium SERVER STEP EXPECTED-RC NAME COMMAND...: `check` with Chromium as $BROWSER; the
# Chromium profile (its cookies: the provider's session) is the server's, kept between steps.
in_chromium() {
  local server=$1 step=$2 want=$3 name=$4 dir=$ART/cli-$1 before=$passed; shift 4
  mkdir -p "$dir"; rm -f "$dir/$step.txt"
  check "$server" "$name" "$want" env BROWSER="$CHROMIUM" OAUTH2_BROWSER_COOKIES="$dir/cookies.json" \
    OAUTH2_BROWSER_LOG="$dir/browser.log" OAUTH2_BROWSER_PAGE_TEXT="$dir/$step.txt" OAUTH2_BROWSER_SCREENSHOT="$dir/$step.png" \
    OAUTH2_BROWSER_USER="${OAUTH2_TEST_USER:-alice}" OAUTH2_BROWSER_PASSWORD="${OAUTH2_TEST_PASSWORD:-alice-pw}" "$@"
  [ "$passed" -gt "$before" ] || { tail -n 5 "$dir/browser.log" 2>/dev/null | sed 's/^/     | browser: /'; return; }
  # The driver's worker writes the page text, then the screenshot, just after the tool returned.
  for _ in $(seq 300); do [ -s "$dir/$step.txt" ] && [ -s "$dir/$step.png" ] && break; sleep 0.1; done
  echo "browser cli-$server-$step" >>"$LOG"
}
page() { cat "$ART/cli-$1/$2.txt" 2>/dev/null; }
browser_journey() {  # SERVER ISSUER CLIENT SCOPE [login options...]
  local server=$1 issuer=$2 client=$3 scope=$4 p="--profile chromium-$1"; shift 4
  rm -rf "$ART/cli-$server"
  in_chromium "$server" sign-in 0 "login in headless Chromium on the provider's own page" \
    "$BIN" $p login --store file --issuer "$issuer" --client-id "$client" --redirect-uri "$REDIRECT" --scope "$scope" --timeout 90 "$@"
  expect "Chromium rendered the listener's page: signed in" sh -c "grep -q 'You are signed in' '$ART/cli-$server/sign-in.txt'"
  expect "the listener's page shows no code" sh -c "! grep -qi 'code=' '$ART/cli-$server/sign-in.txt'"
  expect "a screenshot of it was kept" test -s "$ART/cli-$server/sign-in.png"
  check "$server" "token after the Chromium login" 0 "$BIN" $p token
  check "$server" "userinfo after the Chromium login" 0 "$BIN" $p userinfo
  in_chromium "$server" sign-out 0 "logout, the end-session page in headless Chromium" "$BIN" $p logout --timeout 90
  cp "$WORK/err" "$ART/cli-$server/logout.err"
  expect "logout came back to the listener with its state" grep -q "post-logout state checked" "$WORK/err"
  expect "Chromium rendered the listener's page: signed out" sh -c "grep -q 'You are signed out' '$ART/cli-$server/sign-out.txt'"
  check "$server" "token after the Chromium logout: sign in again" 5 "$BIN" $p token
}
echo "== A real browser (headless Chromium)"
# Glewlwyd revokes only for an authenticated client: its confidential one, whose secret the
# profile keeps for the logout.
browser_journey glewlwyd "$GLEWLWYD" "$CONF_ID" "openid read" --client-secret-file "$WORK/conf-credential"
LEMONLDAP=${OAUTH2_TEST_LEMONLDAP_ISSUER:-http://127.0.0.1:8300}
browser_journey lemonldap "$LEMONLDAP" code-public "openid profile"
# LemonLDAP::NG has no revocation endpoint: logout says so, and still forgets the tokens.
expect "lemonldap: logout said the server offers no revocation" grep -q "revoke the access token: not offered by the server" "$ART/cli-lemonldap/logout.err"
expect "lemonldap: logout forgot the tokens" grep -q "forget the tokens: done" "$ART/cli-lemonldap/logout.err"

echo "e2e: $passed passed, $failures failed"
[ "$failures" = 0 ]
