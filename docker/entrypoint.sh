#!/usr/bin/env bash
# The guest's entrypoint, run as the non-root desktop user. Starts, in order:
# Xvfb, openbox, the applications (optional), agentd; then watches them.
# Everything but agentd is started through `agentd app`, which closes
# agentd's private directory (the token) to it and to whatever it starts,
# with Landlock: the desktop's applications run as agentd's user, and a page
# or the model could otherwise have Firefox open file:///run/agentd/token.
# A kernel without Landlock fails the start rather than run them open.
# Nothing is restarted: when any of them ends, the others are stopped and the
# container exits non-zero, saying which one ended. SIGTERM (docker stop)
# stops them all in reverse order and exits 0.
#
# Environment:
#   DISPLAY        the X display to create (:99)
#   SCREEN_SIZE    WxH or WxHxD, D 24 or 16 (1440x900)
#   GUEST_APPS     space-separated, started in this order, any of:
#                  form (the exercise's pickup form on 127.0.0.1:8080, results
#                  in $HOME/form), firefox, mousepad (none)
#   GUEST_URL      the page Firefox opens (about:blank)
#   GUEST_FILE     the file Mousepad opens, created empty if missing; relative
#                  to $HOME (none)
#   GUEST_CONFIG_DIR  optional configuration, each part used when present:
#                  openbox-rc.xml (window manager rules), firefox-profile/
#                  (copied as the browser profile), mousepad-config/ (the
#                  editor's XDG_CONFIG_HOME, copied) — exercise.WriteConfig
#                  writes such a directory
#   AGENTD_LISTEN  agentd's TCP address (127.0.0.1:7010)
#   AGENTD_HIDE    more paths closed to the desktop's applications, space-
#                  separated (a VM guest's copy of the token); optional
#   AGENTD_CODE    1: agentd serves Python code execution (--code); empty or
#                  0: it refuses it (empty)
#   AGENTD_BROWSER 1: agentd starts Chromium for the browser toolset
#                  (--browser); the container needs docker.BrowserSeccomp
#                  for Chromium's sandbox; empty or 0: no browser (empty)
#   XAUTHORITY     the X cookie file, written fresh at every start
# agentd's private directory /run/agentd (a bind mount, 0700) must hold the
# token file "token" (0600, owned by this user); agentd's unix socket
# "agentd.sock" is created next to it.
set -euo pipefail

display="${DISPLAY:-:99}"
size="${SCREEN_SIZE:-1440x900}"
apps="${GUEST_APPS:-}"
url="${GUEST_URL:-about:blank}"
file="${GUEST_FILE:-}"
config_dir="${GUEST_CONFIG_DIR:-}"
listen="${AGENTD_LISTEN:-127.0.0.1:7010}"
code="${AGENTD_CODE:-}"
browser="${AGENTD_BROWSER:-}"
run_dir=/run/agentd
token_file="$run_dir/token"
socket="$run_dir/agentd.sock"
# Read by the healthcheck; private to the container.
addr_file=/tmp/agentd.addr
start_timeout=60

say() { echo "entrypoint: $*" >&2; }
# mark WHAT: a start milestone at the wall clock (a container shares the
# host's), read back by docker.Guest.StartMilestones for the start's
# breakdown; EPOCHREALTIME costs no fork.
mark() { echo "entrypoint: mark $1 ${EPOCHREALTIME/,/.}" >&2; }
die() { say "$*"; exit 1; }

declare -a names=() pids=()

# stop_all stops the children one at a time in reverse start order (agentd
# first, so it releases every key while the display is still there): TERM,
# then KILL after two seconds.
stop_all() {
  local i n
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || continue
    for ((n = 0; n < 20; n++)); do
      kill -0 "${pids[i]}" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "${pids[i]}" 2>/dev/null || true
  done
}

on_signal() {
  say "stopping (signal)"
  stop_all
  exit 0
}
trap on_signal TERM INT

