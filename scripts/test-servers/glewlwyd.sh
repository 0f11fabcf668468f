#!/usr/bin/env bash
# Glewlwyd 2.7.5 (Debian package) on 127.0.0.1:4593 (OAUTH2_TEST_GLEWLWYD_PORT) for the integration tests.
#   glewlwyd.sh start   install if missing, (re)start with a fresh seeded DB unless already up
#   glewlwyd.sh stop    stop it and wait until the port is free
#   glewlwyd.sh status  exit 0 if it answers
#   glewlwyd.sh extras  add what seed_extras adds to a server that is already up (no restart)
# Issuer http://127.0.0.1:4593/api/oidc. Seeds user alice/alice-pw, scope read and clients
# code-conf/code-conf-secret (confidential: code, password, client_credentials, device),
# code-public (public, PKCE) and cc/cc-secret (client_credentials), plus (seed_extras) the
# JWT-authenticating clients, the implicit-grant client implicit-public, the web example app's
# client webapp/webapp-secret, the oidc-nonce, oidc-par, oidc-reg, oidc-short, oidc-rar (RAR,
# RFC 9396, with rar-client) and oidc-enc (encrypted request objects) instances, and (seed_mcp_peers) the MCP peers' instance oidc-mcp,
# its user erin and client mcp-resource-server.
# Tokens of scope read may be asked for the API $GLEWLWYD_RESOURCE (RFC 8707 `resource`).
# Serves its own login page ($B/login.html, where the authorization endpoint sends a browser)
# from a copy of the webapp. State: $STATE/glewlwyd.
set -euo pipefail
NAME=glewlwyd
# shellcheck source=scripts/test-servers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DIR=$STATE/glewlwyd
B=$GLEWLWYD_URL ISS=$GLEWLWYD_ISSUER PORT=$GLEWLWYD_PORT
PIDFILE=$DIR/glewlwyd.pid LOG=$DIR/glewlwyd.log READY=$DIR/ready
CMD_RE='(^|/)glewlwyd( |$)'   # how our server's command line looks

answers() { curl -sf -o /dev/null --max-time 5 "$ISS/.well-known/openid-configuration"; }

do_status() { answers; }

# True when the login page and what it loads first are served.
login_page() {
  local p
  for p in login.html config.json login.js js/jquery.min.js css/bootstrap.min.css; do
    curl -sf -o /dev/null --max-time 5 "$B/$p" || { log "GET $B/$p failed"; return 1; }
  done
}

# Admin REST call: METHOD PATH JSON; fails on a non-2xx answer.
api() {
  local r
  r=$(curl -sS -b "$DIR/admin.jar" -c "$DIR/admin.jar" -X "$1" -H 'Content-Type: application/json' \
    -d "$3" -w '\n%{http_code}' "$B/api$2")
  case "${r##*$'\n'}" in 2*) ;; *) log "$1 $2 failed: $r"; return 1 ;; esac
}

client() {  # id secret confidential authorization-types-json
  api POST /client/ "$(jq -n --arg id "$1" --arg s "$2" --argjson conf "$3" --arg red "$REDIRECT_URI" --argjson types "$4" \
    '{client_id:$id, client_name:$id, confidential:$conf, enabled:true, redirect_uri:[$red], post_logout_redirect_uris:[$red],
      authorization_type:$types, scope:["openid","g_profile","read"],
      token_endpoint_auth_method:(if $conf then ["client_secret_basic","client_secret_post"] else ["none"] end)}
      + (if $conf then {client_secret:$s} else {} end)')"
}

