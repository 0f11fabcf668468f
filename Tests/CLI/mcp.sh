#!/usr/bin/env bash
# End-to-end tests of the built `oauth2` binary as the client of the example MCP server
# (Examples/MCPServer, with its embedded provider) knowing nothing but its URL: `oauth2 request
# URL` without a profile (discovery, sign-in, a profile named after the resource, its reuse,
# step-up, refresh after a refused token), `oauth2 login --resource URL`, and resources that
# must be refused before any token leaves (metadata naming another resource, metadata on
# another origin). The "browser" is $BROWSER, as in e2e.sh: the embedded provider signs its demo
# user in at once, so it only follows the redirect to the CLI's loopback listener.
#   Tests/CLI/mcp.sh PATH-TO-oauth2 PATH-TO-oauth2-mcp-server-example
# The server is built with the traits Hummingbird and MCP; it and a small hostile resource
# (python3) listen on ephemeral ports. Each passing check appends "mcp-cli <name>" to
# $OAUTH2_INTEGRATION_LOG. Exits 1 if any check failed.
set -uo pipefail
BIN=${1:?usage: mcp.sh PATH-TO-oauth2 PATH-TO-oauth2-mcp-server-example}
SERVER=${2:?usage: mcp.sh PATH-TO-oauth2 PATH-TO-oauth2-mcp-server-example}
WORK=$(mktemp -d)
LOG=${OAUTH2_INTEGRATION_LOG:-/dev/null}
failures=0 passed=0
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export OAUTH2_CONFIG_DIR=$WORK/config
unset OAUTH2_PROFILE
umask 077

# What a person must never read on stderr: a Swift type name (as in e2e.sh).
TYPE_NAMES='OAuth2Error|CLIError|URLError|TokenStoreError|JOSEError|ValidationError|DecodingError|EncodingError|CocoaError|HTTPClientError|IOError|\bNIO|Swift\.|Foundation\.'
# check NAME EXPECTED-RC COMMAND...: runs COMMAND (stdout to $WORK/out, stderr to $WORK/err)
# and expects its exit code; a failure's stderr must name no Swift type.
check() {
  local name=$1 want=$2; shift 2
  "$@" >"$WORK/out" 2>"$WORK/err"; local rc=$?
  if [ "$rc" = "$want" ]; then
    passed=$((passed + 1)); echo "mcp-cli $name" >>"$LOG"; echo "ok   mcp-cli: $name"
  else
    failures=$((failures + 1)); echo "FAIL mcp-cli: $name (exit $rc, expected $want)"
    sed 's/^/     | /' "$WORK/err" | tail -n 15
  fi
  if [ "$want" != 0 ] && grep -Eq -- "$TYPE_NAMES" "$WORK/err"; then
    failures=$((failures + 1)); echo "FAIL   mcp-cli: $name: stderr names a Swift type"
    grep -E -- "$TYPE_NAMES" "$WORK/err" | head -n 3 | sed 's/^/     | /'
  fi
}
# expect DESCRIPTION COMMAND...: an extra assertion on the last check's output.
expect() {
  local what=$1; shift
  if ! "$@"; then
    failures=$((failures + 1)); echo "FAIL   $what"
    { sed 's/^/     | out: /' "$WORK/out"; sed 's/^/     | err: /' "$WORK/err"; } | head -n 12
  fi
}
fatal() { echo "FAIL mcp-cli: $*"; exit 1; }

# The "browser": follows the authorization redirect to the loopback listener, and counts its
# uses in $WORK/browser-uses (a reused profile must not open it).
cat >"$WORK/browser.sh" <<EOF
#!/bin/sh
echo used >>"$WORK/browser-uses"
location=\$(curl -s -o /dev/null -w '%{redirect_url}' "\$1") && [ -n "\$location" ] && curl -s -o /dev/null "\$location"
EOF
chmod +x "$WORK/browser.sh"
export BROWSER=$WORK/browser.sh
uses() { cat "$WORK/browser-uses" 2>/dev/null | wc -l; }

# The example MCP server: any free port, the embedded provider.
OAUTH2_EXAMPLE_PORT=0 "$SERVER" >"$WORK/server.out" 2>"$WORK/server.log" &
pids+=($!)
URL="" CLIENT="" ISSUER=""
for _ in $(seq 1 600); do  # a hang bound (60 s), not a speed requirement
  URL=$(awk '$1 == "LISTENING" { print $2 }' "$WORK/server.out")
  [ -n "$URL" ] && break
  kill -0 "${pids[-1]}" 2>/dev/null || fatal "the MCP server stopped: $(tail -n 5 "$WORK/server.log")"
  sleep 0.1
