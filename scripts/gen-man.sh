#!/usr/bin/env bash
# Writes the man pages of syncfs-mount (section 1, one per command) into DIR, generated from the
# binary's own command definitions (`syncfs-mount generate-manual`, from --experimental-dump-help).
#   scripts/gen-man.sh [BINARY] [DIR]
# Defaults: .build/release/syncfs-mount (else .build/debug/syncfs-mount), .build/man.
# Read one without installing: man -l .build/man/syncfs-mount-mount.1
set -euo pipefail
cd "$(dirname "$0")/.."
binary="${1:-}"
if [ -z "$binary" ]; then
    binary=.build/release/syncfs-mount
    [ -x "$binary" ] || binary=.build/debug/syncfs-mount
fi
dir="${2:-.build/man}"
# Each page is replaced atomically; pages of commands that no longer exist are not removed.
"$binary" generate-manual "$dir"
