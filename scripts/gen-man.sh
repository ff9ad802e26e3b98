#!/usr/bin/env bash
# Writes the man pages of syncfs-mount (section 1, one per command) into DIR, generated from the
# binary's own command definitions (`syncfs-mount generate-manual`, from --experimental-dump-help),
# and copies the file-format pages of section 5 (dist/man: syncfs-rules, syncfs-merge-commands,
# syncfs-fstab, syncfs-files) beside them. A test checks that all of them build without warnings
# and that their example commands use only subcommands and options that exist.
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
for page in dist/man/*.5; do
    install -m 0644 "$page" "$dir/"
    echo "$dir/$(basename "$page")"
done
