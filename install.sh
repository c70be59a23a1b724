#!/usr/bin/env bash
# service-deploy installer: downloads the service-deploy binary for this machine,
# verifies it, installs it to /usr/local/bin and runs it with every argument given to
# this script.
#
#   curl -fsSL https://<setup_url>/install.sh | sudo bash
#   curl -fsSL https://<setup_url>/install.sh | sudo bash -s -- --reset-clean
#
# Trust: SHA256SUMS must carry a valid signature (SHA256SUMS.sig, ECDSA P-256 over
# SHA-256) by the release key below, checked with `openssl dgst` (any OpenSSL from 1.1.1
# on), before any checksum in it is believed; then the download must match its
# checksum. Where xz exists the compressed binary is fetched (about a quarter of the
# size): its checksum is checked, and after unpacking the checksum of the binary too.
# Anything that does not verify is refused and nothing is installed. docs/release.md:
# how releases are signed and the key is kept and rotated.
#
# The binary's Node.js (25 and later) needs libatomic.so.1 (package libatomic1), which
# minimal images lack. The install adds that package in its system-packages step, after
# its preflight and its wait for the package manager; until then, where the binary
# cannot start without it, it runs with the distribution's copy of the library, fetched
# with `apt-get download` (checked by apt against the signed package lists; no package
# manager lock taken, nothing installed) into this script's private temp folder, which
# is removed when the binary ends.
#
# Environment:
#   SERVICE_SETUP_URL             where install.sh, SHA256SUMS and the binaries are
#                                 served (https only); default below
#   SERVICE_CA_BUNDLE             a CA file for that server (tests; private mirrors)
#   SERVICE_ALLOW_UNSUPPORTED_OS  1 = run on an OS other than Ubuntu 22.04/24.04
#   SERVICE_DEPLOY_ROOT           sandbox folder: install under it instead of / (tests;
#                                 it maps files only: commands are still this machine's)
#   SERVICE_ANSWERS_FILE          the answers file, like --answers FILE (root's, 0600)
#
# Answers: `sudo` drops exported variables, so give them in a file that survives it:
#
#   curl -fsSL https://<setup_url>/install.sh | sudo bash -s -- --answers /root/answers.env
#
# This script says which answers it found and where (names only, never values).
#
# The whole script is one function called on the last line: a download cut short
# runs nothing.

set -euo pipefail

DEFAULT_SETUP_URL="https://setup.service.example"
BIN_NAME="service-deploy"
# The release signing key: the public half of an ECDSA P-256 key, base64 of its DER
# (SubjectPublicKeyInfo). The build puts the key it signed with into the install.sh it
# publishes: a release build only with the key named here, a development build with a
# throwaway key of its own. Empty here: no release key has been made yet.
RELEASE_PUBLIC_KEY=""

info() { printf '%s\n' "service-deploy: $*" >&2; }
fatal() {
  printf '%s\n' "service-deploy: error: $*" >&2
  exit 1
}

resolve_settings() {
  SETUP_URL="${SERVICE_SETUP_URL:-$DEFAULT_SETUP_URL}"
  SETUP_URL="${SETUP_URL%/}"
  ROOT="${SERVICE_DEPLOY_ROOT:-}"
  ROOT="${ROOT%/}"
  INSTALL_PATH="${ROOT}/usr/local/bin/${BIN_NAME}"
  case "$SETUP_URL" in
    https://*) ;;
    *) fatal "SERVICE_SETUP_URL must be an https:// URL (got '$SETUP_URL')" ;;
  esac
  CURL_OPTS=(--fail --silent --show-error --location --proto '=https' --tlsv1.2 --retry 3 --retry-delay 2 --connect-timeout 20)
  if [ -n "${SERVICE_CA_BUNDLE:-}" ]; then
    [ -r "$SERVICE_CA_BUNDLE" ] || fatal "SERVICE_CA_BUNDLE: cannot read $SERVICE_CA_BUNDLE"
    CURL_OPTS+=(--cacert "$SERVICE_CA_BUNDLE")
  fi
}

verify_root() {
  if [ -z "$ROOT" ] && [ "$(id -u)" -ne 0 ]; then
    fatal "run as root: curl -fsSL ${SETUP_URL}/install.sh | sudo bash"
  fi
}

detect_arch() {
  case "$(uname -m)" in
    x86_64 | amd64) ARCH="x64" ;;
    aarch64 | arm64) ARCH="arm64" ;;
    *) fatal "unsupported CPU architecture $(uname -m): x86_64 and aarch64 are supported" ;;
  esac
}

