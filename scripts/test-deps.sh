#!/usr/bin/env bash
# Installs the Debian packages the tests use (real nginx, openssl, shellcheck, a strip
# for the arm64 build and qemu with arm64 libraries to run it, python3 for fcntl lock
# holders and the pty driver), when missing. Idempotent.
set -euo pipefail
packages=(nginx openssl shellcheck binutils-aarch64-linux-gnu qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross python3 file curl)
# Debian's cloud-init runs `cloud-init schema` on examples/cloud-init/user-data.yaml: its
# Python libraries are installed, the package itself only unpacked (below).
packages+=(python3-yaml python3-jsonschema python3-jinja2 python3-configobj python3-jsonpatch python3-requests python3-netifaces python3-oauthlib)
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "test dependencies missing: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
  echo "installing test dependencies: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # The tests start their own nginx on loopback; the package's default one is not needed.
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then systemctl disable --now nginx >/dev/null 2>&1 || true; fi
fi

# Debian's cloud-init package, unpacked into .cache/cloud-init (not installed: an installed
# cloud-init would run at this machine's next boot, and every sandbox install's
# `cloud-init status --wait` would reach it).
cloud_init=".cache/cloud-init"
if [ ! -f "$cloud_init/root/usr/bin/cloud-init" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && { apt-get download -qq -o APT::Sandbox::User=root cloud-init 2>/dev/null || { [ "$(id -u)" -eq 0 ] && apt-get update -qq && apt-get download -qq -o APT::Sandbox::User=root cloud-init; }; })
  mkdir -p "$cloud_init"
  rm -rf "$cloud_init/root.partial"
  dpkg-deb -x "$work"/cloud-init_*.deb "$cloud_init/root.partial"
  rm -rf "$cloud_init/root"
  mv "$cloud_init/root.partial" "$cloud_init/root"
fi
