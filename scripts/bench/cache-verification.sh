#!/bin/bash
# The cost of cache verification (doc/performance-log.md, "Cache verification"): the first read of a
# clean 512 MiB file after a mount, a cold read through the daemon after it, and a warm read,
# alternating two binaries (e.g. before and after a change) for ROUNDS rounds. Root (drop_caches);
# run it inside a private mount namespace (e.g. /work/bin/wt), it mounts under a temporary directory.
#   scripts/bench/cache-verification.sh OLD_BINARY NEW_BINARY [ROUNDS]
set -euo pipefail
OLD=$1 NEW=$2 ROUNDS=${3:-8}
base=$(mktemp -d /tmp/verify-bench-XXXXXX)
trap '"$NEW" unmount "$base/m" >/dev/null 2>&1 || true; rm -rf "$base"' EXIT
mkdir -p "$base/c" "$base/m" "$base/s"
mnt() { "$1" mount "$base/c" "$base/m" --state-dir "$base/s" --create --upload-delay 20 >/dev/null; }
umnt() { "$1" unmount "$base/m" >/dev/null; }
secs() { local t0=$EPOCHREALTIME; cat "$base/m/big" >/dev/null; python3 -c "print(f'{$EPOCHREALTIME - $t0:.3f}')"; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
mnt "$NEW"
dd if=/dev/urandom of="$base/m/big" bs=1M count=512 status=none
"$NEW" sync "$base/m" >/dev/null 2>&1
umnt "$NEW"
for round in $(seq "$ROUNDS"); do
    for which in OLD NEW; do
        bin=${!which}
        mnt "$bin"
        drop; first=$(secs)
        drop; again=$(secs)
        warm=$(secs)
        echo "$which round $round: first read after mount (cold) ${first}s, cold again ${again}s, warm ${warm}s"
        umnt "$bin"
    done
done
