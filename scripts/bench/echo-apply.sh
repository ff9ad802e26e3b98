#!/usr/bin/env bash
# The inotify echo's cost on the follower: N remote creates (small files in one directory, written
# and synced on mount A while mount B is unmounted), then B mounted; the time from `mount` until
# B's status says feedCaughtUp with N placeholders. Alternates echo on / --no-inotify-echo.
# Usage: scripts/bench/echo-apply.sh [BINARY] [N] [RUNS]   (as root; default the debug build)
set -euo pipefail
binary=${1:-.build/debug/syncfs-mount}
count=${2:-1000}
runs=${3:-4}
work=$(mktemp -d /var/tmp/syncfs-echo-bench.XXXXXX)
cleanup() {
    for m in "$work"/a "$work"/b-*; do fusermount3 -u -z "$m" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/a"
"$binary" mount "$work/container" "$work/a" --state-dir "$work/state-a" >/dev/null
mkdir "$work/a/d"
for i in $(seq 1 "$count"); do echo "file $i" > "$work/a/d/f$i"; done
"$binary" sync "$work/a" >/dev/null
"$binary" unmount "$work/a" >/dev/null
caught_up() {
    "$binary" status "$1" --json 2>/dev/null | python3 -c '
import json, sys
s = json.load(sys.stdin)
sys.exit(0 if s["feedCaughtUp"] and s["files"]["online"] >= int(sys.argv[1]) else 1)' "$count"
}
for run in $(seq 1 "$runs"); do
    for mode in echo no-echo; do
        b="$work/b-$mode-$run"
        mkdir -p "$b"
        extra=()
        [ "$mode" = no-echo ] && extra=(--no-inotify-echo)
        start=$(date +%s.%N)
        "$binary" mount "$work/container" "$b" --state-dir "$work/state-$mode-$run" "${extra[@]}" >/dev/null
        until caught_up "$b"; do sleep 0.02; done
        end=$(date +%s.%N)
        awk -v r="$run" -v m="$mode" -v s="$start" -v e="$end" 'BEGIN { printf "%s\t%s\t%.2f\n", r, m, e - s }'
        "$binary" unmount "$b" >/dev/null
    done
done
