#!/usr/bin/env bash
# Installs the Debian packages the tests use (real nginx, openssl, shellcheck, a strip
# for the arm64 build and qemu with arm64 libraries to run it (libatomic too: Node.js links
# it from 25 on, on both architectures), python3 for fcntl lock
# holders and the pty driver, nftables for the channel's firewall table, loaded only in
# network namespaces the tests make), when missing. Idempotent.
# Waits (up to 5 minutes, TEST_DEPS_LOCK_WAIT_S) for another apt/dpkg holding the
# package manager, saying who holds it. TEST_DEPS_PACKAGES and TEST_DEPS_LOCKS replace
# the package list and the lock files (for the script's own test).
set -euo pipefail
read -r -a packages <<<"${TEST_DEPS_PACKAGES:-nginx openssl shellcheck binutils-aarch64-linux-gnu qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross libatomic1-arm64-cross libatomic1 python3 file curl nftables sudo}"
if [ -z "${TEST_DEPS_PACKAGES:-}" ]; then
  # Debian's cloud-init runs `cloud-init schema` on examples/cloud-init/user-data.yaml: its
  # Python libraries are installed, the package itself only unpacked (below).
  packages+=(python3-yaml python3-jsonschema python3-jinja2 python3-configobj python3-jsonpatch python3-requests python3-netifaces python3-oauthlib)
fi
if [ -z "${TEST_DEPS_PACKAGES:-}" ] && dpkg-query -W -f='${Status}' libc6:arm64 2>/dev/null | grep -q 'install ok installed'; then
  # With Debian's multiarch arm64 C library (.ci/run) the arm64 binary runs from the real
  # paths (test/arm64.test.ts), so its libatomic must be the multiarch one too.
  packages+=(libatomic1:arm64)
fi
read -r -a locks <<<"${TEST_DEPS_LOCKS:-/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock}"
unpack_cloud_init() {
  [ -z "${TEST_DEPS_PACKAGES:-}" ] || return 0
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
}
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  unpack_cloud_init
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "test dependencies missing: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "installing test dependencies: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive

# Another apt or dpkg (cloud-init or unattended-upgrades on a fresh cloud machine, or a
# second test run) may hold the package manager: wait for it, saying who holds it,
# rather than failing at once. apt itself also waits (DPkg::Lock::Timeout) for the race
# between our check and its own lock.
LOCK_WAIT_S=${TEST_DEPS_LOCK_WAIT_S:-300}
lock_holders() {
  local lock inode pid
  for lock in "${locks[@]}"; do
    [ -e "$lock" ] || continue
    inode=$(stat -c %i "$lock")
    # /proc/locks: "1: POSIX  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (pid, dev:inode);
    # "1: -> POSIX ..." lines are waiters, not holders.
    awk -v ino="$inode" '$2 != "->" { n = split($6, f, ":"); if (f[n] == ino) print $5 }' /proc/locks 2>/dev/null | sort -u |
      while read -r pid; do
        printf 'pid %s (%s) on %s\n' "$pid" "$(tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null | cut -c1-60)" "$lock"
      done
  done
}
waited=0
while holders=$(lock_holders) && [ -n "$holders" ]; do
  if [ "$waited" -ge "$LOCK_WAIT_S" ]; then
    echo "the package manager is still locked after ${LOCK_WAIT_S} s: $(echo "$holders" | paste -sd, -)" >&2
    exit 1
  fi
  [ $((waited % 15)) -eq 0 ] && echo "waiting for the package manager lock ($((LOCK_WAIT_S - waited)) s left): $(echo "$holders" | paste -sd, -)" >&2
  sleep 1
  waited=$((waited + 1))
done
[ "$waited" -gt 0 ] && echo "package manager lock released after ${waited} s" >&2
apt_opts=(-o "DPkg::Lock::Timeout=${LOCK_WAIT_S}")
apt-get "${apt_opts[@]}" update -qq
apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The tests start their own nginx on loopback; the package's default one is not needed.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then systemctl disable --now nginx >/dev/null 2>&1 || true; fi

unpack_cloud_init
