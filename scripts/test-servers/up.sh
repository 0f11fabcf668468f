#!/usr/bin/env bash
# Starts the integration-test servers (Glewlwyd, django-oauth-toolkit, authgent-server,
# LemonLDAP::NG, django-oidc-provider, the HTTPS front, a private desktop keyring, PostgreSQL for
# the OAuth2Postgres store) and headless
# Chromium for the browser journeys, installs libqrencode4 for the QR-code tests and nodejs for the fragment relay test, and writes $STATE/env,
# the variables the Swift integration tests read:
#   . .build/test-servers/env
# Idempotent: servers already up are left alone (a warm run takes well under a second).
set -euo pipefail
NAME="up"
# shellcheck source=scripts/test-servers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

t0=$SECONDS
# The DOT and authgent venvs (pip) are made while one apt-get run installs every missing Debian
# package.
"$TS_DIR/dot.sh" venv & venv_pid=$!
"$TS_DIR/authgent.sh" venv & authgent_venv_pid=$!
"$TS_DIR/oidcprovider.sh" venv & oidcprovider_venv_pid=$!
# shellcheck disable=SC2086  # word lists
ensure_debs $GLEWLWYD_DEBS $DOT_DEBS $AUTHGENT_DEBS $LEMONLDAP_DEBS $OIDCPROVIDER_DEBS $TLS_DEBS $KEYRING_DEBS $QR_DEBS $NODE_DEBS \
  $CHROMIUM_DEBS \
  $POSTGRES_DEBS
# The headless browser of the browser journeys (Selenium's venv; its Debian part is above).
"$TS_DIR/chromium.sh" install >/dev/null
# joserfc, the independent JOSE implementation whose DPoP proofs OAuth2Web's tests check.
"$TS_DIR/jose.sh" install >/dev/null
wait "$venv_pid" || die "making the DOT venv failed"
wait "$authgent_venv_pid" || die "making the authgent venv failed"
wait "$oidcprovider_venv_pid" || die "making the django-oidc-provider venv failed"
"$TS_DIR/glewlwyd.sh" start
"$TS_DIR/dot.sh" start
"$TS_DIR/authgent.sh" start
"$TS_DIR/lemonldap.sh" start
"$TS_DIR/oidcprovider.sh" start
"$TS_DIR/tls.sh" start
"$TS_DIR/keyring.sh" start
# After tls.sh: its server certificate is issued by the test CA that tls.sh made.
"$TS_DIR/postgres.sh" start
"$TS_DIR/postgres.sh" start fault

# The authgent client's random credentials and the test assertion key (authgent.sh writes them).
# shellcheck source=/dev/null
. "$STATE/authgent/clients.env"
# OAUTH2_TEST_POSTGRES_URL and OAUTH2_TEST_POSTGRES_CA_FILE (postgres.sh writes them).
# shellcheck source=/dev/null
. "$STATE/postgres/env"
# OAUTH2_TEST_POSTGRES_FAULT_URL: the cluster that the fault tests stop and start.
# shellcheck source=/dev/null
. "$STATE/postgres-fault/env"

