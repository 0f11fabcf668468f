#!/usr/bin/env bash
# Proves the django-oidc-provider test server (oidcprovider.sh) over HTTP only, with curl and
# python3 (standard library): discovery, a browserless sign-in of alice (code flow + S256 PKCE,
# state, nonce), the code exchange, the ID token's claims, refresh, UserInfo, introspection,
# client_credentials, password, end session; and the deviations from the specs that the library
# meets there ("quirk" lines). One "ok <step>" line per step; the first failure stops it (exit 1).
#   scripts/test-servers/oidcprovider-check.sh     (the server must be up: oidcprovider.sh start)
# It leaves the server as it found it, apart from the tokens and consents it made.
#
# THE SIGN-IN, request by request (the Swift tests re-implement this; a cookie jar is kept for the
# "browser" requests 1-5 and 9, never sent to the token, UserInfo or introspection endpoints):
#  1. GET $ISS/authorize?response_type=code&client_id=..&redirect_uri=..&scope=openid+profile+email
#         &state=..&nonce=..&code_challenge=..&code_challenge_method=S256
#     (no cookie yet) → 302, Location RELATIVE: /accounts/login/?next=<the authorize path and
#     query, percent-encoded>; Set-Cookie op_browser_state (session management; harmless).
#  2. GET that login URL (resolved against $URL) → 200 HTML `<form method="post">` without action
#     (= post to the same URL, query included) holding hidden `csrfmiddlewaretoken` (64 chars, a
#     masked form of the cookie) and hidden `next` (the authorize path+query, HTML-escaped: &amp;);
#     Set-Cookie csrftoken (32 chars, SameSite=Lax).
#  3. POST the login URL, application/x-www-form-urlencoded: csrfmiddlewaretoken (the hidden value,
#     or the csrftoken cookie's value: Django takes either), username=alice, password=alice-pw,
#     next (the hidden value, unescaped); cookie csrftoken. No Origin/Referer needed over HTTP.
#     → 302, Location = next (relative, /openid/authorize?...); Set-Cookie sessionid (HttpOnly) and
#     a NEW csrftoken (Django rotates it at login). A bad password → 200, the form again (with
#     "Please enter a correct username and password"); no or a bad csrf field → 403 HTML.
#  4. GET $URL + that Location with the cookies →
#       confidential client (code-conf, require_consent=False): 302 straight to step 6's redirect;
#       public client (code-public): ALWAYS 200 HTML consent page (the provider never skips consent
#       for a public client's code flow, whatever require_consent/reuse_consent say):
#       `<form method="post" action="/openid/authorize">` with hidden csrfmiddlewaretoken and the
#       request echoed as hidden inputs client_id, redirect_uri, response_type, scope, state, nonce,
#       code_challenge, code_challenge_method (prompt and max_age are NOT carried over), and two
#       submit buttons: "Decline" (no name) and name="allow" value="Authorize".
#  5. (consent only) POST $URL/openid/authorize, form-encoded: every hidden input as given +
#     allow=Authorize; cookies csrftoken + sessionid → 302 to step 6. Without `allow` → 302
#     redirect_uri?error=access_denied&error_description=...&state=...
#  6. The 302 Location (absolute, the registered redirect URI) carries
#     ?code=<32 hex>&state=<state>&session_state=<sha256 hex>.<salt>; no `iss` (RFC 9207).
#  7. POST $ISS/token, form: grant_type=authorization_code, code, redirect_uri (REQUIRED, any
#     registered one), code_verifier; public: client_id in the body; confidential:
#     client_secret_basic or client_secret_post. → 200 JSON access_token, refresh_token,
#     token_type "bearer", expires_in 3600, id_token (RS256, kid = the JWKS key); no `scope`.
#  8. refresh: POST $ISS/token grant_type=refresh_token, refresh_token (+ client auth as above).
#  9. end session: GET $ISS/end-session?id_token_hint=..&post_logout_redirect_uri=..&state=.. with
#     the cookies → 302 to post_logout_redirect_uri?state=..; the Django session is gone.
#
# QUIRKS (0.9.0; each one asserted below, so a new version that fixes one fails here):
#  discovery: no grant_types_supported, code_challenge_methods_supported, scopes_supported,
#    claims_supported, response_modes_supported, revocation/registration endpoints; lists all six
#    response types and HS256 whatever the clients have; every route also answers with a trailing /.
#  authorization: redirect URIs match exactly (no RFC 8252 §7.3 port freedom); unknown client or
#    bad redirect URI → 200 HTML page; PKCE verified (S256, plain) but never required, not even for
#    public clients; code_challenge without method → invalid_request (RFC 7636: plain); error
#    redirects append `state` NOT percent-encoded; no state sent → `state=` (empty) returned;
#    session_state always added; no `iss`; public clients get the consent page every time.
#  token: errors always 400 (bad client secret: 400 invalid_client, no WWW-Authenticate; missing
#    redirect_uri: invalid_client), bad password → 403 access_denied; token_type "bearer"; no
#    `scope` in code/refresh answers; an id_token even without the openid scope (payload {});
#    the password grant's id_token has nonce "self.code.nonce"; refresh rotates and deletes the
#    previous access token too; the refreshed id_token has no nonce.
#  UserInfo: 401/403 with an empty body and `WWW-Authenticate: error="..."` (no Bearer scheme);
#    the token is taken from the header or ?access_token=, never from a form body.
#  introspection: 200 {"active": false} for everything refused, bad client credentials included;
#    `exp` is the id token's; access tokens of non-OpenID requests never introspect active.
#  end session: id_token_hint decoded without verification (forged ones log out; malformed → 500);
#    without it → the provider's own confirmation page; tokens survive the logout.
# shellcheck disable=SC2015  # "A && B || fail": fail is meant to run when either test fails
set -euo pipefail
NAME="oidcprovider-check"
# shellcheck source=scripts/test-servers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