done
ISSUER=$(awk '$1 == "PROVIDER" { print $2 }' "$WORK/server.out")
CLIENT=$(awk '$1 == "PROVIDER" { print $3 }' "$WORK/server.out")
[ -n "$URL" ] && [ -n "$CLIENT" ] || fatal "the MCP server did not start (log: $(tail -n 5 "$WORK/server.log"))"
PORT=${URL#http://127.0.0.1:}; PORT=${PORT%%/*}
NAME=127.0.0.1_${PORT}_mcp
echo "MCP server at $URL (provider $ISSUER)"

JSON=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
INITIALIZE='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mcp.sh","version":"1"}}}'
mcp() {  # mcp [OPTIONS...] BODY: oauth2 request, a JSON-RPC POST to the MCP endpoint
  local body=${!#}
  "$BIN" request "${@:1:$#-1}" -X POST "${JSON[@]}" -d "$body" "$URL"
}

echo "== oauth2 request URL without a profile"
check "request without a profile: discovery, sign-in, the answer" 0 mcp --store file --client-id "$CLIENT" --timeout 60 "$INITIALIZE"
expect "the MCP server answered initialize" grep -q '"serverInfo"' "$WORK/out"
expect "stderr names the discovered authorization server" grep -qF "authorization server $ISSUER" "$WORK/err"
expect "stderr says which client identity was used" grep -qF "Client: the configured client id $CLIENT" "$WORK/err"
expect "stderr says which profile was saved" grep -qF "profile \"$NAME\" saved for $URL" "$WORK/err"
expect "the authorization request carried PKCE and the resource" \
  sh -c "grep -q 'code_challenge_method=S256' '$WORK/err' && grep -qF 'resource=http%3A%2F%2F127.0.0.1%3A$PORT%2Fmcp' '$WORK/err'"
expect "the browser was used once" test "$(uses)" = 1
expect "the profile names the resource" grep -qF "\"resource\" : \"$URL\"" "$OAUTH2_CONFIG_DIR/profiles/$NAME.json"
TOKEN=$("$BIN" --profile "$NAME" token)
expect "the profile's token is printed by oauth2 token" test -n "$TOKEN"
expect "stderr showed no token" sh -c "! grep -qF -- '$TOKEN' '$WORK/err'"

check "a second request reuses the profile (no discovery, no browser)" 0 mcp "$INITIALIZE"
expect "... and is answered" grep -q '"serverInfo"' "$WORK/out"
expect "... without a sign-in" sh -c "test $(uses) = 1 && ! grep -q 'Discovered' '$WORK/err'"
expect "... and prints nothing on stderr" test ! -s "$WORK/err"

echo "== step-up: a tool that needs a wider scope"
# An MCP session opened with the profile's token (curl: oauth2 request prints no headers).
curl -s -D "$WORK/headers" -o /dev/null "${JSON[@]}" -H "Authorization: Bearer $TOKEN" -d "$INITIALIZE" "$URL"
SESSION=$(awk -F': ' 'tolower($1) == "mcp-session-id" { print $2 }' "$WORK/headers" | tr -d '\r')
expect "an MCP session was opened" test -n "$SESSION"
S=(-H "Mcp-Session-Id: $SESSION" -H "MCP-Protocol-Version: 2025-06-18")
"$BIN" request -X POST "${JSON[@]}" "${S[@]}" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$URL" >/dev/null 2>&1
WRITE='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_note","arguments":{"text":"from mcp.sh"}}}'
check "write_note (mcp:write): 403 insufficient_scope, step-up sign-in, retried" 0 mcp "${S[@]}" --timeout 60 "$WRITE"
expect "... the tool answered" grep -q 'Noted' "$WORK/out"
expect "... after one more sign-in for the union of the scopes" \
  sh -c "grep -qF 'signing in again for mcp:read mcp:write' '$WORK/err' && test $(uses) = 2"
expect "... the profile keeps the wider scopes" grep -q '"mcp:write"' "$OAUTH2_CONFIG_DIR/profiles/$NAME.json"
check "write_note again: the stepped-up token is reused" 0 mcp "${S[@]}" "$WRITE"
expect "... without a sign-in" sh -c "grep -q 'Noted' '$WORK/out' && test $(uses) = 2"

echo "== a refused token is refreshed once"
# A new access token the server has not seen (its introspection answers are cached), revoked.
check "a new access token (token --force-refresh)" 0 "$BIN" --profile "$NAME" token --force-refresh
REVOKED=$(cat "$WORK/out")
check "revoke the access token only" 0 "$BIN" --profile "$NAME" revoke --token access
check "request after the revocation: 401 invalid_token, refresh, retried" 0 mcp "$INITIALIZE"
expect "... answered, without a sign-in" sh -c "grep -q '\"serverInfo\"' '$WORK/out' && test $(uses) = 2"
expect "... with a new access token" test "$("$BIN" --profile "$NAME" token)" != "$REVOKED"

echo "== oauth2 login --resource URL"
export OAUTH2_CONFIG_DIR=$WORK/config-login
check "login --resource: discovery and sign-in, no request" 0 "$BIN" login --store file --resource "$URL" --client-id "$CLIENT" --timeout 60
expect "... saved the profile named after the resource" grep -qF "\"resource\" : \"$URL\"" "$OAUTH2_CONFIG_DIR/profiles/$NAME.json"
expect "... printed nothing on stdout" test ! -s "$WORK/out"
check "request after login --resource reuses its profile" 0 mcp "$INITIALIZE"
expect "... without a sign-in" sh -c "grep -q '\"serverInfo\"' '$WORK/out' && test $(uses) = 3"
check "login --resource --profile NAME" 0 "$BIN" login --store file --resource "$URL" --client-id "$CLIENT" --profile mcp-named --timeout 60
expect "... saved under that name" grep -qF "\"resource\" : \"$URL\"" "$OAUTH2_CONFIG_DIR/profiles/mcp-named.json"
check "token --profile NAME" 0 "$BIN" --profile mcp-named token
check "login --resource refuses a name that is another resource's profile (2)" 2 \
  "$BIN" login --store file --resource "http://127.0.0.1:$PORT/other" --client-id "$CLIENT" --profile mcp-named --timeout 60
check "login --resource with --device is a usage error (2)" 2 "$BIN" login --resource "$URL" --device

echo "== refused before any token leaves"
export OAUTH2_CONFIG_DIR=$WORK/config-hostile
USED=$(uses)
# A resource whose challenge points to metadata (on its own origin) naming another resource;
# it records every Authorization header it is sent.
cat >"$WORK/hostile.py" <<'EOF'
import http.server, json, sys
issuer, seen = sys.argv[1], sys.argv[2]
class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args): pass
    def answer(self):
        if self.headers.get("Authorization"):
            open(seen, "a").write("authorization\n")
        base = "http://127.0.0.1:%d" % self.server.server_port
        if self.path.startswith("/.well-known/oauth-protected-resource"):
            body = json.dumps({"resource": base + "/elsewhere", "authorization_servers": [issuer]}).encode()
            self.send_response(200); self.send_header("Content-Type", "application/json")
        else:
            body = b""
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"' % base)
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    do_GET = do_POST = answer
server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_port, flush=True)
server.serve_forever()
EOF
python3 "$WORK/hostile.py" "$ISSUER" "$WORK/hostile-seen" >"$WORK/hostile.port" 2>"$WORK/hostile.log" &
pids+=($!)
for _ in $(seq 1 100); do [ -s "$WORK/hostile.port" ] && break; sleep 0.1; done
HOSTILE=http://127.0.0.1:$(head -n 1 "$WORK/hostile.port")/mcp
check "a resource whose metadata names another resource is refused (1)" 1 \
  "$BIN" request --client-id "$CLIENT" --timeout 60 -X POST "${JSON[@]}" -d "$INITIALIZE" "$HOSTILE"