# Prints one value of /etc/os-release (read, not sourced: it is data, not a script).
os_release_value() {
  local key="$1" line value
  [ -r "${ROOT}/etc/os-release" ] || return 0
  while IFS= read -r line; do
    case "$line" in
      "$key="*)
        value="${line#*=}"
        value="${value#\"}"
        value="${value%\"}"
        printf '%s' "$value"
        return 0
        ;;
    esac
  done <"${ROOT}/etc/os-release"
}

verify_os() {
  local id version
  id="$(os_release_value ID)"
  version="$(os_release_value VERSION_ID)"
  if [ "$id" = "ubuntu" ] && { [ "$version" = "22.04" ] || [ "$version" = "24.04" ]; }; then
    return 0
  fi
  if [ "${SERVICE_ALLOW_UNSUPPORTED_OS:-}" = "1" ]; then
    info "warning: ${id:-unknown} ${version:-} is not supported (Ubuntu 22.04 or 24.04); continuing because SERVICE_ALLOW_UNSUPPORTED_OS=1"
    return 0
  fi
  fatal "${id:-unknown OS} ${version:-} is not supported: use Ubuntu 22.04 or 24.04 (set SERVICE_ALLOW_UNSUPPORTED_OS=1 to try anyway)"
}

verify_tools() {
  local tool
  for tool in curl sha256sum openssl uname mktemp install; do
    command -v "$tool" >/dev/null 2>&1 || fatal "$tool is required but not installed"
  done
}

# Downloads SHA256SUMS and its signature and checks the signature with the release key.
# Nothing in SHA256SUMS is used before this has passed.
download_and_verify_sums() {
  local result
  [ -n "$RELEASE_PUBLIC_KEY" ] ||
    fatal "this install.sh has no release key: it is the repository's copy, not one published by a build (docs/release.md); use the install.sh your setup URL serves"
  curl "${CURL_OPTS[@]}" -o "$TMP_DIR/SHA256SUMS" "${SETUP_URL}/SHA256SUMS" ||
    fatal "could not download ${SETUP_URL}/SHA256SUMS$(placeholder_note)"
  curl "${CURL_OPTS[@]}" -o "$TMP_DIR/SHA256SUMS.sig" "${SETUP_URL}/SHA256SUMS.sig" ||
    fatal "could not download ${SETUP_URL}/SHA256SUMS.sig: releases are signed, and without the signature nothing is installed"
  printf '%s\n%s\n%s\n' '-----BEGIN PUBLIC KEY-----' "$RELEASE_PUBLIC_KEY" '-----END PUBLIC KEY-----' >"$TMP_DIR/release-key.pem"
  # A DER ECDSA signature over the SHA-256 of the file: one form that every OpenSSL a
  # server may have checks the same way (1.1.1, e.g. Debian 11; 3.0 on Ubuntu 22.04 and
  # 24.04; 3.5). Only exit 0 together with openssl's own "Verified OK" line counts.
  if ! result="$(openssl dgst -sha256 -verify "$TMP_DIR/release-key.pem" \
    -signature "$TMP_DIR/SHA256SUMS.sig" "$TMP_DIR/SHA256SUMS" 2>&1)" ||
    [[ $'\n'"$result"$'\n' != *$'\n''Verified OK'$'\n'* ]]; then
    fatal "SHA256SUMS from ${SETUP_URL} is not signed by the service-deploy release key (${result%%$'\n'*}); refusing to install anything from there"
  fi
  info "SHA256SUMS: signature verified (release key ${RELEASE_PUBLIC_KEY:36:12}...)"
}

# Prints the SHA-256 that the verified SHA256SUMS gives for file $1.
expected_checksum() {
  local file="$1" hash name
  while read -r hash name; do
    if [ "${name#\*}" = "$file" ]; then
      case "$hash" in
        [0-9a-f][0-9a-f][0-9a-f][0-9a-f]*) printf '%s' "$hash" ;;
        *) fatal "SHA256SUMS entry for ${file} is not a SHA-256" ;;
      esac
      return 0
    fi
  done <"$TMP_DIR/SHA256SUMS"
  fatal "SHA256SUMS from ${SETUP_URL} has no entry for ${file}"
}