URL=$OIDCPROVIDER_URL ISS=$OIDCPROVIDER_ISSUER
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
JAR=$TMP/jar

ok() { echo "ok $*"; }
fail() {
  local last; last=$(cat "$TMP/last" 2>/dev/null || true)
  echo "FAIL $*" >&2
  if [ -n "$last" ]; then echo "--- last response ($last):" >&2; cat "$TMP/$last.h" "$TMP/$last.b" >&2 2>/dev/null || true; echo >&2; fi
  exit 1
}

# req NAME CURL-ARGS...: one request; headers in $TMP/NAME.h, body in $TMP/NAME.b; prints the status.
# Redirects are never followed.
req() {
  local n=$1; shift; echo "$n" >"$TMP/last"
  curl -s --max-time 10 -D "$TMP/$n.h" -o "$TMP/$n.b" -w '%{http_code}' "$@" || fail "curl $n: no answer from $URL"
}
# The same with the cookie jar (the "browser" requests).
breq() { local n=$1; shift; req "$n" -b "$JAR" -c "$JAR" "$@"; }
# header NAME HEADER: the value of a response header (last one if repeated).
header() { tr -d '\r' <"$TMP/$1.h" | awk -v h="$(tr '[:upper:]' '[:lower:]' <<<"$2")" \
  'index(tolower($0), h ":") == 1 { v = substr($0, length(h) + 2); sub(/^ +/, "", v) } END { print v }'; }

# Python helpers (standard library only).
cat >"$TMP/h.py" <<'PY'
import base64, hashlib, html.parser, json, secrets, sys, urllib.parse
cmd, args = sys.argv[1], sys.argv[2:]
def b64u(b): return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
def jwt_part(tok, i):
    p = tok.split(".")[i]; return json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
if cmd == "pkce":                      # verifier (64 chars of the unreserved set) and S256 challenge
    v = secrets.token_urlsafe(48)[:64]; print(v, b64u(hashlib.sha256(v.encode()).digest()))
elif cmd == "rand":
    print(secrets.token_urlsafe(12))
elif cmd == "form":                    # first <form>: action, then its hidden inputs form-encoded
    class P(html.parser.HTMLParser):
        def __init__(s): super().__init__(); s.action = None; s.fields = []; s.depth = 0; s.done = False
        def handle_starttag(s, tag, a):
            a = dict(a)
            if tag == "form" and not s.done: s.depth = 1; s.action = a.get("action", "")
            elif tag == "input" and s.depth and a.get("type") == "hidden": s.fields.append((a["name"], a.get("value", "")))
        def handle_endtag(s, tag):
            if tag == "form" and s.depth: s.depth = 0; s.done = True
    p = P(); p.feed(open(args[0]).read())
    if p.action is None: sys.exit("no form")
    print(p.action); print(urllib.parse.urlencode(p.fields))
elif cmd == "param":                   # param URL NAME: a query parameter of URL (exit 1 if absent)
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(args[0]).query, keep_blank_values=True)
    if args[1] not in q: sys.exit(1)
    print(q[args[1]][0])
elif cmd == "get":                     # get FILE KEY: a member of a JSON body (exit 1 if absent)
    d = json.load(open(args[0]))
    if args[1] not in d: sys.exit(1)
    print(d[args[1]])
elif cmd == "check":                   # check EXPR [FILE|JWT=token...]: assert a Python expression
    env = {"json": json}
    for a in args[1:]:
        k, _, v = a.partition("=")         # k:=string, *jwt=token (payload), *hdr=token (header), k=JSON file
        env[k[:-1]] = v if k.endswith(":") else None
        if not k.endswith(":"):
            env[k] = jwt_part(v, 1) if k.endswith("jwt") else (jwt_part(v, 0) if k.endswith("hdr") else json.load(open(v)))
    env = {k: v for k, v in env.items() if v is not None}
    if not eval("(" + args[0] + ")", env): sys.exit("check failed: %s with %s" % (args[0], {k: v for k, v in env.items() if k != "json"}))
elif cmd == "show":
    print(json.dumps(jwt_part(args[0], 1), sort_keys=True))