# The OIDC plugin's parameters for issuer $1: the recipe's, plus (marked "extra") switches that
# change nothing for the seeded clients but let later tests register clients using them:
# private_key_jwt keys, encrypted tokens, DPoP-bound clients, per-client refresh rotation,
# logout channels. Reads the signing key from key.pem and pub.pem in the working directory.
oidc_params() {
  jq -n --rawfile key key.pem --rawfile cert pub.pem --arg iss "$1" --arg resource "$GLEWLWYD_RESOURCE" '{
    iss:$iss, "jwt-type":"rsa", "jwt-key-size":"256", key:$key, cert:$cert, "jwks-show":true,
    "access-token-duration":3600, "refresh-token-duration":1209600, "code-duration":600, "refresh-token-rolling":true,
    "allow-non-oidc":true, "auth-type-code-enabled":true, "auth-type-token-enabled":true, "auth-type-id-token-enabled":true,
    "auth-type-none-enabled":true, "auth-type-password-enabled":true, "auth-type-client-enabled":true,
    "auth-type-refresh-enabled":true, "auth-type-device-enabled":true, "device-authorization-expiration":600,
    "device-authorization-interval":1, "pkce-allowed":true, "pkce-method-plain-allowed":false,
    "introspection-revocation-allowed":true, "introspection-revocation-allow-target-client":true,
    "register-client-allowed":true, "register-client-auth-scope":[], "register-client-credentials-scope":[],
    "register-client-management-allowed":true, "session-management-allowed":true,
    "session-cookie-name":"GLWD_OIDC_SID", "session-cookie-expiration":2592000, "subject-type":"public",
    "oauth-par-allowed":true, "oauth-par-required":false, "oauth-par-request_uri-prefix":"urn:ietf:params:oauth:request_uri:",
    "oauth-par-duration":90, "oauth-dpop-allowed":true, "oauth-dpop-iat-duration":60, "oauth-dpop-iat-gap-duration":5,
    "oauth-as-iss-id":true, "request-parameter-allow":true, "name-claim":"on-demand", "email-claim":"on-demand",
    # Resource indicators (RFC 8707): a token asked for with resource=$GLEWLWYD_RESOURCE (scope
    # read) names that API in its aud; without one, aud is the granted scope list, one string.
    "resource-allowed":true, "resource-scope":{"read":[$resource]},
    # extra
    "client-pubkey-parameter":"pubkey", "client-jwks-parameter":"jwks", "client-jwks_uri-parameter":"jwks_uri",
    "request-parameter-allow-encrypted":true, "request-maximum-exp":3600,
    "encrypt-out-token-allow":true, "client-enc-parameter":"enc", "client-alg-parameter":"alg",
    "client-alg_kid-parameter":"alg_kid", "client-encrypt_code-parameter":"encrypt_code",
    "client-encrypt_at-parameter":"encrypt_at", "client-encrypt_userinfo-parameter":"encrypt_userinfo",
    "client-encrypt_id_token-parameter":"encrypt_id_token", "client-encrypt_refresh_token-parameter":"encrypt_refresh_token",
    "client-encrypt_introspection-parameter":"encrypt_introspection",
    "oauth-dpop-dpop_bound_access_tokens-property":"dpop_bound_access_tokens",
    "refresh-token-one-use":"client-driven", "client-refresh-token-one-use-parameter":"refresh-token-one-use",
    "auth-type-code-revoke-replayed":true,
    "front-channel-logout-allowed":true, "back-channel-logout-allowed":true}'
}

# Lets clients keep post_logout_redirect_uris, which the OIDC plugin's end_session reads: the
# client backend stores only the properties its data-format names, and the format Glewlwyd's
# database ships names post_logout_redirect_uri (singular, unused). Without it the end-session
# page closes the session and stays there: no redirect to the post-logout URI.
client_properties() {
  local module
  module=$(curl -sf -b "$DIR/admin.jar" "$B/api/mod/client/database") || { log "GET /mod/client/database failed"; return 1; }
  api PUT /mod/client/database "$(jq -c '.parameters["data-format"].post_logout_redirect_uris =
    {"multiple": true, "read": true, "write": true} | del(.enabled)' <<<"$module")"
  api PUT /mod/client/database/reset '{}'   # the new format applies once the module is reloaded
}