expect "... with the typed error's message" sh -c "grep -q 'names the resource' '$WORK/err' && grep -q 'RFC 9728' '$WORK/err'"
expect "... no browser, no token sent, no profile saved" \
  sh -c "test $(uses) = $USED && test ! -e '$WORK/hostile-seen' && test -z \"\$(ls '$OAUTH2_CONFIG_DIR/profiles' 2>/dev/null)\""
check "login --resource of that resource is refused too (1)" 1 "$BIN" login --resource "$HOSTILE" --client-id "$CLIENT" --timeout 60
# The example server reached as localhost: its challenge points to 127.0.0.1's metadata.
check "metadata on another origin than the URL is refused (1)" 1 \
  "$BIN" request --client-id "$CLIENT" --timeout 60 -X POST "${JSON[@]}" -d "$INITIALIZE" "http://localhost:$PORT/mcp"
expect "... saying so" grep -q 'another origin' "$WORK/err"
expect "... no browser, no profile saved" sh -c "test $(uses) = $USED && test -z \"\$(ls '$OAUTH2_CONFIG_DIR/profiles' 2>/dev/null)\""
check "a resource URL with a query is a usage error (2)" 2 "$BIN" request --client-id "$CLIENT" "$URL?x=1"

echo "mcp-cli: $passed passed, $failures failed"
[ "$failures" = 0 ]
