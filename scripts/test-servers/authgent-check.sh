#!/usr/bin/env bash
# Proves, with curl and the authgent venv's python (PKCE, DPoP, JWT checks), how authgent-server
# 0.3.4 serves the flows the integration tests do not use yet, with nobody at a browser:
# authorization code + PKCE (sign-in and consent), refresh rotation, introspection, revocation,
# dynamic registration, the device flow, DPoP and RFC 9207 `iss`; and pins its quirks. One
# "ok <step>" line per step proven; "ok quirk: ..." lines pin a deviation from the RFCs (a later
# authgent that fixes one fails here, on purpose). Stops at the first failure (exit 1).
#   AUTHGENT_URL=http://127.0.0.1:8400 scripts/test-servers/authgent-check.sh
# AUTHGENT_URL       the server (default http://127.0.0.1:8400); its issuer must be this URL
# AUTHGENT_PYTHON    a python with cryptography and PyJWT (default: the authgent venv)
# AUTHGENT_CLIENTS_ENV  optional: a clients.env written by authgent.sh; then the clients it
#                    registered at start are signed in with too (else only the ones registered here)
# OAUTH2_TEST_REDIRECT_URI  the redirect URI to register (default lib.sh's, 127.0.0.1:9999)
#
# THE SIGN-IN (what a Swift test re-implements; nothing listens on the redirect URI, the
# "browser" reads the Location header and never follows it):
#   authgent has no login and no users. AUTHGENT_CONSENT_MODE (its .env; `authgent-server init`
#   writes auto_approve, authgent.sh pins it) decides what GET /authorize does:
#   auto_approve  GET /authorize?response_type=code&client_id=..&redirect_uri=..&scope=..
#                   &state=..&code_challenge=..&code_challenge_method=S256[&nonce=..][&resource=..]
#                 → 302, Location: <redirect_uri>?code=<code>[&state=<state>]&iss=<issuer,
#                   percent-encoded>. No cookie, no page. The code's subject is always
#                   "auto_approved_user".
#   ui / headless (both the same) the same GET → 200 text/html, a consent page, and
#                   Set-Cookie: authgent_session=<id>; HttpOnly; Max-Age=600; Path=/; SameSite=lax.
#                 The page's <form method="POST" action="/authorize"> has hidden inputs
#                   csrf_token (<unix time>.<HMAC of session id and time>, valid 600 s), client_id,
#                   redirect_uri, scope, resource, state, code_challenge, code_challenge_method,
#                   response_type and (if sent) nonce, and two buttons name="action"
#                   value="deny" / value="allow".
#                 POST /authorize, Content-Type application/x-www-form-urlencoded, Cookie:
#                   authgent_session=<id>, body: every hidden input + action=allow
#                 → 302, Location: <redirect_uri>?code=<code>[&state=..]&iss=<issuer>; subject
#                   "consent_user". action=deny → 302 <redirect_uri>?error=access_denied&state=..
#                   &iss=..; no or wrong cookie → 400 problem+json "Invalid CSRF token".
#   Errors at GET /authorize (unknown client, unregistered redirect URI, no code_challenge,
#   method other than S256, response_type other than code) are never redirected: 400/401
#   application/problem+json {"type","title","status","detail","instance","error_code"}.
# Then POST /token grant_type=authorization_code&code=..&code_verifier=..[&redirect_uri=..]
#   with client_id in the form and no secret (public client) or HTTP Basic (confidential).
# shellcheck disable=SC2015  # "[ A ] && [ B ] || fail ...": fail exits
set -euo pipefail
NAME=authgent-check
GIVEN_URL=${AUTHGENT_URL:-}
# shellcheck source=scripts/test-servers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
U=${GIVEN_URL:-http://127.0.0.1:8400}; U=${U%/}
PY=${AUTHGENT_PYTHON:-$STATE/authgent/venv/bin/python}
[ -x "$PY" ] || PY=$ROOT/.build/test-servers/authgent/venv/bin/python
[ -x "$PY" ] || die "no python with cryptography and PyJWT: set AUTHGENT_PYTHON"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
DEVICE_GRANT=urn:ietf:params:oauth:grant-type:device_code

cat >"$W/ag.py" <<'PY'
import base64, hashlib, json, secrets, sys, time, urllib.parse
from html.parser import HTMLParser
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
def jkt_of(jwk):  # RFC 7638: the required members only, sorted, no whitespace
    return b64(hashlib.sha256(json.dumps({k: jwk[k] for k in ("crv", "kty", "x", "y")}, sort_keys=True, separators=(",", ":")).encode()).digest())
def load(path):
    from cryptography.hazmat.primitives import serialization
    return serialization.load_pem_private_key(open(path, "rb").read(), None)
def public_jwk(key):
    n = key.public_key().public_numbers()
    return {"kty": "EC", "crv": "P-256", "x": b64(n.x.to_bytes(32, "big")), "y": b64(n.y.to_bytes(32, "big"))}
cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "pkce":                      # prints "verifier challenge" (RFC 7636 S256)
    v = secrets.token_urlsafe(48); print(v, b64(hashlib.sha256(v.encode()).digest()))
elif cmd == "get":                     # FILE PATH: a JSON member (a.b), exit 3 when absent
    v = json.load(open(args[0]))
    for p in args[1].split("."):
        if not isinstance(v, dict) or p not in v: sys.exit(3)
        v = v[p]
    print(json.dumps(v) if not isinstance(v, str) else v)
elif cmd == "has-null":                # FILE NAME: exit 0 when NAME is present with value null
    d = json.load(open(args[0])); sys.exit(0 if args[1] in d and d[args[1]] is None else 1)
elif cmd == "query":                   # URL: its query as JSON {name: [values]}
    print(json.dumps(urllib.parse.parse_qs(urllib.parse.urlsplit(args[0]).query, keep_blank_values=True)))
elif cmd == "param":                   # URL NAME: one query parameter, exit 3 when absent
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(args[0]).query)
    if args[1] not in q: sys.exit(3)
    print(q[args[1]][0])
