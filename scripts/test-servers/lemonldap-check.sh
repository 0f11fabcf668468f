#!/usr/bin/env bash
# Proves the LemonLDAP::NG test server (lemonldap.sh start) end to end over plain HTTP, with no
# browser, and is THE recipe the Swift integration tests re-implement. Prints one line
# "ok <step>" per step; the first failure prints "FAIL <step>: why" and the last response, exit 1.
# Needs bash, curl, python3 (standard library only), openssl.
#
# THE SIGN-IN, request by request (issuer $ISS = http://127.0.0.1:8300, exact, no trailing slash):
#  1. GET $ISS/oauth2/authorize?response_type=code&client_id=..&redirect_uri=..&scope=..&state=..
#       &nonce=..&code_challenge=<S256 of the verifier>&code_challenge_method=S256[&prompt=consent]
#     No cookie needed. -> 200 text/html, the login form: <form id="lform" action="#" method="post">
#     with hidden inputs url, timezone, skin and token (<input id="token" type="hidden"
#     name="token" value="1795557942_57967" />), plus the text input "user" and "password".
#     It also sets a cookie lemonldappdata (the pending request): not needed, since step 2
#     repeats the query string.
#  2. POST the SAME URL (action="#" = the authorize URL, query included), form-urlencoded:
#       user=alice & password=alice-pw & token=<the token input's value>
#     (url, skin and timezone are not needed. token is required, single-use and valid 2 minutes
#     (formTimeout): without it the form comes back with <span trmsg="81">, PE_NOTOKEN; used
#     twice, trmsg="82", PE_TOKENEXPIRED.) No cookie needed.
#     -> a) 200 html with the consent form (<form id="form" action="#" class="confirm">, hidden
#           input name="confirm", an encrypted stamp, value e.g. "nQgc...%2B6bN...==": post it
#           exactly as it stands, "%2B" included; "-"+stamp means "Refuse". The stamp is an
#           encrypted time, valid 10 minutes and bound to nothing else; 2.16 even takes the
#           literal confirm=1 without a stamp. The recipe posts the stamp, as a browser does), or
#        b) 302 straight to the redirect URI (the client bypasses consent, as code-conf does, or
#           alice already consented to these scopes for this client and prompt=consent is absent).
#     Either way the answer sets THE cookie that matters:
#       Set-Cookie: lemonldap=<64 hex>; domain=.127.0.0.1; path=/; HttpOnly=1; SameSite=Lax
#     (the SSO session; send it back as "Cookie: lemonldap=<64 hex>"; it also deletes
#     lemonldappdata). A wrong password: 200, the login form again with <span trmsg="5">
#     (PE_BADCREDENTIALS) and a new token; no lemonldap cookie.
#  3. (consent form only) POST the SAME URL again with "Cookie: lemonldap=.." and the form field
#       confirm=<the confirm input's value>
#     (the other hidden inputs repeat the query and are not needed). Do NOT post the form's
#     hidden "url" input: the portal then keeps it in a lemonldappdata cookie and a later logout
#     confirmation ends on 302 $ISS/oauth2 instead of the post-logout redirect URI.
#  -> 302, Location: http://127.0.0.1:9999/callback?code=<64 hex>&state=<ours>&session_state=..
#     (parameter order varies; no "iss" parameter: RFC 9207 is not implemented). Take "code"
#     from the Location's query; check "state". An error comes back the same way with
#     error=..&error_description=..; an unknown client_id or a redirect URI not registered
#     exactly gives a 200 HTML error page instead (no redirect).
#  4. POST $ISS/oauth2/token grant_type=authorization_code&code=..&redirect_uri=..&code_verifier=..
#     (public client: client_id in the body; confidential: HTTP Basic or client_id+client_secret
#     in the body) -> 200 JSON access_token, id_token (RS256, aud is an array), refresh_token,
#     token_type Bearer, expires_in 3600, scope (offline_access is always stripped from it).
# With the lemonldap cookie a later authorize GET goes straight to 302 (SSO), or to the consent
# form. offline_access is honoured only with prompt=consent (or a client that bypasses consent):
# its refresh token then survives the logout; otherwise the refresh token dies with the session.
#
# RP-INITIATED LOGOUT (end_session_endpoint):
#  5. GET $ISS/oauth2/logout?id_token_hint=<id_token>&post_logout_redirect_uri=
#       http%3A%2F%2F127.0.0.1%3A9999%2Flogged-out&state=.. with "Cookie: lemonldap=.."
#     -> 200 html confirmation form (action="#", hidden id_token_hint, post_logout_redirect_uri,
#     state, url, confirm, skin). WITHOUT the cookie it answers 302 to the post-logout URI at once
#     and nothing is logged out.
#  6. POST the SAME URL with the cookie and confirm=<the confirm input's value> (again no "url")
#     -> 302 Location: http://127.0.0.1:9999/logged-out?state=<ours>, Set-Cookie: lemonldap=0
#     (expired). The session's (online) access tokens then get 401 at UserInfo.
set -euo pipefail
NAME=lemonldap-check
# shellcheck source=scripts/test-servers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ISS=$LEMONLDAP_ISSUER
LOGOUT_URI=${REDIRECT_URI%/*}/logged-out
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
STEP=start

ok() { echo "ok $1"; }
fail() {
  { echo "FAIL $STEP: $*"
    if [ -s "$W/h" ]; then echo "--- last response:"; cat "$W/h"; head -c 1500 "$W/b" 2>/dev/null; echo; fi; } >&2
  exit 1
}
step() { STEP=$1; }

# http ARGS...: one curl request (never follows redirects). Sets ST (status), LOC (Location);
# headers in $W/h, body in $W/b.
http() {
  local out
  out=$(curl -sS --max-time 20 -D "$W/h" -o "$W/b" -w '%{http_code} %{redirect_url}' "$@") || fail "curl $*"
  ST=${out%% *} LOC=${out#* }
}
body() { cat "$W/b"; }

# Small helpers in Python (stdlib): form inputs, query parameters, JSON, JWTs. The system's
# python3 first: a pyenv shim costs ~0.2 s per call.
PYTHON=$(command -v /usr/bin/python3 || command -v python3) || die "python3 is needed"
py() { "$PYTHON" -c "$1" "${@:2}"; }
# input NAME: the value of <input name=NAME> in the last HTML body (entities decoded).
input() {
  py '
import sys, html.parser
class P(html.parser.HTMLParser):
    v = None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "input" and a.get("name") == sys.argv[1] and P.v is None: P.v = a.get("value") or ""
p = P(); p.feed(open(sys.argv[2], encoding="utf-8", errors="replace").read())
if P.v is None: sys.exit(1)
print(P.v)' "$1" "$W/b"
}
# query URL NAME: a query parameter of URL (percent-decoded); fails if absent.
query() {
  py 'import sys, urllib.parse as u
q = u.parse_qs(u.urlsplit(sys.argv[1]).query)
sys.exit(1) if sys.argv[2] not in q else print(q[sys.argv[2]][0])' "$1" "$2"
}
# json EXPR: evaluates a Python expression on the last body parsed as JSON (as "j"); prints it.
json() { py 'import sys, json; j = json.load(open(sys.argv[2])); r = eval(sys.argv[1]); print(r if isinstance(r, str) else json.dumps(r))' "$1" "$W/b"; }
# jwt_part TOKEN 0|1: a JWT's decoded header or payload (JSON).
jwt_part() { py 'import sys, base64; s = sys.argv[1].split(".")[int(sys.argv[2])]; print(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)).decode())' "$1" "$2"; }
# jwt_check TOKEN PYTHON-CONDITION: the condition over the payload "c" and header "h" holds.
jwt_check() {
  py 'import sys, json, base64
d = lambda s: json.loads(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))
h, c = d(sys.argv[1].split(".")[0]), d(sys.argv[1].split(".")[1])
sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"
}
# jwt_verify TOKEN: RS256 signature checked with the certificate (x5c) of the JWKS key of its kid.
jwt_verify() {
  local kid
  kid=$(py 'import sys, json, base64; s = sys.argv[1].split(".")[0]; print(json.loads(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))["kid"])' "$1")
  py 'import sys, json, base64, textwrap
k = [k for k in json.load(open(sys.argv[1]))["keys"] if k.get("kid") == sys.argv[2]][0]
print("-----BEGIN CERTIFICATE-----\n" + "\n".join(textwrap.wrap(k["x5c"][0], 64)) + "\n-----END CERTIFICATE-----")' \
    "$W/jwks.json" "$kid" >"$W/cert.pem" || return 1
  openssl x509 -in "$W/cert.pem" -pubkey -noout >"$W/pub.pem" || return 1
  printf '%s' "${1%.*}" >"$W/signed"
  py 'import sys, base64; s = sys.argv[1].rsplit(".", 1)[1]; sys.stdout.buffer.write(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))' "$1" >"$W/sig"
  openssl dgst -sha256 -verify "$W/pub.pem" -signature "$W/sig" "$W/signed" >/dev/null
}
# The value of cookie NAME set by the last response ("" if none).
set_cookie() { sed -n "s/^[Ss]et-[Cc]ookie: $1=\([^;]*\).*/\1/p" "$W/h" | tr -d '\r' | tail -n 1; }
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
urlencode() { py 'import sys, urllib.parse as u; print(u.quote(sys.argv[1], safe=""))' "$1"; }

# ---------------------------------------------------------------------------------------------
step discovery
http "$ISS/.well-known/openid-configuration"
[ "$ST" = 200 ] || fail "status $ST"
cp "$W/b" "$W/discovery.json"
[ "$(json 'j["issuer"]')" = "$ISS" ] || fail "issuer is not exactly $ISS"
AUTHZ=$(json 'j["authorization_endpoint"]') TOKEN=$(json 'j["token_endpoint"]')
USERINFO=$(json 'j["userinfo_endpoint"]') INTROSPECT=$(json 'j["introspection_endpoint"]')
REGISTER=$(json 'j["registration_endpoint"]') END_SESSION=$(json 'j["end_session_endpoint"]')
JWKS=$(json 'j["jwks_uri"]')
[ "$(json '"S256" in j["code_challenge_methods_supported"]')" = true ] || fail "no S256"
ok discovery

step discovery-fixture   # the committed copy is this document (port 8300, acr_values sorted)
FIXTURE=$ROOT/Tests/Fixtures/lemonldap/openid-configuration.json
py 'import sys, json
live = json.loads(open(sys.argv[1]).read().replace(sys.argv[3], "http://127.0.0.1:8300"))
live["acr_values_supported"].sort()
sys.exit(0 if live == json.load(open(sys.argv[2])) else 1)' "$W/discovery.json" "$FIXTURE" "$ISS" \
  || fail "the discovery document differs from $FIXTURE"
ok discovery-fixture

step jwks
http "$JWKS"; [ "$ST" = 200 ] || fail "status $ST"
cp "$W/b" "$W/jwks.json"
[ "$(json '[k["kty"] for k in j["keys"]] == ["RSA"] and "x5c" in j["keys"][0]')" = true ] || fail "want one RSA key with x5c"
ok jwks

# PKCE, state, nonce for the public client's sign-in
VERIFIER=$(openssl rand 32 | b64url)
CHALLENGE=$(printf '%s' "$VERIFIER" | openssl dgst -sha256 -binary | b64url)
STATE=st-$(openssl rand -hex 8) NONCE=n-$(openssl rand -hex 8)
SCOPE="openid profile email offline_access"
AUTH_URL="$AUTHZ?response_type=code&client_id=$PUBLIC_ID&redirect_uri=$(urlencode "$REDIRECT_URI")&scope=$(urlencode "$SCOPE")"
AUTH_URL+="&state=$STATE&nonce=$NONCE&code_challenge=$CHALLENGE&code_challenge_method=S256&prompt=consent"

step login-form   # 1. GET the authorize URL: the login form
http "$AUTH_URL"
[ "$ST" = 200 ] || fail "status $ST, want the login form"
grep -q 'name="password"' "$W/b" || fail "no password field"
FORM_TOKEN=$(input token) || fail "no token input"
ok login-form

step bad-password   # a wrong password: the form again, message 5 (PE_BADCREDENTIALS), no session
http --data-urlencode "user=$TEST_USER" --data-urlencode "password=wrong-$TEST_PASSWORD" \
  --data-urlencode "token=$FORM_TOKEN" "$AUTH_URL"
{ [ "$ST" = 200 ] && grep -q 'trmsg="5"' "$W/b"; } || fail "status $ST, want the form with trmsg=5"
[ -z "$(set_cookie lemonldap)" ] || fail "a session cookie for a wrong password"
FORM_TOKEN=$(input token) || fail "no new token input"
ok bad-password

step login   # 2. POST user, password, token to the same URL: the consent form (prompt=consent)
http --data-urlencode "user=$TEST_USER" --data-urlencode "password=$TEST_PASSWORD" \
  --data-urlencode "token=$FORM_TOKEN" "$AUTH_URL"
SESSION=$(set_cookie lemonldap)
[ -n "$SESSION" ] || fail "no lemonldap cookie"
[ "$ST" = 200 ] || fail "status $ST, want the consent form"
CONFIRM=$(input confirm) || fail "no confirm input (consent form)"
ok login

step consent   # 3. POST confirm (only) with the session cookie: 302 to the redirect URI
http -H "Cookie: lemonldap=$SESSION" --data-urlencode "confirm=$CONFIRM" "$AUTH_URL"
[ "$ST" = 302 ] || fail "status $ST, want 302"
case $LOC in "$REDIRECT_URI?"*) ;; *) fail "Location $LOC" ;; esac
CODE=$(query "$LOC" code) || fail "no code in $LOC"
[ "$(query "$LOC" state)" = "$STATE" ] || fail "state differs in $LOC"
ok consent

