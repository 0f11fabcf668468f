#!/usr/bin/env bash
# End-to-end tests of the credential helpers `oauth2 git-credential` and
# `oauth2 kubectl-credential` with the real programs: Debian's git cloning, fetching and
# pushing over HTTPS from `git http-backend` (fcgiwrap) behind nginx, and the machine's
# /usr/bin/kubectl, where nginx's auth_request checks every request's token.
#
#   OAUTH2_TEST_WORKER=.build/debug/OAuth2TestWorker OAUTH2_TEST_PROVIDER=.build/debug/oauth2-test-provider \
#     Tests/CLI/tools.sh PATH-TO-oauth2
#
# What runs, all on 127.0.0.1, ephemeral ports, state in a temporary directory removed on exit:
# - two oauth2-test-provider processes: "long" (hour-long access tokens) and "short" (8 s, for
#   the renewal of an expired token);
# - the token check (OAuth2TestWorker bearer-check: OAuth2Web's ResourceServer and
#   TokenIntrospector at those providers): Bearer tokens, and git's Basic credential whose
#   password is the token;
# - nginx (HTTPS, a CA made here) in front of git http-backend under /long/ and /short/, and
#   of a few static kube-apiserver answers elsewhere; its listening socket is bound first
#   (port 0) and handed over in $NGINX, so no port is guessed;
# - fcgiwrap, running git http-backend (one process: no preforked children to outlive it).
# nginx, fcgiwrap, git and openssl are installed (apt-get) when absent; kubectl must be at
# /usr/bin/kubectl. A program that cannot be installed or started fails the run.
# Each passing check appends "tools <name>" to $OAUTH2_INTEGRATION_LOG. Exits 1 if any failed.
set -uo pipefail
BIN=${1:?usage: tools.sh PATH-TO-oauth2}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
WORKER=${OAUTH2_TEST_WORKER:?tools.sh needs OAUTH2_TEST_WORKER, the OAuth2TestWorker binary}
PROVIDER=${OAUTH2_TEST_PROVIDER:?tools.sh needs OAUTH2_TEST_PROVIDER, the oauth2-test-provider binary}
KUBECTL=${OAUTH2_TEST_KUBECTL:-/usr/bin/kubectl}
LOG=${OAUTH2_INTEGRATION_LOG:-/dev/null}
SHORT_LIFETIME=8
WORK=$(mktemp -d)
chmod 755 "$WORK"   # nginx workers and fcgiwrap's children read below it
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "${OAUTH2_TOOLS_KEEP:-0}" = 1 ]; then echo "tools: state kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export OAUTH2_CONFIG_DIR=$WORK/config HOME=$WORK/home
mkdir -p "$HOME"
# git: no system or user configuration but ours, and never a prompt (a prompt would mean the
# helper failed to answer).
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=$WORK/gitconfig GIT_TERMINAL_PROMPT=0 GIT_ASKPASS= SSH_ASKPASS=
unset GIT_DIR GIT_WORK_TREE
failures=0

