#!/usr/bin/env bash
# Installs what the cross builds of agentd (make agentd-linux-arm64,
# make agentd-linux-amd64) and their tests need on a Debian bookworm host:
# Debian's cross compiler for each foreign architecture, that architecture's
# X11 development packages through multiarch (dpkg --add-architecture), and
# qemu-user to run the foreign binary here; and qemu-utils, whose qemu-img
# makes the disk images of the VM guest's contract test (make vm-test).
# The packages come from the machine's own apt sources, as they are
# configured.
#
# Usage: scripts/cross-deps.sh [ARCH...]   (Debian architectures; default: arm64 amd64)
# Safe to run again: it installs only what is missing. Root, or sudo.
set -euo pipefail

say() { echo "cross-deps: $*" >&2; }

host="$(dpkg --print-architecture)"
archs=("$@")
((${#archs[@]})) || archs=(arm64 amd64)

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

# triple ARCH: the GNU triple of Debian's cross toolchain for ARCH.
triple() {
  case "$1" in
    arm64) echo aarch64-linux-gnu ;;
    amd64) echo x86_64-linux-gnu ;;
    *) say "unsupported architecture $1 (arm64, amd64)"; exit 2 ;;
  esac
}

# robotgo links libX11 and libXtst (actions/input_robotgo.go); the guest needs
# nothing else from X11 at link time.
packages=(qemu-utils) added=0
for arch in "${archs[@]}"; do
  t="$(triple "$arch")"
  if [ "$arch" = "$host" ]; then
    # The native toolchain answers to the triple's name as well.
    packages+=(gcc libc6-dev libx11-dev libxtst-dev)
    continue
  fi
  if ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
    say "adding the $arch architecture (multiarch)"
    $sudo dpkg --add-architecture "$arch"
    added=1
  fi
  packages+=("gcc-${t//_/-}" "libc6-dev:$arch" "libx11-dev:$arch" "libxtst-dev:$arch" qemu-user)
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0 && added == 0)); then
  say "nothing to install"
  exit 0
fi
say "installing: ${missing[*]}"
# Other apt runs on a shared machine: wait for the lock instead of failing.
lock=(-o DPkg::Lock::Timeout=600)
$sudo apt-get "${lock[@]}" update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
say "done"
