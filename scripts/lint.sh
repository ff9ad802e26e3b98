#!/usr/bin/env bash
# Style and project rules: swift format with the checked-in config, plus rules of the layering.
set -euo pipefail
cd "$(dirname "$0")/.."
swift format lint --strict -r Sources Tests Package.swift
fail=0
# Only the FUSE adapter imports CFuse.
if grep -rln "^import CFuse" Sources | grep -v "^Sources/SyncFS/FUSE/"; then
    echo "lint: CFuse may only be imported in Sources/SyncFS/FUSE/" >&2; fail=1
fi
# Only the metadata layer talks to SQLite.
if grep -rln "^import CSQLite" Sources | grep -v "^Sources/SyncFS/Metadata/"; then
    echo "lint: CSQLite may only be imported in Sources/SyncFS/Metadata/" >&2; fail=1
fi
# No try! on request paths.
if grep -rn "try!" Sources/SyncFS; then
    echo "lint: no try! in the SyncFS library" >&2; fail=1
fi
exit "$fail"