PY
py() { python3 "$TMP/h.py" "$@"; }
# check EXPR BINDINGS... MESSAGE: fails with MESSAGE when the expression is false.
check() { local msg=${*: -1}; py check "${@:1:$#-1}" >&2 || fail "$msg"; }

answers_now() { curl -sf -o /dev/null --max-time 5 "$ISS/.well-known/openid-configuration"; }
answers_now || fail "no server at $ISS (start it: scripts/test-servers/oidcprovider.sh start)"

# --- Discovery -----------------------------------------------------------------------------------
[ "$(req disc "$ISS/.well-known/openid-configuration")" = 200 ] || fail "discovery status"
check 'd["issuer"] == iss and all(d.get(k, "").startswith(iss + "/") for k in
       ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri", "end_session_endpoint", "introspection_endpoint"))' \
  d="$TMP/disc.b" iss:="$ISS" "discovery: issuer or endpoints"
# What it does not say: no scopes_supported, grant_types_supported, code_challenge_methods_supported,
# claims_supported, response_modes_supported, revocation/registration endpoints.
check 'not any(k in d for k in ("grant_types_supported", "code_challenge_methods_supported", "scopes_supported",
       "claims_supported", "revocation_endpoint", "registration_endpoint", "response_modes_supported"))' \
  d="$TMP/disc.b" "discovery lists more than expected (update the quirks)"
AUTHZ=$(py get "$TMP/disc.b" authorization_endpoint) TOKEN=$(py get "$TMP/disc.b" token_endpoint)
USERINFO=$(py get "$TMP/disc.b" userinfo_endpoint) INTROSPECT=$(py get "$TMP/disc.b" introspection_endpoint)
ENDSESSION=$(py get "$TMP/disc.b" end_session_endpoint) JWKS=$(py get "$TMP/disc.b" jwks_uri)
ok "discovery (issuer $ISS; no grant_types/code_challenge_methods/scopes_supported listed)"
check 'len(d["response_types_supported"]) == 6 and d["id_token_signing_alg_values_supported"] == ["HS256", "RS256"]' \
  d="$TMP/disc.b" "discovery response types / algorithms"
ok "quirk: discovery lists all six response types and HS256 (whatever the clients may use)"
[ "$(req disc2 "$ISS/.well-known/openid-configuration/")" = 200 ] || fail "discovery with a trailing slash"
ok "quirk: discovery also answers with a trailing slash (every route is ^name/?\$)"

[ "$(req jwks "$JWKS")" = 200 ] || fail "jwks status"
check 'len(d["keys"]) == 1 and d["keys"][0]["kty"] == "RSA" and d["keys"][0]["alg"] == "RS256"' d="$TMP/jwks.b" "jwks: one RS256 key"
KID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["keys"][0]["kid"])' "$TMP/jwks.b")
ok "jwks (one RSA key, kid $KID)"

# --- Sign-in of alice with the public client (login form + consent form) ---------------------------
read -r VERIFIER CHALLENGE < <(py pkce)
STATE=$(py rand) NONCE=$(py rand) SCOPE="openid profile email"
# 1. The authorization request. No session yet → 302 to the login page (relative Location).
code=$(breq a1 -G "$AUTHZ" --data-urlencode response_type=code --data-urlencode "client_id=$PUBLIC_ID" \
  --data-urlencode "redirect_uri=$REDIRECT_URI" --data-urlencode "scope=$SCOPE" --data-urlencode "state=$STATE" \
  --data-urlencode "nonce=$NONCE" --data-urlencode "code_challenge=$CHALLENGE" --data-urlencode code_challenge_method=S256)