elif cmd == "claims":                  # JWT: its payload, unverified
    print(json.dumps(json.loads(base64.urlsafe_b64decode(args[0].split(".")[1] + "=="))))
elif cmd == "verify":                  # JWT JWKS-FILE ISSUER: checks the ES256 signature by kid
    import jwt
    header = jwt.get_unverified_header(args[0])
    keys = {k["kid"]: k for k in json.load(open(args[1]))["keys"]}
    key = jwt.PyJWK(keys[header["kid"]]).key
    c = jwt.decode(args[0], key, algorithms=["ES256"], options={"verify_aud": False}, issuer=args[2])
    assert header["alg"] == "ES256", header
    print(json.dumps(c))
elif cmd == "dpop-key":                # PEM-FILE: makes a P-256 key there, prints its RFC 7638 jkt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    k = ec.generate_private_key(ec.SECP256R1())
    open(args[0], "wb").write(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    print(jkt_of(public_jwk(k)))
elif cmd == "dpop-proof":              # PEM-FILE METHOD URL [NONCE]: an RFC 9449 proof
    import jwt
    k = load(args[0])
    claims = {"jti": secrets.token_urlsafe(16), "htm": args[1], "htu": args[2], "iat": int(time.time())}
    if len(args) > 3 and args[3]: claims["nonce"] = args[3]
    print(jwt.encode(claims, k, algorithm="ES256", headers={"typ": "dpop+jwt", "jwk": public_jwk(k)}))
elif cmd == "consent-form":            # HTML-FILE: the consent form's hidden inputs + action=allow, form-encoded
    class P(HTMLParser):
        fields = []
        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "input" and a.get("type") == "hidden": self.fields.append((a["name"], a.get("value") or ""))
    p = P(); p.feed(open(args[0]).read())
    print(urllib.parse.urlencode(p.fields + [("action", "allow")]))
PY
py() { "$PY" "$W/ag.py" "$@"; }

ok() { echo "ok $*"; }
# fail MESSAGE: shows the last answer and stops.
fail() {
  echo "FAIL $*" >&2
  if [ -s "$W/h" ]; then sed 's/^/  < /' "$W/h" >&2; fi
  if [ -s "$W/b" ]; then head -c 2000 "$W/b" | sed 's/^/  | /' >&2; echo >&2; fi
  exit 1
}
# http METHOD URL [curl args...]: one request, redirects not followed; ST is the status, the
# headers are in $W/h, the body in $W/b.
http() {
  local m=$1 u=$2; shift 2
  : >"$W/h"; : >"$W/b"
  ST=$(curl -sS -X "$m" -D "$W/h" -o "$W/b" -w '%{http_code}' --max-time 20 "$@" "$u") || fail "$m $u: no answer"
}
hdr() { grep -i "^$1:" "$W/h" | head -n 1 | cut -d: -f2- | sed 's/^ *//' | tr -d '\r'; }
field() { py get "$W/b" "$1"; }
expect_status() { [ "$ST" = "$1" ] || fail "$2: status $ST, expected $1"; }
expect_error() {  # STATUS ERROR-CODE WHAT
  expect_status "$1" "$3"; [ "$(field error)" = "$2" ] || fail "$3: error $(field error || true), expected $2"
}
# RFC 7591 registration: JSON body → the client's JSON in $W/<name>.json
register() {
  http POST "$U/register" -H 'Content-Type: application/json' -d "$2"
  expect_status 201 "POST /register ($1)"
  cp "$W/b" "$W/$1.json"
}
cj() { py get "$W/$1.json" "$2"; }

# sign_in CLIENT_ID REDIRECT_URI CHALLENGE STATE [SCOPE]: the browser's part (see the top):
# LOC is the callback URL authgent redirects to, MODE the consent mode met.
sign_in() {
  rm -f "$W/jar"
  # GET /authorize with the authorization request as query parameters; the cookie jar keeps
  # authgent_session should a consent page come back.
  http GET "$U/authorize" -G -c "$W/jar" --data-urlencode response_type=code --data-urlencode "client_id=$1" \
    --data-urlencode "redirect_uri=$2" --data-urlencode "scope=${5:-}" --data-urlencode "state=$4" \
    --data-urlencode "code_challenge=$3" --data-urlencode code_challenge_method=S256
  if [ "$ST" = 302 ]; then
    MODE=auto_approve
  elif [ "$ST" = 200 ] && hdr content-type | grep -q text/html; then
    MODE=ui
    grep -q 'name="action" value="allow"' "$W/b" || fail "consent page without an allow button"
    cp "$W/b" "$W/consent.html"
    # POST /authorize: the form's hidden inputs + action=allow, with the session cookie.
    http POST "$U/authorize" -b "$W/jar" -H 'Content-Type: application/x-www-form-urlencoded' \
      --data "$(py consent-form "$W/consent.html")"
    expect_status 302 "POST /authorize (consent allow)"
  else
    fail "GET /authorize: status $ST"
  fi
  LOC=$(hdr location)
  [ -n "$LOC" ] || fail "redirect without Location"
}
# code_for CLIENT_ID REDIRECT_URI [SCOPE]: sign-in → CODE, VERIFIER (and LOC, MODE).
code_for() {
  local pkce state
  pkce=$(py pkce); VERIFIER=${pkce% *}
  state=$(py pkce); state=${state% *}
  sign_in "$1" "$2" "${pkce#* }" "$state" "${3:-}"
  case $LOC in "$2?"*) ;; *) fail "redirected to $LOC, not to $2" ;; esac
  CODE=$(py param "$LOC" code) || fail "no code in $LOC"
  [ "$(py param "$LOC" state)" = "$state" ] || fail "state not returned as sent: $LOC"
  [ "$(py param "$LOC" iss)" = "$U" ] || fail "iss in the redirect is not $U: $LOC"
}