# A setup URL under .example (RFC 2606: it never resolves) is the repository's placeholder.
placeholder_note() {
  local host="${SETUP_URL#https://}"
  host="${host%%/*}"
  host="${host%%:*}"
  case "$host" in
    example | *.example) printf '%s' "; ${host} is a placeholder (this install.sh comes from the repository, not from your setup URL): use the install.sh your setup URL serves, or set SERVICE_SETUP_URL" ;;
    *) printf '%s' "; check the network and SERVICE_SETUP_URL" ;;
  esac
}

# Fails unless file $1 has SHA-256 $2; $3 names it in the message.
check_sha256() {
  local actual
  actual="$(sha256sum "$1" | cut -d' ' -f1)"
  [ "$actual" = "$2" ] || fatal "checksum mismatch for $3 (expected $2, got ${actual}); not installing it"
}

download_and_verify() {
  local file="${BIN_NAME}-linux-${ARCH}" expected
  download_and_verify_sums
  expected="$(expected_checksum "$file")"
  if [ -x "$INSTALL_PATH" ] && [ "$(sha256sum "$INSTALL_PATH" | cut -d' ' -f1)" = "$expected" ]; then
    info "${INSTALL_PATH} is already the current version; skipping the download"
    return 0
  fi
  if command -v xz >/dev/null 2>&1; then
    local packed
    packed="$(expected_checksum "${file}.xz")"
    info "downloading ${file}.xz"
    curl "${CURL_OPTS[@]}" -o "$TMP_DIR/${file}.xz" "${SETUP_URL}/${file}.xz" ||
      fatal "could not download ${SETUP_URL}/${file}.xz"
    check_sha256 "$TMP_DIR/${file}.xz" "$packed" "${file}.xz"
    xz -dc "$TMP_DIR/${file}.xz" >"$TMP_DIR/$BIN_NAME" || fatal "could not unpack ${file}.xz"
    check_sha256 "$TMP_DIR/$BIN_NAME" "$expected" "${file} (unpacked from ${file}.xz)"
  else
    info "downloading ${file} (xz is not installed: the uncompressed binary)"
    curl "${CURL_OPTS[@]}" -o "$TMP_DIR/$BIN_NAME" "${SETUP_URL}/${file}" ||
      fatal "could not download ${SETUP_URL}/${file}"
    check_sha256 "$TMP_DIR/$BIN_NAME" "$expected" "$file"
  fi
  # Same folder, then rename: a concurrent reader never sees half a binary.
  install -d -m 0755 "$(dirname "$INSTALL_PATH")"
  install -m 0755 "$TMP_DIR/$BIN_NAME" "${INSTALL_PATH}.new"
  mv -f "${INSTALL_PATH}.new" "$INSTALL_PATH"
  info "installed ${INSTALL_PATH}"
}

ANSWER_NAMES="SERVICE_CUSTOMER_NAME SERVICE_API_KEY SERVICE_MODEL SERVICE_MESH_AUTH_KEY SERVICE_MESH_HOSTNAME SERVICE_MCP_TOKEN SERVICE_CHANNEL_HOSTS"

# Prints the answer names an answers file sets (env lines or JSON keys), never a value.
answers_in_file() {
  local file="$1" line names="" key
  while IFS= read -r line || [ -n "$line" ]; do
    line="${line#"${line%%[![:space:]]*}"}"
    line="${line#export }"
    case "$line" in
      SERVICE_*=*) names="$names ${line%%=*}" ;;
    esac
  done <"$file"
  # No NAME=value lines: a JSON file; its keys.
  [ -z "$names" ] || { printf '%s' "${names# }"; return 0; }
  for key in customerName apiKey modelId meshAuthKey meshHostname mcpToken channelHosts; do
    if grep -Eq "[\"']?${key}[\"']?[[:space:]]*:" "$file"; then names="$names $key"; fi
  done
  printf '%s' "${names# }"
}

