#!/usr/bin/env bash
# django-oidc-provider 0.9.0 (PyPI) on 127.0.0.1:8500 for the integration tests: a plain OpenID
# Connect provider (code flow, refresh, UserInfo, end session, introspection of its own kind).
#   oidcprovider.sh start   make the venv if missing, (re)start with a freshly seeded DB unless already up
#   oidcprovider.sh stop    stop it and wait until the port is free
#   oidcprovider.sh status  exit 0 if it answers
#   oidcprovider.sh venv    only make the venv
# Issuer http://127.0.0.1:8500/openid (its URLs are mounted under /openid/; discovery at
# $ISS/.well-known/openid-configuration). User alice/alice-pw (sub "1"). Clients, all with redirect
# URI $REDIRECT_URI (exact match only: no other loopback port) and post-logout URI $POST_LOGOUT_URI:
#   code-public              public, code flow. PKCE (S256 or plain) is verified when sent, never
#                            required. A public client's code flow ALWAYS shows the consent form
#                            (the provider skips consent only for confidential clients).
#   code-conf/code-conf-secret  confidential, code flow, no consent page. Its registered scopes
#                            "token_introspection code-conf code-public" let it introspect the access
#                            tokens issued to itself and to code-public (the provider's own rule).
#   cc/cc-secret             client_credentials only (scopes "read write"; no redirect URI).
#   pw/pw-secret             password grant (enabled server-wide; scopes come from the client's
#                            registered scopes "openid profile email").
# Every code-flow token answer has a refresh token; refreshing rotates it (the old refresh AND
# access token are deleted) and returns a new id_token without nonce. Session management 1.0 is
# on (session_state in the authorization response, check_session_iframe). See
# oidcprovider-check.sh for the HTTP-only sign-in and the deviations from the specs.
# State: $STATE/oidcprovider (venv/ is kept across restarts, site/ is rebuilt each start).
set -euo pipefail
NAME="oidcprovider"
# shellcheck source=scripts/test-servers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DIR=$STATE/oidcprovider VENV=$STATE/oidcprovider/venv SITE=$STATE/oidcprovider/site
PORT=$OIDCPROVIDER_PORT URL=$OIDCPROVIDER_URL ISS=$OIDCPROVIDER_ISSUER
PIDFILE=$DIR/server.pid LOG=$DIR/server.log READY=$DIR/ready
CMD_RE='manage\.py runserver'
# 0.9.0 declares no Django range (its CI stopped at 4.2); 5.2 LTS, the newest Django for Python
# 3.11, runs it. Every package pinned to what these resolved to (py3.11).
PINS=(django-oidc-provider==0.9.0 Django==5.2.19 PyJWT==2.15.1 cryptography==50.0.2 cffi==2.1.1
      pycparser==3.12 asgiref==3.13.0 sqlparse==0.6.1)

answers() { curl -sf -o /dev/null --max-time 5 "$ISS/.well-known/openid-configuration"; }

do_status() { answers; }

ensure_venv() { ensure_pinned_venv "$VENV" "$DIR/pip.log" "${PINS[@]}"; }

write_site() {
  rm -rf "$SITE"; mkdir -p "$SITE/templates/registration"
  cat >"$SITE/settings.py" <<PY
import os
BASE = os.path.dirname(os.path.abspath(__file__))
SECRET_KEY = "test-only"; DEBUG = False; ALLOWED_HOSTS = ["127.0.0.1", "localhost"]; USE_TZ = True
INSTALLED_APPS = ["django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions", "django.contrib.staticfiles", "oidc_provider"]
# SessionManagementMiddleware sets the op_browser_state cookie that check_session_iframe reads.
MIDDLEWARE = ["django.contrib.sessions.middleware.SessionMiddleware", "django.middleware.csrf.CsrfViewMiddleware",
              "django.contrib.auth.middleware.AuthenticationMiddleware", "oidc_provider.middleware.SessionManagementMiddleware"]
ROOT_URLCONF = "urls"; LOGIN_URL = "/accounts/login/"; STATIC_URL = "/static/"; DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "DIRS": [os.path.join(BASE, "templates")], "APP_DIRS": True,
              "OPTIONS": {"context_processors": ["django.template.context_processors.request", "django.contrib.auth.context_processors.auth"]}}]
# SQLite under a threaded runserver: wait for the write lock (up to 30 s) instead of answering 500
# "database is locked" when tests send requests at the same time.
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.path.join(BASE, "db.sqlite3"), "OPTIONS": {"timeout": 30}}}
# Fast hashing: the default (PBKDF2, 10^6 rounds) costs ~0.5 s of CPU per password check.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# The provider says why it refused (invalid_client, invalid_grant, inactive introspection...) only
# in its debug log: keep it in server.log.
LOGGING = {"version": 1, "handlers": {"c": {"class": "logging.StreamHandler"}},
           "loggers": {"django.request": {"handlers": ["c"], "level": "ERROR"}, "oidc_provider": {"handlers": ["c"], "level": "DEBUG"}}}