step token   # 4. the code for tokens: public client, client_id in the body, the verifier
http -d grant_type=authorization_code --data-urlencode "code=$CODE" --data-urlencode "redirect_uri=$REDIRECT_URI" \
  --data-urlencode "client_id=$PUBLIC_ID" --data-urlencode "code_verifier=$VERIFIER" "$TOKEN"
[ "$ST" = 200 ] || fail "status $ST"
AT=$(json 'j["access_token"]') IDT=$(json 'j["id_token"]') RT=$(json 'j["refresh_token"]') || fail "missing tokens"
[ "$(json 'j["token_type"]')" = Bearer ] || fail "token_type"
jwt_check "$IDT" "h['alg'] == 'RS256' and c['iss'] == '$ISS' and '$PUBLIC_ID' in c['aud'] and c['nonce'] == '$NONCE' and c['sub'] == '$TEST_USER'" \
  || fail "id_token claims: $(jwt_part "$IDT" 1)"
jwt_verify "$IDT" || fail "id_token signature"
ok token

step code-replay   # the same code again: invalid_grant
http -d grant_type=authorization_code --data-urlencode "code=$CODE" --data-urlencode "redirect_uri=$REDIRECT_URI" \
  --data-urlencode "client_id=$PUBLIC_ID" --data-urlencode "code_verifier=$VERIFIER" "$TOKEN"
{ [ "$ST" = 400 ] && [ "$(json 'j["error"]')" = invalid_grant ]; } || fail "status $ST"
ok code-replay

