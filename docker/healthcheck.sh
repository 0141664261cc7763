#!/usr/bin/env bash
# The container's HEALTHCHECK: healthy when agentd answers GET /healthz with
# 200 (no token needed) on the TCP address it wrote at start. Bash's
# /dev/tcp keeps curl out of the image.
set -euo pipefail
addr="$(cat /tmp/agentd.addr)"
exec 3<>"/dev/tcp/${addr%:*}/${addr##*:}"
printf 'GET /healthz HTTP/1.0\r\nHost: %s\r\n\r\n' "$addr" >&3
IFS= read -r -t 5 status <&3
[[ "$status" =~ ^HTTP/1\.[01]\ 200\  ]] || { echo "agentd: ${status:-no answer}" >&2; exit 1; }