seed() {
  api POST /auth/ '{"username":"admin","password":"password"}'
  client_properties
  api POST /scope/ '{"name":"read","display_name":"read","description":"read","password_required":false,"scheme":{}}'
  api POST /user/ "$(jq -n --arg u "$TEST_USER" --arg p "$TEST_PASSWORD" \
    '{username:$u, password:$p, name:"Alice", email:"alice@example.com", scope:["openid","g_profile","read"], enabled:true}')"
  api POST /mod/plugin/ "$(jq -n --argjson p "$(oidc_params "$ISS")" '{module:"oidc", name:"oidc", display_name:"OIDC", parameters:$p}')"
  client "$CONF_ID" "$CONF_SECRET" true \
    '["code","token","id_token","refresh_token","delete_token","device_authorization","password","client_credentials"]'
  client "$PUBLIC_ID" "" false '["code","id_token","refresh_token","delete_token","device_authorization"]'
  client "$CC_ID" "$CC_SECRET" true '["client_credentials","delete_token"]'
  seed_extras
}

# True when the admin API has an object at PATH.
exists() { curl -sf -o /dev/null -b "$DIR/admin.jar" "$B/api$1"; }

# DPoP nonces, required PAR and JWT client authentication (RFC 9449, 9126, 7523). Additive and
# idempotent (what exists is left alone), so that `glewlwyd.sh extras` brings a server seeded
# by an older version of this script to the same state as a fresh start:
# - OIDC instance oidc-nonce ($GLEWLWYD_NONCE_ISSUER): every DPoP proof needs a server nonce;
# - OIDC instance oidc-par ($GLEWLWYD_PAR_ISSUER): require_pushed_authorization_requests;
# - OIDC instance oidc-reg ($GLEWLWYD_REG_ISSUER): registration needs an initial access token
#   (an access token of this instance with scope read);
# - OIDC instance oidc-short ($GLEWLWYD_SHORT_ISSUER): access tokens that live 2 s;
# - client $JWT_SECRET_ID: client_secret_jwt; client $JWT_KEY_ID: private_key_jwt with the
#   public keys in $JWT_KEY_JWKS (RSA rsa-1, P-256 ec-1, Ed25519 ed-1).
# - client $IMPLICIT_ID: public, the legacy implicit grant only ("token" enables
#   response_type=token, "id_token" enables id_token and id_token token).
seed_extras() {
  local name iss extra types='["code","refresh_token","delete_token","device_authorization","password","client_credentials"]'
  for name in oidc-nonce oidc-par oidc-reg oidc-short; do
    exists "/mod/plugin/$name" && continue
    case $name in
      oidc-nonce) iss=$GLEWLWYD_NONCE_ISSUER extra='{"oauth-dpop-nonce-mandatory":true, "oauth-dpop-nonce-counter":5}' ;;
      oidc-par) iss=$GLEWLWYD_PAR_ISSUER extra='{"oauth-par-required":true}' ;;
      oidc-reg) iss=$GLEWLWYD_REG_ISSUER extra='{"register-client-auth-scope":["read"]}' ;;
      oidc-short) iss=$GLEWLWYD_SHORT_ISSUER extra='{"access-token-duration":2}' ;;
    esac
    api POST /mod/plugin/ "$(jq -n --argjson p "$(oidc_params "$iss")" --argjson x "$extra" --arg n "$name" \
      '{module:"oidc", name:$n, display_name:$n, parameters:($p + $x)}')"
  done
  exists "/client/$JWT_SECRET_ID" || api POST /client/ "$(jq -n --arg id "$JWT_SECRET_ID" --arg s "$JWT_SECRET_SECRET" \
    --arg red "$REDIRECT_URI" --argjson types "$types" \
    '{client_id:$id, client_name:$id, confidential:true, enabled:true, redirect_uri:[$red], authorization_type:$types,
      scope:["openid","g_profile","read"], token_endpoint_auth_method:["client_secret_jwt"], client_secret:$s}')"
  exists "/client/$JWT_KEY_ID" || api POST /client/ "$(jq -n --arg id "$JWT_KEY_ID" --slurpfile jwks "$JWT_KEY_JWKS" \
    --arg red "$REDIRECT_URI" --argjson types "$types" \
    '{client_id:$id, client_name:$id, confidential:true, enabled:true, redirect_uri:[$red], authorization_type:$types,
      scope:["openid","g_profile","read"], token_endpoint_auth_method:["private_key_jwt"], jwks:$jwks[0]}')"
  exists "/client/$IMPLICIT_ID" || client "$IMPLICIT_ID" "" false '["token","id_token"]'
  exists "/client/$WEBAPP_ID" || webapp_client
  seed_mcp_peers
  seed_ciba
  spa_client
  rar_extras
  seed_mtls
  enc_extras
}