LOC=$(header a1 Location)
[ "$code" = 302 ] && [[ $LOC == /accounts/login/\?next=* ]] || fail "authorize without session: want 302 to /accounts/login/?next=..., got $code $LOC"
ok "authorize → 302 ${LOC%%\?*}?next=… (relative Location)"
# 2. The login page: a form with hidden csrfmiddlewaretoken and next; cookie csrftoken.
LOGIN_URL=$URL$LOC
[ "$(breq a2 "$LOGIN_URL")" = 200 ] || fail "login page status"
{ read -r ACTION; read -r HIDDEN; } < <(py form "$TMP/a2.b") || fail "no login form"
[ -z "$ACTION" ] || fail "login form has an action ($ACTION): the recipe posts to the page's own URL"
[[ $HIDDEN == *csrfmiddlewaretoken=* && $HIDDEN == *next=* ]] || fail "login form lacks csrfmiddlewaretoken/next: $HIDDEN"
grep -q $'\tcsrftoken\t' "$JAR" || fail "no csrftoken cookie"
ok "login form (hidden csrfmiddlewaretoken + next, cookie csrftoken)"
# 3. Post it back to the same URL with the credentials → 302 to `next` (the authorize request).
code=$(breq a3 "$LOGIN_URL" --data "$HIDDEN" --data-urlencode "username=$TEST_USER" --data-urlencode "password=$TEST_PASSWORD")
LOC=$(header a3 Location)
[ "$code" = 302 ] && [[ $LOC == /openid/authorize\?* ]] || fail "login POST: want 302 to /openid/authorize?..., got $code $LOC"
grep -q $'\tsessionid\t' "$JAR" || fail "no sessionid cookie after login"
ok "login POST → 302 $URL${LOC%%\?*}?... (cookie sessionid)"
# 4. The authorization request again, now logged in: a public client gets the consent page.
[ "$(breq a4 "$URL$LOC")" = 200 ] || fail "authorize after login: want 200 consent page (public client), got $(head -c 200 "$TMP/a4.b")"
{ read -r ACTION; read -r HIDDEN; } < <(py form "$TMP/a4.b") || fail "no consent form"
[ "$ACTION" = /openid/authorize ] && grep -q 'name="allow"' "$TMP/a4.b" || fail "consent form: action $ACTION"
ok "consent form (POST /openid/authorize, hidden request fields, submit allow=Authorize)"
# 5. Allow → 302 to the redirect URI with code, state and session_state.
code=$(breq a5 "$URL$ACTION" --data "$HIDDEN" --data-urlencode allow=Authorize)
CB=$(header a5 Location)
[ "$code" = 302 ] && [[ $CB == "$REDIRECT_URI?"* ]] || fail "consent POST: want 302 to $REDIRECT_URI, got $code $CB"
CODE=$(py param "$CB" code) || fail "no code in $CB"
[ "$(py param "$CB" state)" = "$STATE" ] || fail "state not echoed: $CB"
py param "$CB" session_state >/dev/null || fail "no session_state in $CB"
! py param "$CB" iss >/dev/null || fail "iss now in the authorization response (RFC 9207): update the quirks"
ok "consent POST → 302 $REDIRECT_URI?code=…&state=…&session_state=… (no iss)"

# --- Code exchange (public client: client_id in the body) ------------------------------------------
tokreq() { req "$1" "$TOKEN" "${@:2}"; }
code=$(tokreq t0 -d grant_type=authorization_code --data-urlencode "code=$CODE" --data-urlencode "redirect_uri=$REDIRECT_URI" \
  --data-urlencode "client_id=$PUBLIC_ID" --data-urlencode "code_verifier=${VERIFIER}x")
[ "$code" = 400 ] && check 'd["error"] == "invalid_grant"' d="$TMP/t0.b" "wrong verifier: want invalid_grant" || fail "wrong verifier accepted ($code)"
code=$(tokreq t1 -d grant_type=authorization_code --data-urlencode "code=$CODE" --data-urlencode "redirect_uri=$REDIRECT_URI" \
  --data-urlencode "client_id=$PUBLIC_ID" --data-urlencode "code_verifier=$VERIFIER")
[ "$code" = 200 ] || fail "code exchange: $code"
check 'set(d) == {"access_token", "refresh_token", "token_type", "expires_in", "id_token"} and d["token_type"] == "bearer" and d["expires_in"] == 3600' \
  d="$TMP/t1.b" "token response members"
AT=$(py get "$TMP/t1.b" access_token) RT=$(py get "$TMP/t1.b" refresh_token) IDT=$(py get "$TMP/t1.b" id_token)
ok "token: code + S256 verifier (a wrong verifier first: 400 invalid_grant, the code survives it)"
ok "quirk: token_type \"bearer\" (lower case); no scope member"
[ "$(tokreq t2 -d grant_type=authorization_code --data-urlencode "code=$CODE" --data-urlencode "redirect_uri=$REDIRECT_URI" \
  --data-urlencode "client_id=$PUBLIC_ID" --data-urlencode "code_verifier=$VERIFIER")" = 400 ] \
  && check 'd["error"] == "invalid_grant"' d="$TMP/t2.b" "code replay" || fail "code replay accepted"
ok "code replay → 400 invalid_grant"

# --- The ID token (decoded only, not verified) -----------------------------------------------------
check 'hdr["alg"] == "RS256" and hdr["kid"] == kid and jwt["iss"] == iss and jwt["aud"] == aud and jwt["nonce"] == nonce and jwt["sub"] == "1"
       and jwt["exp"] - jwt["iat"] == 600 and "at_hash" in jwt and "auth_time" in jwt' \
  hdr="$IDT" jwt="$IDT" kid:="$KID" iss:="$ISS" aud:="$PUBLIC_ID" nonce:="$NONCE" \
  "id token claims"
ok "id_token: iss, aud (a string), nonce, sub \"1\", at_hash, auth_time; RS256 kid $KID; lives 600 s"

