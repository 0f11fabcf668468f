#!/usr/bin/env bash
# End-to-end tests of the built `oauth2` binary against Glewlwyd, django-oauth-toolkit and authgent-server,
# through the CLI surface README documents only (no test-only flags or variables; the
# "browser" is $BROWSER, as a user's would be). scripts/test runs this with the servers up
# and their environment exported:
#   Tests/CLI/e2e.sh PATH-TO-oauth2
# Each passing check appends "<server>-cli <name>" to $OAUTH2_INTEGRATION_LOG. Exits 1 if
# any check failed.
set -uo pipefail
BIN=${1:?usage: e2e.sh PATH-TO-oauth2}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
export OAUTH2_CONFIG_DIR=$WORK/config OAUTH2_E2E_JAR=$WORK/jar
LOG=${OAUTH2_INTEGRATION_LOG:-/dev/null}
GLEWLWYD=${OAUTH2_TEST_GLEWLWYD_ISSUER:-http://127.0.0.1:4593/api/oidc}
DOT=${OAUTH2_TEST_DOT_ISSUER:-http://127.0.0.1:8000/o}
DOT_URL=${OAUTH2_TEST_DOT_URL:-http://127.0.0.1:8000}
REDIRECT=${OAUTH2_TEST_REDIRECT_URI:-http://127.0.0.1:9999/callback}
failures=0 passed=0

# check SERVER NAME EXPECTED-RC COMMAND...: runs COMMAND (stdout to $WORK/out, stderr to
# $WORK/err) and expects its exit code.
check() {
  local server=$1 name=$2 want=$3; shift 3
  "$@" >"$WORK/out" 2>"$WORK/err"; local rc=$?
  if [ "$rc" = "$want" ]; then
    passed=$((passed + 1)); echo "$server-cli $name" >>"$LOG"; echo "ok   $server: $name"
  else
    failures=$((failures + 1)); echo "FAIL $server: $name (exit $rc, expected $want)"
    sed 's/^/     | /' "$WORK/err" | tail -n 15
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

echo "== demo"
check embedded "demo: the whole journey against the embedded provider" 0 "$BIN" demo
expect "demo reported its nine steps" test "$(grep -c '✔' "$WORK/err")" = 9

echo "== Glewlwyd"
# Glewlwyd's introspection and revocation want an authenticated client: the confidential
# one, whose secret the profile keeps in the token store (never in the profile file).
journey glewlwyd "$GLEWLWYD" "${OAUTH2_TEST_GLEWLWYD_CONF_ID:-code-conf}" "$HERE/browser-glewlwyd.sh" \
  "${OAUTH2_TEST_GLEWLWYD_URL:-http://127.0.0.1:4593}/api/oidc/userinfo" \
  --client-secret "${OAUTH2_TEST_GLEWLWYD_CONF_SECRET:-code-conf-secret}"
check glewlwyd "decode (Glewlwyd's access tokens are JWTs)" 0 "$BIN" decode "$("$BIN" --profile glewlwyd token)"
expect "decode prints header, claims, verified false" sh -c "grep -q '\"verified\" : false' '$WORK/out' && grep -q '\"claims\"' '$WORK/out'"
check glewlwyd "revoke" 0 "$BIN" --profile glewlwyd revoke
check glewlwyd "token after revoke: sign in again" 5 "$BIN" --profile glewlwyd token

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

echo "== exit codes"
check glewlwyd "refused login: wrong client secret (1)" 1 env BROWSER="$HERE/browser-glewlwyd.sh" "$BIN" --profile wrong login \
  --store memory --issuer "$GLEWLWYD" --client-id "${OAUTH2_TEST_GLEWLWYD_CONF_ID:-code-conf}" --client-secret not-the-secret \
  --redirect-uri "$REDIRECT" --scope "openid read" --timeout 60
check dot "refused machine token: wrong client secret (1)" 1 "$BIN" --profile wrong-cc --store memory token \
  --grant client_credentials --issuer "$DOT" --client-id "${OAUTH2_TEST_DOT_CC_ID:-cc}" --client-secret not-the-secret
check dot "cancelled login: the sign-in wait ran out (4)" 4 env BROWSER=true "$BIN" --profile slow login --store memory \
  --issuer "$DOT" --client-id "${OAUTH2_TEST_DOT_PUBLIC_ID:-code-public}" --redirect-uri "$REDIRECT" --timeout 2
check dot "network failure: nothing listens at the issuer (3)" 3 "$BIN" --profile down --store memory token \
  --grant client_credentials --issuer http://127.0.0.1:1/o --client-id cc --client-secret s
check dot "usage error (2)" 2 "$BIN" token --no-such-option
check dot "no stored sign-in (5)" 5 "$BIN" --profile never-signed-in token
check dot "machine profile: client credentials" 0 "$BIN" --profile machine --store file token --grant client_credentials \
  --issuer "$DOT" --client-id "${OAUTH2_TEST_DOT_CC_ID:-cc}" --client-secret "${OAUTH2_TEST_DOT_CC_SECRET:-cc-secret}" --scope read
check dot "machine profile: later calls need no secret on the command line" 0 "$BIN" --profile machine token --force-refresh
check dot "request: a final 4xx exits 1" 1 "$BIN" --profile machine request "$DOT_URL/o/no-such-endpoint/"
expect "the final status went to stderr" grep -q "HTTP 404" "$WORK/err"
printf '%s\n' "${OAUTH2_TEST_PASSWORD:-alice-pw}" >"$WORK/pw"
check dot "machine profile: password grant, password from stdin" 0 sh -c "\"$BIN\" --profile pw --store file token --grant password \
  --issuer '$DOT' --client-id '${OAUTH2_TEST_DOT_PW_ID:-pw}' --client-secret '${OAUTH2_TEST_DOT_PW_SECRET:-pw-secret}' \
  --username '${OAUTH2_TEST_USER:-alice}' --password-stdin --scope read <'$WORK/pw'"
expect "the password is not in the profile" sh -c "! grep -rq '${OAUTH2_TEST_PASSWORD:-alice-pw}' '$OAUTH2_CONFIG_DIR/profiles'"
expect "no client secret is in a profile file" sh -c "! grep -rq 'secret' '$OAUTH2_CONFIG_DIR/profiles'"
check dot "refresh token refused: sign in again (5)" 0 "$BIN" --profile pw revoke --token refresh
check dot "token after the refresh token was revoked (5)" 5 "$BIN" --profile pw token --force-refresh

echo "== authgent-server (token exchange, JWT bearer)"
AUTHGENT=${OAUTH2_TEST_AUTHGENT_ISSUER:-http://127.0.0.1:8400}
AG_ID=${OAUTH2_TEST_AUTHGENT_CLIENT_ID:-} AG_SECRET=${OAUTH2_TEST_AUTHGENT_CLIENT_SECRET:-}
check authgent "machine profile for token exchange: client credentials" 0 "$BIN" --profile ag --store file token \
  --grant client_credentials --issuer "$AUTHGENT" --client-id "$AG_ID" --client-secret "$AG_SECRET"
subject=$(out)
check authgent "exchange: the profile's access token is the subject" 0 "$BIN" --profile ag exchange --audience https://backend.example.test
exchanged=$(out)
expect "exchange printed one new token" test "$(out | wc -l)" = 1 -a -n "$exchanged" -a "$exchanged" != "$subject"
check authgent "decode the exchanged token" 0 "$BIN" decode "$exchanged"
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
  --grant jwt-bearer --issuer "$AUTHGENT" --client-id "$AG_ID" --client-secret "$AG_SECRET" --assertion "$WORK/assertion"
check authgent "jwt-bearer: a replayed assertion is refused (1)" 1 sh -c "\"$BIN\" --profile ag-jwt2 --store memory token \
  --grant jwt-bearer --issuer '$AUTHGENT' --client-id '$AG_ID' --client-secret '$AG_SECRET' --assertion - <'$WORK/assertion'"
expect "the refusal says invalid_grant" grep -q "invalid_grant" "$WORK/err"
check authgent "token --grant jwt-bearer --private-key (an assertion signed here)" 0 "$BIN" --profile ag-signed --store memory token \
  --grant jwt-bearer --issuer "$AUTHGENT" --client-id "$AG_ID" --client-secret "$AG_SECRET" \
  --private-key "${OAUTH2_TEST_AUTHGENT_ASSERTION_KEY:-}" --key-id "${OAUTH2_TEST_AUTHGENT_ASSERTION_KID:-oauth2-test-assertion}" \
  --assertion-issuer "$AUTHGENT" --assertion-subject user:alice
signed=$(out)
check authgent "decode the jwt-bearer token" 0 "$BIN" decode "$signed"
expect "its sub is the assertion's" grep -q '"sub" : "user:alice"' "$WORK/out"
check authgent "exchange: a bad subject token is refused (1)" 1 "$BIN" --profile ag exchange --subject-token not-a-token --audience x
expect "the refusal says invalid_grant, without the token" sh -c "grep -q invalid_grant '$WORK/err' && ! grep -q not-a-token '$WORK/err'"
check authgent "exchange: --actor-token without its type is a usage error (2)" 2 "$BIN" --profile ag exchange --actor-token t
check authgent "exchange: an unknown short type is a usage error (2)" 2 "$BIN" --profile ag exchange --subject-token t --subject-token-type 'no such'
check authgent "exchange without a profile: sign in first (5)" 5 "$BIN" --profile nobody exchange --audience x

echo "e2e: $passed passed, $failures failed"
[ "$failures" = 0 ]