step refresh   # a new access token and id token; no new refresh token (the old one stays valid)
http -d grant_type=refresh_token --data-urlencode "refresh_token=$RT" --data-urlencode "client_id=$PUBLIC_ID" "$TOKEN"
[ "$ST" = 200 ] || fail "status $ST"
AT2=$(json 'j["access_token"]') || fail "no access_token"
[ "$AT2" != "$AT" ] || fail "same access token"
ok refresh

step userinfo
http -H "Authorization: Bearer $AT2" "$USERINFO"
[ "$ST" = 200 ] || fail "status $ST"
[ "$(json 'j["sub"]')" = "$TEST_USER" ] || fail "sub"
[ "$(json 'j.get("email")')" = alice@example.com ] || fail "email"
ok userinfo

step introspect   # the confidential client introspects the public client's token (HTTP Basic)
http -u "$CONF_ID:$CONF_SECRET" --data-urlencode "token=$AT2" "$INTROSPECT"
[ "$ST" = 200 ] || fail "status $ST"
[ "$(json 'j["active"] is True and j["sub"] == "'"$TEST_USER"'" and j["client_id"] == "'"$PUBLIC_ID"'"')" = true ] || fail "$(body)"
ok introspect

# The confidential client, same browser session (SSO): no login form, and it bypasses consent.
# conf_authorize: GET its authorize URL with the session cookie; sets CODE2, VERIFIER2.
conf_authorize() {
  local state
  state=st-$(openssl rand -hex 8) VERIFIER2=$(openssl rand 32 | b64url)
  http -H "Cookie: lemonldap=$SESSION" "$AUTHZ?response_type=code&client_id=$CONF_ID&redirect_uri=$(urlencode "$REDIRECT_URI")&scope=openid%20profile%20email&state=$state&nonce=n2&code_challenge=$(printf '%s' "$VERIFIER2" | openssl dgst -sha256 -binary | b64url)&code_challenge_method=S256"
  [ "$ST" = 302 ] || fail "status $ST, want 302 (SSO)"
  CODE2=$(query "$LOC" code) || fail "no code in $LOC"
  [ "$(query "$LOC" state)" = "$state" ] || fail "state"
}
step sso-authorize
conf_authorize
ok sso-authorize

