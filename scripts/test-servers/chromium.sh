#!/usr/bin/env bash
# The headless browser the browser sign-in tests use as $BROWSER: Debian's Chromium and
# ChromeDriver, and Selenium (pinned, from PyPI) in a venv of its own. Not a server: nothing
# runs between tests; Tests/Support/browser/oauth2-browser starts a Chromium per sign-in.
#   chromium.sh install   install whichever part is missing (no apt-get, no pip when none is)
#   chromium.sh status    exit 0 if Chromium, ChromeDriver (same version) and the venv are there;
#                         prints their versions (and what is missing, on stderr)
#   chromium.sh python    print the venv's python (what oauth2-browser runs under)
# State: $STATE/chromium/venv (Selenium), $STATE/chromium/pip.log.
set -euo pipefail
NAME="chromium"
# shellcheck source=scripts/test-servers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DIR=$STATE/chromium VENV=$STATE/chromium/venv
# The browser binary itself, not /usr/bin/chromium: that is a shell wrapper that adds flags of
# its own and, where /dev/shm is mounted twice, prints "[: ...: unexpected operator".
CHROMIUM_BIN=/usr/lib/chromium/chromium CHROMEDRIVER_BIN=/usr/bin/chromedriver
# websocket-client comes with Selenium; oauth2-browser also opens a DevTools socket with it.
PINS=(selenium==4.51.0 websocket-client==1.9.2)

version_of() { "$1" --version 2>/dev/null | grep -o '[0-9][0-9.]*' | head -n 1; }

do_status() {
  local ok=0 c d
  c=$(version_of "$CHROMIUM_BIN" || true); d=$(version_of "$CHROMEDRIVER_BIN" || true)
  [ -n "$c" ] || { log "missing: $CHROMIUM_BIN (Debian chromium)"; ok=1; }
  [ -n "$d" ] || { log "missing: $CHROMEDRIVER_BIN (Debian chromium-driver)"; ok=1; }
  if [ -n "$c" ] && [ -n "$d" ] && [ "$c" != "$d" ]; then log "Chromium $c but ChromeDriver $d"; ok=1; fi
  venv_has_pins "$VENV" "${PINS[@]}" || { log "missing: venv $VENV with ${PINS[*]}"; ok=1; }
  [ "$ok" = 0 ] || return 1
  echo "Chromium $c, ChromeDriver $d, ${PINS[*]} in $VENV"
}

do_install() {
  # shellcheck disable=SC2086  # a word list
  ensure_debs $CHROMIUM_DEBS
  mkdir -p "$DIR"
  ensure_pinned_venv "$VENV" "$DIR/pip.log" "${PINS[@]}"
  do_status
}

case "${1:-}" in
  install) take_lock chromium; do_install ;;
  status) do_status ;;
  python) echo "$VENV/bin/python" ;;
  *) echo "usage: $0 install|status|python" >&2; exit 2 ;;
esac
