#!/usr/bin/env bash
# The web page's tests in headless Chromium (Selenium from Debian's python3-selenium, hence
# /usr/bin/python3): the built syncfs-mount serving on loopback, real FUSE mounts. Screenshots go
# to .build/browser-artefacts/.
set -euo pipefail
cd "$(dirname "$0")/../.."
export SYNCFS_MOUNT_BINARY="${SYNCFS_MOUNT_BINARY:-$PWD/.build/debug/syncfs-mount}"
export SYNCFS_BROWSER_ARTEFACTS="$PWD/.build/browser-artefacts"
rm -rf "$SYNCFS_BROWSER_ARTEFACTS"
cd Tests/Browser
exec /usr/bin/python3 -m unittest -v "$@"