step pkce-wrong-verifier   # a wrong verifier: invalid_grant (only because the client requires PKCE)
http -u "$CONF_ID:$CONF_SECRET" -d grant_type=authorization_code --data-urlencode "code=$CODE2" \
  --data-urlencode "redirect_uri=$REDIRECT_URI" --data-urlencode "code_verifier=x$VERIFIER2" "$TOKEN"
{ [ "$ST" = 400 ] && [ "$(json 'j["error"]')" = invalid_grant ]; } || fail "status $ST"
ok pkce-wrong-verifier

step token-conf   # client_secret_post; its access token is a JWT (RS256)
conf_authorize
http -d grant_type=authorization_code --data-urlencode "code=$CODE2" --data-urlencode "redirect_uri=$REDIRECT_URI" \
  --data-urlencode "code_verifier=$VERIFIER2" \
  --data-urlencode "client_id=$CONF_ID" --data-urlencode "client_secret=$CONF_SECRET" "$TOKEN"
[ "$ST" = 200 ] || fail "status $ST"
CAT=$(json 'j["access_token"]')
json 'j["id_token"]' >/dev/null || fail "no id_token"
jwt_check "$CAT" "h['alg'] == 'RS256' and c['iss'] == '$ISS' and c['client_id'] == '$CONF_ID' and c['sub'] == '$TEST_USER' and 'exp' in c" \
  || fail "access token claims: $(jwt_part "$CAT" 0) $(jwt_part "$CAT" 1)"
