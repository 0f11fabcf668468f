#!/usr/bin/env bash
# The `oauth2` tool in CI: one setup job makes a machine profile (client credentials), then
# any number of jobs in parallel use its access token — renewed once for all of them when it
# expires — without the token ever reaching the job's log or a command line.
#
#   docs/recipes/ci.sh setup      # once, before the other jobs
#   docs/recipes/ci.sh job        # in each job, as many at once as you like
#
# Settings (from the CI's variables; the secret from its secret store, as a file):
#   OAUTH2_CI_ISSUER       the authorization server's issuer
#   OAUTH2_CI_CLIENT_ID    the CI's client
#   OAUTH2_CI_SECRET_FILE  a file holding its client secret
#   OAUTH2_CI_SCOPE        the scopes to ask for
#   OAUTH2_CI_API          the URL the jobs call
#   OAUTH2                 the tool (default: oauth2 on the PATH)
# Tests/CLI/ci-recipe.sh runs this script against the embedded test provider.
set -euo pipefail
OAUTH2=${OAUTH2:-oauth2}

# Where the profile lives: the jobs must see the directory the setup job wrote — a workspace
# or cache directory they share (one runner, or containers on one host with one volume).
# It holds the profile (profiles/ci.json: issuer, client id, the secret file's path, never
# the secret) and the file store's tokens (tokens/, files 0600). Jobs on several machines
# share nothing on disk: give them `--store postgres` instead (see "The oauth2 command"), or,
# on hosted runners where every job starts on a fresh machine, run `setup` at the start of
# each job (one token request per job; client credentials need no shared refresh token).
export OAUTH2_CONFIG_DIR=${OAUTH2_CONFIG_DIR:-$PWD/.oauth2}
export OAUTH2_PROFILE=ci

setup() {
  # `token --grant` asks the server for a new token every time it runs, and saves the profile:
  # run it once, in the setup job, and send its output nowhere (it is the token).
  "$OAUTH2" --store file token --grant client_credentials --issuer "$OAUTH2_CI_ISSUER" \
    --client-id "$OAUTH2_CI_CLIENT_ID" --client-secret-file "$OAUTH2_CI_SECRET_FILE" \
    --scope "$OAUTH2_CI_SCOPE" >/dev/null
}

job() {
  # Every later `oauth2 token` answers from the store while the token is valid; when it has
  # expired, one job asks for a new one (client credentials again) while the others wait for
  # it and use it: parallel jobs make one request between them.

  # 1. The token in a variable (never echo it, and no `set -x` around it), handed to curl on
  #    stdin: `curl -H "Authorization: Bearer $token"` would show it in `ps`.
  token=$("$OAUTH2" token)
  printf 'Authorization: Bearer %s\n' "$token" | curl -fsS -H @- -o /dev/null -w 'variable: %{http_code}\n' "$OAUTH2_CI_API"

  # 2. The header line straight into curl: the token is in no variable at all.
  "$OAUTH2" token --format header | curl -fsS -H @- -o /dev/null -w 'header: %{http_code}\n' "$OAUTH2_CI_API"

  # 3. A command that reads a token from its environment (gh's GH_TOKEN, say): `oauth2 exec`
  #    runs it with the token in that variable only (OAUTH2_ACCESS_TOKEN by default).
  "$OAUTH2" exec -- sh -c 'printf "Authorization: Bearer %s\n" "$OAUTH2_ACCESS_TOKEN" |
    curl -fsS -H @- -o /dev/null -w "exec: %{http_code}\n" "$OAUTH2_CI_API"'
}

case ${1:-} in
  setup) setup ;;
  job) job ;;
  *) echo "usage: $0 setup|job" >&2; exit 2 ;;
esac
