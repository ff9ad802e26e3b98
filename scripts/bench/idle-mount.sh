#!/usr/bin/env bash
# How quiet an idle mount is (doc/performance-log.md, "An idle mount"):
#   scripts/bench/idle-mount.sh BINARY [SECONDS]
# Mounts a new local container, writes and syncs one file, lets it settle, then counts the
# daemon's context switches (all threads, /proc/PID/task/*/status) and the growth of its
# state.db-wal over SECONDS (default 60). Prints the threads that woke. Unmounts at the end.
set -euo pipefail
binary=$1
seconds=${2:-60}
work=$(mktemp -d /tmp/syncfs-idle.XXXXXX)
mkdir -p "$work/m"
cleanup() { "$binary" unmount "$work/m" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
# `init` and `--create` exist from the release that asks for containers to be made explicitly.
"$binary" init "$work/c" >/dev/null 2>&1 || true
"$binary" mount "$work/c" "$work/m" --state-dir "$work/s" >/dev/null 2>&1 ||
    "$binary" mount "$work/c" "$work/m" --state-dir "$work/s" --create >/dev/null
echo hello >"$work/m/a"
"$binary" sync "$work/m" >/dev/null
sleep 8
pid=$(pgrep -f "mount $work/c" | head -1)
threads() {
    for task in /proc/"$pid"/task/*; do
        echo "$(basename "$task") $(cat "$task/comm") $(awk '/ctxt_switches/ {s += $2} END {print s}' "$task/status")"
    done | sort
}
threads >"$work/before"
wal_before=$(stat -c %s "$work/s/state.db-wal")
mtime_before=$(stat -c %Y "$work/s/state.db-wal")
sleep "$seconds"
threads >"$work/after"
wal_after=$(stat -c %s "$work/s/state.db-wal")
mtime_after=$(stat -c %Y "$work/s/state.db-wal")
total=$(join "$work/before" "$work/after" | awk '{d += $5 - $3} END {print d}')
echo "context switches in ${seconds} s: $total ($(awk "BEGIN {printf \"%.2f\", $total / $seconds}")/s)"
echo "state.db-wal: $wal_before -> $wal_after bytes, rewritten: $([ "$mtime_before" = "$mtime_after" ] && echo no || echo yes)"
join "$work/before" "$work/after" | awk '$5 - $3 > 0 {print "  thread", $1, $2, $5 - $3}'