# --- Metadata (RFC 8414) and the JWKS the tokens are checked against.
http GET "$U/.well-known/oauth-authorization-server"
expect_status 200 "RFC 8414 metadata"
[ "$(field issuer)" = "$U" ] || fail "issuer $(field issuer) is not $U (set AUTHGENT_URL to its AUTHGENT_SERVER_URL)"
for m in authorization_endpoint:/authorize token_endpoint:/token registration_endpoint:/register \
  revocation_endpoint:/revoke introspection_endpoint:/introspect device_authorization_endpoint:/device/authorize; do
  [ "$(field "${m%%:*}")" = "$U${m#*:}" ] || fail "metadata ${m%%:*}"
done
[ "$(field authorization_response_iss_parameter_supported)" = true ] || fail "no RFC 9207 flag"
[ "$(field code_challenge_methods_supported)" = '["S256"]' ] || fail "PKCE methods"
[ "$(field dpop_signing_alg_values_supported)" = '["ES256"]' ] || fail "DPoP algs"
ok "metadata: RFC 8414 at /.well-known/oauth-authorization-server, S256 only, DPoP ES256, RFC 9207 flag"
http GET "$U/.well-known/jwks.json"; expect_status 200 JWKS; cp "$W/b" "$W/jwks.json"

# --- OpenID Connect: advertised, not served.
http GET "$U/.well-known/openid-configuration"
expect_status 200 "openid-configuration"
[ "$(field userinfo_endpoint)" = "$U/userinfo" ] || fail "userinfo_endpoint"
http GET "$U/userinfo"
expect_status 404 "GET /userinfo"
ok "quirk: openid-configuration names userinfo_endpoint $U/userinfo, which is 404 (GET and POST); no route"

# --- Dynamic registration (RFC 7591): open, no initial access token.
REDIR=${OAUTH2_TEST_REDIRECT_URI:-$REDIRECT_URI}
# A public client: token_endpoint_auth_method none (it still gets a client_secret, unused).
register public '{"client_name": "check public", "token_endpoint_auth_method": "none",
  "grant_types": ["authorization_code", "refresh_token", "'$DEVICE_GRANT'"], "redirect_uris": ["'"$REDIR"'"]}'
PUB=$(cj public client_id)
[ "$(cj public token_endpoint_auth_method)" = none ] || fail "auth method not echoed"
cj public client_secret >/dev/null || fail "no client_secret"
if cj public client_id_issued_at >/dev/null || cj public client_secret_expires_at >/dev/null; then
  fail "registration now returns client_id_issued_at / client_secret_expires_at: update the quirk"
fi
ok "registration: open POST /register → 201 {client_id agnt_…, client_secret sec_…, metadata echoed}"
ok "quirk: registration issues a client_secret even for token_endpoint_auth_method none, and no client_secret_expires_at (RFC 7591 §3.2.1 REQUIRED with a secret)"
# A confidential client (the auth method is stored, not enforced: Basic and post both work).
register conf '{"client_name": "check confidential", "token_endpoint_auth_method": "client_secret_basic",
  "grant_types": ["authorization_code", "refresh_token", "client_credentials", "'$DEVICE_GRANT'"], "redirect_uris": ["'"$REDIR"'"]}'