# start NAME CMD...: starts a child and records it.
start() {
  local name="$1"
  shift
  "$@" &
  names+=("$name")
  pids+=($!)
  say "started $name (pid $!)"
}

# check_children fails the start when a child already ended.
check_children() {
  local i status
  for i in "${!pids[@]}"; do
    if ! kill -0 "${pids[i]}" 2>/dev/null; then
      status=0
      wait "${pids[i]}" || status=$?
      stop_all
      die "${names[i]} exited during start (status $status)"
    fi
  done
}

# wait_for WHAT CMD...: polls CMD until it succeeds, bounded, while checking
# that every child is still running.
wait_for() {
  local what="$1" deadline=$((SECONDS + start_timeout))
  shift
  until "$@" >/dev/null 2>&1; do
    check_children
    ((SECONDS < deadline)) || { stop_all; die "timed out after ${start_timeout}s waiting for $what"; }
    sleep 0.1
  done
}

# has_window CLASS: the window manager manages a window whose WM_CLASS
# class is CLASS (applications make hidden helper windows of the same class
# first).
has_window() {
  local id
  for id in $(xprop -root _NET_CLIENT_LIST | grep -o '0x[0-9a-f]*'); do
    xprop -id "$id" WM_CLASS | grep -qF "\"$1\"" && return 0
  done
  return 1
}

mark begin
[ "$(id -u)" -ne 0 ] || die "refusing to run as root: run the container with a non-root --user"
[[ "$size" =~ ^([0-9]+)x([0-9]+)(x(24|16))?$ ]] || die "SCREEN_SIZE=$size: want WxH or WxHxD (D 24 or 16)"
width="${BASH_REMATCH[1]}" height="${BASH_REMATCH[2]}" depth="${BASH_REMATCH[4]:-24}"
[[ "$display" =~ ^:([0-9]+)$ ]] || die "DISPLAY=$display: want :N"
dnum="${BASH_REMATCH[1]}"
[ -d "$run_dir" ] && [ -w "$run_dir" ] || die "$run_dir is missing or not writable by uid $(id -u): bind-mount agentd's private directory there"
[ -r "$token_file" ] || die "no readable token file at $token_file: write the token there (mode 0600, owner uid $(id -u))"
for app in $apps; do
  case "$app" in
    form | firefox | mousepad) ;;
    *) die "GUEST_APPS: unknown application $app (form, firefox, mousepad)" ;;
  esac