# --- UserInfo ---------------------------------------------------------------------------------------
[ "$(req u1 -H "Authorization: Bearer $AT" "$USERINFO")" = 200 ] || fail "userinfo GET"
check 'd["sub"] == "1" and d["email"] == "alice@example.com" and d["preferred_username"] == "alice"' d="$TMP/u1.b" "userinfo claims"
[ "$(req u2 -X POST -H "Authorization: Bearer $AT" "$USERINFO")" = 200 ] || fail "userinfo POST with the header"
[ "$(req u3 "$USERINFO?access_token=$AT")" = 200 ] || fail "userinfo with access_token in the query"
ok "userinfo (GET and POST with Bearer, or ?access_token=; sub \"1\", email, name...)"
code=$(req u4 -H "Authorization: Bearer nope" "$USERINFO")
[ "$code" = 401 ] && [ ! -s "$TMP/u4.b" ] && [[ $(header u4 WWW-Authenticate) == 'error="invalid_token"'* ]] || fail "userinfo bad token: $code $(header u4 WWW-Authenticate)"
ok "quirk: userinfo bad token → 401, empty body, WWW-Authenticate without the Bearer scheme: $(header u4 WWW-Authenticate | cut -c1-40)..."
[ "$(req u5 -X POST --data-urlencode "access_token=$AT" "$USERINFO")" = 401 ] || fail "userinfo with the token in a POST body now works: update the quirks"
ok "quirk: userinfo ignores a form-body access_token (RFC 6750 §2.2) → 401"

# --- Introspection: the provider's rules ------------------------------------------------------------
# A client may introspect when (1) it sends client_id AND client_secret (Basic or body: public clients
# never can), (2) its registered scopes contain "token_introspection", and (3) they also contain the
# client_id the token was issued to (the id token's aud); so only access tokens from OpenID requests
# (with an id token) can be active. Every refusal, bad client credentials included, is 200 {"active": false}.
intro() { req "$1" "$INTROSPECT" "${@:2}"; }
[ "$(intro i1 -u "$CONF_ID:$CONF_SECRET" --data-urlencode "token=$AT")" = 200 ] || fail "introspection status"
check 'd["active"] is True and d["client_id"] == pub and d["aud"] == pub and d["sub"] == "1" and d["iss"] == iss
       and set(d["scope"].split()) == {"openid", "profile", "email"} and "token_type" not in d and "exp" in d' \
  d="$TMP/i1.b" pub:="$PUBLIC_ID" iss:="$ISS" "introspection of code-public's token by code-conf"
check 'abs(d["exp"] - jwt["exp"]) <= 1' d="$TMP/i1.b" jwt="$IDT" "introspection exp = the id token's exp"
ok "introspection by code-conf of code-public's access token: active, client_id, aud, sub, iss, scope"
ok "quirk: introspection exp is the id token's (iat+600), not the access token's (iat+3600); no token_type, no username"
intro i2 -u "$CONF_ID:wrong" --data-urlencode "token=$AT" >/dev/null
check 'd == {"active": False}' d="$TMP/i2.b" "introspection with a bad secret"
intro i3 -u "$CC_ID:$CC_SECRET" --data-urlencode "token=$AT" >/dev/null
check 'd == {"active": False}' d="$TMP/i3.b" "introspection by a client without token_introspection"
intro i4 -u "$CONF_ID:$CONF_SECRET" --data-urlencode "token=$RT" >/dev/null
check 'd == {"active": False}' d="$TMP/i4.b" "introspection of a refresh token"
ok "quirk: introspection bad client secret → 200 {\"active\": false} (not 401); other clients and refresh tokens: inactive"

# --- Refresh (public client) ------------------------------------------------------------------------
code=$(tokreq r1 -d grant_type=refresh_token --data-urlencode "refresh_token=$RT" --data-urlencode "client_id=$PUBLIC_ID")
[ "$code" = 200 ] || fail "refresh: $code"
AT2=$(py get "$TMP/r1.b" access_token) RT2=$(py get "$TMP/r1.b" refresh_token) IDT2=$(py get "$TMP/r1.b" id_token)
[ "$RT2" != "$RT" ] && [ "$AT2" != "$AT" ] || fail "refresh did not rotate"
check '"nonce" not in jwt and jwt["iss"] == ojwt["iss"] and jwt["aud"] == ojwt["aud"] and jwt["sub"] == ojwt["sub"] and jwt["auth_time"] == ojwt["auth_time"]' \
  jwt="$IDT2" ojwt="$IDT" "refreshed id token"
[ "$(tokreq r2 -d grant_type=refresh_token --data-urlencode "refresh_token=$RT" --data-urlencode "client_id=$PUBLIC_ID")" = 400 ] \
  && check 'd["error"] == "invalid_grant"' d="$TMP/r2.b" "old refresh token" || fail "the old refresh token still works"
[ "$(req r3 -H "Authorization: Bearer $AT" "$USERINFO")" = 401 ] || fail "the old access token still works after refresh"
[ "$(req r4 -H "Authorization: Bearer $AT2" "$USERINFO")" = 200 ] || fail "the new access token fails"
ok "refresh: rotates (old refresh token → invalid_grant), new id_token (same sub/auth_time, no nonce)"
ok "quirk: refreshing deletes the previous ACCESS token too (userinfo → 401 with it)"
code=$(tokreq r5 -d grant_type=refresh_token --data-urlencode "refresh_token=$RT2" --data-urlencode "client_id=$PUBLIC_ID" --data-urlencode "scope=openid")
[ "$code" = 200 ] || fail "refresh with a narrower scope: $code"
RT3=$(py get "$TMP/r5.b" refresh_token)
code=$(tokreq r6 -d grant_type=refresh_token --data-urlencode "refresh_token=$RT3" --data-urlencode "client_id=$PUBLIC_ID" --data-urlencode "scope=openid profile")
[ "$code" = 400 ] && check 'd["error"] == "invalid_scope"' d="$TMP/r6.b" "wider scope" || fail "refresh widened the scope"
ok "refresh with scope: narrower ok, wider → 400 invalid_scope"