# Fixed, so that the issuer does not follow the request's Host header (it would without it).
SITE_URL = "$URL"
OIDC_USERINFO = "userinfo.claims"                   # the default leaves name, preferred_username, email_verified out
OIDC_SESSION_MANAGEMENT_ENABLE = True               # session_state + check_session_iframe
OIDC_GRANT_TYPE_PASSWORD_ENABLE = True              # off by default; server-wide when on
OIDC_INTROSPECTION_RESPONSE_SCOPE_ENABLE = True     # else introspection answers carry no scope
PY
  cat >"$SITE/userinfo.py" <<'PY'
# OIDC_USERINFO: maps the Django user onto the standard claims (UserInfo; the ID token stays minimal).
def claims(claims, user):
    claims.update(name=user.get_full_name(), given_name=user.first_name, family_name=user.last_name,
                  preferred_username=user.username, email=user.email, email_verified=True)
    return claims
PY
  cat >"$SITE/urls.py" <<'PY'
from django.contrib.auth import views as auth_views
from django.urls import include, path
urlpatterns = [path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
               path("openid/", include("oidc_provider.urls", namespace="oidc_provider"))]
PY
  echo '<form method="post">{% csrf_token %}{{ form.as_p }}<input type="hidden" name="next" value="{{ next }}"><button>Log in</button></form>' \
    >"$SITE/templates/registration/login.html"
  cat >"$SITE/manage.py" <<'PY'
import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings")
from django.core.management import execute_from_command_line; execute_from_command_line(sys.argv)
PY
  cat >"$SITE/seed.py" <<PY
from django.contrib.auth import get_user_model
from oidc_provider.models import Client, ResponseType
get_user_model().objects.create_user("$TEST_USER", "alice@example.com", "$TEST_PASSWORD", first_name="Alice", last_name="Example")
CODE = ResponseType.objects.get(value="code")
def mk(cid, ctype, secret="", scope="", code_flow=True):
    # require_consent=False: no consent page (honoured for confidential clients only).
    c = Client.objects.create(name=cid, client_id=cid, client_secret=secret, client_type=ctype, jwt_alg="RS256",
                              require_consent=False, reuse_consent=True, _scope=scope)
    if code_flow:
        c.redirect_uris = ["$REDIRECT_URI"]; c.post_logout_redirect_uris = ["$POST_LOGOUT_URI"]
        c.save(); c.response_types.add(CODE)
mk("$PUBLIC_ID", "public")
# "token_introspection" + the client ids whose tokens it may introspect (OIDC_INTROSPECTION_VALIDATE_AUDIENCE_SCOPE).
mk("$CONF_ID", "confidential", "$CONF_SECRET", "token_introspection $CONF_ID $PUBLIC_ID")
mk("$CC_ID", "confidential", "$CC_SECRET", "read write", code_flow=False)
mk("$PW_ID", "confidential", "$PW_SECRET", "openid profile email", code_flow=False)
PY
}

do_start() {
  local fp pid i out t0=$SECONDS
  fp=$(fingerprint "${BASH_SOURCE[0]}")
  already_running "$fp" && return 0
  # shellcheck disable=SC2086  # a word list
  ensure_debs $OIDCPROVIDER_DEBS
  do_stop
  mkdir -p "$DIR"
  ensure_venv
  write_site
  # Migrating takes seconds: keep the migrated, still empty DB for the next start of the same
  # scripts. The RSA key and the seed are made on every start.
  local migrated=$DIR/migrated-$fp.sqlite3
  if [ -s "$migrated" ]; then
    cp "$migrated" "$SITE/db.sqlite3"
  else
    rm -f "$DIR"/migrated-*.sqlite3
    (cd "$SITE" && "$VENV/bin/python" manage.py migrate -v0) >"$LOG" 2>&1 || { cat "$LOG" >&2; die "migrate failed"; }
    cp "$SITE/db.sqlite3" "$migrated"
  fi
  # creatersakey exits 0 even when it fails ("Something goes wrong: ..."): read what it says.
  out=$(cd "$SITE" && "$VENV/bin/python" manage.py creatersakey 2>&1) || true
  echo "$out" >>"$LOG"
  [[ $out == *"successfully created"* ]] || { cat "$LOG" >&2; die "creatersakey failed"; }
  (cd "$SITE" && "$VENV/bin/python" manage.py shell -v0 <seed.py) >>"$LOG" 2>&1 || { cat "$LOG" >&2; die "seeding failed"; }
  # Own session, no stdin, lock fd closed: it outlives this script and holds no lock.
  # --insecure: serve the check_session_iframe's script (static files) although DEBUG is off.
  (cd "$SITE" && exec setsid "$VENV/bin/python" manage.py runserver "127.0.0.1:$PORT" --noreload --insecure >>"$LOG" 2>&1 </dev/null 9>&-) &
  pid=$!; echo "$pid" >"$PIDFILE"
  await_answer "$pid"
  echo "$fp" >"$READY"
  log "started (pid $pid) in $((SECONDS - t0)) s, issuer $ISS"
}

case "${1:-}" in
  start) take_lock oidcprovider; do_start ;;
  stop) take_lock oidcprovider; do_stop; log "stopped" ;;
  status) do_status ;;
  venv) take_lock oidcprovider; mkdir -p "$DIR"; ensure_venv ;;
  *) echo "usage: $0 start|stop|status|venv" >&2; exit 2 ;;
esac