CONF=$(cj conf client_id) CONF_SECRET=$(cj conf client_secret)
# A public client without redirect_uris: any redirect URI is accepted for it.
register anyredirect '{"client_name": "check any redirect", "token_endpoint_auth_method": "none",
  "grant_types": ["authorization_code", "refresh_token"]}'
ANY=$(cj anyredirect client_id)
[ "$(cj anyredirect redirect_uris)" = "[]" ] || fail "redirect_uris"
# Registration errors are FastAPI's 422, not RFC 7591 §3.2.2 errors.
http POST "$U/register" -H 'Content-Type: application/json' -d '{"client_name": "x", "redirect_uris": ["http://[::1]:9999/callback"]}'
expect_status 422 "POST /register with an IPv6 loopback redirect URI"
py get "$W/b" detail >/dev/null || fail "not FastAPI's detail"
ok "quirk: a refused registration is 422 {\"detail\": [pydantic errors]}, not 400 invalid_redirect_uri/invalid_client_metadata; http://[::1] and custom schemes are refused (only https, http://localhost, http://127.0.0.1); client_name is required"

# --- Authorization code + PKCE, public client.
code_for "$PUB" "$REDIR" "openid read"
ok "authorize: GET /authorize → $MODE → 302 $REDIR?code=…&state=…&iss=… (iss = issuer, RFC 9207)"
# POST /token, form: grant_type, code, code_verifier, redirect_uri, client_id; no secret.
http POST "$U/token" -d grant_type=authorization_code --data-urlencode "code=$CODE" \
  --data-urlencode "code_verifier=$VERIFIER" --data-urlencode "redirect_uri=$REDIR" --data-urlencode "client_id=$PUB"
expect_status 200 "code exchange (public)"
cp "$W/b" "$W/t-public.json"
AT=$(field access_token) RT=$(field refresh_token)
[ "$(field token_type)" = Bearer ] || fail "token_type"
[ "$(field scope)" = "openid read" ] || fail "scope"
case $RT in tok_*) ;; *) fail "refresh token $RT" ;; esac
py verify "$AT" "$W/jwks.json" "$U" >"$W/claims.json" || fail "access token signature"
[ "$(py get "$W/claims.json" sub)" = auto_approved_user ] || [ "$MODE" != auto_approve ] || fail "sub"
[ "$(py get "$W/claims.json" client_id)" = "$PUB" ] || fail "client_id claim"
ok "code: public client, POST /token without secret → 200 Bearer ES256 JWT (sub $(py get "$W/claims.json" sub), aud = issuer) + opaque refresh token tok_…"
if field id_token >/dev/null; then fail "an id_token now: update the quirk"; fi
py has-null "$W/b" issued_token_type || fail "issued_token_type: null gone: update the quirk"
ok "quirk: no id_token even for scope openid (nonce is stored, unused); every token response carries \"issued_token_type\": null (and \"refresh_token\": null when none)"

# Consent page only (AUTHGENT_CONSENT_MODE=ui or headless): deny, the cookie, the form's trust.
if [ "$MODE" = ui ]; then
  FORM=$(py consent-form "$W/consent.html")
  # action=deny: the same POST with action=deny.
  http POST "$U/authorize" -b "$W/jar" -H 'Content-Type: application/x-www-form-urlencoded' --data "${FORM%action=allow}action=deny"
  expect_status 302 "consent deny"
  [ "$(py param "$(hdr location)" error)" = access_denied ] && [ "$(py param "$(hdr location)" iss)" = "$U" ] || fail "deny redirect"
  ok "consent: action=deny → 302 <redirect_uri>?error=access_denied&state=…&iss=…"
  http POST "$U/authorize" -H 'Content-Type: application/x-www-form-urlencoded' --data "$FORM"
  expect_status 400 "consent without the session cookie"
  ok "consent: POST /authorize without the authgent_session cookie → 400 problem+json Invalid CSRF token"
  # The form's fields are trusted as posted: its csrf_token is reusable (600 s) and
  # redirect_uri is not checked again.
  http POST "$U/authorize" -b "$W/jar" -H 'Content-Type: application/x-www-form-urlencoded' \
    --data "$(printf %s "$FORM" | sed 's|redirect_uri=[^&]*|redirect_uri=https%3A%2F%2Fevil.example%2Fcb|')"
  expect_status 302 "consent with another redirect_uri"
  case $(hdr location) in https://evil.example/cb\?code=*) ;; *) fail "redirect $(hdr location)" ;; esac
  ok "quirk: POST /authorize trusts its form: the csrf_token is reusable for 600 s and a posted redirect_uri is not checked against the client's (code sent to any URI)"
fi

# Code reuse and a wrong verifier.
http POST "$U/token" -d grant_type=authorization_code --data-urlencode "code=$CODE" \
  --data-urlencode "code_verifier=$VERIFIER" --data-urlencode "client_id=$PUB"