# --- Public client again, same session: the consent page again; no PKCE at all ------------------------
code=$(breq p1 -G "$AUTHZ" --data-urlencode response_type=code --data-urlencode "client_id=$PUBLIC_ID" \
  --data-urlencode "redirect_uri=$REDIRECT_URI" --data-urlencode scope=openid --data-urlencode state=p)
[ "$code" = 200 ] || fail "public client, second sign-in: want the consent page again, got $code $(header p1 Location)"
{ read -r ACTION; read -r HIDDEN; } < <(py form "$TMP/p1.b") || fail "no consent form"
code=$(breq p2 "$URL$ACTION" --data "$HIDDEN")
[ "$code" = 302 ] && [[ $(header p2 Location) == "$REDIRECT_URI?error=access_denied&"*"&state=p" ]] || fail "decline: $code $(header p2 Location)"
code=$(breq p3 "$URL$ACTION" --data "$HIDDEN" --data-urlencode allow=Authorize)
CB=$(header p3 Location)
[ "$code" = 302 ] && [[ $CB == "$REDIRECT_URI?"* ]] || fail "consent POST: $code $CB"
[ "$(tokreq p4 -d grant_type=authorization_code --data-urlencode "code=$(py param "$CB" code)" --data-urlencode "redirect_uri=$REDIRECT_URI" \
  --data-urlencode "client_id=$PUBLIC_ID")" = 200 ] || fail "public client without PKCE refused: update the quirks"
ok "quirk: a public client gets the consent page on every sign-in (decline → error=access_denied)"
ok "quirk: PKCE is not required, not even for a public client (no code_challenge, no code_verifier: 200)"

# --- Confidential client, same browser session: no login, no consent -------------------------------
read -r VERIFIER CHALLENGE < <(py pkce)
STATE=$(py rand) NONCE=$(py rand)
code=$(breq c1 -G "$AUTHZ" --data-urlencode response_type=code --data-urlencode "client_id=$CONF_ID" \
  --data-urlencode "redirect_uri=$REDIRECT_URI" --data-urlencode "scope=openid email" --data-urlencode "state=$STATE" \
  --data-urlencode "nonce=$NONCE" --data-urlencode "code_challenge=$CHALLENGE" --data-urlencode code_challenge_method=S256)
CB=$(header c1 Location)
[ "$code" = 302 ] && [[ $CB == "$REDIRECT_URI?"* ]] || fail "code-conf authorize with a session: want 302 to the redirect URI, got $code $CB"
CODE=$(py param "$CB" code) || fail "no code"
ok "authorize code-conf with the session → 302 with code at once (no consent page)"
code=$(tokreq c2 -u "$CONF_ID:wrong" -d grant_type=authorization_code --data-urlencode "code=$CODE" --data-urlencode "redirect_uri=$REDIRECT_URI" \
  --data-urlencode "code_verifier=$VERIFIER")
[ "$code" = 400 ] && check 'd["error"] == "invalid_client"' d="$TMP/c2.b" "bad secret" || fail "bad secret: $code"
[ -z "$(header c2 WWW-Authenticate)" ] || fail "bad secret now carries WWW-Authenticate: update the quirks"
ok "quirk: bad client secret → 400 invalid_client (RFC 6749 §5.2 wants 401 for Basic), no WWW-Authenticate"
code=$(tokreq c3 -u "$CONF_ID:$CONF_SECRET" -d grant_type=authorization_code --data-urlencode "code=$CODE" --data-urlencode "code_verifier=$VERIFIER")
[ "$code" = 400 ] && check 'd["error"] == "invalid_client"' d="$TMP/c3.b" "missing redirect_uri" || fail "missing redirect_uri: $code"
ok "quirk: token request without redirect_uri → 400 invalid_client (not invalid_request/invalid_grant)"
code=$(tokreq c4 -u "$CONF_ID:$CONF_SECRET" -d grant_type=authorization_code --data-urlencode "code=$CODE" \
  --data-urlencode "redirect_uri=$REDIRECT_URI" --data-urlencode "code_verifier=$VERIFIER")
