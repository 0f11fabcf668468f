#!/usr/bin/env bash
# LemonLDAP::NG 2.16 (Debian packages, Perl) as an OpenID Connect provider on 127.0.0.1:8300
# (OAUTH2_TEST_LEMONLDAP_PORT) for the integration tests: its portal runs in llng-fastcgi-server
# behind an nginx instance of its own (own config, pid file and port; tls.sh's nginx is not
# touched, nor the system's nginx or /etc/lemonldap-ng and /var/lib/lemonldap-ng).
#   lemonldap.sh start   install what is missing, (re)start with a fresh configuration unless already up
#   lemonldap.sh stop    stop nginx and the FastCGI server, wait until the port is free
#   lemonldap.sh status  exit 0 if it answers
#   lemonldap.sh cli ARGS...  lemonldap-ng-cli on the running server's configuration, as the
#                        server's user (e.g. `cli set oidcServiceAccessTokenExpiration 5`); each
#                        change is a new conf/lmConf-N.json, which each FastCGI worker loads
#                        within 2 s (checkTime 1, compared in whole seconds).
#                        It always prints "Configuration rejected ... Bad domain name" (its
#                        validator dislikes cookie domain 127.0.0.1) and saves anyway.
# Issuer http://127.0.0.1:8300 (exact, no trailing slash); endpoints $ISS/oauth2/{authorize,token,
# userinfo,jwks,introspect,register,logout}. User alice/alice-pw (DBI backend on an SQLite file).
# Clients (redirect URI $REDIRECT_URI exactly: LemonLDAP compares redirect URIs as strings, no
# wildcard or loopback port rule; post-logout redirect URIs http://127.0.0.1:9999/logged-out and the
# redirect URI itself, where the CLI's logout comes back to its listener):
#   code-public                   public, PKCE required, refresh + offline_access, opaque
#                                 access tokens, consent page
#   code-conf / code-conf-secret  confidential (client_secret_basic or _post), PKCE required,
#                                 refresh + offline_access, password and client_credentials
#                                 grants, JWT access tokens (RS256), consent bypassed
#   webapp / webapp-secret        the web example app of the browser journeys, at
#                                 $LEMONLDAP_WEBAPP_URL: redirect URI <app>/auth/callback,
#                                 post-logout <app>/, front-channel logout URI
#                                 <app>/auth/frontchannel-logout with iss and sid; PKCE
#                                 required, consent bypassed. LemonLDAP 2.16 puts no `sid` in
#                                 its ID tokens and sends the RP's user id (`sub`) as the
#                                 front-channel `sid`: a claim `sid` (= uid, the same value) is
#                                 released in the ID token through a scope `sid` that a scope
#                                 rule grants on every sign-in (see scripts/compat-notes.md)
# PKCE is required of both because LemonLDAP 2.16 checks code_verifier only for clients that
# require PKCE: for the others a wrong or missing verifier still gets tokens.
# Dynamic registration (RFC 7591) is open (no initial access token); registered clients are
# confidential, consent page, no PKCE requirement. Two registrations in the same second
# overwrite each other (the client's key is "register-<unix time>"). The sign-in over plain
# HTTP is shown step by step in lemonldap-check.sh.
# State: $STATE/lemonldap (rebuilt on each start). The FastCGI server refuses to run as root: as
# root it runs as www-data, and when www-data cannot reach $STATE/lemonldap (or the socket path
# is too long) the server's files live in /tmp/oauth2-test-lemonldap-<hash> instead (srv link).
set -euo pipefail
NAME=lemonldap
# shellcheck source=scripts/test-servers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DIR=$STATE/lemonldap
B=$LEMONLDAP_URL ISS=$LEMONLDAP_ISSUER PORT=$LEMONLDAP_PORT
READY=$DIR/ready
NGINX_PID=$DIR/nginx.pid FCGI_PID=$DIR/fastcgi.pid
LOGOUT_URI=${REDIRECT_URI%/*}/logged-out
CLI=/usr/share/lemonldap-ng/bin/lemonldap-ng-cli
# Our processes: the FastCGI server (its manager's command line is "llng-fastcgi-server", its
# two workers, "perl-fcgi", are its children) and the nginx master started with our config.
FCGI_RE='llng-fastcgi-server'
# shellcheck disable=SC2016  # sed's $ is a literal
NGINX_RE="^nginx: master process .* -c $(printf '%s' "$DIR/nginx.conf" | sed 's/[][\.*^$(){}?+|/]/\\&/g')( |$)"
PORT_RE='^nginx: (master|worker) process'   # what may hold our port (checked against our config below)

if [ "$(id -u)" -eq 0 ]; then RUNAS=www-data; else RUNAS=$(id -un); fi

answers() { curl -sf -o /dev/null --max-time 5 "$ISS/.well-known/openid-configuration"; }

do_status() { answers; }

# A zombie counts as dead: stopped processes are reparented to a PID 1 that may reap late.
alive() { local t; t=$(stat_tail "${1:-x}"); [ -n "$t" ] && [ "${t%% *}" != Z ]; }
# Fields of /proc/PID/stat after the command name, which may hold spaces and parentheses.
stat_tail() { local s; { read -r s <"/proc/$1/stat"; } 2>/dev/null || return 0; echo "${s##*) }"; }
ppid_of() { local t; t=$(stat_tail "$1"); t=${t#* }; echo "${t%% *}"; }
children() {   # no subshell per process: there may be hundreds
  local f s
  for f in /proc/[0-9]*/stat; do
    { read -r s <"$f"; } 2>/dev/null || continue
    s=${s##*) }; s=${s#* }
    if [ "${s%% *}" = "$1" ]; then f=${f%/stat}; echo "${f#/proc/}"; fi
  done
}

# TERM (and the FastCGI workers with their manager), then KILL after 5 s.
kill_wait() {
  local pids=("$@") pid i left
  [ ${#pids[@]} -gt 0 ] || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    left=""; for pid in "${pids[@]}"; do alive "$pid" && left=1; done
    [ -n "$left" ] || return 0
    sleep 0.1
  done
  kill -KILL "${pids[@]}" 2>/dev/null || true
}

# The directory the FastCGI server (user $RUNAS) works in: $DIR, unless $RUNAS cannot write
# there or the socket path would pass the 107-byte limit of a unix socket address.
srv_dir() {
  local alt; alt=${TMPDIR:-/tmp}/oauth2-test-lemonldap-$(printf '%s' "$DIR" | sha256sum | cut -c1-12)
  mkdir -p "$DIR"
  if [ ${#DIR} -le 80 ] && { [ "$RUNAS" = "$(id -un)" ] || runuser -u "$RUNAS" -- test -x "$DIR" 2>/dev/null; }; then
    echo "$DIR/srv"
  else
    echo "$alt"
  fi
}

do_stop() {
  local pid pids=() cmd
  pid=$(our_pid "$NGINX_PID" "$NGINX_RE"); [ -z "$pid" ] || pids+=("$pid")
  pid=$(our_pid "$FCGI_PID" "$FCGI_RE"); [ -z "$pid" ] || { pids+=("$pid"); mapfile -t -O ${#pids[@]} pids < <(children "$pid"); }
  kill_wait "${pids[@]}"
  rm -f "$NGINX_PID" "$FCGI_PID" "$READY"
  # Whatever still listens on our port: ours only if it is an nginx started with our config.
  for pid in $(port_pids "$PORT"); do
    cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
    if [[ $cmd =~ $NGINX_RE ]]; then kill_wait "$pid"; continue; fi
    if [[ $cmd =~ $PORT_RE ]]; then   # an nginx worker: ours if its master is
      cmd=$(tr '\0' ' ' <"/proc/$(ppid_of "$pid")/cmdline" 2>/dev/null || true)
      if [[ $cmd =~ $NGINX_RE ]]; then kill_wait "$pid"; continue; fi
    fi
    die "port $PORT is used by another program: $pid ($cmd)"
  done
  wait_port_free "$PORT" || die "port $PORT still busy"
}

already_running() {   # $1: fingerprint
  local n f
  n=$(our_pid "$NGINX_PID" "$NGINX_RE"); f=$(our_pid "$FCGI_PID" "$FCGI_RE")
  [ -n "$n" ] && [ -n "$f" ] && [ "$(cat "$READY" 2>/dev/null)" = "$1" ] && answers || return 1
  log "already running (nginx $n, fastcgi $f)"
}

write_ini() {   # $1: server dir
  cat >"$1/lemonldap-ng.ini" <<INI
; Generated by scripts/test-servers/lemonldap.sh (LLNG_DEFAULTCONFFILE points every LemonLDAP
; process here, lemonldap-ng-cli included)
[all]
logLevel = ${OAUTH2_TEST_LEMONLDAP_LOGLEVEL:-notice}
logger = Lemonldap::NG::Common::Logger::Std
userLogger = Lemonldap::NG::Common::Logger::Std
checkTime = 1

[configuration]
type = File
dirName = $1/conf
prettyPrint = 1
localStorage = Cache::FileCache
localStorageOptions = { 'namespace' => 'lemonldap-ng-config', 'default_expires_in' => 600, 'directory_umask' => '007', 'cache_root' => '$1/cache', 'cache_depth' => 3 }

[portal]
staticPrefix = /static
templateDir = /usr/share/lemonldap-ng/portal/templates
languages = en

[handler]
status = 0
useRedirectOnError = 1

[manager]
staticPrefix = /static
templateDir = /usr/share/lemonldap-ng/manager/htdocs/templates
languages = en
INI
}

# The test user, in an SQLite file read by LemonLDAP's DBI authentication and user backends.
write_users() {   # $1: server dir
  perl -MDBI -e '
    my $db = DBI->connect("dbi:SQLite:dbname=$ARGV[0]", "", "", { RaiseError => 1, PrintError => 0 });
    $db->do("CREATE TABLE users (user TEXT PRIMARY KEY, password TEXT NOT NULL, name TEXT, mail TEXT)");
    $db->do("INSERT INTO users VALUES (?, ?, ?, ?)", undef, @ARGV[1 .. 4]);
  ' "$1/users.db" "$TEST_USER" "$TEST_PASSWORD" "Alice" "alice@example.com"
}

# conf/lmConf-1.json, in the format the manager and lemonldap-ng-cli write.
write_conf() {   # $1: server dir
  local s=$1
  openssl genrsa -out "$s/keys/sig.key" 2048 2>/dev/null
  openssl req -new -x509 -key "$s/keys/sig.key" -subj /CN=llng-oidc -days 3650 -out "$s/keys/sig.crt" 2>/dev/null  # x5c in JWKS
  jq -n --arg s "$s" --arg b "$B" --arg iss "$ISS" --arg red "$REDIRECT_URI" --arg lo "$LOGOUT_URI" \
     --arg now "$(date +%s)" --arg key "$(openssl rand -hex 16)" \
     --arg pub "$PUBLIC_ID" --arg conf "$CONF_ID" --arg secret "$CONF_SECRET" \
     --arg web "$WEBAPP_ID" --arg websecret "$WEBAPP_SECRET" --arg app "$LEMONLDAP_WEBAPP_URL" \
     --rawfile pk "$s/keys/sig.key" --rawfile crt "$s/keys/sig.crt" '
  def rp(id): {
    oidcRPMetaDataOptionsDisplayName: id, oidcRPMetaDataOptionsClientID: id,
    oidcRPMetaDataOptionsRedirectUris: $red, oidcRPMetaDataOptionsPostLogoutRedirectUris: ($lo + " " + $red),
    oidcRPMetaDataOptionsAllowOffline: 1, oidcRPMetaDataOptionsRefreshToken: 1,
    oidcRPMetaDataOptionsRequirePKCE: 1, oidcRPMetaDataOptionsIDTokenSignAlg: "RS256",
    oidcRPMetaDataOptionsLogoutType: "front", oidcRPMetaDataOptionsLogoutSessionRequired: 1,
    oidcRPMetaDataOptionsLogoutBypassConfirm: 0 };
  {
    cfgNum: 1, cfgVersion: "2.16.1", cfgAuthor: "lemonldap.sh", cfgAuthorIP: "127.0.0.1", cfgDate: $now,
    cfgLog: "swift-oauth2 test server", key: $key,
    authentication: "DBI", userDB: "Same", passwordDB: "Null", registerDB: "Null",
    dbiAuthChain: ("dbi:SQLite:dbname=" + $s + "/users.db"), dbiAuthUser: "", dbiAuthPassword: "",
    dbiAuthTable: "users", dbiUserTable: "users", dbiAuthLoginCol: "user", dbiAuthPasswordCol: "password",
    dbiAuthPasswordHash: "", dbiDynamicHashEnabled: 0, userPivot: "user", dbiMailCol: "mail",
    dbiExportedVars: {uid: "user", cn: "name", mail: "mail"}, exportedVars: {},
    portal: ($b + "/"), domain: "127.0.0.1", cookieName: "lemonldap", securedCookie: 0, httpOnly: 1,
    whatToTrace: "uid", timeout: 72000, notification: 0, loginHistoryEnabled: 0,
    globalStorage: "Apache::Session::File",
    globalStorageOptions: {Directory: ($s + "/sessions"), LockDirectory: ($s + "/sessions/lock"),
                           generateModule: "Lemonldap::NG::Common::Apache::Session::Generate::SHA256"},
    persistentStorage: "Apache::Session::File",
    persistentStorageOptions: {Directory: ($s + "/psessions"), LockDirectory: ($s + "/psessions/lock")},
    localSessionStorage: "Cache::FileCache",
    localSessionStorageOptions: {cache_root: ($s + "/cache"), cache_depth: 3, default_expires_in: 600,
                                 directory_umask: "007", namespace: "lemonldap-ng-sessions"},
    locationRules: {"127.0.0.1": {default: "accept"}},
    issuerDBOpenIDConnectActivation: 1,
    oidcServiceMetaDataIssuer: $iss,
    oidcServicePrivateKeySig: $pk, oidcServicePublicKeySig: $crt, oidcServiceKeyIdSig: "llng-sig-1",
    oidcServiceAllowAuthorizationCodeFlow: 1, oidcServiceAllowImplicitFlow: 0, oidcServiceAllowHybridFlow: 0,
    oidcServiceAllowDynamicRegistration: 1,
    oidcServiceDynamicRegistrationExportedVars: {name: "cn", email: "mail", preferred_username: "uid"},
    oidcRPMetaDataOptions: {
      ($pub): (rp($pub) + {oidcRPMetaDataOptionsPublic: 1, oidcRPMetaDataOptionsBypassConsent: 0}),
      ($conf): (rp($conf) + {oidcRPMetaDataOptionsPublic: 0, oidcRPMetaDataOptionsClientSecret: $secret,
                             oidcRPMetaDataOptionsBypassConsent: 1,
                             oidcRPMetaDataOptionsAllowPasswordGrant: 1,
                             oidcRPMetaDataOptionsAllowClientCredentialsGrant: 1,
                             oidcRPMetaDataOptionsAccessTokenJWT: 1,
                             oidcRPMetaDataOptionsAccessTokenSignAlg: "RS256"}),
      # The web example app: front-channel logout with iss and sid ("session required");
      # ID tokens carry the user claims of the granted scopes (IDTokenForceClaims), among them
      # `sid` (the value LemonLDAP sends as the front-channel sid: the user id of the RP, uid here).
      ($web): {
        oidcRPMetaDataOptionsDisplayName: $web, oidcRPMetaDataOptionsClientID: $web,
        oidcRPMetaDataOptionsPublic: 0, oidcRPMetaDataOptionsClientSecret: $websecret,
        oidcRPMetaDataOptionsRedirectUris: ($app + "/auth/callback"),
        oidcRPMetaDataOptionsPostLogoutRedirectUris: ($app + "/"),
        oidcRPMetaDataOptionsRequirePKCE: 1, oidcRPMetaDataOptionsIDTokenSignAlg: "RS256",
        oidcRPMetaDataOptionsRefreshToken: 1, oidcRPMetaDataOptionsBypassConsent: 1,
        oidcRPMetaDataOptionsIDTokenForceClaims: 1,
        oidcRPMetaDataOptionsLogoutType: "front", oidcRPMetaDataOptionsLogoutUrl: ($app + "/auth/frontchannel-logout"),
        oidcRPMetaDataOptionsLogoutSessionRequired: 1, oidcRPMetaDataOptionsLogoutBypassConfirm: 0 } },
    oidcRPMetaDataExportedVars: {
      ($pub): {name: "cn", email: "mail", preferred_username: "uid"},
      ($conf): {name: "cn", email: "mail", preferred_username: "uid"},
      ($web): {name: "cn", email: "mail", preferred_username: "uid", sid: "uid"} },
    # Scope `sid` releases claim `sid`; its rule grants it on every sign-in of the app.
    oidcRPMetaDataOptionsExtraClaims: {($web): {sid: "sid"}},
    oidcRPMetaDataScopeRules: {($web): {sid: "1"}}
  }' >"$s/conf/lmConf-1.json"
}

# The portal vhost of /etc/lemonldap-ng/portal-nginx.conf on 127.0.0.1:$PORT; nothing of the
# system's nginx setup but mime.types and fastcgi_params.
write_nginx() {   # $1: server dir
  local s=$1 user=""
  [ "$(id -u)" -ne 0 ] || user="user $RUNAS;"
  cat >"$DIR/nginx.conf" <<NGX
# Generated by scripts/test-servers/lemonldap.sh
$user
worker_processes 1;
daemon on;
pid "$NGINX_PID";
error_log "$DIR/nginx-error.log" warn;
events { worker_connections 256; }
http {
  include /etc/nginx/mime.types;
  access_log "$DIR/nginx-access.log";
  client_body_temp_path "$s/tmp/body"; fastcgi_temp_path "$s/tmp/fastcgi"; proxy_temp_path "$s/tmp/proxy";
  uwsgi_temp_path "$s/tmp/uwsgi"; scgi_temp_path "$s/tmp/scgi";
  upstream llng_portal_upstream { server unix:$s/llng-fastcgi.sock; }
  server {
    listen 127.0.0.1:$PORT;
    server_name _;
    root /usr/share/lemonldap-ng/portal/htdocs/;
    if (\$uri !~ ^/((static|javascript|favicon).*|.*\.psgi)) { rewrite ^/(.*)\$ /index.psgi/\$1 break; }
    location ~ ^(?<sc>/.*\.psgi)(?:\$|/) {
      include /etc/nginx/fastcgi_params;
      fastcgi_pass llng_portal_upstream;
      fastcgi_param HTTP_HOST \$http_host;
      fastcgi_param LLTYPE psgi;
      fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
      fastcgi_split_path_info ^(.*\.psgi)(/.*)\$;
      fastcgi_param PATH_INFO \$fastcgi_path_info;
      location ~ ^/index.psgi/(adminSessions|proxy|sessions|config|notification) { deny all; }
    }
    index index.psgi;
    location / { try_files \$uri \$uri/ =404; }
    location /static/ { alias /usr/share/lemonldap-ng/portal/htdocs/static/; }
    location /javascript/ { alias /usr/share/javascript/; }
  }
}
NGX
}

fail_start() {   # $1: message, $2: server dir
  { echo "--- $2/llng.log"; grep -v -e "Initialization failed" -e "^FastCGI" "$2/llng.log" 2>/dev/null | tail -n 20
    echo "--- $DIR/nginx-error.log"; tail -n 5 "$DIR/nginx-error.log" 2>/dev/null; } >&2 || true
  do_stop
  die "$1"
}

do_start() {
  local fp s fpid npid nginx i t0=$SECONDS
  fp=$(fingerprint "${BASH_SOURCE[0]}")
  already_running "$fp" && return 0
  # shellcheck disable=SC2086  # a word list
  ensure_debs $LEMONLDAP_DEBS
  nginx=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
  do_stop
  s=$(srv_dir)
  case $s in /*/*) ;; *) die "bad server directory $s" ;; esac
  rm -rf "$DIR" "$s"; mkdir -p "$DIR" "$s"/{conf,sessions/lock,psessions/lock,cache,tmp,keys}
  [ "$s" = "$DIR/srv" ] || { ln -s "$s" "$DIR/srv"; log "server files in $s ($RUNAS cannot use $DIR)"; }
  write_ini "$s"; write_users "$s"; write_conf "$s"; write_nginx "$s"
  chown -R "$RUNAS:" "$s"; chmod 700 "$s"

  # The FastCGI server (2 workers; each compiles the portal on its first request, ~0.5 s):
  # own session, no stdin, lock fd closed, so it outlives this script and holds no lock.
  local run=(); [ "$(id -u)" -ne 0 ] || run=(-u "$RUNAS" -g "$RUNAS")
  LLNG_DEFAULTCONFFILE=$s/lemonldap-ng.ini LLNG_DEFAULTLOGGER=Lemonldap::NG::Common::Logger::Std \
    setsid llng-fastcgi-server --foreground "${run[@]}" -n 2 -s "$s/llng-fastcgi.sock" -p "$s/llng-fastcgi.pid" \
    >"$s/llng.log" 2>&1 </dev/null 9>&- &
  fpid=$!; echo "$fpid" >"$FCGI_PID"
  for ((i = 0; i < 100; i++)); do
    [ -S "$s/llng-fastcgi.sock" ] && break
    alive "$fpid" || fail_start "llng-fastcgi-server exited at start (log: $s/llng.log)" "$s"
    sleep 0.1
  done
  [ -S "$s/llng-fastcgi.sock" ] || fail_start "no FastCGI socket after 10 s" "$s"
  # daemon on: nginx forks and returns; -e keeps its startup log out of /var/log/nginx.
  "$nginx" -p "$DIR/" -c "$DIR/nginx.conf" -e "$DIR/nginx-error.log" 9>&- || fail_start "nginx failed to start" "$s"
  for ((i = 0; i < 300; i++)); do
    answers && break
    grep -q "Initialization failed" "$s/llng.log" && fail_start "the portal failed to initialize" "$s"
    alive "$fpid" || fail_start "llng-fastcgi-server exited (log: $s/llng.log)" "$s"
    sleep 0.1
  done
  npid=$(our_pid "$NGINX_PID" "$NGINX_RE")
  if [ -z "$npid" ] || ! answers; then fail_start "no discovery document at $ISS after 30 s" "$s"; fi
  [ "$(curl -s --max-time 5 "$ISS/.well-known/openid-configuration" | jq -r .issuer)" = "$ISS" ] \
    || fail_start "the discovery document names another issuer" "$s"
  echo "$fp" >"$READY"
  log "started (nginx $npid, fastcgi $fpid) in $((SECONDS - t0)) s, issuer $ISS"
}

do_cli() {
  local s; s=$(readlink -f "$DIR/srv" 2>/dev/null || true)
  [ -f "${s:-/nonexistent}/lemonldap-ng.ini" ] || die "not started ($DIR/srv)"
  local run=(); [ "$(id -u)" -ne 0 ] || run=(runuser -u "$RUNAS" --)
  "${run[@]}" env LLNG_DEFAULTCONFFILE="$s/lemonldap-ng.ini" LLNG_DEFAULTLOGGER=Lemonldap::NG::Common::Logger::Std \
    "$CLI" -yes 1 "$@"
}

case "${1:-}" in
  start) take_lock lemonldap; do_start ;;
  stop) take_lock lemonldap; do_stop; log "stopped" ;;
  status) do_status ;;
  cli) shift; do_cli "$@" ;;
  *) echo "usage: $0 start|stop|status|cli ARGS..." >&2; exit 2 ;;
esac