expect_error 400 invalid_grant "code reuse"
code_for "$PUB" "$REDIR"
http POST "$U/token" -d grant_type=authorization_code --data-urlencode "code=$CODE" \
  -d code_verifier=wrong-wrong-wrong-wrong-wrong-wrong-wrong-wrong --data-urlencode "client_id=$PUB"
expect_error 400 invalid_grant "wrong code_verifier"
ok "code: a used code and a wrong code_verifier → 400 invalid_grant"

# The redirect URI is compared exactly: another loopback port is refused, without a redirect.
pkce=$(py pkce)
http GET "$U/authorize" -G --data-urlencode response_type=code --data-urlencode "client_id=$PUB" \
  --data-urlencode "redirect_uri=http://127.0.0.1:45678/callback" --data-urlencode "code_challenge=${pkce#* }"
expect_status 400 "another loopback port"
[ "$(field detail)" = "redirect_uri not registered for this client" ] || fail "detail"
[ "$(hdr content-type)" = application/problem+json ] || fail "content type"
ok "authorize: redirect URIs are compared exactly (no RFC 8252 §7.3 port freedom): another port → 400 application/problem+json, no redirect"
code_for "$ANY" "http://127.0.0.1:45678/cb"
http POST "$U/token" -d grant_type=authorization_code --data-urlencode "code=$CODE" \
  --data-urlencode "code_verifier=$VERIFIER" --data-urlencode "client_id=$ANY"
expect_status 200 "code exchange (any redirect)"
ok "authorize: a client registered without redirect_uris accepts any redirect URI (so any loopback port; any other URI too)"

# state is pasted into the Location unencoded.
pkce=$(py pkce)
http GET "$U/authorize" -G --data-urlencode response_type=code --data-urlencode "client_id=$PUB" \
  --data-urlencode "redirect_uri=$REDIR" --data-urlencode "code_challenge=${pkce#* }" --data-urlencode 'state=a+b&c=d'
if [ "$MODE" = auto_approve ]; then
  expect_status 302 "state with + and &"
  [ "$(py query "$(hdr location)" | "$PY" -c 'import json,sys; q=json.load(sys.stdin); print(q["state"][0], q.get("c"))')" = "a b ['d']" ] \
    || fail "state now encoded: update the quirk"
  ok "quirk: state is copied into the redirect unencoded: state=a+b&c=d comes back as state \"a b\" and a parameter c (use [A-Za-z0-9-._~] states)"
fi

# --- Confidential client: HTTP Basic at /token.
code_for "$CONF" "$REDIR" read
http POST "$U/token" -u "$CONF:$CONF_SECRET" -d grant_type=authorization_code --data-urlencode "code=$CODE" \
  --data-urlencode "code_verifier=$VERIFIER" --data-urlencode "redirect_uri=$REDIR"
expect_status 200 "code exchange (confidential, Basic)"
CAT=$(field access_token) CRT=$(field refresh_token)
ok "code: confidential client with client_secret_basic → 200"
http POST "$U/token" -u "$CONF:not-the-secret" -d grant_type=refresh_token --data-urlencode "refresh_token=$CRT"
expect_error 401 invalid_client "wrong secret"
ok "token: a wrong secret → 401 invalid_client"
http POST "$U/token" -d grant_type=client_credentials --data-urlencode "client_id=$CONF"
expect_status 200 "client_credentials without a secret"
ok "quirk: /token authenticates a client only if a secret is sent: client_id alone (no secret) gets client_credentials tokens for a confidential client"

# --- Refresh: rotation with reuse detection (grant type refresh_token must be registered).
http POST "$U/token" -d grant_type=refresh_token --data-urlencode "refresh_token=$RT" --data-urlencode "client_id=$PUB"
expect_status 200 "refresh"
RT2=$(field refresh_token)
[ -n "$RT2" ] && [ "$RT2" != "$RT" ] || fail "refresh token not rotated"
py verify "$(field access_token)" "$W/jwks.json" "$U" >/dev/null || fail "refreshed token signature"
ok "refresh: POST /token grant_type=refresh_token → new access token and a new refresh token (rotation)"
http POST "$U/token" -d grant_type=refresh_token --data-urlencode "refresh_token=$RT" --data-urlencode "client_id=$PUB"
expect_error 400 invalid_grant "reused refresh token"
http POST "$U/token" -d grant_type=refresh_token --data-urlencode "refresh_token=$RT2" --data-urlencode "client_id=$PUB"
expect_error 400 invalid_grant "refresh token of a replayed family"
ok "refresh: reusing a rotated refresh token → invalid_grant, and its whole family is revoked"

