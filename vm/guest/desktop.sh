#!/usr/bin/env bash
# The VM desktop's start, run as the desktop user by agentd-desktop.service:
# the environment from /etc/agentd/guest.env, the token put where
# docker/entrypoint.sh reads it, then that entrypoint, so a VM desktop is
# the Docker desktop.
set -euo pipefail
set -a
# shellcheck source=/dev/null
. /etc/agentd/guest.env
set +a
cd "$HOME"
# /run/agentd: the service's RuntimeDirectory (0700, this user's), emptied
# when it stops; the token stays in /var/lib/agentd across restarts.
install -m 0600 /var/lib/agentd/token /run/agentd/token
# The desktop's applications see neither copy of the token.
export AGENTD_HIDE=/var/lib/agentd
exec /opt/agentd/entrypoint.sh