# Says which answers arrived and from where: the environment, an answers file
# (--answers FILE or SERVICE_ANSWERS_FILE). Names only; the binary checks the values.
report_answers() {
  local file="" from="" prev="" arg name found=""
  for arg in "$@"; do
    if [ "$prev" = "--answers" ]; then file="$arg" from="--answers"; fi
    case "$arg" in --answers=*) file="${arg#--answers=}" from="--answers" ;; esac
    prev="$arg"
  done
  if [ -z "$file" ] && [ -n "${SERVICE_ANSWERS_FILE:-}" ]; then file="$SERVICE_ANSWERS_FILE" from="SERVICE_ANSWERS_FILE"; fi
  for name in $ANSWER_NAMES; do
    if [ -n "${!name:-}" ]; then found="$found $name"; fi
  done
  if [ -n "$found" ]; then info "answers from the environment:${found}"; fi
  if [ -n "$file" ]; then
    if [ -f "$file" ] && [ -r "$file" ]; then
      info "answers file ${file} (${from}): $(answers_in_file "$file")"
    else
      info "answers file ${file} (${from}): cannot read it"
    fi
  elif [ -z "$found" ]; then
    if [ -n "${SUDO_USER:-}" ]; then
      info "no answers in the environment or a file (sudo drops exported variables: pass --answers FILE); the install asks for them if it can"
    else
      info "no answers in the environment or a file; the install asks for them if it can"
    fi
  fi
}

cleanup() {
  if [ -n "${TMP_DIR:-}" ]; then rm -rf "$TMP_DIR"; fi
}

# apt-get download of package $1 into folder $2 (as root: apt's sandbox user could not write there).
download_package() {
  (cd "$2" && apt-get -q -o APT::Sandbox::User=root download "$1" >&2)
}

# The library folder the binary needs for this run (see the header), or empty: it starts as it is.
LIBRARY_DIR=""

# Makes sure the installed binary starts; where it cannot for lack of libatomic.so.1
# alone, sets LIBRARY_DIR to the distribution's copy of the library (the header says why).
prepare_libraries() {
  local out deb lib
  if out="$("$INSTALL_PATH" --version 2>&1 >/dev/null)"; then return 0; fi
  case "$out" in
    *libatomic.so.1*) ;;
    *) fatal "${INSTALL_PATH} does not start on this machine: ${out%%$'\n'*}" ;;
  esac
  if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
    fatal "${BIN_NAME} needs libatomic.so.1 (Node.js), which this machine lacks: install the package libatomic1 and run install.sh again"
  fi
  info "${BIN_NAME} needs libatomic.so.1 (Node.js), which this machine lacks: this run uses the copy in the distribution's libatomic1 package; the install adds the package"
  mkdir -m 0700 "$TMP_DIR/libatomic"
  # Package lists that are missing or stale (a fresh image) are fetched once.
  if ! download_package libatomic1 "$TMP_DIR/libatomic"; then
    if ! apt-get -q -o DPkg::Lock::Timeout=300 update >&2 || ! download_package libatomic1 "$TMP_DIR/libatomic"; then
      fatal "could not fetch the package libatomic1 with apt-get download: install it (apt-get install libatomic1) and run install.sh again"
    fi
  fi
  for deb in "$TMP_DIR"/libatomic/libatomic1_*.deb; do
    dpkg-deb -x "$deb" "$TMP_DIR/libatomic/root" || fatal "could not unpack $(basename "$deb")"
  done
  lib="$(find "$TMP_DIR/libatomic/root" -name libatomic.so.1 | head -n 1)"
  [ -n "$lib" ] || fatal "the package libatomic1 holds no libatomic.so.1: install it (apt-get install libatomic1) and run install.sh again"
  LIBRARY_DIR="$(dirname "$lib")"
  out="$(LD_LIBRARY_PATH="$LIBRARY_DIR" "$INSTALL_PATH" --version 2>&1 >/dev/null)" ||
    fatal "${INSTALL_PATH} does not start on this machine, even with libatomic1's library: ${out%%$'\n'*}"
}

run_binary() {
  # Under `curl | bash` our stdin is the pipe: prompts must read the terminal instead.
  local input=/dev/null
  if [ -t 0 ]; then
    input=/dev/stdin
  elif { : </dev/tty; } 2>/dev/null; then
    input=/dev/tty
  fi
  if [ -z "$LIBRARY_DIR" ]; then
    cleanup
    trap - EXIT
    exec "$INSTALL_PATH" "$@" <"$input"
  fi
  # The library lives in our temp folder: it stays for the run, and goes after it (trap).
  local status=0
  LD_LIBRARY_PATH="$LIBRARY_DIR" "$INSTALL_PATH" "$@" <"$input" || status=$?
  exit "$status"
}

main() {
  resolve_settings
  verify_root
  detect_arch
  verify_os
  verify_tools
  TMP_DIR="$(mktemp -d)"
  trap cleanup EXIT
  download_and_verify
  prepare_libraries
  report_answers "$@"
  run_binary "$@"
}

main "$@"
