#!/usr/bin/env bash
# A "browser" for `oauth2 login` against Glewlwyd ($BROWSER=this script): signs alice in
# through Glewlwyd's JSON API, records her consent for the scopes asked, follows the
# authorization URL, then follows the redirect to the CLI's loopback listener — as a user
# at a browser would. A redirect with a fragment (the implicit grant) lands on the listener's
# relay page, whose own script node runs (Tests/Browser/fragment-relay.mjs) to post the
# fragment back. The cookie jar lives in $OAUTH2_E2E_JAR so a later logout shares it.
set -euo pipefail
url=$1
api=${OAUTH2_TEST_GLEWLWYD_URL:-http://127.0.0.1:4593}/api
jar=${OAUTH2_E2E_JAR:?}
client=$(printf '%s' "$url" | sed -n 's/.*[?&]client_id=\([^&]*\).*/\1/p')
scope=$(printf '%s' "$url" | sed -n 's/.*[?&]scope=\([^&]*\).*/\1/p' | sed 's/+/ /g; s/%20/ /g')
# A pushed request's URL names no scope (only client_id and request_uri): consent to the
# scopes the e2e tests ask for, as the user would on the consent page.
[ -n "$scope" ] || scope=${OAUTH2_E2E_SCOPE:-openid profile read}
case "$url" in
  *"/end_session"*|*"/logout"*) ;;
  *)
    curl -sf -c "$jar" -b "$jar" -o /dev/null -H 'Content-Type: application/json' \
      -d "{\"username\":\"${OAUTH2_TEST_USER:-alice}\",\"password\":\"${OAUTH2_TEST_PASSWORD:-alice-pw}\"}" "$api/auth/"
    curl -sf -c "$jar" -b "$jar" -o /dev/null -X PUT -H 'Content-Type: application/json' \
      -d "{\"scope\":\"$scope\"}" "$api/auth/grant/$client"
    url="$url&g_continue"
    ;;
esac
location=$(curl -s -c "$jar" -b "$jar" -o /dev/null -w '%{redirect_url}' "$url")
[ -n "$location" ] || { echo "browser: no redirect from the provider" >&2; exit 1; }
case "$location" in
  *"#"*) node "$(dirname "${BASH_SOURCE[0]}")/../Browser/fragment-relay.mjs" "$location" >/dev/null ;;
  *) curl -s -o /dev/null "$location" ;;
esac
