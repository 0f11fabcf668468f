#!/usr/bin/env bash
# A private desktop keyring for the Secret Service tests: a D-Bus session bus of its own
# and gnome-keyring-daemon on it, unlocked, with its files under $STATE/keyring.
#   keyring.sh start    install the packages if missing; (re)start bus and keyring unless up
#   keyring.sh stop     stop both
#   keyring.sh status   exit 0 if the keyring answers (stores and reads back a probe secret)
#   keyring.sh address  print the bus address (DBUS_SESSION_BUS_ADDRESS for a client)
# The bus has no service activation (its own config), so nothing else starts on it and a
# keyring that died shows as missing rather than being replaced by a locked one. Each start
# makes a fresh "login" keyring (password below), unlocked with `gnome-keyring-daemon --unlock`.
# State: $STATE/keyring: bus (socket), bus.conf, home/ (HOME: the keyring files), run/
# (XDG_RUNTIME_DIR), dbus.pid, keyring.pid, keyring.log, ready.
set -euo pipefail
NAME="keyring"
# shellcheck source=scripts/test-servers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DIR=$STATE/keyring
SOCKET=$DIR/bus ADDRESS=unix:path=$STATE/keyring/bus CONF=$DIR/bus.conf
BUS_PIDFILE=$DIR/dbus.pid PIDFILE=$DIR/keyring.pid LOG=$DIR/keyring.log READY=$DIR/ready
KEYRING_PASSWORD=swift-oauth2-test
BUS_RE="dbus-daemon .*--config-file=$CONF"
CMD_RE='gnome-keyring-daemon .*--unlock'

# What a keyring client runs with: only this bus, no X display, no desktop session.
client() { env -u DISPLAY -u WAYLAND_DISPLAY DBUS_SESSION_BUS_ADDRESS="$ADDRESS" "$@"; }

answers() {
  local value
  [ -S "$SOCKET" ] || return 1
  printf 'probe-%s' "$$" | client timeout 10 secret-tool store --label='swift-oauth2 probe' swift-oauth2-probe status \
    >/dev/null 2>&1 || return 1
  value=$(client timeout 10 secret-tool lookup swift-oauth2-probe status 2>/dev/null) || return 1
  [ "$value" = "probe-$$" ]
}

do_status() { answers; }

do_stop() {
  local pid
  pid=$(our_pid "$PIDFILE" "$CMD_RE"); [ -z "$pid" ] || stop_pids "$pid"
  pid=$(our_pid "$BUS_PIDFILE" "$BUS_RE"); [ -z "$pid" ] || stop_pids "$pid"
  rm -f "$PIDFILE" "$BUS_PIDFILE" "$READY" "$SOCKET"
}

already_up() {
  [ -n "$(our_pid "$BUS_PIDFILE" "$BUS_RE")" ] && [ -n "$(our_pid "$PIDFILE" "$CMD_RE")" ] \
    && [ "$(cat "$READY" 2>/dev/null)" = "$1" ] && answers || return 1
  log "already running (bus $ADDRESS)"
}

do_start() {
  local fp pid i t0=$SECONDS
  fp=$(fingerprint "${BASH_SOURCE[0]}")
  already_up "$fp" && return 0
  # shellcheck disable=SC2086  # a word list
  ensure_debs $KEYRING_DEBS
  do_stop
  [ ${#SOCKET} -lt 100 ] || die "socket path too long for a unix socket: $SOCKET (set OAUTH2_TEST_STATE_DIR shorter)"
  rm -rf "${DIR:?}/home" "${DIR:?}/run"
  mkdir -p "$DIR/home" "$DIR/run"; chmod 700 "$DIR/home" "$DIR/run"
  cat >"$CONF" <<XML
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>$ADDRESS</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
XML
  # --fork returns once the bus listens; fds 3 and 4 get its address and pid. Lock fd closed.
  dbus-daemon --config-file="$CONF" --fork --nopidfile --print-address=3 --print-pid=4 \
    3>"$DIR/address" 4>"$BUS_PIDFILE" 9>&- </dev/null >>"$LOG" 2>&1 || { cat "$LOG" >&2; die "dbus-daemon failed"; }
  pid=$(tr -dc '0-9' <"$BUS_PIDFILE")
  [ -n "$(our_pid "$BUS_PIDFILE" "$BUS_RE")" ] || die "dbus-daemon (pid $pid) is not running"
  # The keyring, in the foreground of its own session so that its pid is ours; --unlock reads
  # the password from stdin and creates the login keyring with it.
  (exec setsid env -u DISPLAY -u WAYLAND_DISPLAY -u XDG_DATA_HOME \
      HOME="$DIR/home" XDG_RUNTIME_DIR="$DIR/run" DBUS_SESSION_BUS_ADDRESS="$ADDRESS" \
      gnome-keyring-daemon --foreground --unlock --components=secrets \
      < <(printf '%s' "$KEYRING_PASSWORD") >>"$LOG" 2>&1 9>&-) &
  pid=$!; echo "$pid" >"$PIDFILE"
  for ((i = 0; i < 100; i++)); do
    answers && break
    pid_alive "$pid" || { cat "$LOG" >&2; do_stop; die "gnome-keyring-daemon exited at start (log: $LOG)"; }
    sleep 0.1
  done
  answers || { cat "$LOG" >&2; do_stop; die "the keyring does not answer after 10 s (log: $LOG)"; }
  echo "$fp" >"$READY"
  log "started (bus $ADDRESS, keyring pid $pid) in $((SECONDS - t0)) s"
}

case "${1:-}" in
  start) take_lock keyring; do_start ;;
  stop) take_lock keyring; do_stop; log "stopped" ;;
  status) do_status ;;
  address) echo "$ADDRESS" ;;
  *) echo "usage: $0 start|stop|status|address" >&2; exit 2 ;;
esac