jwt_verify "$CAT" || fail "access token signature"
ok token-conf

step client-credentials   # needs a scope (else 400 invalid_scope); sub = the client id
http -u "$CONF_ID:$CONF_SECRET" -d grant_type=client_credentials -d scope=profile "$TOKEN"
[ "$ST" = 200 ] || fail "status $ST"
jwt_check "$(json 'j["access_token"]')" "c['sub'] == '$CONF_ID'" || fail "$(body)"
[ "$(json '"refresh_token" in j')" = false ] || fail "a refresh token"
ok client-credentials

step password   # resource owner password grant
http -u "$CONF_ID:$CONF_SECRET" -d grant_type=password --data-urlencode "username=$TEST_USER" \
  --data-urlencode "password=$TEST_PASSWORD" --data-urlencode "scope=openid profile" "$TOKEN"
[ "$ST" = 200 ] || fail "status $ST"
[ "$(json '"access_token" in j and "id_token" in j and "refresh_token" in j')" = true ] || fail "$(body)"
ok password

# Dynamic registration (open): a client for a loopback redirect URI with any port, which is how
# a test whose listener has a random port can sign in (registered URIs are compared exactly).
# NB: registered ids and secrets are 30 characters of [A-Za-z0-9./], and LemonLDAP does not
# percent-decode HTTP Basic credentials: a client that form-urlencodes them first (RFC 6749
# §2.3.1: "/" becomes %2F) gets 401 invalid_client. client_secret_post always works.
step register
PORT=$((20000 + RANDOM % 20000)) DYN_REDIRECT=""
DYN_REDIRECT="http://127.0.0.1:$PORT/callback"
http -H 'Content-Type: application/json' \
  -d "{\"client_name\":\"check\",\"redirect_uris\":[\"$DYN_REDIRECT\"]}" "$REGISTER"