done
[[ "$code" =~ ^[01]?$ ]] || die "AGENTD_CODE=$code: want 1, 0 or empty"
[[ "$browser" =~ ^[01]?$ ]] || die "AGENTD_BROWSER=$browser: want 1, 0 or empty"
[ -z "$config_dir" ] || [ -d "$config_dir" ] || die "GUEST_CONFIG_DIR=$config_dir is not a directory"
if [ -n "$file" ] && [[ "$file" != /* ]]; then
  file="$HOME/$file"
fi
# The desktop's programs start through this (see the top).
sandbox=(agentd app --hide "$run_dir")
for p in ${AGENTD_HIDE:-}; do
  sandbox+=(--hide "$p")
done
sandbox+=(--)

# What a previous run of this container left (a restart keeps the writable
# layer when /tmp is not a tmpfs): the X lock and socket, agentd's socket.
rm -f "/tmp/.X$dnum-lock" "/tmp/.X11-unix/X$dnum" "$socket" "$addr_file"

export XAUTHORITY="${XAUTHORITY:-$HOME/.Xauthority}"
(umask 077 && : >"$XAUTHORITY" && xauth -q -f "$XAUTHORITY" add "$display" . "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')")
# Xvfb, not being root, does not make the socket directory itself.
mkdir -p -m 1777 /tmp/.X11-unix
# GTK applications without a session bus: no accessibility bus, settings
# kept in memory (otherwise every change warns about dbus-launch).
export NO_AT_BRIDGE=1 GSETTINGS_BACKEND=memory

# -noreset: without it the server resets when its last client leaves, and
# a client connecting during the reset (openbox right after the probe) fails.
start xvfb "${sandbox[@]}" Xvfb "$display" -screen 0 "${width}x${height}x${depth}" -nolisten tcp -noreset -auth "$XAUTHORITY"
export DISPLAY="$display"
wait_for "the display $display" xdpyinfo
mark xvfb

# openbox runs its --startup command once it manages windows: a window
# mapped earlier, while it still starts up (after it has announced itself
# with _NET_SUPPORTING_WM_CHECK), can be left unmapped for good.
wm_ready=/tmp/openbox-ready
rm -f "$wm_ready"
wm_args=(--sm-disable --startup "touch $wm_ready")
# Copied out of the config directory: it lies in agentd's private
# directory, which the sandbox closes to openbox.
if [ -n "$config_dir" ] && [ -f "$config_dir/openbox-rc.xml" ]; then
  cp "$config_dir/openbox-rc.xml" "$HOME/openbox-rc.xml"
  wm_args+=(--config-file "$HOME/openbox-rc.xml")
fi
start openbox "${sandbox[@]}" openbox "${wm_args[@]}"
wait_for "the window manager" test -e "$wm_ready"
mark openbox

# The window classes are the exercise's (exercise.BrowserClass and
# EditorClass): its window manager rules place windows by them.
for app in $apps; do
  case "$app" in
    form)
      start form "${sandbox[@]}" pickup-form --listen 127.0.0.1:8080 --dir "$HOME/form"
      wait_for "the form server" bash -c ': </dev/tcp/127.0.0.1/8080'
      mark form
      ;;
    firefox)
      rm -rf "$HOME/firefox-profile"
      if [ -n "$config_dir" ] && [ -d "$config_dir/firefox-profile" ]; then
        # -L: a Kubernetes ConfigMap volume's entries are symbolic links
        # (into ..data/); copied as links they would dangle in the home.
        cp -rL "$config_dir/firefox-profile" "$HOME/firefox-profile"
      else
        mkdir -p "$HOME/firefox-profile"
      fi
      # Never --no-sandbox: the content processes keep their seccomp sandbox.
      MOZ_CRASHREPORTER_DISABLE=1 start firefox "${sandbox[@]}" firefox-esr --new-instance --profile "$HOME/firefox-profile" \
        --class agentd-browser "$url"
      wait_for "a Firefox window" has_window agentd-browser
      mark firefox
      ;;
    mousepad)
      mousepad_args=(--disable-server --class agentd-editor --encoding UTF-8)
      if [ -n "$file" ]; then
        mkdir -p "$(dirname "$file")"
        [ -e "$file" ] || : >"$file"
        mousepad_args+=("$file")
      fi
      # Settings from a key file instead of dconf: there is no session bus.
      rm -rf "$HOME/mousepad-config"
      mkdir -p "$HOME/mousepad-config"
      if [ -n "$config_dir" ] && [ -d "$config_dir/mousepad-config" ]; then
        cp -r "$config_dir/mousepad-config/." "$HOME/mousepad-config/"
      fi
      GSETTINGS_BACKEND=keyfile XDG_CONFIG_HOME="$HOME/mousepad-config" start mousepad "${sandbox[@]}" mousepad "${mousepad_args[@]}"
      wait_for "a Mousepad window" has_window agentd-editor
      mark mousepad
      ;;
  esac
done

agentd_args=(--display "$display" --listen "$listen" --addr-file "$addr_file" --token-file "$token_file" --socket "$socket")
[ "$code" != 1 ] || agentd_args+=(--code)
[ "$browser" != 1 ] || agentd_args+=(--browser)
start agentd agentd "${agentd_args[@]}"
mark agentd-started

# Watch: the first child to end ends the container.
status=0
ended=""
wait -n -p ended "${pids[@]}" || status=$?
for i in "${!pids[@]}"; do
  [ "${pids[i]}" = "$ended" ] && name="${names[i]}"
done
say "${name:-a child} exited (status $status); stopping the others"
stop_all
exit $((status == 0 ? 1 : status))
