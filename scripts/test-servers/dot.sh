#!/usr/bin/env bash
# django-oauth-toolkit 3.4.1 (PyPI) on 127.0.0.1:8000 (OAUTH2_TEST_DOT_PORT) for the integration tests.
#   dot.sh start   make the venv if missing, (re)start with a freshly seeded DB unless already up
#   dot.sh stop    stop it and wait until the port is free
#   dot.sh status  exit 0 if it answers
#   dot.sh venv    only make the venv (up.sh runs this while apt-get installs the rest)
#   dot.sh refreshes CLIENT_ID
#                  print how many refresh tokens DOT has issued to the client (read from its
#                  database): with rotation, one per token response that carried one
# Issuer http://127.0.0.1:8000/o; RFC 8414 metadata also at the origin root. User alice/alice-pw;
# one grant type per client (a DOT rule): code-conf/code-conf-secret, code-public (PKCE is
# required), cc/cc-secret, pw/pw-secret (password), fleet/fleet-secret (password; the fleet tests
# count its refreshes), device (public, device flow), orders-api/orders-api-secret (the API of
# the resource server tests: it introspects), webapp/webapp-secret (the web example app
# of the browser journeys, at $DOT_WEBAPP_URL; user carol/carol-pw). Refresh tokens rotate
# (DOT's default). Its pages for a browser: /accounts/login/ (Django's login form, the
# template below), /o/authorize/ (consent), /o/logout/ (RP-initiated logout).
# State: $STATE/dot (venv/ is kept across restarts, site/ is rebuilt each start).
set -euo pipefail
NAME="dot"
# shellcheck source=scripts/test-servers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DIR=$STATE/dot VENV=$STATE/dot/venv SITE=$STATE/dot/site
PORT=$DOT_PORT ISS=$DOT_ISSUER
PIDFILE=$DIR/server.pid LOG=$DIR/server.log READY=$DIR/ready
CMD_RE='manage\.py runserver'
# oauthlib 4.x breaks the device endpoint (500); Django pinned to what these resolved to (py3.11).
PINS=(django-oauth-toolkit==3.4.1 oauthlib==3.3.1 Django==5.2.19)

answers() { curl -sf -o /dev/null --max-time 5 "$ISS/.well-known/openid-configuration"; }

do_status() { answers; }

ensure_venv() { ensure_pinned_venv "$VENV" "$DIR/pip.log" "${PINS[@]}"; }

write_site() {
  rm -rf "$SITE"; mkdir -p "$SITE/templates/registration"
  openssl genrsa -out "$SITE/oidc.key" 2048 2>/dev/null
  cat >"$SITE/settings.py" <<PY
import os
BASE = os.path.dirname(os.path.abspath(__file__))
SECRET_KEY = "test-only"; DEBUG = False; ALLOWED_HOSTS = ["127.0.0.1", "localhost"]; USE_TZ = True
INSTALLED_APPS = ["django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions", "django.contrib.messages", "oauth2_provider"]
MIDDLEWARE = ["django.contrib.sessions.middleware.SessionMiddleware", "django.middleware.csrf.CsrfViewMiddleware",
              "django.contrib.auth.middleware.AuthenticationMiddleware", "django.contrib.messages.middleware.MessageMiddleware"]
ROOT_URLCONF = "urls"; LOGIN_URL = "/accounts/login/"; DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "DIRS": [os.path.join(BASE, "templates")], "APP_DIRS": True,
              "OPTIONS": {"context_processors": ["django.template.context_processors.request", "django.contrib.auth.context_processors.auth",
                                                 "django.contrib.messages.context_processors.messages"]}}]
# SQLite under a threaded runserver: wait for the write lock (up to 30 s) instead of answering 500
# "database is locked" when tests send requests at the same time. A transaction takes the write
# lock when it begins (IMMEDIATE): one that began as a reader and then wrote, beside another
# writer, got "database is locked" at once, whatever the timeout (two concurrent refreshes, a
# run at load 10). WAL: readers do not wait for a writer.
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.path.join(BASE, "db.sqlite3"),
                         "OPTIONS": {"timeout": 30, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL;"}}}
# Fast hashing: with the default (PBKDF2, 10^6 rounds) every confidential-client request costs ~0.5 s of CPU.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LOGGING = {"version": 1, "handlers": {"c": {"class": "logging.StreamHandler"}}, "loggers": {"django.request": {"handlers": ["c"], "level": "ERROR"}}}
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True, "OIDC_RSA_PRIVATE_KEY": open(os.path.join(BASE, "oidc.key")).read(), "OIDC_ISS_ENDPOINT": "$ISS",
    "OIDC_RP_INITIATED_LOGOUT_ENABLED": True, "OIDC_RP_INITIATED_LOGOUT_ALWAYS_PROMPT": False,
    "SCOPES": {"openid": "OpenID", "profile": "Profile", "email": "Email", "read": "Read", "write": "Write", "introspection": "Introspect"},
    "DEFAULT_SCOPES": ["read"], "PKCE_REQUIRED": True, "ALLOW_LOCALHOST_LOOPBACK": True, "REFRESH_TOKEN_EXPIRE_SECONDS": 3600,
    "DCR_ENABLED": True, "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "OAUTH_DEVICE_VERIFICATION_URI": "$ISS/device/",
}
PY
  cat >"$SITE/urls.py" <<'PY'
from django.contrib.auth import views as auth_views
from django.urls import include, path
from oauth2_provider import urls as dot_urls
urlpatterns = [path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
               path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
               path("", include((dot_urls.metadata_urlpatterns, "root_meta")))]   # RFC 8414 doc at the origin root
