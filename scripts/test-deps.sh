#!/usr/bin/env bash
# Installs the Debian packages the tests use (real nginx, openssl, shellcheck, a strip
# for the arm64 build and qemu with arm64 libraries to run it, python3 for fcntl lock
# holders and the pty driver, nftables for the channel's firewall table, loaded only in
# network namespaces the tests make), when missing. Idempotent.
set -euo pipefail
packages=(nginx openssl shellcheck binutils-aarch64-linux-gnu qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross python3 file curl nftables)
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
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
