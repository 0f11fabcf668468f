#!/usr/bin/env bash
# authgent-server 0.3.4 (PyPI) on 127.0.0.1:8400 for the token exchange (RFC 8693) and JWT bearer
# (RFC 7523 §2.1) tests.
#   authgent.sh start   make the venv if missing, (re)start with a fresh database unless already up
#   authgent.sh stop    stop it and wait until the port is free
#   authgent.sh status  exit 0 if it answers
#   authgent.sh venv    only make the venv (up.sh runs this while apt-get installs the rest)
# Issuer http://127.0.0.1:8400 (its AUTHGENT_SERVER_URL); RFC 8414 metadata at the root; it signs
# its tokens with ES256. Each start registers (RFC 7591, open registration) a confidential client
# allowed client_credentials, token exchange and jwt-bearer; its random id and secret are written
# to $STATE/authgent/clients.env, which up.sh copies into $STATE/env.
#
# Each start also registers three clients for the authorization code (PKCE S256), refresh and
# device grants, written to clients.env too:
#   AUTHGENT_CODE_CLIENT_ID/_SECRET  confidential (client_secret_basic), redirect URI $REDIRECT_URI
#   AUTHGENT_PUBLIC_CLIENT_ID        public (no secret sent), redirect URI $REDIRECT_URI
#   AUTHGENT_LOOPBACK_CLIENT_ID      public, no redirect URI registered: authgent then accepts any
#                                    redirect URI, so a loopback listener may take any port (for a
#                                    registered URI it compares exactly, RFC 8252 §7.3 or not)
# authgent has no users and no login: AUTHGENT_CONSENT_MODE=auto_approve (pinned below) makes
# GET /authorize answer at once 302 <redirect_uri>?code=..&state=..&iss=.. for subject
# "auto_approved_user"; device codes are approved by POST /device/complete (JSON user_code,
# subject). scripts/test-servers/authgent-check.sh proves each flow and pins the quirks.
#
# The jwt-bearer grant is served, not only advertised: authgent verifies an assertion whose `iss`
# is in AUTHGENT_TRUSTED_CHAINING_ISSUERS against that issuer's JWKS — for its own URL, against the
# keys of its signing_keys table. So authgent trusts itself as an issuer, and each start adds an
# ES256 test key (kid "oauth2-test-assertion") to that table as a retired ("rotated") key: it
# verifies but never signs. Its private key ($STATE/authgent/assertion-key.pem) is what the tests
# sign their own assertions with; an assertion signed by any other key is refused (invalid_grant).
# State: $STATE/authgent (venv/ is kept across restarts, site/ is rebuilt each start).
set -euo pipefail
NAME="authgent"
# shellcheck source=scripts/test-servers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DIR=$STATE/authgent VENV=$STATE/authgent/venv SITE=$STATE/authgent/site
PORT=$AUTHGENT_PORT ISS=$AUTHGENT_URL
PIDFILE=$DIR/server.pid LOG=$DIR/server.log READY=$DIR/ready
CMD_RE='authgent-server run'
PINS=(authgent-server==0.3.4)
ASSERTION_KID=oauth2-test-assertion

answers() { curl -sf -o /dev/null --max-time 5 "$ISS/.well-known/oauth-authorization-server"; }

do_status() { answers; }

ensure_venv() { ensure_pinned_venv "$VENV" "$DIR/pip.log" "${PINS[@]}"; }

# A fresh site: .env, database and signing key (authgent-server init), the trusted test key.
write_site() {
  rm -rf "$SITE"; mkdir -p "$SITE"
  (cd "$SITE" && "$VENV/bin/authgent-server" init) >"$LOG" 2>&1 || { cat "$LOG" >&2; die "authgent-server init failed"; }
  # Lists are JSON in pydantic settings. The rate limits are raised: a test run sends more than
  # 100 token requests a minute from one address.
  cat >>"$SITE/.env" <<ENV
AUTHGENT_SERVER_URL=$ISS
AUTHGENT_TRUSTED_CHAINING_ISSUERS=["$ISS"]
AUTHGENT_CONSENT_MODE=auto_approve
AUTHGENT_TOKEN_RATE_LIMIT=100000
AUTHGENT_REGISTER_RATE_LIMIT=100000
ENV
  (cd "$SITE" && "$VENV/bin/python" - "$DIR/assertion-key.pem" "$ASSERTION_KID") >>"$LOG" 2>&1 <<'PY' || { cat "$LOG" >&2; die "adding the test key failed"; }
import base64, json, sqlite3, sys
from datetime import datetime, UTC
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
path, kid = sys.argv[1], sys.argv[2]
key = ec.generate_private_key(ec.SECP256R1())
pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
with open(path, "w") as f:
    f.write(pem)
numbers = key.public_key().public_numbers()
b64 = lambda n: base64.urlsafe_b64encode(n.to_bytes(32, "big")).rstrip(b"=").decode()
jwk = {"kty": "EC", "crv": "P-256", "x": b64(numbers.x), "y": b64(numbers.y), "kid": kid, "alg": "ES256", "use": "sig"}
db = sqlite3.connect("authgent.db")
# status "rotated": published and trusted for verification, never used to sign.
db.execute("INSERT INTO signing_keys (kid, algorithm, private_key_pem, public_key_jwk, status, created_at, rotated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
           (kid, "ES256", pem, json.dumps(jwk), "rotated", datetime.now(UTC).replace(tzinfo=None).isoformat(" "), datetime.now(UTC).replace(tzinfo=None).isoformat(" ")))
db.commit()
PY
}

