#!/usr/bin/env bash
# Waits inside the VM, for at most SECONDS, until the desktop's agentd passes
# docker/healthcheck.sh; fails at once, with the service's last log lines,
# when agentd-desktop.service stops.
#
#   wait-ready.sh SECONDS    (root)
set -euo pipefail

timeout="${1:?usage: wait-ready.sh SECONDS}"
unit=agentd-desktop.service
deadline=$((SECONDS + timeout))

fail() {
  echo "wait-ready: $*" >&2
  journalctl -u "$unit" -n 30 --no-pager -o cat >&2 || true
  exit 1
}

until /opt/agentd/healthcheck.sh 2>/dev/null; do
  state="$(systemctl is-active "$unit" || true)"
  [ "$state" = active ] || fail "$unit is $state"
  ((SECONDS < deadline)) || fail "agentd not healthy after ${timeout}s"
  sleep 1
done
echo "wait-ready: agentd is healthy" >&2
