#!/usr/bin/env bash
# One command on a fresh Debian machine: installs what is missing, builds SyncFS (release), and
# mounts a folder on the embedded default container.
#   scripts/setup.sh [MOUNTPOINT] [CONTAINER]
# Defaults: ~/SyncFS on the container ~/.local/share/syncfs/default-container.
set -euo pipefail
cd "$(dirname "$0")/.."
mountpoint="${1:-$HOME/SyncFS}"
container="${2:-${XDG_DATA_HOME:-$HOME/.local/share}/syncfs/default-container}"
scripts/install-deps.sh
swift build -c release
binary="$PWD/.build/release/syncfs-mount"
mkdir -p "$mountpoint"
if grep -qs " $mountpoint fuse" /proc/mounts; then
    echo "$mountpoint is already mounted; unmount it with: $binary unmount $mountpoint"
    exit 0
fi
"$binary" mount "$container" "$mountpoint"
echo "Your synced folder is $mountpoint. Unmount with: $binary unmount $mountpoint"
