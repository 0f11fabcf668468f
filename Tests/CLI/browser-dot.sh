#!/usr/bin/env bash
# A "browser" for `oauth2 login` and `oauth2 logout` against django-oauth-toolkit
# ($BROWSER=this script): logs alice in through DOT's login form (once; the cookie jar in
# $OAUTH2_E2E_JAR keeps the session), follows the authorization or end-session URL, then
# follows the redirect to the CLI's loopback listener.
set -euo pipefail
url=$1
base=${OAUTH2_TEST_DOT_URL:-http://127.0.0.1:8000}
jar=${OAUTH2_E2E_JAR:?}
if ! grep -q sessionid "$jar" 2>/dev/null; then
  curl -sf -c "$jar" -b "$jar" -o /dev/null "$base/accounts/login/"
  csrf=$(awk '$6=="csrftoken"{print $7}' "$jar")
  curl -s -c "$jar" -b "$jar" -o /dev/null -d "csrfmiddlewaretoken=$csrf" \
    -d "username=${OAUTH2_TEST_USER:-alice}" -d "password=${OAUTH2_TEST_PASSWORD:-alice-pw}" -d next=/ "$base/accounts/login/"
fi
location=$(curl -s -c "$jar" -b "$jar" -o /dev/null -w '%{redirect_url}' "$url")
[ -n "$location" ] || { echo "browser: no redirect from the provider" >&2; exit 1; }
curl -s -o /dev/null "$location"