PY
  echo '<form method="post">{% csrf_token %}{{ form.as_p }}<input type="hidden" name="next" value="{{ next }}"><button>Log in</button></form>' \
    >"$SITE/templates/registration/login.html"
  cat >"$SITE/manage.py" <<'PY'
import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings")
from django.core.management import execute_from_command_line; execute_from_command_line(sys.argv)
PY
  cat >"$SITE/seed.py" <<PY
from django.contrib.auth import get_user_model
from oauth2_provider.models import Application as A
u = get_user_model().objects.create_user("$TEST_USER", "alice@example.com", "$TEST_PASSWORD")
RED = "$REDIRECT_URI"
def mk(cid, ctype, grant, secret="", red=""):   # DOT: one grant type per client; refresh_token works for all
    A.objects.create(client_id=cid, client_secret=secret, name=cid, client_type=ctype, authorization_grant_type=grant, redirect_uris=red,
                     post_logout_redirect_uris=red, algorithm=A.RS256_ALGORITHM, skip_authorization=True, user=u)
mk("$CONF_ID", A.CLIENT_CONFIDENTIAL, A.GRANT_AUTHORIZATION_CODE, "$CONF_SECRET", RED)
mk("$PUBLIC_ID", A.CLIENT_PUBLIC, A.GRANT_AUTHORIZATION_CODE, "", RED)
mk("$CC_ID", A.CLIENT_CONFIDENTIAL, A.GRANT_CLIENT_CREDENTIALS, "$CC_SECRET")
mk("$PW_ID", A.CLIENT_CONFIDENTIAL, A.GRANT_PASSWORD, "$PW_SECRET")
mk("$FLEET_ID", A.CLIENT_CONFIDENTIAL, A.GRANT_PASSWORD, "$FLEET_SECRET")
get_user_model().objects.create_user("$FLEET_USER", "dave@example.com", "$FLEET_PASSWORD")   # the fleet tests' own user
mk("$DEVICE_ID", A.CLIENT_PUBLIC, A.GRANT_DEVICE_CODE)
mk("$API_ID", A.CLIENT_CONFIDENTIAL, A.GRANT_CLIENT_CREDENTIALS, "$API_SECRET")   # the resource server tests' API
# The web example app of the browser journeys, signed in to by its own user (see lib.sh), on
# DOT's real pages: the login form, then the consent page every time (skip_authorization off).
get_user_model().objects.create_user("$WEB_USER", "carol@example.com", "$WEB_PASSWORD", first_name="Carol")
A.objects.create(client_id="$WEBAPP_ID", client_secret="$WEBAPP_SECRET", name="$WEBAPP_ID", client_type=A.CLIENT_CONFIDENTIAL,
                 authorization_grant_type=A.GRANT_AUTHORIZATION_CODE, redirect_uris="$DOT_WEBAPP_URL/auth/callback",
                 post_logout_redirect_uris="$DOT_WEBAPP_URL/", algorithm=A.RS256_ALGORITHM, skip_authorization=False, user=u)
PY
}

do_start() {
  local fp pid i t0=$SECONDS
  fp=$(fingerprint "${BASH_SOURCE[0]}")
  already_running "$fp" && return 0
  # shellcheck disable=SC2086  # a word list
  ensure_debs $DOT_DEBS
  do_stop
  mkdir -p "$DIR"
  ensure_venv
  write_site
  # Migrating takes seconds: keep the migrated, still empty DB for the next start of the same
  # scripts. Seeding runs on every start.
  local migrated=$DIR/migrated-$fp.sqlite3
  if [ -s "$migrated" ]; then
    cp "$migrated" "$SITE/db.sqlite3"
  else
    rm -f "$DIR"/migrated-*.sqlite3
    (cd "$SITE" && "$VENV/bin/python" manage.py migrate -v0) >"$LOG" 2>&1 || { cat "$LOG" >&2; die "migrate failed"; }
    cp "$SITE/db.sqlite3" "$migrated"
  fi
  (cd "$SITE" && "$VENV/bin/python" manage.py shell -v0 <seed.py) >>"$LOG" 2>&1 || { cat "$LOG" >&2; die "seeding failed"; }
  # Own session, no stdin, lock fd closed: it outlives this script and holds no lock.
  (cd "$SITE" && exec setsid "$VENV/bin/python" manage.py runserver "127.0.0.1:$PORT" --noreload >>"$LOG" 2>&1 </dev/null 9>&-) &
  pid=$!; echo "$pid" >"$PIDFILE"
  await_answer "$pid"
  echo "$fp" >"$READY"
  log "started (pid $pid) in $((SECONDS - t0)) s, issuer $ISS"
}

# Refresh tokens issued to client $1, counted in DOT's database (read-only; no lock needed).
do_refreshes() {
  [ -n "${1:-}" ] || die "usage: $0 refreshes CLIENT_ID"
  [ -s "$SITE/db.sqlite3" ] || die "no DOT database at $SITE (start DOT first)"
  "$VENV/bin/python" - "$SITE/db.sqlite3" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True, timeout=30)
print(db.execute("SELECT count(*) FROM oauth2_provider_refreshtoken r JOIN oauth2_provider_application a"
                 " ON r.application_id = a.id WHERE a.client_id = ?", (sys.argv[2],)).fetchone()[0])
PY
}

case "${1:-}" in
  start) take_lock dot; do_start ;;
  refreshes) do_refreshes "${2:-}" ;;
  stop) take_lock dot; do_stop; log "stopped" ;;
  status) do_status ;;
  venv) take_lock dot; mkdir -p "$DIR"; ensure_venv ;;
  *) echo "usage: $0 start|stop|status|venv|refreshes CLIENT_ID" >&2; exit 2 ;;
esac
