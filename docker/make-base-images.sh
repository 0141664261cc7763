#!/usr/bin/env bash
# Makes the base images docker/Dockerfile names when they are neither present
# nor pullable (air-gapped machines, CI without a registry):
#   - the runtime base (the last FROM): a debootstrapped Debian minbase rootfs;
#   - the build base (the first FROM): the same rootfs plus this machine's Go
#     installation at /usr/local/go, with the environment the official golang
#     images set.
# The Dockerfile does not change: the images are imported under its names.
#
# The Debian mirror is read from this machine's apt sources at run time, and
# the rootfs keeps it as its own sources list, so apt inside the images uses
# the same mirror. The rootfs tarball is cached under
# ${AGENTD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agentd} (never in the repo).
#
# Usage: docker/make-base-images.sh [--force]   (root: debootstrap needs it)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
dockerfile="$here/Dockerfile"
suite=bookworm
force=0
[ "${1:-}" = "--force" ] && force=1

tarball=""
die() { echo "make-base-images: $*" >&2; exit 1; }
log() { echo "make-base-images: $*" >&2; }

# FROM lines, skipping stage references ("FROM build"): image names only.
mapfile -t bases < <(awk 'toupper($1) == "FROM" { for (i = 2; i <= NF; i++) if ($i !~ /^--/) { print $i; break } }' "$dockerfile")
((${#bases[@]} >= 2)) || die "expected a build and a runtime FROM in $dockerfile"
build_base="${bases[0]}"
runtime_base="${bases[${#bases[@]} - 1]}"

# Scratch directories, removed however the script ends.
scratch=()
trap 'rm -rf "${scratch[@]}"' EXIT

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# A registry may be reachable on another machine: pull first, make second.
# The pull fails at once where there is no registry.
need() {
  local img="$1"
  if ((force == 0)) && have_image "$img"; then
    log "$img is present"
    return 1
  fi
  if ((force == 0)) && docker pull -q "$img" >/dev/null 2>&1; then
    log "pulled $img"
    return 1
  fi
  return 0
}

# mirror prints the first apt source serving $suite, deb822 or one-line form.
mirror() {
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    # deb822 stanzas are separated by blank lines; take URIs of a stanza
    # whose Suites name the release itself (not -security or -updates only).
    uri="$(awk -v s="$suite" '
      /^[[:space:]]*#/ { next }
      /^[[:space:]]*$/ { if (u != "" && ok) { print u; exit } u = ""; ok = 0; next }
      tolower($1) == "uris:" { u = $2 }
      tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == s) ok = 1 }
      END { if (u != "" && ok) print u }' "$f" | head -n1)"
    [ -n "$uri" ] && { echo "$uri"; return; }
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    uri="$(awk -v s="$suite" '$1 == "deb" { for (i = 2; i < NF; i++) if ($i !~ /^\[/ && $(i+1) == s) { print $i; exit } }' "$f")"
    [ -n "$uri" ] && { echo "$uri"; return; }
  done
  die "no apt source for $suite found in /etc/apt/sources.list{,.d/}"
}

# ensure_rootfs makes the cached minbase rootfs tarball unless it exists
# (or --force), and sets $tarball to it.
made_rootfs=0
ensure_rootfs() {
  local cache="${AGENTD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agentd}"
  tarball="$cache/$suite-minbase.tar"
  if [ -s "$tarball" ] && { ((force == 0)) || ((made_rootfs)); }; then
    return
  fi
  [ "$(id -u)" -eq 0 ] || die "debootstrap needs root"
  if ! command -v debootstrap >/dev/null; then
    log "installing debootstrap"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
  fi
  local url root
  url="$(mirror)"
  mkdir -p "$cache"
  root="$(mktemp -d "$cache/rootfs.XXXXXX")"
  scratch+=("$root")
  log "debootstrap --variant=minbase $suite from the apt sources' mirror (a few minutes)"
  # ca-certificates: apt and the Go proxy may be reached over https.
  if ! debootstrap --variant=minbase --include=ca-certificates "$suite" "$root" "$url" >&2; then
    tail -n 20 "$root/debootstrap/debootstrap.log" >&2 || true
    die "debootstrap failed"
  fi
  # Images carry no package lists or caches; apt-get update fetches them.
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
  tar --numeric-owner -C "$root" -cf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
  made_rootfs=1
}

make_runtime() {
  ensure_rootfs
  log "importing $runtime_base"
  docker import --change 'CMD ["bash"]' "$tarball" "$runtime_base" >/dev/null
}

make_build() {
  command -v go >/dev/null || die "go is missing: the build base gets this machine's Go installation"
  local goroot gover want staging
  goroot="$(go env GOROOT)"
  gover="$(go env GOVERSION)"
  # golang:1.26-bookworm must hold a Go 1.26: refuse to mislabel another one.
  want="${build_base#*:}"
  want="${want%%-*}"
  case "$gover" in
    go"$want" | go"$want".*) ;;
    *) die "this machine has $gover but $dockerfile wants $build_base" ;;
  esac
  ensure_rootfs
  staging="$(mktemp -d)"
  scratch+=("$staging")
  tar --numeric-owner -C "$staging" -xf "$tarball"
  mkdir -p "$staging/usr/local" "$staging/go/bin" "$staging/go/src"
  cp -a "$goroot" "$staging/usr/local/go"
  # The build fetches Go modules: trust what this machine trusts (a
  # TLS-inspecting proxy's CA included). A file of its own, since apt's
  # ca-certificates rewrites the system bundle.
  local bundle="${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}" cert_env=()
  if [ -r "$bundle" ]; then
    cp "$bundle" "$staging/etc/ssl/host-ca-certificates.crt"
    cert_env=(--change 'ENV SSL_CERT_FILE=/etc/ssl/host-ca-certificates.crt')
  fi
  log "importing $build_base ($gover from $goroot)"
  # The environment the official golang images set.
  tar --numeric-owner -C "$staging" -c . | docker import "${cert_env[@]}" \
    --change 'ENV GOLANG_VERSION='"${gover#go}" \
    --change 'ENV GOTOOLCHAIN=local' \
    --change 'ENV GOPATH=/go' \
    --change 'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'WORKDIR /go' \
    --change 'CMD ["bash"]' \
    - "$build_base" >/dev/null
}

command -v docker >/dev/null || die "docker is missing"
if need "$runtime_base"; then make_runtime; fi
if need "$build_base"; then make_build; fi
log "ready: $build_base, $runtime_base"
