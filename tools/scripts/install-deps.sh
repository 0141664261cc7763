#!/usr/bin/env bash
# Installs the Debian packages agentd's build, tests and exercise need, and
# downloads the Go modules. Safe to run again: it installs only what is missing.
set -euo pipefail

packages=(
  # build: robotgo (cgo, X11, XTEST)
  gcc libc6-dev pkg-config libx11-dev libxtst-dev libpng-dev libxkbcommon-dev libx11-xcb-dev libxcb-xkb-dev
  libxinerama-dev libxrandr-dev libxfixes-dev
  # a display and the exercise desktop
  xvfb xauth x11-utils openbox firefox-esr mousepad xdotool
  # the browser toolset's driver (chromium)
  chromium
  fonts-dejavu-core fonts-noto-cjk
  # agentctl bench peers
  scrot imagemagick
  # agentd --code: the Python worker and PIL for pyautogui.screenshot()
  python3 python3-pil
  # the kubernetes guest's tests: the node of shared/tools/kubernetes's cluster (its README)
  containerd runc containernetworking-plugins busybox-static iptables
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "installing Debian packages: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

command -v go >/dev/null || { echo "Go is required (https://go.dev/dl); see README" >&2; exit 1; }
go mod download