[ "$ST" = 201 ] || fail "status $ST"
DYN_ID=$(json 'j["client_id"]') DYN_SECRET=$(json 'j["client_secret"]')
# The new client is in a new configuration (conf/lmConf-N.json); each FastCGI worker reloads it
# at its first request once time() - lastCheck > checkTime (1 s, whole seconds): up to 2 s.
sleep 2
ok register

step register-signin   # same session: consent form (a new client), then the code at the new URI
# (an unregistered redirect URI, e.g. another port, gives a 200 HTML page with trmsg="108",
# PE_UNAUTHORIZEDURL, and no redirect)
AUTH_URL3="$AUTHZ?response_type=code&client_id=$(urlencode "$DYN_ID")&redirect_uri=$(urlencode "$DYN_REDIRECT")&scope=openid&state=s3"
http -H "Cookie: lemonldap=$SESSION" "$AUTH_URL3"
CONFIRM=$(input confirm) || fail "no consent form for the registered client"
http -H "Cookie: lemonldap=$SESSION" --data-urlencode "confirm=$CONFIRM" "$AUTH_URL3"
case $LOC in "$DYN_REDIRECT?"*) ;; *) fail "status $ST, Location $LOC" ;; esac
http -d grant_type=authorization_code --data-urlencode "code=$(query "$LOC" code)" --data-urlencode "redirect_uri=$DYN_REDIRECT" \
  --data-urlencode "client_id=$DYN_ID" --data-urlencode "client_secret=$DYN_SECRET" "$TOKEN"
{ [ "$ST" = 200 ] && json 'j["access_token"]' >/dev/null; } || fail "status $ST"
ok register-signin

step logout-form   # 5. end_session with the session cookie: the confirmation form
LO_STATE=lo-$(openssl rand -hex 4)
LOGOUT_URL="$END_SESSION?id_token_hint=$IDT&post_logout_redirect_uri=$(urlencode "$LOGOUT_URI")&state=$LO_STATE"
http -H "Cookie: lemonldap=$SESSION" "$LOGOUT_URL"
[ "$ST" = 200 ] || fail "status $ST, want the confirmation form"
CONFIRM=$(input confirm) || fail "no confirm input"
ok logout-form

step logout   # 6. POST confirm (only): 302 to the post-logout redirect URI with our state
http -H "Cookie: lemonldap=$SESSION" --data-urlencode "confirm=$CONFIRM" "$LOGOUT_URL"
{ [ "$ST" = 302 ] && [ "$LOC" = "$LOGOUT_URI?state=$LO_STATE" ]; } || fail "status $ST, Location $LOC"
[ "$(set_cookie lemonldap)" = 0 ] || fail "session cookie not cleared"
ok logout

step logged-out   # the session's online access token is dead; the offline refresh token lives
http -H "Authorization: Bearer $CAT" "$USERINFO"
[ "$ST" = 401 ] || fail "status $ST for an access token of the ended session"
http -d grant_type=refresh_token --data-urlencode "refresh_token=$RT" --data-urlencode "client_id=$PUBLIC_ID" "$TOKEN"
[ "$ST" = 200 ] || fail "status $ST refreshing the offline_access refresh token"
ok logged-out