# The MCP peers of issue 27 (Tests/MCPPython): additive and idempotent, like seed_extras.
# - scopes mcp:read and mcp:write (the example MCP server's tools) and the user $MCP_USER
#   holding them (with openid), so that no other test's user changes;
# - OIDC instance oidc-mcp ($GLEWLWYD_MCP_ISSUER): open dynamic registration where a client
#   may register `resource` (register-resource-specify-allowed), and a token may name any
#   resource its client's `resource` property lists (resource-client-property; ORed with the
#   recipe's resource-scope, protocol_oidc.c verify_resource): an MCP server's URL, whose port
#   is picked per run, is listed by the client registered for it in that run. With an
#   introspection scope configured (introspection-revocation-auth-scope), Glewlwyd 2.7.5
#   answers a client authenticating with HTTP Basic about every token of the instance, not
#   only its own (get_client_id_for_introspection): how a resource server introspects tokens
#   issued to clients registered at run time;
# - client $MCP_RS_ID: the confidential client those resource servers introspect as.
seed_mcp_peers() {
  local scope
  for scope in mcp:read mcp:write; do
    exists "/scope/$scope" || api POST /scope/ "$(jq -n --arg s "$scope" \
      '{name:$s, display_name:$s, description:$s, password_required:false, scheme:{}}')"
  done
  exists "/user/$MCP_USER" || api POST /user/ "$(jq -n --arg u "$MCP_USER" --arg p "$MCP_PASSWORD" \
    '{username:$u, password:$p, name:"Erin", email:"erin@example.com", scope:["openid","mcp:read","mcp:write"], enabled:true}')"
  exists "/mod/plugin/oidc-mcp" || api POST /mod/plugin/ "$(jq -n --argjson p "$(oidc_params "$GLEWLWYD_MCP_ISSUER")" \
    '{module:"oidc", name:"oidc-mcp", display_name:"oidc-mcp", parameters:($p + {
      "register-resource-specify-allowed":true, "resource-client-property":"resource",
      "introspection-revocation-auth-scope":["mcp-introspect"]})}')"
  exists "/client/$MCP_RS_ID" || api POST /client/ "$(jq -n --arg id "$MCP_RS_ID" --arg s "$MCP_RS_SECRET" \
    '{client_id:$id, client_name:$id, confidential:true, enabled:true, client_secret:$s, redirect_uri:[],
      authorization_type:["client_credentials"], scope:[], token_endpoint_auth_method:["client_secret_basic"]}')"
}

# Client-Initiated Backchannel Authentication (OpenID Connect CIBA Core 1.0). Additive and
# idempotent, like seed_extras:
# - OIDC instance oidc-ciba ($GLEWLWYD_CIBA_ISSUER): CIBA in poll and ping mode (push off, as
#   FAPI-CIBA wants), requests live 600 s by default, no e-mail to the user (so no SMTP server:
#   the user finds the request through the instance's ciba_user_list API with their session and
#   approves it at ciba_user_check, as Glewlwyd's own login page does);
# - client $CIBA_POLL_ID/$CIBA_POLL_SECRET: confidential, poll mode, client_secret_basic/post;
# - client $CIBA_SIGNED_ID: poll mode, private_key_jwt with the keys of $JWT_KEY_JWKS, signed
#   authentication requests (backchannel_authentication_request_signing_alg ES256).
seed_ciba() {
  local types='["urn:openid:params:grant-type:ciba","refresh_token","delete_token"]'
  exists /mod/plugin/oidc-ciba || api POST /mod/plugin/ "$(jq -n --argjson p "$(oidc_params "$GLEWLWYD_CIBA_ISSUER")" '{
    module:"oidc", name:"oidc-ciba", display_name:"oidc-ciba", parameters:($p + {
      "oauth-ciba-allowed":true, "oauth-ciba-mode-poll-allowed":true, "oauth-ciba-mode-ping-allowed":true,
      "oauth-ciba-mode-push-allowed":false, "oauth-ciba-allow-https-non-secure":false, "oauth-ciba-user-code-allowed":false,
      "oauth-ciba-default-expiry":600, "oauth-ciba-maximum-expiry":1200, "oauth-ciba-email-allowed":false})}')"
  exists "/client/$CIBA_POLL_ID" || api POST /client/ "$(jq -n --arg id "$CIBA_POLL_ID" --arg s "$CIBA_POLL_SECRET" \
    --argjson types "$types" \
    '{client_id:$id, client_name:$id, confidential:true, enabled:true, client_secret:$s, redirect_uri:[],
      authorization_type:$types, scope:["openid","g_profile","read"], backchannel_token_delivery_mode:"poll",
      token_endpoint_auth_method:["client_secret_basic","client_secret_post"]}')"
  exists "/client/$CIBA_SIGNED_ID" || api POST /client/ "$(jq -n --arg id "$CIBA_SIGNED_ID" --slurpfile jwks "$JWT_KEY_JWKS" \
    --argjson types "$types" \
    '{client_id:$id, client_name:$id, confidential:true, enabled:true, redirect_uri:[], authorization_type:$types,
      scope:["openid","g_profile","read"], backchannel_token_delivery_mode:"poll",
      backchannel_authentication_request_signing_alg:"ES256", token_endpoint_auth_method:["private_key_jwt"],
      jwks:$jwks[0]}')"
}