fatal() { echo "FAIL tools: $*"; for f in "$WORK"/*.err "$WORK"/nginx/error.log; do [ -s "$f" ] && { echo "---- $f"; tail -n 20 "$f"; }; done; exit 1; }
# check NAME EXPECTED-RC COMMAND...: as e2e.sh's (stdout in $WORK/out, stderr in $WORK/err).
check() {
  local name=$1 want=$2; shift 2
  "$@" >"$WORK/out" 2>"$WORK/err"; local rc=$?
  if [ "$rc" = "$want" ]; then
    echo "tools $name" >>"$LOG"; echo "ok   tools: $name"
  else
    failures=$((failures + 1)); echo "FAIL tools: $name (exit $rc, expected $want)"
    sed 's/^/     | /' "$WORK/err" | tail -n 15
  fi
}
expect() {
  local what=$1; shift
  if ! "$@"; then failures=$((failures + 1)); echo "FAIL   $what"; sed 's/^/     | /' "$WORK/out" "$WORK/err" | head -n 8; fi
}
# count PATTERN FILE: the lines of FILE matching PATTERN.
count() { grep -c -- "$1" "$2" 2>/dev/null || true; }

echo "== programs"
missing=()
command -v nginx >/dev/null || missing+=(nginx)
command -v fcgiwrap >/dev/null || missing+=(fcgiwrap)
command -v git >/dev/null && [ -x "$(git --exec-path 2>/dev/null)/git-http-backend" ] || missing+=(git)
command -v openssl >/dev/null || missing+=(openssl)
command -v python3 >/dev/null || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  sudo=(); [ "$(id -u)" = 0 ] || sudo=(sudo -n)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >"$WORK/apt.err" 2>&1 \
    || { "${sudo[@]}" apt-get update >>"$WORK/apt.err" 2>&1 && "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >>"$WORK/apt.err" 2>&1; } \
    || fatal "apt-get install ${missing[*]} failed"
fi
[ -x "$KUBECTL" ] || fatal "no kubectl at $KUBECTL (the machine image's)"
HTTP_BACKEND=$(git --exec-path)/git-http-backend
echo "git $(git --version | cut -d' ' -f3), $(nginx -v 2>&1 | cut -d' ' -f3), kubectl at $KUBECTL"

# start NAME COMMAND...: runs COMMAND in the background (stdout $WORK/NAME.out, stderr
# $WORK/NAME.err), waits up to 60 s for its first line of output and sets $FIRST to it.
start() {
  local name=$1 i; shift
  "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  pids+=($!)
  for ((i = 0; i < 600; i++)); do
    if grep -q . "$WORK/$name.out" 2>/dev/null; then FIRST=$(head -n 1 "$WORK/$name.out"); return 0; fi
    kill -0 "${pids[-1]}" 2>/dev/null || fatal "$name exited at start"
    sleep 0.1
  done
  fatal "$name printed nothing within 60 s"
}

echo "== servers"
start provider-long "$PROVIDER"; LONG=$FIRST
start provider-short "$PROVIDER" --access-token-lifetime "$SHORT_LIFETIME"; SHORT=$FIRST
start checker "$WORKER" bearer-check "long=$LONG" "short=$SHORT" "kube=$LONG"; CHECKER=${FIRST#LISTENING }
CHECKS=$WORK/checker.out
echo "providers $LONG $SHORT, token check $CHECKER"

# The TLS certificate authority and nginx's certificate for 127.0.0.1.
mkdir -p "$WORK/tls"
(
  cd "$WORK/tls" &&
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 \
      -subj "/CN=oauth2 tools test CA" -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr -subj "/CN=127.0.0.1" &&
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >ext.cnf &&
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile ext.cnf
) >"$WORK/openssl.err" 2>&1 || fatal "openssl could not make the certificates"

# The repositories: a bare one with a first commit.
REPOS=$WORK/repos
mkdir -p "$REPOS"
git init -q --bare -b main "$REPOS/project.git" && git -C "$REPOS/project.git" config http.receivepack true \
  && git init -q -b main "$WORK/seed" && printf 'hello\n' >"$WORK/seed/README" && git -C "$WORK/seed" add README \
  && git -C "$WORK/seed" -c user.name=seed -c user.email=seed@example.com commit -q -m first \
  && git -C "$WORK/seed" push -q "$REPOS/project.git" main || fatal "git could not make the repository"

start fcgiwrap sh -c "echo started; exec fcgiwrap -s 'unix:$WORK/fcgiwrap.sock'"

# Static answers of a kube-apiserver (discovery), served only past the token check.
mkdir -p "$WORK/www"
printf '{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1:443"}]}\n' >"$WORK/www/api"
printf '{"kind":"APIGroupList","apiVersion":"v1","groups":[]}\n' >"$WORK/www/apis"
printf 'ok\n' >"$WORK/www/healthz"
# (the google-cloud-sdk kubectl is a dispatcher that asks the server's version first)
printf '{"major":"1","minor":"32","gitVersion":"v1.32.4"}\n' >"$WORK/www/version"

mkdir -p "$WORK/nginx/tmp"
# git http-backend behind the check of /_check/<issuer name>, as the verified subject.
git_location() {
  cat <<EOF
    location ~ ^/$1(?<git_path>/.*)\$ {
      auth_request /_check/$1;
      auth_request_set \$oauth2_subject \$upstream_http_x_oauth2_subject;
      client_max_body_size 0;
      fastcgi_param SCRIPT_FILENAME $HTTP_BACKEND;
      fastcgi_param GIT_PROJECT_ROOT $REPOS;
      fastcgi_param GIT_HTTP_EXPORT_ALL "";
      fastcgi_param REMOTE_USER \$oauth2_subject;
      fastcgi_param PATH_INFO \$git_path;
      fastcgi_param QUERY_STRING \$query_string;
      fastcgi_param REQUEST_METHOD \$request_method;
      fastcgi_param CONTENT_TYPE \$content_type;
      fastcgi_param CONTENT_LENGTH \$content_length;
      fastcgi_param GIT_PROTOCOL \$http_git_protocol;
      fastcgi_pass unix:$WORK/fcgiwrap.sock;
    }
    location = /_check/$1 {
      internal;
      proxy_pass $CHECKER/check/$1;
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
    }
EOF
}
# Workers as root when started as root: the state directory may lie under a private home.
cat >"$WORK/nginx/nginx.conf.in" <<EOF
daemon off;
worker_processes 1;
$( [ "$(id -u)" = 0 ] && echo "user root;" )
error_log $WORK/nginx/error.log info;
pid $WORK/nginx/nginx.pid;
events { worker_connections 64; }
http {
  log_format tools '\$request_method \$uri \$status \$oauth2_subject';
  access_log $WORK/nginx/access.log tools;
  client_body_temp_path $WORK/nginx/tmp/body;
  proxy_temp_path $WORK/nginx/tmp/proxy;
  fastcgi_temp_path $WORK/nginx/tmp/fastcgi;
  uwsgi_temp_path $WORK/nginx/tmp/uwsgi;
  scgi_temp_path $WORK/nginx/tmp/scgi;
  server {
    listen 127.0.0.1:@PORT@ ssl;
    ssl_certificate $WORK/tls/server.pem;
    ssl_certificate_key $WORK/tls/server.key;
    location = /alive { return 204; }
$(git_location long)
$(git_location short)
    location / {
      auth_request /_check/kube;
      auth_request_set \$oauth2_subject \$upstream_http_x_oauth2_subject;
      default_type application/json;
      root $WORK/www;
    }
    location = /_check/kube {
      internal;
      proxy_pass $CHECKER/check/kube;
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
    }
  }
}
EOF
# nginx cannot listen on port 0: this binds it (the kernel picks a free port), writes the port
# into the configuration and execs nginx with the socket inherited ($NGINX).
LAUNCH='
import os, socket, sys
conf = sys.argv[1]
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(128); os.set_inheritable(s.fileno(), True)
port = s.getsockname()[1]
open(conf, "w").write(open(conf + ".in").read().replace("@PORT@", str(port)))
os.environ["NGINX"] = "%d;" % s.fileno()
print(port, flush=True)
os.execvp("nginx", ["nginx", "-e", os.path.dirname(conf) + "/error.log", "-p", os.path.dirname(conf), "-c", conf])
'
start nginx python3 -c "$LAUNCH" "$WORK/nginx/nginx.conf"; PORT=$FIRST
BASE=https://127.0.0.1:$PORT
for ((i = 0; i < 300; i++)); do
  curl -s -o /dev/null --cacert "$WORK/tls/ca.pem" "$BASE/alive" && break
  kill -0 "${pids[-1]}" 2>/dev/null || fatal "nginx exited at start"
  sleep 0.1
done
curl -s -o /dev/null --cacert "$WORK/tls/ca.pem" "$BASE/alive" || fatal "nginx does not answer at $BASE"
echo "nginx at $BASE"

# A "browser" for `oauth2 login` at the test provider, which signs its demo user in at once:
# follows the authorization redirect to the loopback listener.
cat >"$WORK/browser.sh" <<'EOF'
#!/bin/sh
location=$(curl -s -o /dev/null -w '%{redirect_url}' "$1") && [ -n "$location" ] && curl -s -o /dev/null "$location"
EOF
chmod +x "$WORK/browser.sh"
login() {  # PROFILE ISSUER
  check "login ($1)" 0 env BROWSER="$WORK/browser.sh" "$BIN" --profile "$1" login --store file --issuer "$2" \
    --client-id oauth2-demo --scope "openid offline_access" --timeout 60
}
# helper_get PROFILE PATH: what `git credential fill` would get for $BASE/PATH (stdout).
helper_get() {
  printf 'protocol=https\nhost=127.0.0.1:%s\npath=%s\n\n' "$PORT" "$2" | "$BIN" git-credential --profile "$1" get
}
password_of() { sed -n 's/^password=//p' "$1"; }

# The machine's GIT_SSL_CAINFO (if any) would win over http.sslCAInfo.
export GIT_SSL_CAINFO=$WORK/tls/ca.pem
cat >"$GIT_CONFIG_GLOBAL" <<EOF
[user]
  name = tools test
  email = tools@example.com
[init]
  defaultBranch = main
[http]
  sslCAInfo = $WORK/tls/ca.pem
[credential "$BASE"]
  helper = "!'$BIN' git-credential --profile git --host 127.0.0.1"
EOF

echo "== nginx refuses requests without a good token"
check "git over HTTPS without a credential: 401 with a Basic challenge" 0 \
  curl -s -o /dev/null -D "$WORK/headers" -w '%{http_code}' --cacert "$WORK/tls/ca.pem" "$BASE/long/project.git/info/refs?service=git-upload-pack"
expect "... 401" test "$(cat "$WORK/out")" = 401
expect "... WWW-Authenticate: Basic" grep -qi '^www-authenticate: basic' "$WORK/headers"
printf 'Authorization: Basic %s\n' "$(printf 'oauth2:not-a-token' | base64)" >"$WORK/bad-header"
check "git over HTTPS with a password that is no token: 401" 0 \
  curl -s -o /dev/null -w '%{http_code}' --cacert "$WORK/tls/ca.pem" -H @"$WORK/bad-header" "$BASE/long/project.git/info/refs?service=git-upload-pack"
expect "... 401" test "$(cat "$WORK/out")" = 401

echo "== git"
login git "$LONG"
check "git clone over HTTPS, the helper's token as the password" 0 git clone -q "$BASE/long/project.git" "$WORK/clone"
expect "the clone has the first commit" test "$(cat "$WORK/clone/README" 2>/dev/null)" = hello
expect "the check saw git's Basic credential and accepted it" test "$(count 'authorized long basic demo-user-0001' "$CHECKS")" -ge 1
printf 'second\n' >>"$WORK/clone/README"
git -C "$WORK/clone" commit -q -am second
check "git push a commit" 0 git -C "$WORK/clone" push -q origin main
expect "the bare repository has the pushed commit" \
  test "$(git --git-dir "$REPOS/project.git" log -1 --format=%s main 2>/dev/null)" = second
expect "git http-backend ran the push as the verified subject" grep -q "POST /long/project.git/git-receive-pack 200 demo-user-0001" "$WORK/nginx/access.log"
check "git fetch" 0 git -C "$WORK/clone" fetch -q origin
check "git-credential get (as git asks)" 0 helper_get git /long/project.git
expect "get answers username=oauth2, password and password_expiry_utc, nothing else" \
  sh -c "sed 's/=.*//' '$WORK/out' | tr '\n' ' ' | grep -qx 'username password password_expiry_utc '"
expect "get printed nothing on stderr" test ! -s "$WORK/err"
expires=$(sed -n 's/^password_expiry_utc=//p' "$WORK/out")
expect "password_expiry_utc is within the token's hour" test "${expires:-0}" -gt "$(date +%s)" -a "${expires:-0}" -le "$(($(date +%s) + 3600))"
check "git-credential get for another host: no answer" 0 \
  sh -c "printf 'protocol=https\nhost=git.example.com\n\n' | '$BIN' git-credential --profile git --host 127.0.0.1 get"
expect "... stdout empty" test ! -s "$WORK/out"
check "git-credential get over plain http to a remote host: no answer" 0 \
  sh -c "printf 'protocol=http\nhost=git.example.com\n\n' | '$BIN' git-credential --profile git get"
expect "... stdout empty" test ! -s "$WORK/out"
check "git-credential store: does nothing" 0 sh -c "printf 'protocol=https\nhost=127.0.0.1\nusername=oauth2\npassword=x\n\n' | '$BIN' git-credential --profile git store"

echo "== git: a refused token is erased, then renewed"
"$BIN" --profile git token --force-refresh >/dev/null 2>"$WORK/err" || fatal "token --force-refresh failed"
helper_get git /long/project.git >"$WORK/before" 2>/dev/null
check "revoke the access token at the provider (the refresh token stays)" 0 "$BIN" --profile git revoke --token access
check "git fetch with the revoked token fails (the host refuses it)" 128 git -C "$WORK/clone" fetch -q origin
expect "the check refused it" test "$(count 'refused long basic invalid_token' "$CHECKS")" -ge 1
expect "git's stderr shows no token" sh -c "! grep -qF -- \"\$(sed -n 's/^password=//p' '$WORK/before')\" '$WORK/err'"
helper_get git /long/project.git >"$WORK/after" 2>/dev/null
expect "erase renewed the refused token" test -n "$(password_of "$WORK/after")" -a "$(password_of "$WORK/after")" != "$(password_of "$WORK/before")"
check "git fetch after the erase: the new token, no prompt" 0 git -C "$WORK/clone" fetch -q origin

echo "== git: an expired token renewed between two fetches"
login short "$SHORT"
git -C "$WORK/clone" remote add short "$BASE/short/project.git"
# The same host with the short profile's helper: another global configuration.
sed "s/--profile git/--profile short/" "$GIT_CONFIG_GLOBAL" >"$WORK/gitconfig-short"
GIT_CONFIG_GLOBAL=$WORK/gitconfig-short
check "git fetch (short-lived tokens)" 0 git -C "$WORK/clone" fetch -q short
helper_get short /short/project.git >"$WORK/first" 2>/dev/null
printf 'Authorization: Basic %s\n' "$(printf 'oauth2:%s' "$(password_of "$WORK/first")" | base64 -w0)" >"$WORK/first-header"
# Wait, on the provider's clock, until that token has expired: nginx refuses it.
status=""
# A bound for hangs (4 min), not a timing assumption: the token lives 8 s on the provider's clock.
for ((i = 0; i < 480; i++)); do
  status=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$WORK/tls/ca.pem" -H @"$WORK/first-header" "$BASE/short/project.git/info/refs?service=git-upload-pack")
  [ "$status" = 401 ] && break
  sleep 0.5
done
check "the stored token has expired: nginx refuses it" 0 test "$status" = 401
check "git fetch after it expired: renewed by the helper, no prompt" 0 git -C "$WORK/clone" fetch -q short
helper_get short /short/project.git >"$WORK/second" 2>/dev/null
expect "the helper holds a new token" test -n "$(password_of "$WORK/second")" -a "$(password_of "$WORK/second")" != "$(password_of "$WORK/first")"

echo "== kubectl"
login kube "$LONG"
# The plugin through a wrapper that counts its runs and keeps kubectl's request.
cat >"$WORK/kube-plugin.sh" <<EOF
#!/bin/sh
echo run >>'$WORK/kube-runs'
printf '%s\n' "\$KUBERNETES_EXEC_INFO" >>'$WORK/kube-exec-info'
exec '$BIN' kubectl-credential --profile kube
EOF
chmod +x "$WORK/kube-plugin.sh"
kubeconfig() {  # FILE EXEC-API-VERSION
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: tools
  cluster:
    server: $BASE
    certificate-authority: $WORK/tls/ca.pem
users:
- name: oauth2
  user:
    exec:
      apiVersion: $2
      command: $WORK/kube-plugin.sh
      interactiveMode: Never
contexts:
- name: tools
  context: {cluster: tools, user: oauth2}
current-context: tools
EOF
}
kubeconfig "$WORK/kubeconfig" client.authentication.k8s.io/v1
kubectl_() { "$KUBECTL" --kubeconfig "$WORK/kubeconfig" --cache-dir "$WORK/kube-cache" "$@"; }
: >"$WORK/kube-runs"
before=$(count 'authorized kube bearer' "$CHECKS")
check "kubectl get --raw /healthz with the plugin's token" 0 kubectl_ get --raw /healthz
expect "kubectl printed the endpoint's answer" test "$(cat "$WORK/out")" = ok
expect "the request reached nginx with the token, and the check accepted it" \
  sh -c "grep -q '^GET /healthz 200 demo-user-0001\$' '$WORK/nginx/access.log' && test \$(grep -c 'authorized kube bearer demo-user-0001' '$CHECKS') -gt $before"
expect "kubectl sent KUBERNETES_EXEC_INFO of v1" grep -q '"apiVersion":"client.authentication.k8s.io/v1"' "$WORK/kube-exec-info"
check "kubectl-credential prints an ExecCredential" 0 "$BIN" --profile kube kubectl-credential
expect "... of v1, with the token and expirationTimestamp" \
  sh -c "grep -q '\"apiVersion\":\"client.authentication.k8s.io/v1\"' '$WORK/out' && grep -q '\"kind\":\"ExecCredential\"' '$WORK/out' && grep -q '\"token\":' '$WORK/out' && grep -Eq '\"expirationTimestamp\":\"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\"' '$WORK/out'"
stamp=$(sed -n 's/.*"expirationTimestamp":"\([^"]*\)".*/\1/p' "$WORK/out")
"$BIN" --profile kube status --json >"$WORK/status.json" 2>/dev/null
expires_at=$(sed -n 's/.*"expires_at" : "\([^"]*\)".*/\1/p' "$WORK/status.json")
expect "expirationTimestamp ($stamp) is not later than the token's expiry ($expires_at)" \
  test -n "$stamp" -a -n "$expires_at" -a "$(date -d "$stamp" +%s 2>/dev/null || echo 9999999999)" -le "$(date -d "$expires_at" +%s 2>/dev/null || echo 0)"
# (The first call also filled the cache of /usr/bin/kubectl, google-cloud-sdk's dispatcher
# to kubectl.1.NN, with the server's version: from now on one kubectl is one client.)
: >"$WORK/kube-runs"
check "kubectl api-versions (two requests in one kubectl)" 0 kubectl_ api-versions
expect "kubectl listed v1" grep -qx v1 "$WORK/out"
expect "both requests (/api and /apis) passed the check" \
  sh -c "grep -q '^GET /api 200 demo-user-0001\$' '$WORK/nginx/access.log' && grep -q '^GET /apis 200 demo-user-0001\$' '$WORK/nginx/access.log'"
expect "kubectl ran the plugin once for both (its cache, until expirationTimestamp, respected)" test "$(count run "$WORK/kube-runs")" = 1
kubeconfig "$WORK/kubeconfig" client.authentication.k8s.io/v1beta1
: >"$WORK/kube-exec-info"
check "kubectl with exec apiVersion v1beta1" 0 kubectl_ get --raw /healthz
expect "... answered as v1beta1" sh -c "test \"\$(cat '$WORK/out')\" = ok && grep -q 'client.authentication.k8s.io/v1beta1' '$WORK/kube-exec-info'"

echo "== after oauth2 logout"
GIT_CONFIG_GLOBAL=$WORK/gitconfig
check "logout (git)" 0 "$BIN" --profile git logout --no-end-session
check "git fetch after logout fails" 128 git -C "$WORK/clone" fetch -q origin
expect "... with the helper's one sentence on stderr" test "$(count '^oauth2: ' "$WORK/err")" = 1
expect "... which says to sign in again" grep -q '^oauth2: .*sign in' "$WORK/err"
expect "... and git stopped there, without prompting" grep -q "told us to quit" "$WORK/err"
check "git-credential get after logout: exit 5, quit=1" 5 helper_get git /long/project.git
expect "... quit=1 and no password" sh -c "grep -qx 'quit=1' '$WORK/out' && ! grep -q '^password=' '$WORK/out'"
check "logout (kube)" 0 "$BIN" --profile kube logout --no-end-session
check "kubectl after logout fails" 1 kubectl_ get --raw /healthz
expect "... with the plugin's sentence on stderr" grep -q 'oauth2: .*sign in' "$WORK/err"

if [ "$failures" -gt 0 ]; then echo "tools: $failures check(s) failed"; exit 1; fi
echo "tools: all checks passed"