# POST /register (RFC 7591) with JSON $1; prints the answer.
register() {
  curl -sf --max-time 10 -H 'Content-Type: application/json' "$ISS/register" -d "$1" \
    || die "registering a test client failed (log: $LOG)"
}

# Registers the test clients; writes their credentials to clients.env.
register_clients() {
  local exchanger code public loopback
  local code_grants='"authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code"'
  exchanger=$(register '{
      "client_name": "swift-oauth2 exchanger", "token_endpoint_auth_method": "client_secret_post",
      "grant_types": ["client_credentials", "urn:ietf:params:oauth:grant-type:token-exchange",
                      "urn:ietf:params:oauth:grant-type:jwt-bearer"]}')
  code=$(register '{"client_name": "swift-oauth2 code (confidential)", "token_endpoint_auth_method": "client_secret_basic",
      "grant_types": ['"$code_grants"'], "redirect_uris": ["'"$REDIRECT_URI"'"]}')
  public=$(register '{"client_name": "swift-oauth2 code (public)", "token_endpoint_auth_method": "none",
      "grant_types": ['"$code_grants"'], "redirect_uris": ["'"$REDIRECT_URI"'"]}')
  loopback=$(register '{"client_name": "swift-oauth2 loopback (public, any redirect URI)", "token_endpoint_auth_method": "none",
      "grant_types": ['"$code_grants"']}')
  "$VENV/bin/python" -c '
import json, shlex, sys
exchanger, code, public, loopback = (json.loads(a) for a in sys.argv[1:])
for name, value in (("AUTHGENT_CLIENT_ID", exchanger["client_id"]), ("AUTHGENT_CLIENT_SECRET", exchanger["client_secret"]),
                    ("AUTHGENT_CODE_CLIENT_ID", code["client_id"]), ("AUTHGENT_CODE_CLIENT_SECRET", code["client_secret"]),
                    ("AUTHGENT_PUBLIC_CLIENT_ID", public["client_id"]), ("AUTHGENT_LOOPBACK_CLIENT_ID", loopback["client_id"])):
    print(name + "=" + shlex.quote(value))' "$exchanger" "$code" "$public" "$loopback" >"$DIR/clients.env.tmp"
  printf 'AUTHGENT_ASSERTION_KEY=%q\nAUTHGENT_ASSERTION_KID=%q\n' "$DIR/assertion-key.pem" "$ASSERTION_KID" >>"$DIR/clients.env.tmp"
  mv "$DIR/clients.env.tmp" "$DIR/clients.env"
}

do_start() {
  local fp pid i t0=$SECONDS
  fp=$(fingerprint "${BASH_SOURCE[0]}")
  already_running "$fp" && [ -s "$DIR/clients.env" ] && return 0
  # shellcheck disable=SC2086  # a word list
  ensure_debs $AUTHGENT_DEBS
  do_stop
  mkdir -p "$DIR"
  ensure_venv
  write_site
  (cd "$SITE" && exec setsid "$VENV/bin/authgent-server" run --host 127.0.0.1 --port "$PORT" >>"$LOG" 2>&1 </dev/null 9>&-) &
  pid=$!; echo "$pid" >"$PIDFILE"
  for ((i = 0; i < 300; i++)); do
    answers && break
    pid_alive "$pid" || { cat "$LOG" >&2; die "authgent-server exited at start (log: $LOG)"; }
    sleep 0.1
  done
  answers || { do_stop; die "no answer from $ISS after 30 s (log: $LOG)"; }
  register_clients
  echo "$fp" >"$READY"
  log "started (pid $pid) in $((SECONDS - t0)) s, issuer $ISS"
}

case "${1:-}" in
  start) take_lock authgent; do_start ;;
  stop) take_lock authgent; do_stop; log "stopped" ;;
  status) do_status ;;
  venv) take_lock authgent; mkdir -p "$DIR"; ensure_venv ;;
  *) echo "usage: $0 start|stop|status|venv" >&2; exit 2 ;;
esac