# KEY=value lines, quoted for the shell.
vars() {
  local kv
  for kv in \
    OAUTH2_TEST_STATE_DIR="$STATE" \
    OAUTH2_TEST_GLEWLWYD_URL="$GLEWLWYD_URL" OAUTH2_TEST_GLEWLWYD_ISSUER="$GLEWLWYD_ISSUER" \
    OAUTH2_TEST_DOT_URL="$DOT_URL" OAUTH2_TEST_DOT_ISSUER="$DOT_ISSUER" \
    OAUTH2_TEST_TLS_URL="$TLS_URL" OAUTH2_TEST_CA_FILE="$STATE/tls/ca.pem" \
    OAUTH2_TEST_MTLS_URL="$MTLS_URL" OAUTH2_TEST_MTLS_DIR="$STATE/mtls" \
    OAUTH2_TEST_GLEWLWYD_MTLS_ISSUER="$GLEWLWYD_MTLS_ISSUER" \
    OAUTH2_TEST_GLEWLWYD_MTLS_CA_ID="$MTLS_CA_ID" OAUTH2_TEST_GLEWLWYD_MTLS_SELF_ID="$MTLS_SELF_ID" \
    OAUTH2_TEST_REDIRECT_URI="$REDIRECT_URI" \
    OAUTH2_TEST_USER="$TEST_USER" OAUTH2_TEST_PASSWORD="$TEST_PASSWORD" \
    OAUTH2_TEST_GLEWLWYD_CONF_ID="$CONF_ID" OAUTH2_TEST_GLEWLWYD_CONF_SECRET="$CONF_SECRET" \
    OAUTH2_TEST_GLEWLWYD_PUBLIC_ID="$PUBLIC_ID" \
    OAUTH2_TEST_GLEWLWYD_CC_ID="$CC_ID" OAUTH2_TEST_GLEWLWYD_CC_SECRET="$CC_SECRET" \
    OAUTH2_TEST_GLEWLWYD_JWT_SECRET_ID="$JWT_SECRET_ID" OAUTH2_TEST_GLEWLWYD_JWT_SECRET_SECRET="$JWT_SECRET_SECRET" \
    OAUTH2_TEST_GLEWLWYD_JWT_KEY_ID="$JWT_KEY_ID" \
    OAUTH2_TEST_GLEWLWYD_IMPLICIT_ID="$IMPLICIT_ID" OAUTH2_TEST_GLEWLWYD_SHORT_ISSUER="$GLEWLWYD_SHORT_ISSUER" \
    OAUTH2_TEST_GLEWLWYD_NONCE_ISSUER="$GLEWLWYD_NONCE_ISSUER" OAUTH2_TEST_GLEWLWYD_PAR_ISSUER="$GLEWLWYD_PAR_ISSUER" \
    OAUTH2_TEST_GLEWLWYD_REG_ISSUER="$GLEWLWYD_REG_ISSUER" OAUTH2_TEST_GLEWLWYD_RESOURCE="$GLEWLWYD_RESOURCE" \
    OAUTH2_TEST_GLEWLWYD_MCP_ISSUER="$GLEWLWYD_MCP_ISSUER" \
    OAUTH2_TEST_GLEWLWYD_MCP_RS_ID="$MCP_RS_ID" OAUTH2_TEST_GLEWLWYD_MCP_RS_SECRET="$MCP_RS_SECRET" \
    OAUTH2_TEST_GLEWLWYD_MCP_USER="$MCP_USER" OAUTH2_TEST_GLEWLWYD_MCP_PASSWORD="$MCP_PASSWORD" \
    OAUTH2_TEST_GLEWLWYD_CIBA_ISSUER="$GLEWLWYD_CIBA_ISSUER" OAUTH2_TEST_GLEWLWYD_CIBA_POLL_ID="$CIBA_POLL_ID" \
    OAUTH2_TEST_GLEWLWYD_CIBA_POLL_SECRET="$CIBA_POLL_SECRET" OAUTH2_TEST_GLEWLWYD_CIBA_SIGNED_ID="$CIBA_SIGNED_ID" \
    OAUTH2_TEST_GLEWLWYD_RAR_ISSUER="$GLEWLWYD_RAR_ISSUER" OAUTH2_TEST_GLEWLWYD_RAR_ID="$RAR_ID" \
    OAUTH2_TEST_GLEWLWYD_RAR_SECRET="$RAR_SECRET" \
    OAUTH2_TEST_DOT_CONF_ID="$CONF_ID" OAUTH2_TEST_DOT_CONF_SECRET="$CONF_SECRET" \
    OAUTH2_TEST_DOT_PUBLIC_ID="$PUBLIC_ID" \
    OAUTH2_TEST_DOT_CC_ID="$CC_ID" OAUTH2_TEST_DOT_CC_SECRET="$CC_SECRET" \
    OAUTH2_TEST_DOT_PW_ID="$PW_ID" OAUTH2_TEST_DOT_PW_SECRET="$PW_SECRET" \
    OAUTH2_TEST_DOT_FLEET_ID="$FLEET_ID" OAUTH2_TEST_DOT_FLEET_SECRET="$FLEET_SECRET" \
    OAUTH2_TEST_DOT_FLEET_USER="$FLEET_USER" OAUTH2_TEST_DOT_FLEET_PASSWORD="$FLEET_PASSWORD" \
    OAUTH2_TEST_DOT_DEVICE_ID="$DEVICE_ID" OAUTH2_TEST_DOT_API_ID="$API_ID" OAUTH2_TEST_DOT_API_SECRET="$API_SECRET" \
    OAUTH2_TEST_GLEWLWYD_WEBAPP_ID="$WEBAPP_ID" OAUTH2_TEST_GLEWLWYD_WEBAPP_SECRET="$WEBAPP_SECRET" \
    OAUTH2_TEST_GLEWLWYD_WEBAPP_URL="$GLEWLWYD_WEBAPP_URL" \
    OAUTH2_TEST_GLEWLWYD_SPA_ID="$SPA_ID" OAUTH2_TEST_GLEWLWYD_SPA_SECRET="$SPA_SECRET" \
    OAUTH2_TEST_GLEWLWYD_SPA_URL="$GLEWLWYD_SPA_URL" OAUTH2_TEST_GLEWLWYD_SPA_ISSUER="$GLEWLWYD_SPA_ISSUER" \
    OAUTH2_TEST_DOT_WEBAPP_ID="$WEBAPP_ID" OAUTH2_TEST_DOT_WEBAPP_SECRET="$WEBAPP_SECRET" \
    OAUTH2_TEST_DOT_WEBAPP_URL="$DOT_WEBAPP_URL" \
    OAUTH2_TEST_LEMONLDAP_WEBAPP_ID="$WEBAPP_ID" OAUTH2_TEST_LEMONLDAP_WEBAPP_SECRET="$WEBAPP_SECRET" \
    OAUTH2_TEST_LEMONLDAP_WEBAPP_URL="$LEMONLDAP_WEBAPP_URL" \
    OAUTH2_TEST_DOT_WEBAPP_USER="$WEB_USER" OAUTH2_TEST_DOT_WEBAPP_PASSWORD="$WEB_PASSWORD" \
    OAUTH2_TEST_AUTHGENT_ISSUER="$AUTHGENT_URL" \
    OAUTH2_TEST_AUTHGENT_CLIENT_ID="$AUTHGENT_CLIENT_ID" OAUTH2_TEST_AUTHGENT_CLIENT_SECRET="$AUTHGENT_CLIENT_SECRET" \
    OAUTH2_TEST_AUTHGENT_ASSERTION_KEY="$AUTHGENT_ASSERTION_KEY" OAUTH2_TEST_AUTHGENT_ASSERTION_KID="$AUTHGENT_ASSERTION_KID" \
    OAUTH2_TEST_AUTHGENT_CODE_CLIENT_ID="$AUTHGENT_CODE_CLIENT_ID" OAUTH2_TEST_AUTHGENT_CODE_CLIENT_SECRET="$AUTHGENT_CODE_CLIENT_SECRET" \
    OAUTH2_TEST_AUTHGENT_PUBLIC_CLIENT_ID="$AUTHGENT_PUBLIC_CLIENT_ID" OAUTH2_TEST_AUTHGENT_LOOPBACK_CLIENT_ID="$AUTHGENT_LOOPBACK_CLIENT_ID" \
    OAUTH2_TEST_LEMONLDAP_URL="$LEMONLDAP_URL" OAUTH2_TEST_LEMONLDAP_ISSUER="$LEMONLDAP_ISSUER" \
    OAUTH2_TEST_OIDCPROVIDER_URL="$OIDCPROVIDER_URL" OAUTH2_TEST_OIDCPROVIDER_ISSUER="$OIDCPROVIDER_ISSUER" \
    OAUTH2_TEST_POST_LOGOUT_URI="$POST_LOGOUT_URI" \
    OAUTH2_TEST_POSTGRES_URL="$OAUTH2_TEST_POSTGRES_URL" OAUTH2_TEST_POSTGRES_CA_FILE="$OAUTH2_TEST_POSTGRES_CA_FILE" \
    OAUTH2_TEST_POSTGRES_FAULT_URL="$OAUTH2_TEST_POSTGRES_FAULT_URL" \
    OAUTH2_TEST_JOSE_PYTHON="$("$TS_DIR/jose.sh" python)" \
    OAUTH2_TEST_KEYRING_BUS="$("$TS_DIR/keyring.sh" address)"; do
    printf 'export %s=%q\n' "${kv%%=*}" "${kv#*=}"
  done
}
{ echo "# Written by scripts/test-servers/up.sh; source it before running integration tests by hand."
  vars; } >"$STATE/env.tmp"
mv "$STATE/env.tmp" "$STATE/env"
log "all up in $((SECONDS - t0)) s; env: $STATE/env"