# The single-page app of the web example (its /spa/ page and SinglePageAppBackend, issue 30)
# at $GLEWLWYD_SPA_URL: a confidential client of its own (the backend is the client; the page
# never sees a token) with its callback and its home page as the post-logout redirect.
# Idempotent: an existing client is left alone.
# Its OIDC instance oidc-spa ($GLEWLWYD_SPA_ISSUER): access tokens that live 20 s, so that the
# journey can wait for one to be due (renewed at half its life) and then count the renewals.
spa_client() {
  exists "/mod/plugin/oidc-spa" || api POST /mod/plugin/ "$(jq -n --argjson p "$(oidc_params "$GLEWLWYD_SPA_ISSUER")" \
    '{module:"oidc", name:"oidc-spa", display_name:"oidc-spa", parameters:($p + {"access-token-duration":20})}')"
  exists "/client/$SPA_ID" && return 0
  api POST /client/ "$(jq -n --arg id "$SPA_ID" --arg s "$SPA_SECRET" --arg app "$GLEWLWYD_SPA_URL" \
    '{client_id:$id, client_name:$id, confidential:true, enabled:true, client_secret:$s,
      redirect_uri:[$app + "/auth/callback"], post_logout_redirect_uris:[$app + "/"],
      authorization_type:["code","refresh_token","delete_token"], scope:["openid","g_profile","read"],
      token_endpoint_auth_method:["client_secret_basic","client_secret_post"]}')"
}

# Rich Authorization Requests (RFC 9396) and JWT introspection answers (RFC 9701):
# - OIDC instance oidc-rar ($GLEWLWYD_RAR_ISSUER): RAR on, with one type, payment_initiation
#   (scope read; its locations, actions and datatypes are the only ones allowed), accepted in
#   plain (unsigned) authorization requests; a client may use the types listed in its
#   authorization_details_types (a property the client module's data format already names).
#   Glewlwyd asks the user to consent to each type once per client (PUT
#   $GLEWLWYD_RAR_ISSUER/rar/CLIENT/TYPE/1 with the user's session does it, as its consent
#   page would). The type lists `privileges`, empty: without it Glewlwyd 2.7.5's consent page
#   (login.html) stops rendering (a TypeError reading the type's privileges) and shows nothing.
#   Its introspection endpoint answers a signed JWT to
#   `Accept: application/token-introspection+jwt`: no setting, any instance does.
# - client $RAR_ID/$RAR_SECRET: confidential, code and refresh, that type allowed.
rar_extras() {
  exists "/mod/plugin/oidc-rar" || api POST /mod/plugin/ "$(jq -n --argjson p "$(oidc_params "$GLEWLWYD_RAR_ISSUER")" '{
    module:"oidc", name:"oidc-rar", display_name:"oidc-rar", parameters:($p + {
      "oauth-rar-allowed":true, "rar-types-client-property":"authorization_details_types",
      "rar-allow-auth-unsigned":true, "rar-allow-auth-unencrypted":true,
      "rar-types":{"payment_initiation":{"scopes":["read"], "locations":["https://bank.example.test/payments"],
        "actions":["initiate","status","cancel"], "datatypes":["account","amount"],
        "privileges":[], "description":"Initiate a payment", "enriched":[]}}})}')"
  exists "/client/$RAR_ID" || api POST /client/ "$(jq -n --arg id "$RAR_ID" --arg s "$RAR_SECRET" --arg red "$REDIRECT_URI" \
    '{client_id:$id, client_name:$id, confidential:true, enabled:true, client_secret:$s, redirect_uri:[$red],
      authorization_type:["code","refresh_token","delete_token"], scope:["openid","g_profile","read"],
      token_endpoint_auth_method:["client_secret_basic","client_secret_post"],
      authorization_details_types:["payment_initiation"]}')"
}

