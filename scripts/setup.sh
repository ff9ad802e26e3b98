#!/usr/bin/env bash
# One command on a fresh Debian machine: installs what is missing, builds SyncFS (release), and
# mounts a folder on the embedded default container.
#   scripts/setup.sh [MOUNTPOINT] [CONTAINER] [--enable-unit]
# Defaults: ~/SyncFS on the container ~/.local/share/syncfs/default-container.
set -euo pipefail
cd "$(dirname "$0")/.."
# ---- System integration (#15): --enable-unit anywhere in the arguments also enables the unit.
enable_unit=()
positional=()
for argument in "$@"; do
    case "$argument" in
    --enable-unit) enable_unit=(--enable-unit) ;;
    *) positional+=("$argument") ;;
    esac
done
set -- "${positional[@]+"${positional[@]}"}"
# ---- end
mountpoint="${1:-$HOME/SyncFS}"
container="${2:-${XDG_DATA_HOME:-$HOME/.local/share}/syncfs/default-container}"
scripts/install-deps.sh
swift build -c release
binary="$PWD/.build/release/syncfs-mount"
# ---- System integration (#15): the binary at a stable path, mount(8)'s helper, systemd units
# (not enabled unless --enable-unit). See scripts/install-system.sh.
if [ "${#enable_unit[@]}" -gt 0 ]; then
    scripts/install-system.sh "$binary" --enable-unit "$mountpoint" "$container"
else
    scripts/install-system.sh "$binary"
fi
# ---- end
mkdir -p "$mountpoint"
if grep -qs " $mountpoint fuse" /proc/mounts; then
    echo "$mountpoint is already mounted; unmount it with: $binary unmount $mountpoint"
    exit 0
fi
"$binary" mount "$container" "$mountpoint"
echo "Your synced folder is $mountpoint. Unmount with: $binary unmount $mountpoint"
