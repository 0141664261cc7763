#!/usr/bin/env bash
# Provisions a Debian bookworm guest for agentd, as root. Every step lives
# here (not in the Dockerfile) so a VM guest can run the same script.
#
#   provision.sh build     the packages agentd's cgo build needs (robotgo: X11, XTEST)
#   provision.sh runtime   the desktop: Xvfb, openbox, the exercise applications,
#                          fonts, agentd's shared libraries, the non-root user and
#                          the configuration of the applications
#
# Environment: GUEST_USER (agent) and GUEST_UID (1000) name the desktop user.
set -euo pipefail

role="${1:-runtime}"
user="${GUEST_USER:-agent}"
uid="${GUEST_UID:-1000}"

say() { echo "provision: $*" >&2; }

apt_install() {
  say "installing: $*"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  # Images and VM disks carry no package lists or downloaded archives.
  apt-get clean
  rm -rf /var/lib/apt/lists/*
}

provision_build() {
  apt_install ca-certificates gcc libc6-dev pkg-config \
    libx11-dev libxtst-dev libpng-dev libxkbcommon-dev libx11-xcb-dev libxcb-xkb-dev
}

provision_runtime() {
  local packages=(
    # agentd's shared libraries (robotgo links libX11 and libXtst)
    libx11-6 libxtst6
    # the display, its access cookie, and the window manager
    xvfb xauth openbox
    # xdpyinfo and xprop: the entrypoint waits on them; xwininfo: to look inside
    x11-utils
    # the exercise applications
    firefox-esr mousepad
    # the browser toolset's driver (agentd --browser): keeps its sandbox
    chromium
    # fonts: Latin and CJK, so typed Unicode renders
    fonts-dejavu-core fonts-noto-cjk
    # agentd --code: the Python worker and PIL for pyautogui.screenshot()
    python3 python3-pil
  )
  apt_install "${packages[@]}"

  # The desktop user: no password, no sudo. Its home is where the browser
  # profile and saved files go (a tmpfs under a read-only root filesystem).
  if ! id -u "$user" >/dev/null 2>&1; then
    say "creating user $user ($uid)"
    groupadd --gid "$uid" "$user"
    useradd --uid "$uid" --gid "$uid" --create-home --shell /bin/bash "$user"
  fi
  chmod 0700 "/home/$user"

  # agentd's private directory: the token comes in and the unix socket goes
  # out here. In a container it is a bind mount; the mount point is the
  # user's and private either way.
  install -d -m 0700 -o "$uid" -g "$uid" /run/agentd

  # Firefox: no first-run pages, update checks, telemetry or default-browser
  # questions, so the first screenshot shows the page and not a dialog. The
  # content sandbox is left as it is.
  install -d -m 0755 /usr/lib/firefox-esr/distribution
  cat >/usr/lib/firefox-esr/distribution/policies.json <<'EOF'
{
  "policies": {
    "DisableAppUpdate": true,
    "DisableTelemetry": true,
    "DisableFirefoxStudies": true,
    "DisablePocket": true,
    "DisableProfileImport": true,
    "DontCheckDefaultBrowser": true,
    "NoDefaultBookmarks": true,
    "OverrideFirstRunPage": "",
    "OverridePostUpdatePage": "",
    "CaptivePortal": false,
    "UserMessaging": {
      "WhatsNew": false,
      "ExtensionRecommendations": false,
      "FeatureRecommendations": false,
      "UrlbarInterventions": false,
      "SkipOnboarding": true,
      "MoreFromMozilla": false
    }
  }
}
EOF
  # Default preferences (policies may not set these). The sandbox warning:
  # a container has no user namespaces for Firefox, whose seccomp sandbox
  # stays on; the bar would only invite the model to click "How to fix".
  cat >/usr/lib/firefox-esr/defaults/pref/agentd.js <<'EOF'
pref("datareporting.policy.dataSubmissionPolicyBypassNotification", true);
pref("browser.aboutwelcome.enabled", false);
pref("browser.sessionstore.resume_from_crash", false);
pref("security.sandbox.warn_unprivileged_namespaces", false);
EOF
}

case "$role" in
  build) provision_build ;;
  runtime) provision_runtime ;;
  *)
    echo "usage: provision.sh build|runtime" >&2
    exit 2
    ;;
esac
say "$role: done"