# Encrypted request objects and introspection answers (RFC 9101 §6.1, RFC 9701 §5, issue 28),
# additive and idempotent:
# - the client module stores the property encrypt_introspection (the OIDC plugin's
#   client-encrypt_introspection-parameter), which the data format Glewlwyd's database ships
#   leaves out: without it a client's introspection answers are never encrypted;
# - OIDC instance oidc-enc ($GLEWLWYD_ENC_ISSUER) with the test keys of $ENC_SERVER_JWKS instead
#   of key.pem: enc-sig (RSA, RS256) signs, as the first key; enc-rsa (RSA-OAEP-256) and enc-ec
#   (P-256, ECDH-ES+A128KW) are encryption keys, published with `use: enc` (jwks-public: the set
#   without its private members). Glewlwyd 2.7.5 decrypts a request object with the instance key
#   its JWE names by kid (protocol_oidc.c decrypt_request_token); the instance that signs with
#   key.pem alone publishes that key for RS256 only, which a client must not encrypt to.
# Clients are registered per test run (EncryptedAnswersAgainstGlewlwydTests).
enc_extras() {
  local module
  module=$(curl -sf -b "$DIR/admin.jar" "$B/api/mod/client/database") || { log "GET /mod/client/database failed"; return 1; }
  if [ "$(jq '.parameters["data-format"] | has("encrypt_introspection")' <<<"$module")" != true ]; then
    api PUT /mod/client/database "$(jq -c '.parameters["data-format"].encrypt_introspection =
      {"multiple": false, "read": true, "write": true} | del(.enabled)' <<<"$module")"
    api PUT /mod/client/database/reset '{}'   # the new format applies once the module is reloaded
  fi
  exists /mod/plugin/oidc-enc && return 0
  api POST /mod/plugin/ "$(jq -n --argjson p "$(oidc_params "$GLEWLWYD_ENC_ISSUER")" --slurpfile jwks "$ENC_SERVER_JWKS" '{
    module:"oidc", name:"oidc-enc", display_name:"oidc-enc", parameters:($p + {
      "jwks-private":($jwks[0] | tojson), "default-kid":"enc-sig",
      "jwks-public":($jwks[0] | .keys |= map(del(.d, .p, .q, .dp, .dq, .qi)) | tojson)})}')"
}