[ "$code" = 200 ] || fail "code-conf exchange (client_secret_basic): $code"
CAT=$(py get "$TMP/c4.b" access_token) CRT=$(py get "$TMP/c4.b" refresh_token)
check 'jwt["aud"] == aud and jwt["nonce"] == nonce' jwt="$(py get "$TMP/c4.b" id_token)" aud:="$CONF_ID" nonce:="$NONCE" "code-conf id token"
ok "token code-conf (client_secret_basic) + id_token aud/nonce"
code=$(tokreq c5 -d grant_type=refresh_token --data-urlencode "refresh_token=$CRT" --data-urlencode "client_id=$CONF_ID" --data-urlencode "client_secret=$CONF_SECRET")
[ "$code" = 200 ] || fail "code-conf refresh (client_secret_post): $code"
[ "$(tokreq c6 -d grant_type=refresh_token --data-urlencode "refresh_token=$(py get "$TMP/c5.b" refresh_token)" --data-urlencode "client_id=$CONF_ID")" = 400 ] \
  && check 'd["error"] == "invalid_client"' d="$TMP/c6.b" "refresh without secret" || fail "confidential refresh without a secret accepted"
ok "refresh code-conf (client_secret_post); without the secret → 400 invalid_client"
CAT=$(py get "$TMP/c5.b" access_token)
intro i5 -d "client_id=$CONF_ID" -d "client_secret=$CONF_SECRET" --data-urlencode "token=$CAT" >/dev/null
check 'd["active"] is True and d["client_id"] == c' d="$TMP/i5.b" c:="$CONF_ID" "code-conf introspects its own token"
ok "introspection of its own token (client credentials in the body)"
# A plain OAuth request (no openid scope, no state, no PKCE).
code=$(breq c7 -G "$AUTHZ" --data-urlencode response_type=code --data-urlencode "client_id=$CONF_ID" \
  --data-urlencode "redirect_uri=$REDIRECT_URI" --data-urlencode scope=profile)
CB=$(header c7 Location)
[ "$code" = 302 ] && [ "$(py param "$CB" state)" = "" ] || fail "no-state request: $code $CB"
code=$(tokreq c8 -u "$CONF_ID:$CONF_SECRET" -d grant_type=authorization_code --data-urlencode "code=$(py param "$CB" code)" \
  --data-urlencode "redirect_uri=$REDIRECT_URI")
[ "$code" = 200 ] && check 'jwt == {}' jwt="$(py get "$TMP/c8.b" id_token)" "non-OpenID id_token" || fail "non-OpenID code exchange: $code"
ok "quirk: a request without state gets an empty state= back; without openid scope the token answer still has an id_token, whose payload is {}"

# --- Other grants --------------------------------------------------------------------------------
code=$(tokreq g1 -u "$CC_ID:$CC_SECRET" -d grant_type=client_credentials)
[ "$code" = 200 ] && check 'd["scope"] == "read write" and d["token_type"] == "bearer" and "refresh_token" not in d and "id_token" not in d' d="$TMP/g1.b" "cc" || fail "client_credentials: $code"
intro i6 -u "$CONF_ID:$CONF_SECRET" --data-urlencode "token=$(py get "$TMP/g1.b" access_token)" >/dev/null
code=$(req u6 -H "Authorization: Bearer $(py get "$TMP/g1.b" access_token)" "$USERINFO")
[ "$code" = 403 ] && [ ! -s "$TMP/u6.b" ] && [[ $(header u6 WWW-Authenticate) == 'error="insufficient_scope"'* ]] || fail "userinfo with a cc token: $code"
check 'd == {"active": False}' d="$TMP/i6.b" "introspection of a client_credentials token"
[ "$(tokreq g2 -u "$CC_ID:$CC_SECRET" -d grant_type=client_credentials -d scope=openid)" = 400 ] \
  && check 'd["error"] == "invalid_scope"' d="$TMP/g2.b" "cc unregistered scope" || fail "cc with an unregistered scope"
ok "client_credentials (cc: scope = its registered scopes; another scope → invalid_scope); its tokens never introspect active; UserInfo → 403 insufficient_scope, empty body"
code=$(tokreq g3 -u "$PW_ID:$PW_SECRET" -d grant_type=password --data-urlencode "username=$TEST_USER" --data-urlencode "password=$TEST_PASSWORD")
[ "$code" = 200 ] || fail "password grant: $code"
check 'd["scope"] == "openid profile email" and "refresh_token" in d and jwt["nonce"] == "self.code.nonce"' d="$TMP/g3.b" jwt="$(py get "$TMP/g3.b" id_token)" "password grant"
ok "password grant (pw) → access, refresh, id token, scope"
ok "quirk: the password grant's id_token has nonce \"self.code.nonce\" (a literal string, a provider bug)"
code=$(tokreq g4 -u "$PW_ID:$PW_SECRET" -d grant_type=password --data-urlencode "username=$TEST_USER" -d password=wrong)
[ "$code" = 403 ] && check 'd["error"] == "access_denied"' d="$TMP/g4.b" "bad password" || fail "bad password: $code"
ok "quirk: password grant with a bad password → 403 access_denied (RFC 6749 wants 400 invalid_grant)"

# --- Authorization errors --------------------------------------------------------------------------
OTHER=http://127.0.0.1:$((REDIRECT_PORT == 45678 ? 45679 : 45678))/callback
code=$(req e1 -G "$AUTHZ" --data-urlencode response_type=code --data-urlencode "client_id=$PUBLIC_ID" \
  --data-urlencode "redirect_uri=$OTHER" --data-urlencode scope=openid --data-urlencode state=s)
