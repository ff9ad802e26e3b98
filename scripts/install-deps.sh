#!/usr/bin/env bash
# Installs the Debian packages SyncFS builds, runs and tests with, if any is missing.
# Usage: scripts/install-deps.sh [--test|--bench|--services]
#   --test adds the programs the test suites drive, the services' included, and what
#     scripts/package.sh and scripts/package-test.sh use (dpkg-dev, binutils, lintian, debootstrap);
#   --bench adds what scripts/bench.sh runs, g++ included (it compiles libfuse's passthrough_hp);
#   --services installs only what scripts/services.sh runs (PostgreSQL 15, Ceph's monitor, OSD, RGW).
set -euo pipefail
# attr (getfattr, setfattr) and inotify-tools (inotifywait): the README's tour uses them.
# libargon2-dev: the server's password hashes (Argon2id); it brings the library, libargon2-1.
packages=(fuse3 libfuse3-dev libsqlite3-dev zlib1g-dev libargon2-dev pkg-config attr inotify-tools)
services=(postgresql-15 ceph-mon ceph-osd radosgw curl python3)
case "${1:-}" in
--test) packages+=(git sqlite3 tar rsync openssl python3 groff-base chromium chromium-driver python3-selenium dpkg-dev binutils lintian debootstrap) ;;
--bench) packages+=(g++ xz-utils fio rclone git tar python3) ;;
--services) packages=() ;;
*) services=() ;;
esac
missing() {
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || echo "$package"
    done
}
# Ceph's recommendations (its manager, dashboards, Python modules) are not needed for the tests.
mapfile -t missing_packages < <(missing "${packages[@]}")
mapfile -t missing_services < <(missing "${services[@]}")
if [ "${#missing_packages[@]}" -gt 0 ] || [ "${#missing_services[@]}" -gt 0 ]; then
    echo "installing: ${missing_packages[*]} ${missing_services[*]}"
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    if [ "${#missing_packages[@]}" -gt 0 ]; then
        DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing_packages[@]}"
    fi
    if [ "${#missing_services[@]}" -gt 0 ]; then
        DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
            "${missing_services[@]}"
    fi
fi
