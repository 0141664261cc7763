#!/usr/bin/env bash
# Sets a VM guest up for agentd, as root, from the directory the vm package
# copied in (limactl copy): provisions it with docker/provision.sh exactly as
# the Docker image is provisioned, installs agentd, docker/entrypoint.sh,
# docker/healthcheck.sh, pickup-form (if given) and the desktop's service,
# then removes the directory.
#
#   setup.sh DIR    environment: GUEST_UID, the desktop user's uid (1000)
set -euo pipefail

stage="${1:?usage: setup.sh DIR}"
user=agent
# The directory holds agentd and the desktop's settings: gone however this ends.
trap 'rm -rf "$stage"' EXIT

say() { echo "setup: $*" >&2; }

# Debian's daily apt jobs may hold the package lock right after a VM's
# first boot: apt waits for them instead of failing.
echo 'DPkg::Lock::Timeout "600";' >/etc/apt/apt.conf.d/90agentd-lock-timeout
GUEST_USER="$user" GUEST_UID="${GUEST_UID:-1000}" bash "$stage/provision.sh" runtime

say "installing agentd, the entrypoint and the desktop's service"
install -d -m 0755 /opt/agentd /etc/agentd
install -m 0755 "$stage/entrypoint.sh" "$stage/healthcheck.sh" "$stage/desktop.sh" "$stage/wait-ready.sh" /opt/agentd/
install -m 0755 "$stage/agentd" /usr/local/bin/agentd
# The exercise's form server, when the desktop is to run it.
if [ -f "$stage/pickup-form" ]; then
  install -m 0755 "$stage/pickup-form" /usr/local/bin/pickup-form
fi
# Fail here, not at the desktop's first start, when a shared library is missing.
if ldd /usr/local/bin/agentd | grep 'not found' >&2; then
  say "agentd's shared libraries are missing (is agentd built for this architecture?)"
  exit 1
fi
install -m 0644 "$stage/guest.env" /etc/agentd/guest.env
rm -rf /etc/agentd/config
if [ -d "$stage/config" ]; then
  cp -r "$stage/config" /etc/agentd/config
  find /etc/agentd/config -type d -exec chmod 0755 {} + -o -type f -exec chmod 0644 {} +
fi
# The token comes in next (limactl shell, on standard input), into a
# directory of the desktop user's own.
install -d -m 0700 -o "$user" -g "$user" /var/lib/agentd
install -m 0644 "$stage/agentd-desktop.service" /etc/systemd/system/
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload
fi
say "done"