[ "$code" = 200 ] && grep -q 'Redirect URI Error' "$TMP/e1.b" || fail "another loopback port: want the 200 error page, got $code"
ok "quirk: loopback redirect with another port ($OTHER) refused (exact match, no RFC 8252 §7.3): 200 HTML \"Redirect URI Error\""
code=$(req e2 -G "$AUTHZ" --data-urlencode response_type=code --data-urlencode client_id=nobody \
  --data-urlencode "redirect_uri=$REDIRECT_URI" --data-urlencode scope=openid)
[ "$code" = 200 ] && grep -q 'Client ID Error' "$TMP/e2.b" || fail "unknown client: $code"
ok "quirk: unknown client_id → 200 HTML \"Client ID Error\""
code=$(req e3 -G "$AUTHZ" --data-urlencode response_type=code --data-urlencode "client_id=$PUBLIC_ID" \
  --data-urlencode "redirect_uri=$REDIRECT_URI" --data-urlencode scope=openid --data-urlencode "state=a b&c" --data-urlencode code_challenge=abc)
LOC=$(header e3 Location)
[ "$code" = 302 ] && [[ $LOC == "$REDIRECT_URI?error=invalid_request&"*"&state=a b&c" ]] || fail "challenge without method: $code $LOC"
ok "quirk: code_challenge without code_challenge_method → error=invalid_request (RFC 7636 says plain); error redirects carry state NOT percent-encoded"
code=$(req e4 -G "$AUTHZ" --data-urlencode response_type=code --data-urlencode "client_id=$PUBLIC_ID" \
  --data-urlencode "redirect_uri=$REDIRECT_URI" --data-urlencode scope=openid --data-urlencode state=s --data-urlencode prompt=none)
[ "$code" = 302 ] && [[ $(header e4 Location) == "$REDIRECT_URI?error=login_required&"* ]] || fail "prompt=none without a session: $code"
ok "prompt=none without a session → error=login_required"

# --- End session (RP-initiated logout) ---------------------------------------------------------------
LSTATE=$(py rand)
code=$(breq l1 -G "$ENDSESSION" --data-urlencode "id_token_hint=$IDT2" --data-urlencode "post_logout_redirect_uri=$POST_LOGOUT_URI" \
  --data-urlencode "state=$LSTATE")
LOC=$(header l1 Location)
[ "$code" = 302 ] && [ "$LOC" = "$POST_LOGOUT_URI?state=$LSTATE" ] || fail "end session: want 302 to $POST_LOGOUT_URI?state=..., got $code $LOC"
ok "end session (id_token_hint + post_logout_redirect_uri + state) → 302 $POST_LOGOUT_URI?state=…, no confirmation"
code=$(breq l2 -G "$AUTHZ" --data-urlencode response_type=code --data-urlencode "client_id=$CONF_ID" \
  --data-urlencode "redirect_uri=$REDIRECT_URI" --data-urlencode scope=openid --data-urlencode state=s)
[ "$code" = 302 ] && [[ $(header l2 Location) == /accounts/login/* ]] || fail "still signed in after end session: $code $(header l2 Location)"
ok "after end session, authorize asks for the login again"
[ "$(req l3 -H "Authorization: Bearer $CAT" "$USERINFO")" = 200 ] || fail "tokens now die with the session: update the quirks"
ok "quirk: tokens outlive the end session (the access token still works at UserInfo)"
code=$(req l4 -G "$ENDSESSION" --data-urlencode "post_logout_redirect_uri=$POST_LOGOUT_URI")
[ "$code" = 302 ] && [[ $(header l4 Location) == */openid/end-session-prompt ]] || fail "end session without hint: $code $(header l4 Location)"
ok "quirk: end session without id_token_hint → 302 to the provider's confirmation page (post_logout_redirect_uri ignored)"
code=$(req l5 -G "$ENDSESSION" --data-urlencode "id_token_hint=not-a-jwt")
[ "$code" = 500 ] || fail "end session with a malformed id_token_hint: $code (was 500)"
ok "quirk: a malformed id_token_hint → 500"
FORGED=$(python3 -c 'import base64, json
b = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()
print(b({"alg": "RS256"}) + "." + b({"aud": "'"$PUBLIC_ID"'", "iss": "elsewhere"}) + ".AAAA")')
code=$(req l6 -G "$ENDSESSION" --data-urlencode "id_token_hint=$FORGED" --data-urlencode "post_logout_redirect_uri=$POST_LOGOUT_URI" --data-urlencode state=f)
[ "$code" = 302 ] && [ "$(header l6 Location)" = "$POST_LOGOUT_URI?state=f" ] || fail "forged id_token_hint: $code $(header l6 Location)"
ok "quirk: id_token_hint is never verified (a forged one, bad signature and issuer, logs out and redirects)"

echo "all checks passed"
