#!/usr/bin/env bash
# Runs every test of SyncFS: installs what is missing, lints, builds (warnings are errors),
# then the unit tests and the mount tests (the built binary on real FUSE mounts), then builds the
# Debian package and tests it in a clean Debian root. PostgreSQL and Ceph RGW run for the
# duration (scripts/services.sh), stopped whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
scripts/lint.sh
swift build --build-tests
export SYNCFS_MOUNT_BINARY="$PWD/.build/debug/syncfs-mount"
status=0
# The build uses the committed pins (Package.resolved): one it rewrote means Package.swift and the
# pins disagree. The tests still run; commit the new pins with the change that needs them.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1 && ! git diff --quiet -- Package.resolved; then
    echo "test.sh: the build changed Package.resolved: commit the new pins (git diff Package.resolved)" >&2
    status=1
fi
trap 'scripts/services.sh stop' EXIT
# If they do not start, the tests that need them fail and say so; the others still run.
if services_env=$(scripts/services.sh start); then
    eval "$services_env"
else
    echo "test.sh: scripts/services.sh start failed" >&2
    status=1
fi
: > .build/test-output.txt
# One run per test target: the container tests measure wake-up latencies, and the mount tests
# block Swift's cooperative threads (two on this machine) while they wait for daemons. Separate
# processes keep them apart.
for target in SQLiteSupportTests SyncBackendTests SyncServerTests SyncCredentialsTests SyncObservabilityTests SyncSealedTests SyncMergeTests SyncS3Tests SyncPostgresTests SyncFSTests MountTests; do
    # The server suites run one test at a time: the load test saturates both cores, and the push
    # and graceful-stop tests check that answers come sooner than a poll or a timeout would.
    parallel=()
    [ "$target" = SyncServerTests ] && parallel=(--no-parallel)
    swift test --skip-build "${parallel[@]}" --filter "^$target\\." 2>&1 | tee -a .build/test-output.txt || status=$?
done
# The web page in headless Chromium (Tests/Browser; screenshots in .build/browser-artefacts).
Tests/Browser/run.sh 2>&1 | tee -a .build/test-output.txt || status=$?
# Never leave a mount of ours behind, whatever happened.
awk '$3 ~ /^fuse/ && $1 ~ /^syncfs/ {print $2}' /proc/mounts | while read -r mountpoint; do
    case "$mountpoint" in /tmp/syncfs-tests-*) fusermount3 -u -z "$mountpoint" || true ;; esac
done
# The Debian package: a release build of its own (.build-release-static, incremental after the
# first), lintian, then installed and used in a clean Debian 12 root (debootstrapped once, cached).
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
if ! scripts/package.sh 2>&1 | tee .build/package-output.txt; then
    echo "test.sh: scripts/package.sh failed" >&2
    status=1
elif ! "${sudo_cmd[@]}" scripts/package-test.sh "$(tail -n 1 .build/package-output.txt)" 2>&1 \
    | tee -a .build/package-output.txt; then
    echo "test.sh: scripts/package-test.sh failed" >&2
    status=1
fi
exit "$status"
