#!/usr/bin/env bash
# Installs the Debian packages SyncFS builds, runs and tests with, if any is missing.
# Usage: scripts/install-deps.sh [--test]   (--test adds the programs the test suites drive)
set -euo pipefail
packages=(fuse3 libfuse3-dev libsqlite3-dev zlib1g-dev pkg-config)
if [ "${1:-}" = "--test" ]; then packages+=(git sqlite3 attr tar rsync inotify-tools openssl python3); fi
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing: ${missing[*]}"
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
fi