# --- Introspection (RFC 7662): no client authentication at all.
http POST "$U/introspect" --data-urlencode "token=$CAT"
expect_status 200 "introspection"
[ "$(field active)" = true ] && [ "$(field client_id)" = "$CONF" ] && [ "$(field token_type)" = Bearer ] || fail "introspection answer"
ok "introspect: POST /introspect token=… with no client authentication → active, scope, client_id, sub, exp, iat, iss, jti, token_type"
http POST "$U/introspect" --data-urlencode "token=$CRT"
[ "$(field active)" = false ] || fail "a refresh token introspects active: update the quirk"
ok "quirk: anyone may introspect (no caller authentication); refresh tokens (opaque) always introspect active:false; inactive answers carry every member as null"

# --- Revocation (RFC 7009): client authentication required; access tokens only.
http POST "$U/revoke" --data-urlencode "token=$CAT" --data-urlencode "client_id=$PUB"
expect_error 401 invalid_client "revocation by a public client"
ok "quirk: a public client cannot revoke: client_id without secret → 401 invalid_client"
http POST "$U/revoke" --data-urlencode "client_id=$CONF" --data-urlencode "client_secret=$CONF_SECRET" --data-urlencode "token=$CAT" -d token_type_hint=access_token
expect_status 200 "revocation"
http POST "$U/introspect" --data-urlencode "token=$CAT"
[ "$(field active)" = false ] || fail "revoked access token still active"
ok "revoke: POST /revoke (Basic or client_id+client_secret in the form) an access token → 200 {}, then introspection active:false"
http POST "$U/revoke" -u "$CONF:$CONF_SECRET" --data-urlencode "token=$CRT" -d token_type_hint=refresh_token
expect_status 200 "refresh token revocation"
http POST "$U/token" -u "$CONF:$CONF_SECRET" -d grant_type=refresh_token --data-urlencode "refresh_token=$CRT"
expect_status 200 "refresh after revocation (quirk)"
ok "quirk: revoking a refresh token answers 200 but does nothing (only JWTs are revoked): the refresh token still works"