# Mutual TLS (RFC 8705), through the front at $MTLS_URL (tls.sh), additive and idempotent:
# - OIDC instance oidc-mtls ($GLEWLWYD_MTLS_ISSUER): reads the client certificate from the
#   header SSL_CLIENT_CERT that the front sets, at its mtls_endpoint_aliases (…/mtls/token…)
#   only; offers tls_client_auth and self_signed_tls_client_auth; the access tokens of a
#   client that authenticated with its certificate are bound to it (cnf.x5t#S256);
# - client $MTLS_CA_ID: tls_client_auth, matched by the subjectAltName DNS:$MTLS_CA_SAN_DNS of
#   its certificate (issued by the test client CA);
# - client $MTLS_SELF_ID: self_signed_tls_client_auth with the certificate of
#   $STATE/mtls/self.jwks.json (x5c).
seed_mtls() {
  mtls_client_certs
  exists /mod/plugin/oidc-mtls || api POST /mod/plugin/ "$(jq -n --argjson p "$(oidc_params "$GLEWLWYD_MTLS_ISSUER")" \
    '{module:"oidc", name:"oidc-mtls", display_name:"oidc-mtls", parameters:($p + {"client-cert-source":"header",
      "client-cert-header-name":"SSL_CLIENT_CERT", "client-cert-use-endpoint-aliases":true,
      "client-cert-self-signed-allowed":true})}')"
  exists "/client/$MTLS_CA_ID" || api POST /client/ "$(jq -n --arg id "$MTLS_CA_ID" --arg dns "$MTLS_CA_SAN_DNS" \
    '{client_id:$id, client_name:$id, confidential:true, enabled:true, redirect_uri:[], scope:["read"],
      authorization_type:["client_credentials","delete_token"], token_endpoint_auth_method:["tls_client_auth"],
      tls_client_auth_san_dns:$dns}')"
  exists "/client/$MTLS_SELF_ID" || api POST /client/ "$(jq -n --arg id "$MTLS_SELF_ID" --slurpfile jwks "$STATE/mtls/self.jwks.json" \
    '{client_id:$id, client_name:$id, confidential:true, enabled:true, redirect_uri:[], scope:["read"],
      authorization_type:["client_credentials","delete_token"], token_endpoint_auth_method:["self_signed_tls_client_auth"],
      jwks:$jwks[0]}')"
}

# The web example app of the browser journeys ($GLEWLWYD_WEBAPP_URL): a confidential client
# with its callback, its home page as the post-logout redirect, and its back-channel logout
# URI. The OIDC plugin (session-management-allowed, back-channel-logout-allowed) POSTs it a
# logout token, with the session's sid (backchannel_logout_session_required), whenever that
# session ends: at end_session (its login page's "Logout"), and when the user's browser
# deletes the session (DELETE $GLEWLWYD_ISSUER/session/SID with the user's cookie).
webapp_client() {
  api POST /client/ "$(jq -n --arg id "$WEBAPP_ID" --arg s "$WEBAPP_SECRET" --arg app "$GLEWLWYD_WEBAPP_URL" \
    '{client_id:$id, client_name:$id, confidential:true, enabled:true, client_secret:$s,
      redirect_uri:[$app + "/auth/callback"], post_logout_redirect_uris:[$app + "/"],
      backchannel_logout_uri:($app + "/auth/backchannel-logout"), backchannel_logout_session_required:"1",
      authorization_type:["code","refresh_token","delete_token"], scope:["openid","g_profile","read"],
      token_endpoint_auth_method:["client_secret_basic","client_secret_post"]}')"
}

# Applies seed_extras to a server that is already up (started by an older version of this
# script), without restarting it: logs in to the admin API with a jar of its own and uses a
# signing key of its own for the new OIDC instances, both kept in $DIR.
do_extras() {
  answers || die "glewlwyd does not answer at $ISS"
  mkdir -p "$DIR"; cd "$DIR"
  [ -s key.pem ] || { openssl genrsa -out key.pem 2048 2>/dev/null; openssl rsa -in key.pem -pubout -out pub.pem 2>/dev/null; }
  api POST /auth/ '{"username":"admin","password":"password"}'
  seed_extras
  log "extras applied"
}

# Glewlwyd's own login page (login.html, a React app, with its consent screen) for a real
# browser (Tests/Support/browser/oauth2-browser) to sign in on, as a person would. Debian's
# webapp cannot be served where it is: css/, js/ and fonts/ are symlinks into other packages,
# and Glewlwyd's static file server answers 404 for a file whose real path lies outside
# static_files_path; and its config.json links to /etc/glewlwyd/config-2.7.json, which in this
# package is a directory (the file is inside it), so the page would stay at "Loading...".
# Hence a copy with the links followed (~4.5 MB) and the real config.json (GlewlwydUrl "./":
# the page calls the API on its own origin).
write_webapp() {
  local src=/usr/share/glewlwyd/webapp cfg=/etc/glewlwyd/config-2.7.json
  rm -rf "$DIR/webapp"; mkdir -p "$DIR/webapp"
  cp -rL "$src/." "$DIR/webapp/"
  rm -rf "$DIR/webapp/config.json"
  [ ! -d "$cfg" ] || cfg=$cfg/config.json
  cp "$cfg" "$DIR/webapp/config.json"
}

# The static file server's settings for that copy: every file type the webapp has.
static_files_conf() {
  local sep="" m
  echo "static_files_path=\"$DIR/webapp/\""
  echo "static_files_mime_types = ("
  for m in .html:text/html .css:text/css .js:application/javascript .json:application/json .map:application/json \
    .png:image/png .ico:image/x-icon .svg:image/svg+xml .ttf:font/ttf .woff:font/woff .woff2:font/woff2 \
    .eot:application/vnd.ms-fontobject; do
    printf '  %s{ extension = "%s" mime_type = "%s" compress = 0 }\n' "$sep" "${m%%:*}" "${m#*:}"; sep=","
  done
  echo ")"
}

do_start() {
  local fp pid i t0=$SECONDS
  fp=$(fingerprint "${BASH_SOURCE[0]}")
  already_running "$fp" && return 0
  # shellcheck disable=SC2086  # a word list
  ensure_debs $GLEWLWYD_DEBS
  do_stop
  rm -rf "$DIR"; mkdir -p "$DIR"; cd "$DIR"
  zcat /usr/share/doc/glewlwyd/database/init.sqlite3.sql.gz | sqlite3 glewlwyd.db   # creates admin/password
  # Write-ahead logging: the many parallel tests' reads no longer lock writers out (with the
  # default rollback journal, Glewlwyd 2.7.5 answered bursts of sign-ins with 500s: SQLITE_BUSY).
  sqlite3 glewlwyd.db 'PRAGMA journal_mode=WAL;' >/dev/null
  openssl genrsa -out key.pem 2048 2>/dev/null; openssl rsa -in key.pem -pubout -out pub.pem 2>/dev/null
  write_webapp
  # NB: never write use_secure_connection=...: any value of it demands TLS key files.
  cat >glewlwyd.conf <<CONF
port=$PORT
bind_address="127.0.0.1"
external_url="$B"
login_url="login.html"
api_prefix="api"
allow_origin="*"
log_mode="console"
log_level="WARNING"
cookie_secure=0
session_key="GLEWLWYD2_SESSION_ID"
session_expiration=2419200
admin_session_authentication="cookie"
profile_session_authentication="cookie"
login_api_enabled=true
admin_scope="g_admin"
profile_scope="g_profile"
user_module_path="/usr/lib/glewlwyd/user"
client_module_path="/usr/lib/glewlwyd/client"
user_auth_scheme_module_path="/usr/lib/glewlwyd/scheme"
plugin_module_path="/usr/lib/glewlwyd/plugin"
hash_algorithm="SHA512"
database = { type = "sqlite3" path = "$DIR/glewlwyd.db" };
CONF
  static_files_conf >>glewlwyd.conf
  # Own session, no stdin, lock fd closed: it outlives this script and holds no lock.
  setsid glewlwyd --config-file="$DIR/glewlwyd.conf" >"$LOG" 2>&1 </dev/null 9>&- &
  pid=$!; echo "$pid" >"$PIDFILE"
  for ((i = 0; i < 100; i++)); do
    curl -sf -o /dev/null "$B/config" && break
    pid_alive "$pid" || { cat "$LOG" >&2; die "glewlwyd exited at start (log: $LOG)"; }
    sleep 0.1
  done
  seed || { do_stop; die "seeding failed (log: $LOG)"; }
  answers || { do_stop; die "OIDC discovery does not answer after seeding (log: $LOG)"; }
  login_page || { do_stop; die "the login page is not served (log: $LOG)"; }
  echo "$fp" >"$READY"
  log "started (pid $pid) in $((SECONDS - t0)) s, issuer $ISS"
}

case "${1:-}" in
  start) take_lock glewlwyd; do_start ;;
  stop) take_lock glewlwyd; do_stop; log "stopped" ;;
  status) do_status ;;
  extras) take_lock glewlwyd; do_extras ;;
  *) echo "usage: $0 start|stop|status|extras" >&2; exit 2 ;;
esac