# --- Device authorization (RFC 8628): approved through an unauthenticated JSON API.
http POST "$U/device/authorize" --data-urlencode "client_id=$PUB" -d scope=read
expect_status 200 "device authorization"
DC=$(field device_code) UC=$(field user_code)
[ ${#UC} = 8 ] && [ "$(field verification_uri_complete)" = "$U/device?user_code=$UC" ] && [ "$(field verification_uri)" = "$U/device" ] && [ "$(field interval)" = 5 ] && [ "$(field expires_in)" = 600 ] || fail "device answer"
ok "device: POST /device/authorize client_id, scope → device_code, user_code (8 chars), verification_uri $U/device, _complete, expires_in 600, interval 5"
http POST "$U/token" -d grant_type=$DEVICE_GRANT --data-urlencode "device_code=$DC" --data-urlencode "client_id=$PUB"
expect_error 400 invalid_grant "pending poll at /token"
[ "$(field error_description)" = authorization_pending ] || fail "description"
ok "quirk: polling /token before approval → 400 {\"error\": \"invalid_grant\", \"error_description\": \"authorization_pending\"} (RFC 8628 §3.5 wants error authorization_pending); never slow_down"
http POST "$U/device/token" --data-urlencode "device_code=$DC" --data-urlencode "client_id=$PUB"
expect_error 400 authorization_pending "pending poll at /device/token"
ok "device: the unadvertised POST /device/token (device_code, client_id) answers the right 400 authorization_pending"
http GET "$U/device?user_code=$UC"
expect_status 404 "verification page"
ok "quirk: verification_uri $U/device is 404: no page for a person"
# The approval: POST /device/complete, JSON {"user_code", "subject", "action": "approve"|"deny"}, no auth.
http POST "$U/device/complete" -H 'Content-Type: application/json' -d '{"user_code": "'"$UC"'", "subject": "alice", "action": "approve"}'
expect_status 200 "device approval"
[ "$(field status)" = approved ] || fail "approval"
ok "device: POST /device/complete {\"user_code\", \"subject\": \"alice\"} (JSON, no authentication) → 200 {\"status\": \"approved\"}"
http POST "$U/token" -d grant_type=$DEVICE_GRANT --data-urlencode "device_code=$DC" --data-urlencode "client_id=$PUB"
expect_status 200 "device token"
py verify "$(field access_token)" "$W/jwks.json" "$U" >"$W/claims.json" || fail "device token signature"
[ "$(py get "$W/claims.json" sub)" = "client:$PUB" ] || fail "device token subject: update the quirk"
[ "$(field refresh_token)" = null ] || fail "device refresh token"
ok "device: the next poll at /token → 200 Bearer token, scope read"
ok "quirk: the device token's sub is client:<client_id> (the approving subject is dropped) and there is no refresh token"
http POST "$U/token" -d grant_type=$DEVICE_GRANT --data-urlencode "device_code=$DC" --data-urlencode "client_id=$PUB"
expect_error 400 invalid_grant "consumed device code"
[ "$(field error_description)" = authorization_pending ] || fail "description"
ok "quirk: a consumed device code polls as invalid_grant/authorization_pending again"
http POST "$U/device/authorize" --data-urlencode "client_id=$PUB" -d scope=read
DC=$(field device_code) UC=$(field user_code)
http POST "$U/device/complete" -H 'Content-Type: application/json' -d '{"user_code": "'"$UC"'", "subject": "alice", "action": "deny"}'
[ "$(field status)" = denied ] || fail "deny"
http POST "$U/token" -d grant_type=$DEVICE_GRANT --data-urlencode "device_code=$DC" --data-urlencode "client_id=$PUB"
expect_error 400 invalid_grant "denied device code"
ok "device: action deny → the poll answers 400 invalid_grant (not access_denied)"

# --- DPoP (RFC 9449): ES256 proofs at /token; no nonces unless AUTHGENT_REQUIRE_DPOP=true.
# The proof's htu must equal authgent's own view of the request URL (scheme://Host header/token,
# no query): http://localhost:8400/token is refused when the request went to 127.0.0.1:8400.
# Not checked here (server-wide setting; it would make every request without a proof fail):
# with AUTHGENT_REQUIRE_DPOP=true, POST /token without DPoP → 400 invalid_request "DPoP proof
# required"; a proof without (or with a stale) nonce → 401 {"error": "use_dpop_nonce"} with
# DPoP-Nonce: <32 hex> and WWW-Authenticate: DPoP realm="authgent", … error="use_dpop_nonce"
# (RFC 9449 §8 says 400); the retry with that nonce → 200. Nonces are HMACs of 5-minute time
# buckets (current and previous accepted); a success never sends a new DPoP-Nonce. authgent has
# no resource endpoint that checks DPoP-bound access tokens, and ignores dpop_jkt at /authorize.
JKT=$(py dpop-key "$W/dpop.pem")
code_for "$PUB" "$REDIR" read
http POST "$U/token" -H "DPoP: $(py dpop-proof "$W/dpop.pem" POST "$U/token")" -d grant_type=authorization_code \
  --data-urlencode "code=$CODE" --data-urlencode "code_verifier=$VERIFIER" --data-urlencode "client_id=$PUB"
expect_status 200 "code exchange with DPoP"
[ "$(field token_type)" = DPoP ] || fail "token_type"
[ -z "$(hdr dpop-nonce)" ] || fail "a DPoP-Nonce now"
DAT=$(field access_token) DRT=$(field refresh_token)
py verify "$DAT" "$W/jwks.json" "$U" >"$W/claims.json" || fail "DPoP token signature"
[ "$(py get "$W/claims.json" cnf.jkt)" = "$JKT" ] || fail "cnf.jkt"
ok "dpop: code exchange with a DPoP proof (htm POST, htu $U/token) → token_type DPoP, cnf.jkt = the key's RFC 7638 thumbprint, no nonce asked"
http POST "$U/token" -H "DPoP: $(py dpop-proof "$W/dpop.pem" POST "$U/token")" -d grant_type=refresh_token \
  --data-urlencode "refresh_token=$DRT" --data-urlencode "client_id=$PUB"
expect_status 200 "DPoP refresh"
DRT=$(field refresh_token)
[ "$(field token_type)" = DPoP ] && [ "$(py claims "$(field access_token)" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["cnf"]["jkt"])')" = "$JKT" ] || fail "refresh binding"
ok "dpop: refresh with a proof of the same key → DPoP token bound to it"
http POST "$U/introspect" --data-urlencode "token=$DAT"
[ "$(field token_type)" = DPoP ] || fail "introspection token_type"
if field cnf >/dev/null; then fail "introspection now has cnf: update the quirk"; fi
ok "quirk: introspection of a DPoP token says token_type DPoP but has no cnf member"
http POST "$U/token" -d grant_type=refresh_token --data-urlencode "refresh_token=$DRT" --data-urlencode "client_id=$PUB"
expect_status 200 "refresh of a DPoP refresh token without a proof"
[ "$(field token_type)" = Bearer ] || fail "token_type"
JKT2=$(py dpop-key "$W/dpop2.pem")
http POST "$U/token" -H "DPoP: $(py dpop-proof "$W/dpop2.pem" POST "$U/token")" -d grant_type=refresh_token \
  --data-urlencode "refresh_token=$(field refresh_token)" --data-urlencode "client_id=$PUB"
expect_status 200 "refresh of a DPoP refresh token with another key"
[ "$(py claims "$(field access_token)" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["cnf"]["jkt"])')" = "$JKT2" ] || fail "other key"
ok "quirk: a DPoP-bound refresh token refreshes without any proof (→ Bearer) or with another key's proof (→ bound to that key): RFC 9449 §5 binding not enforced"
PROOF=$(py dpop-proof "$W/dpop.pem" POST "$U/token")
http POST "$U/token" -H "DPoP: $PROOF" -u "$CONF:$CONF_SECRET" -d grant_type=client_credentials
expect_status 200 "client_credentials with DPoP"
[ "$(py claims "$(field access_token)" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["cnf"]["jkt"])')" = "$JKT" ] || fail "cc cnf"
ok "dpop: client_credentials with a proof → DPoP-bound token"
http POST "$U/token" -H "DPoP: $PROOF" -u "$CONF:$CONF_SECRET" -d grant_type=client_credentials
expect_status 200 "replayed DPoP proof"
ok "quirk: a replayed DPoP proof (same jti) is accepted: no jti cache"
http POST "$U/token" -H "DPoP: $(py dpop-proof "$W/dpop.pem" POST "$U/elsewhere")" -u "$CONF:$CONF_SECRET" -d grant_type=client_credentials
expect_error 401 invalid_dpop_proof "wrong htu"
hdr www-authenticate | grep -q '^Bearer ' || fail "WWW-Authenticate"
ok "quirk: a bad proof (htu) → 401 invalid_dpop_proof with WWW-Authenticate: Bearer … (RFC 9449 §5 with RFC 6749 §5.2: 400)"

# --- Grant type registered per client.
register cconly '{"client_name": "check cc only"}'
code_for "$(cj cconly client_id)" "http://127.0.0.1:45679/cb"
http POST "$U/token" -u "$(cj cconly client_id):$(cj cconly client_secret)" -d grant_type=authorization_code \
  --data-urlencode "code=$CODE" --data-urlencode "code_verifier=$VERIFIER"
expect_error 400 invalid_request "authorization_code for a client without it"
ok "quirk: /authorize issues codes to any client; /token then refuses a grant type not registered with 400 invalid_request (not unauthorized_client); default grant_types is [client_credentials]"

# --- The clients authgent.sh registered at start, if given.
if [ -n "${AUTHGENT_CLIENTS_ENV:-}" ]; then
  # shellcheck source=/dev/null
  . "$AUTHGENT_CLIENTS_ENV"
  code_for "$AUTHGENT_CODE_CLIENT_ID" "$REDIR" "openid read"
  http POST "$U/token" -u "$AUTHGENT_CODE_CLIENT_ID:$AUTHGENT_CODE_CLIENT_SECRET" -d grant_type=authorization_code \
    --data-urlencode "code=$CODE" --data-urlencode "code_verifier=$VERIFIER" --data-urlencode "redirect_uri=$REDIR"
  expect_status 200 "AUTHGENT_CODE_CLIENT_ID"
  http POST "$U/token" -u "$AUTHGENT_CODE_CLIENT_ID:$AUTHGENT_CODE_CLIENT_SECRET" -d grant_type=refresh_token \
    --data-urlencode "refresh_token=$(field refresh_token)"
  expect_status 200 "AUTHGENT_CODE_CLIENT_ID refresh"
  ok "clients.env: AUTHGENT_CODE_CLIENT_ID (confidential, Basic) signs in at $REDIR and refreshes"
  code_for "$AUTHGENT_PUBLIC_CLIENT_ID" "$REDIR" read
  http POST "$U/token" -d grant_type=authorization_code --data-urlencode "client_id=$AUTHGENT_PUBLIC_CLIENT_ID" \
    --data-urlencode "code=$CODE" --data-urlencode "code_verifier=$VERIFIER" --data-urlencode "redirect_uri=$REDIR"
  expect_status 200 "AUTHGENT_PUBLIC_CLIENT_ID"
  http POST "$U/device/authorize" --data-urlencode "client_id=$AUTHGENT_PUBLIC_CLIENT_ID"
  DC=$(field device_code) UC=$(field user_code)
  http POST "$U/device/complete" -H 'Content-Type: application/json' -d '{"user_code": "'"$UC"'", "subject": "alice"}'
  http POST "$U/token" -d grant_type=$DEVICE_GRANT --data-urlencode "device_code=$DC" --data-urlencode "client_id=$AUTHGENT_PUBLIC_CLIENT_ID"
  expect_status 200 "AUTHGENT_PUBLIC_CLIENT_ID device"
  ok "clients.env: AUTHGENT_PUBLIC_CLIENT_ID (public) signs in at $REDIR and gets a device token"
  code_for "$AUTHGENT_LOOPBACK_CLIENT_ID" "http://127.0.0.1:45680/callback" read
  http POST "$U/token" -d grant_type=authorization_code --data-urlencode "client_id=$AUTHGENT_LOOPBACK_CLIENT_ID" \
    --data-urlencode "code=$CODE" --data-urlencode "code_verifier=$VERIFIER" --data-urlencode "redirect_uri=http://127.0.0.1:45680/callback"
  expect_status 200 "AUTHGENT_LOOPBACK_CLIENT_ID"
  ok "clients.env: AUTHGENT_LOOPBACK_CLIENT_ID (public, no redirect_uris) signs in at any loopback port"
  http POST "$U/token" -d grant_type=client_credentials --data-urlencode "client_id=$AUTHGENT_CLIENT_ID" \
    --data-urlencode "client_secret=$AUTHGENT_CLIENT_SECRET"
  expect_status 200 "AUTHGENT_CLIENT_ID"
  ok "clients.env: AUTHGENT_CLIENT_ID (the exchanger) still gets client_credentials tokens"
fi
log "all checks passed against $U (consent mode $MODE)"
