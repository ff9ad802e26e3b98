#!/usr/bin/env bash
# scripts/bench.sh — SyncFS performance benchmark: native directory vs SyncFS mount vs rclone mount
# vs libfuse's passthrough_hp (the FUSE ceiling; scripts/bench/hp.sh).
#
# Run `scripts/bench.sh --help` for usage. Needs root for cold-cache runs (drop_caches);
# needs fio, rclone, fusermount3, git, tar, python3; for hp: curl, g++, libfuse3-dev.
set -uo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
HELPERS="$SCRIPT_DIR/bench"

usage() {
    cat <<'EOF'
Usage: scripts/bench.sh [options]

Measures, side by side, a plain directory on the same disk (native), a SyncFS mount, an
rclone mount (--vfs-cache-mode full over a local directory) and libfuse 3.14's passthrough_hp
over a local directory (hp: the FUSE ceiling, built at bench time from Debian's checksummed
source tarball), and prints medians, ratios to native and the SyncFS performance goals.

Options:
  --runs N            runs per workload; the median is reported (default 3)
  --size SIZE         sequential write/read size (default 1G; K/M/G suffixes)
  --rand-size SIZE    file size for the 4 KiB random read/write tests (default 256M)
  --rand-time SEC     duration of each random I/O test (default 5)
  --files N           files for the create/stat/delete test (default 10000)
  --tree-files N      files in the generated tree for the untar test (default 3000)
  --commits N         commits in the generated repository for git clone (default 3000)
  --repo-files N      files in that repository (default 1500)
  --rss-files N       files for the daemon memory test (default 100000)
  --rss               only the SyncFS daemon memory test
  --no-rss            skip the daemon memory test
  --sync-only         only the sync benchmarks (scripts/bench/sync.py: propagation between two
                      mounts, upload pipeline throughput, dedup after an insert, compression)
  --no-sync           skip the sync benchmarks
  --placeholders-only only the placeholder benchmarks (scripts/bench/placeholders.py: attach a
                      container of many files on a fresh mount, ls -lR of the placeholders,
                      first byte and full read of a large placeholder, daemon RSS; its own
                      rclone mount when rclone is among the targets)
  --no-placeholders   skip the placeholder benchmarks
  --merge-only        only the merge benchmark (scripts/bench/merge.py: a 10 MiB text file
                      edited on two mounts, the three-way merge and its propagation)
  --no-merge          skip the merge benchmark
  --server-only       only the sync server benchmarks (scripts/bench/server.py: propagation through
                      `syncfs-mount serve` on loopback vs a local container, commits/s and chunk
                      upload MB/s with 8 concurrent clients, server RSS)
                      and, when the environment of scripts/services.sh is set, the same on
                      PostgreSQL + S3 (scripts/bench/server_db.py: two serve --database
                      processes, 8 mounts split between them, commits/s and chunk MB/s against
                      the embedded server in the same run)
  --no-server         skip the sync server benchmarks
  --million           with the server benchmarks: also a container of 1,000,000 entries on both
                      backends (scripts/bench/million.py: attach by a new mount, feed catch-up,
                      server RSS; ~15-30 minutes, so not in the default run)
  --ph-files N        files in the placeholder benchmark's container (default 100000, 2000
                      with --quick)
  --targets LIST      comma-separated subset of native,syncfs,rclone,hp (default: all four)
  --workloads LIST    comma-separated subset of seq,rand,files,untar,clone,walk (default: all)
  --walk-files N      files in the tree walked by `walk` (find, ls -lR, du -s; cold and warm;
                      default 20000, 2000 with --quick)
  --quick             smoke test: 1 run, small sizes (explicit options still win)
  --out FILE          also write the Markdown table to FILE
  --raw FILE          also copy the raw results (TSV: run, target, workload, value) to FILE
  --workdir DIR       where the temporary directory is created (default /var/tmp); it must be
                      on the disk you want to measure (not tmpfs)
  --keep-logs DIR     copy the daemon logs to DIR at the end
  --step-timeout SEC  timeout of one measured step (default 600, 180 with --quick)
  -h, --help          this text

Environment:
  SYNCFS_MOUNT_BINARY  syncfs-mount executable (default: .build/release/syncfs-mount, built
                       with `swift build -c release` when missing)
  SYNCFS_MOUNT_ARGS    extra arguments for `syncfs-mount mount` (word-split)
  RCLONE_MOUNT_ARGS    extra arguments for `rclone mount` (word-split)
  HP_MOUNT_ARGS        extra arguments for passthrough_hp (word-split)
  HP_TARBALL           a local copy of fuse3_3.14.0.orig.tar.xz instead of downloading it
                       (checked against the same SHA-256)

The SyncFS daemon runs as `syncfs-mount mount C MP --state-dir S --foreground --lifeline --create` with
standard input from a FIFO the script holds open: if the script dies, the daemon unmounts.
Everything (mounts, daemons, temporary files) is removed on exit, also on errors and Ctrl-C.
EOF
}

log() { printf '%s [bench] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---------------------------------------------------------------- options
O_RUNS= O_SIZE= O_RAND_SIZE= O_RAND_TIME= O_FILES= O_TREE_FILES= O_COMMITS= O_REPO_FILES=
O_RSS_FILES= O_STEP_TIMEOUT= O_PH_FILES= O_WALK_FILES=
SYNC_MODE=default PH_MODE=default MERGE_MODE=default SERVER_MODE=default QUICK=0 RSS_MODE=default OUT= RAW= WORKDIR=/var/tmp KEEP_LOGS=
TARGETS=native,syncfs,rclone,hp WORKLOADS=seq,rand,files,untar,clone,walk

need_arg() { [[ $# -ge 2 && -n $2 ]] || { echo "bench.sh: $1 needs an argument" >&2; exit 64; }; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --runs) need_arg "$@"; O_RUNS=$2; shift 2 ;;
        --size) need_arg "$@"; O_SIZE=$2; shift 2 ;;
        --rand-size) need_arg "$@"; O_RAND_SIZE=$2; shift 2 ;;
        --rand-time) need_arg "$@"; O_RAND_TIME=$2; shift 2 ;;
        --files) need_arg "$@"; O_FILES=$2; shift 2 ;;
        --tree-files) need_arg "$@"; O_TREE_FILES=$2; shift 2 ;;
        --commits) need_arg "$@"; O_COMMITS=$2; shift 2 ;;
        --repo-files) need_arg "$@"; O_REPO_FILES=$2; shift 2 ;;
        --rss-files) need_arg "$@"; O_RSS_FILES=$2; shift 2 ;;
        --rss) RSS_MODE=only; SYNC_MODE=skip; PH_MODE=skip; MERGE_MODE=skip; SERVER_MODE=skip; shift ;;
        --no-rss) RSS_MODE=skip; shift ;;
        --sync-only) SYNC_MODE=only; RSS_MODE=skip; PH_MODE=skip; MERGE_MODE=skip; SERVER_MODE=skip; shift ;;
        --no-sync) SYNC_MODE=skip; shift ;;
        --placeholders-only) PH_MODE=only; SYNC_MODE=skip; RSS_MODE=skip; MERGE_MODE=skip; SERVER_MODE=skip; shift ;;
        --no-placeholders) PH_MODE=skip; shift ;;
        --merge-only) MERGE_MODE=only; SYNC_MODE=skip; RSS_MODE=skip; PH_MODE=skip; SERVER_MODE=skip; shift ;;
        --no-merge) MERGE_MODE=skip; shift ;;
        --server-only) SERVER_MODE=only; SYNC_MODE=skip; RSS_MODE=skip; PH_MODE=skip; MERGE_MODE=skip; shift ;;
        --no-server) SERVER_MODE=skip; shift ;;
        --million) MILLION=1; shift ;;
        --walk-files) need_arg "$@"; O_WALK_FILES=$2; shift 2 ;;
        --ph-files) need_arg "$@"; O_PH_FILES=$2; shift 2 ;;
        --targets) need_arg "$@"; TARGETS=$2; shift 2 ;;
        --workloads) need_arg "$@"; WORKLOADS=$2; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --out) need_arg "$@"; OUT=$2; shift 2 ;;
        --raw) need_arg "$@"; RAW=$2; shift 2 ;;
        --workdir) need_arg "$@"; WORKDIR=$2; shift 2 ;;
        --keep-logs) need_arg "$@"; KEEP_LOGS=$2; shift 2 ;;
        --step-timeout) need_arg "$@"; O_STEP_TIMEOUT=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench.sh: unknown option: $1 (see --help)" >&2; exit 64 ;;
    esac
done

if [[ $QUICK == 1 ]]; then
    D_RUNS=1 D_SIZE=64M D_RAND_SIZE=32M D_RAND_TIME=2 D_FILES=1000 D_TREE_FILES=500
    D_COMMITS=300 D_REPO_FILES=200 D_RSS_FILES=10000 D_STEP_TIMEOUT=180 D_WALK_FILES=2000
else
    D_RUNS=3 D_SIZE=1G D_RAND_SIZE=256M D_RAND_TIME=5 D_FILES=10000 D_TREE_FILES=3000
    D_COMMITS=3000 D_REPO_FILES=1500 D_RSS_FILES=100000 D_STEP_TIMEOUT=600 D_WALK_FILES=20000
fi
RUNS=${O_RUNS:-$D_RUNS}
SIZE_H=${O_SIZE:-$D_SIZE}
RAND_SIZE_H=${O_RAND_SIZE:-$D_RAND_SIZE}
RAND_TIME=${O_RAND_TIME:-$D_RAND_TIME}
NFILES=${O_FILES:-$D_FILES}
TREE_FILES=${O_TREE_FILES:-$D_TREE_FILES}
COMMITS=${O_COMMITS:-$D_COMMITS}
REPO_FILES=${O_REPO_FILES:-$D_REPO_FILES}
RSS_FILES=${O_RSS_FILES:-$D_RSS_FILES}
STEP_TIMEOUT=${O_STEP_TIMEOUT:-$D_STEP_TIMEOUT}
WALK_FILES=${O_WALK_FILES:-$D_WALK_FILES}
PH_FILES=${O_PH_FILES:-}   # empty: placeholders.py's default (100000, or its --quick size)

is_uint() { [[ $1 =~ ^[0-9]+$ && $1 -gt 0 ]]; }
for v in RUNS RAND_TIME NFILES TREE_FILES COMMITS REPO_FILES RSS_FILES STEP_TIMEOUT WALK_FILES; do
    is_uint "${!v}" || { echo "bench.sh: $v must be a positive integer, got '${!v}'" >&2; exit 64; }
done
[[ -z $PH_FILES ]] || is_uint "$PH_FILES" || { echo "bench.sh: --ph-files must be a positive integer" >&2; exit 64; }
to_bytes() { numfmt --from=iec "${1%iB}" 2>/dev/null || numfmt --from=iec "${1%B}" 2>/dev/null; }
SIZE=$(to_bytes "$SIZE_H") && is_uint "$SIZE" || { echo "bench.sh: bad --size '$SIZE_H'" >&2; exit 64; }
RAND_SIZE=$(to_bytes "$RAND_SIZE_H") && is_uint "$RAND_SIZE" || { echo "bench.sh: bad --rand-size '$RAND_SIZE_H'" >&2; exit 64; }
(( RAND_SIZE % 4096 == 0 )) || { echo "bench.sh: --rand-size must be a multiple of 4 KiB" >&2; exit 64; }

declare -A WANT_T=() WANT_W=()
IFS=, read -ra _t <<<"$TARGETS"
for t in "${_t[@]}"; do
    case $t in native|syncfs|rclone|hp) WANT_T[$t]=1 ;; *) echo "bench.sh: unknown target '$t'" >&2; exit 64 ;; esac
done
IFS=, read -ra _w <<<"$WORKLOADS"
for w in "${_w[@]}"; do
    case $w in seq|rand|files|untar|clone|walk) WANT_W[$w]=1 ;; *) echo "bench.sh: unknown workload '$w'" >&2; exit 64 ;; esac
done
if [[ $RSS_MODE == only ]]; then
    WANT_W=(); WANT_T=([syncfs]=1)
fi
if [[ $SYNC_MODE == only ]]; then
    WANT_W=(); WANT_T=([syncfs]=1)
fi
PH_RCLONE=${WANT_T[rclone]:-}   # the placeholder part mounts its own rclone, if rclone is a target
if [[ $PH_MODE == only || $MERGE_MODE == only || $SERVER_MODE == only ]]; then
    WANT_W=(); WANT_T=([syncfs]=1)
fi
DO_RSS=0
[[ $RSS_MODE != skip && -n ${WANT_T[syncfs]:-} ]] && DO_RSS=1
TARGET_ORDER=()
for t in native syncfs rclone hp; do [[ -n ${WANT_T[$t]:-} ]] && TARGET_ORDER+=("$t"); done
[[ ${#WANT_W[@]} -eq 0 || -n ${WANT_T[native]:-} ]] \
    || log "warning: native is not among the targets; ratios will be blank"

# ---------------------------------------------------------------- prerequisites
for c in python3 fusermount3 timeout numfmt; do
    command -v "$c" >/dev/null || die "$c not found"
done
[[ -n ${WANT_W[rand]:-} ]] && { command -v fio >/dev/null || die "fio not found"; }
[[ -n ${WANT_T[rclone]:-} ]] && { command -v rclone >/dev/null || die "rclone not found"; }
[[ -n ${WANT_W[clone]:-} ]] && { command -v git >/dev/null || die "git not found"; }
[[ -n ${WANT_W[untar]:-} ]] && { command -v tar >/dev/null || die "tar not found"; }
[[ -e /dev/fuse ]] || [[ ${TARGET_ORDER[*]} == native ]] || die "/dev/fuse missing"
CAN_DROP=0
if [[ -w /proc/sys/vm/drop_caches ]]; then CAN_DROP=1; else log "warning: cannot write drop_caches (not root?): cold reads skipped"; fi
[[ -d $WORKDIR ]] || die "--workdir $WORKDIR does not exist"
WORKDIR=$(cd "$WORKDIR" && pwd)
[[ $WORKDIR =~ [[:space:]] ]] && die "--workdir must not contain whitespace"
FSTYPE=$(findmnt -n -o FSTYPE --target "$WORKDIR" 2>/dev/null || stat -f -c %T "$WORKDIR")
[[ $FSTYPE == tmpfs ]] && log "warning: $WORKDIR is tmpfs; 'native' will be RAM, not disk"

SYNCFS_BIN=
if [[ -n ${WANT_T[syncfs]:-} ]]; then
    if [[ -n ${SYNCFS_MOUNT_BINARY:-} ]]; then
        SYNCFS_BIN=$SYNCFS_MOUNT_BINARY
    else
        SYNCFS_BIN=$REPO_ROOT/.build/release/syncfs-mount
        if [[ ! -x $SYNCFS_BIN ]]; then
            log "building syncfs-mount (swift build -c release) in $REPO_ROOT"
            (cd "$REPO_ROOT" && swift build -c release --product syncfs-mount) >&2 \
                || die "swift build failed"
        fi
    fi
    [[ -x $SYNCFS_BIN ]] || die "syncfs-mount binary not executable: $SYNCFS_BIN"
    SYNCFS_BIN=$(realpath "$SYNCFS_BIN")
    # Identify the binary now: a snapshot may be replaced while the benchmark runs.
    SYNCFS_ID="sha256 $(sha256sum "$SYNCFS_BIN" | cut -c1-12), built $(date -u -r "$SYNCFS_BIN" '+%Y-%m-%d %H:%M UTC')"
fi

# Keep git deterministic and independent of the user's configuration.
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0
export RCLONE_CONFIG=  # set below to an empty file in the work directory

# ---------------------------------------------------------------- state & cleanup
W=$(mktemp -d "$WORKDIR/syncfs-bench.XXXXXX") || die "mktemp failed"
RESULTS=$W/results.tsv
META=$W/meta.env
LOGS=$W/logs
FX=$W/fixtures
mkdir -p "$LOGS" "$FX"
: >"$RESULTS"
export RCLONE_CONFIG=$W/rclone.conf
: >"$RCLONE_CONFIG"
: >"$W/pids"
# Safety net if this script is SIGKILLed: unmount, stop the daemons, delete $W.
setsid "$HELPERS/watchdog.sh" "$$" "$W" "$WORKDIR/syncfs-bench-watchdog.log" </dev/null >/dev/null 2>&1 &
WATCHDOG_PID=$!

SYNCFS_PID= SYNCFS_MP=$W/syncfs/mnt LIFELINE_FD=
RCLONE_PID= RCLONE_MP=$W/rclone/mnt RCLONE_URL=
ERRORS=0
# shellcheck source=bench/hp.sh
source "$HELPERS/hp.sh"
declare -A ROOT=([native]=$W/native [syncfs]=$SYNCFS_MP [rclone]=$RCLONE_MP [hp]=$HP_MP)
declare -A DEAD=()

alive() {  # alive PID — running and not a zombie
    local s
    [[ -n $1 ]] || return 1
    s=$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
    [[ -n $s && $s != Z ]]
}
is_mounted() { awk -v mp="$1" '$2 == mp { f = 1 } END { exit !f }' /proc/mounts; }
wait_gone() {  # wait_gone PID SECONDS
    local i
    for ((i = 0; i < $2 * 10; i++)); do alive "$1" || return 0; sleep 0.1; done
    return 1
}
wait_unmounted() {  # wait_unmounted MP SECONDS
    local i
    for ((i = 0; i < $2 * 10; i++)); do is_mounted "$1" || return 0; sleep 0.1; done
    return 1
}
force_unmount() {  # last resort for a mount point that is still there
    local mp=$1 pid=$2
    is_mounted "$mp" || return 0
    fusermount3 -u "$mp" 2>/dev/null && wait_unmounted "$mp" 5 && return 0
    log "unmount of $mp failed; killing the daemon and detaching lazily"
    if alive "$pid"; then kill -TERM "$pid" 2>/dev/null; wait_gone "$pid" 5 || kill -KILL "$pid" 2>/dev/null; fi
    wait_unmounted "$mp" 3 || fusermount3 -uz "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null
    is_mounted "$mp" && log "ERROR: $mp is still mounted"
}

stop_syncfs() {
    [[ -n $SYNCFS_PID ]] || return 0
    if [[ -n $LIFELINE_FD ]]; then
        exec {LIFELINE_FD}>&-    # end-of-file on the daemon's stdin: it unmounts and exits
        LIFELINE_FD=
    fi
    if ! wait_gone "$SYNCFS_PID" 20; then
        log "SyncFS daemon still running 20 s after closing the lifeline; unmounting"
        is_mounted "$SYNCFS_MP" && fusermount3 -u "$SYNCFS_MP" 2>/dev/null
        wait_gone "$SYNCFS_PID" 10 || { kill -TERM "$SYNCFS_PID" 2>/dev/null; wait_gone "$SYNCFS_PID" 5; } \
            || kill -KILL "$SYNCFS_PID" 2>/dev/null
    fi
    force_unmount "$SYNCFS_MP" "$SYNCFS_PID"
    wait "$SYNCFS_PID" 2>/dev/null
    SYNCFS_PID=
}

stop_rclone() {
    [[ -n $RCLONE_PID ]] || return 0
    if is_mounted "$RCLONE_MP"; then
        local i
        for i in 1 2 3 4 5; do fusermount3 -u "$RCLONE_MP" 2>/dev/null && break; sleep 1; done
    fi
    wait_gone "$RCLONE_PID" 15 || { kill -TERM "$RCLONE_PID" 2>/dev/null; wait_gone "$RCLONE_PID" 5; } \
        || kill -KILL "$RCLONE_PID" 2>/dev/null
    force_unmount "$RCLONE_MP" "$RCLONE_PID"
    wait "$RCLONE_PID" 2>/dev/null
    RCLONE_PID=
}

CLEANED=0
cleanup() {
    local rc=$?
    [[ $CLEANED == 1 ]] && return
    CLEANED=1
    trap '' INT TERM
    if [[ -n $STEP_PID ]] && alive "$STEP_PID"; then
        kill -TERM "$STEP_PID" 2>/dev/null   # timeout(1) passes it on to the measured command
        wait_gone "$STEP_PID" 15 || kill -KILL "$STEP_PID" 2>/dev/null
    fi
    stop_syncfs
    stop_rclone
    hp_stop
    local mp
    for mp in $(awk -v w="$W/" 'index($2, w) == 1 { print $2 }' /proc/mounts 2>/dev/null | sort -r); do
        log "unmounting leftover $mp"
        fusermount3 -u "$mp" 2>/dev/null || fusermount3 -uz "$mp" 2>/dev/null
    done
    if [[ -n $KEEP_LOGS || ( $ERRORS -gt 0 && -d $LOGS ) ]]; then
        local dest=${KEEP_LOGS:-$WORKDIR/syncfs-bench-logs-$(date +%Y%m%d-%H%M%S)}
        mkdir -p "$dest" && cp -a "$LOGS/." "$dest/" 2>/dev/null && log "daemon logs kept in $dest"
    fi
    if awk -v w="$W/" 'index($2, w) == 1 { f = 1 } END { exit !f }' /proc/mounts; then
        log "ERROR: a mount under $W is still present; not deleting $W"
    else
        rm -rf --one-file-system "$W"
    fi
    kill "$WATCHDOG_PID" 2>/dev/null
    exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM
[[ -n ${WANT_T[hp]:-} ]] && hp_prerequisites   # after the trap: a failure still cleans up

# ---------------------------------------------------------------- helpers
BIO=(python3 "$HELPERS/bio.py")
bio() { timeout -k 10 "$STEP_TIMEOUT" "${BIO[@]}" "$@"; }   # untimed helper steps

# step CMD... — run a measured command under `timeout` in the background and wait for it, so a
# signal to the script is handled at once (the trap kills the step). stdout -> $LOGS/step.out.
STEP_PID=
step() {
    local rc
    if [[ -n $LIFELINE_FD ]]; then   # the step must not hold the daemon's lifeline open
        timeout -k 10 "$STEP_TIMEOUT" "$@" >"$LOGS/step.out" 2>"$LOGS/step.err" {LIFELINE_FD}>&- &
    else
        timeout -k 10 "$STEP_TIMEOUT" "$@" >"$LOGS/step.out" 2>"$LOGS/step.err" &
    fi
    STEP_PID=$!
    echo "$STEP_PID" >"$W/step.pid"   # for the watchdog
    wait "$STEP_PID"; rc=$?
    STEP_PID=
    : >"$W/step.pid"
    return "$rc"
}

record() {  # record RUN TARGET WORKLOAD VALUE
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RESULTS"
}

drop_caches() {
    [[ $CAN_DROP == 1 ]] || return 1
    timeout 300 sync
    echo 3 >/proc/sys/vm/drop_caches
}

# Wait until background work from the previous step is done: rclone's write-back uploads, dirty
# pages, and the FUSE daemons' CPU activity. Keeps one target's leftovers out of the next timing.
settle() {
    if [[ -n $RCLONE_PID ]] && alive "$RCLONE_PID"; then
        python3 "$HELPERS/bio.py" rclone-wait "$RCLONE_URL" 300 >/dev/null 2>>"$LOGS/settle.log"
    fi
    # Likewise SyncFS's uploads to its container (both are sync clients; neither is measured
    # while still uploading the previous step's files).
    if [[ -n $SYNCFS_PID ]] && alive "$SYNCFS_PID"; then
        timeout 600 "$SYNCFS_BIN" sync "$SYNCFS_MP" --timeout 300 >/dev/null 2>>"$LOGS/settle.log" || true
    fi
    timeout 300 sync
    local pids=()
    [[ -n $SYNCFS_PID ]] && pids+=("$SYNCFS_PID")
    [[ -n $RCLONE_PID ]] && pids+=("$RCLONE_PID")
    [[ -n $HP_PID ]] && pids+=("$HP_PID")
    [[ ${#pids[@]} -gt 0 ]] && python3 "$HELPERS/bio.py" quiesce 30 "${pids[@]}" >/dev/null
    return 0
}

target_ok() {  # is the target still usable?
    local t=$1
    [[ -z ${DEAD[$t]:-} ]] || return 1
    case $t in
        native) return 0 ;;
        syncfs) alive "$SYNCFS_PID" && is_mounted "$SYNCFS_MP" && return 0 ;;
        rclone) alive "$RCLONE_PID" && is_mounted "$RCLONE_MP" && return 0 ;;
        hp) alive "$HP_PID" && is_mounted "$HP_MP" && return 0 ;;
    esac
    DEAD[$t]=1
    ERRORS=$((ERRORS + 1))
    log "ERROR: the $t mount is gone (daemon exited or mount vanished); its remaining results are errors"
    [[ $t == syncfs ]] && tail -n 20 "$LOGS/syncfs.log" >&2
    [[ $t == rclone ]] && tail -n 20 "$LOGS/rclone.log" >&2
    [[ $t == hp ]] && tail -n 20 "$LOGS/hp.log" >&2
    return 1
}

# measure RUN TARGET WORKLOAD CMD... — run a step whose last output line is the value (or, with
# POST=function set, whose value POST prints), record it (or ERR on failure).
LAST=
measure() {
    local run=$1 t=$2 wl=$3 out rc
    shift 3
    LAST=
    if ! target_ok "$t"; then record "$run" "$t" "$wl" ERR; return 1; fi
    step "$@"; rc=$?
    if [[ $rc -eq 0 && -n ${POST:-} ]]; then
        out=$("$POST" 2>>"$LOGS/step.err"); rc=$?
    else
        out=$(tail -n 1 "$LOGS/step.out")
    fi
    if [[ $rc -ne 0 || ! $out =~ ^[0-9.]+$ ]]; then
        ERRORS=$((ERRORS + 1))
        log "ERROR: $wl on $t failed (exit $rc): $(tail -c 600 "$LOGS/step.err" | tr '\n' ' ')"
        { echo "== run $run $t $wl (exit $rc)"; cat "$LOGS/step.err"; } >>"$LOGS/errors.log"
        record "$run" "$t" "$wl" ERR
        return 1
    fi
    LAST=$out
    record "$run" "$t" "$wl" "$out"
    return 0
}

show() {  # show RUN TARGET WORKLOAD UNIT
    if [[ -n $LAST ]]; then
        log "run $1/$RUNS  $(printf '%-7s %-14s %s %s' "$2" "$3" "$LAST" "$4")"
    fi
}

cleanup_dir() {  # remove a workload directory (not timed); on a broken mount, give up quietly
    timeout 600 rm -rf "$1" 2>>"$LOGS/errors.log" || log "warning: could not remove $1"
}

# ---------------------------------------------------------------- mounts
start_rclone() {
    mkdir -p "$W/rclone/remote" "$RCLONE_MP" "$W/rclone/cache"
    local port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    RCLONE_URL=http://127.0.0.1:$port/
    # shellcheck disable=SC2086
    rclone mount "$W/rclone/remote" "$RCLONE_MP" --vfs-cache-mode full --cache-dir "$W/rclone/cache" \
        --rc --rc-addr "127.0.0.1:$port" --rc-no-auth --log-level INFO ${RCLONE_MOUNT_ARGS:-} \
        </dev/null >"$LOGS/rclone.log" 2>&1 &
    RCLONE_PID=$!
    echo "$RCLONE_PID" >>"$W/pids"
    local i
    for ((i = 0; i < 300; i++)); do
        is_mounted "$RCLONE_MP" && break
        alive "$RCLONE_PID" || break
        sleep 0.1
    done
    if ! is_mounted "$RCLONE_MP"; then
        tail -n 20 "$LOGS/rclone.log" >&2
        die "rclone mount did not come up"
    fi
    log "rclone mounted at $RCLONE_MP (pid $RCLONE_PID)"
}

start_syncfs() {
    mkdir -p "$W/syncfs" "$SYNCFS_MP"
    local fifo=$W/syncfs/lifeline
    mkfifo "$fifo"
    # The daemon's open of the FIFO blocks until we open the write end below; only the script
    # holds the write end, so the daemon sees end-of-file exactly when the script goes away.
    # A fresh container: binaries that make one only on request get --create (older ones lack it).
    local create=()
    # (Not `| grep -q`: under pipefail, the help text's writer may die of SIGPIPE once grep has matched.)
    [[ $("$SYNCFS_BIN" mount --help 2>/dev/null) == *--create* ]] && create=(--create)
    # shellcheck disable=SC2086
    "$SYNCFS_BIN" mount "$W/syncfs/container" "$SYNCFS_MP" --state-dir "$W/syncfs/state" \
        --foreground --lifeline "${create[@]}" ${SYNCFS_MOUNT_ARGS:-} \
        <"$fifo" >"$LOGS/syncfs.stdout" 2>"$LOGS/syncfs.log" &
    SYNCFS_PID=$!
    echo "$SYNCFS_PID" >>"$W/pids"
    exec {LIFELINE_FD}>"$fifo"
    local i
    for ((i = 0; i < 600; i++)); do
        grep -qx ready "$LOGS/syncfs.stdout" 2>/dev/null && break
        alive "$SYNCFS_PID" || break
        sleep 0.1
    done
    if ! grep -qx ready "$LOGS/syncfs.stdout" 2>/dev/null; then
        tail -n 30 "$LOGS/syncfs.log" >&2
        die "SyncFS did not print 'ready' within 60 s"
    fi
    is_mounted "$SYNCFS_MP" || die "SyncFS printed 'ready' but $SYNCFS_MP is not in /proc/mounts"
    log "SyncFS mounted at $SYNCFS_MP (pid $SYNCFS_PID, $SYNCFS_BIN)"
}

# ---------------------------------------------------------------- fixtures
make_fixtures() {
    local t0=$EPOCHREALTIME
    if [[ -n ${WANT_W[untar]:-} ]]; then
        python3 "$HELPERS/fixtures.py" tree "$FX/tree" "$TREE_FILES" || die "tree fixture failed"
        tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$FX/tree.tar" -C "$FX/tree" . \
            || die "tar fixture failed"
        rm -rf "$FX/tree"
        TREE_MIB=$(( $(stat -c %s "$FX/tree.tar") / 1048576 ))
    fi
    if [[ -n ${WANT_W[clone]:-} ]]; then
        git init -q --bare "$FX/repo.git" && git -C "$FX/repo.git" symbolic-ref HEAD refs/heads/main \
            || die "git init failed"
        python3 "$HELPERS/fixtures.py" fastimport "$REPO_FILES" "$COMMITS" \
            | git -C "$FX/repo.git" fast-import --quiet || die "git fast-import failed"
        git -C "$FX/repo.git" repack -adq || die "git repack failed"
    fi
    log "fixtures ready in $(python3 -c "print(f'{$EPOCHREALTIME - $t0:.1f}')") s"
}

# ---------------------------------------------------------------- workloads
CLK_TCK=$(getconf CLK_TCK)
daemon_pid() { case $1 in syncfs) echo "$SYNCFS_PID" ;; rclone) echo "$RCLONE_PID" ;; hp) echo "$HP_PID" ;; esac; }
io_snap() {  # io_snap PID — "rchar read_bytes cpu_ticks" of a daemon
    local k v r=0 d=0 st
    while read -r k v; do
        case $k in rchar:) r=$v ;; read_bytes:) d=$v ;; esac
    done <"/proc/$1/io" || return 1
    st=$(<"/proc/$1/stat") || return 1
    read -ra st <<<"${st##*) }"
    echo "$r $d $(( st[11] + st[12] ))"   # utime + stime (fields 14 and 15)
}
# read_io RUN TARGET KIND BEFORE — record how much the daemon read while the client read the file
read_io() {
    local after b_r b_d b_c a_r a_d a_c
    [[ -n $4 && -n $LAST ]] || return 0
    after=$(io_snap "$(daemon_pid "$2")") || return 0
    read -r b_r b_d b_c <<<"$4"
    read -r a_r a_d a_c <<<"$after"
    [[ "$b_r$b_d$b_c$a_r$a_d$a_c" =~ ^[0-9]+$ ]] || return 0
    record "$1" "$2" "io_${3}_rchar" $(( (a_r - b_r) / 1024 ))
    record "$1" "$2" "io_${3}_disk" $(( (a_d - b_d) / 1024 ))
    record "$1" "$2" "io_${3}_cpu" $(( (a_c - b_c) * 1000 / CLK_TCK ))   # ms
}

wl_seq() {
    local run=$1 t d dp snap
    for t in "${TARGET_ORDER[@]}"; do
        target_ok "$t" || { record "$run" "$t" seq_write ERR; continue; }
        d=${ROOT[$t]}/seq-$run
        mkdir -p "$d" || { record "$run" "$t" seq_write ERR; continue; }
        settle
        measure "$run" "$t" seq_write "${BIO[@]}" seqwrite "$d/big" "$SIZE" && show "$run" "$t" seq_write MiB/s
        # Just written: whatever the page cache (and the daemon) kept is warm.
        # For FUSE targets, the daemon's /proc/PID/io tells where the data came from.
        if [[ -n $LAST ]]; then
            dp=$(daemon_pid "$t"); snap=
            [[ -n $dp ]] && snap=$(io_snap "$dp")
            measure "$run" "$t" seq_read_warm "${BIO[@]}" seqread "$d/big" && show "$run" "$t" seq_read_warm MiB/s
            read_io "$run" "$t" warm "$snap"
            if [[ $CAN_DROP == 1 ]]; then
                settle
                drop_caches
                [[ -n $dp ]] && snap=$(io_snap "$dp")
                measure "$run" "$t" seq_read_cold "${BIO[@]}" seqread "$d/big" && show "$run" "$t" seq_read_cold MiB/s
                read_io "$run" "$t" cold "$snap"
            fi
        fi
        cleanup_dir "$d"
    done
}

FIO_JSON=
fio_args() {  # fio_args FILE RW — the fio command line for one 4 KiB random I/O test
    FIO_JSON=$W/fio.json
    rm -f "$FIO_JSON"
    FIO=(fio --name="$2" --filename="$1" --rw="$2" --bs=4k --size="$RAND_SIZE" --ioengine=psync
        --direct=0 --invalidate=0 --fallocate=none --time_based --runtime="$RAND_TIME"
        --randrepeat=1 --norandommap --output-format=json --output="$FIO_JSON")
}
fio_iops() { "${BIO[@]}" fio "$FIO_JSON" | awk '{ print $1 }'; }

wl_rand() {
    local run=$1 t d
    for t in "${TARGET_ORDER[@]}"; do
        target_ok "$t" || { record "$run" "$t" rand_read ERR; record "$run" "$t" rand_write ERR; continue; }
        d=${ROOT[$t]}/rand-$run
        mkdir -p "$d"
        # Lay the file out with large writes (fio would use 4 KiB ones), then read it once: warm.
        if ! bio seqwrite "$d/rand" "$RAND_SIZE" >/dev/null 2>>"$LOGS/errors.log" \
            || ! bio seqread "$d/rand" >/dev/null 2>>"$LOGS/errors.log"; then
            log "ERROR: preparing the random I/O file on $t failed"
            ERRORS=$((ERRORS + 1))
            record "$run" "$t" rand_read ERR; record "$run" "$t" rand_write ERR
            cleanup_dir "$d"; continue
        fi
        settle
        bio seqread "$d/rand" >/dev/null 2>&1   # re-warm in case settling evicted anything
        fio_args "$d/rand" randread
        POST=fio_iops measure "$run" "$t" rand_read "${FIO[@]}" && show "$run" "$t" rand_read IOPS
        settle
        fio_args "$d/rand" randwrite
        POST=fio_iops measure "$run" "$t" rand_write "${FIO[@]}" && show "$run" "$t" rand_write IOPS
        cleanup_dir "$d"
    done
}

wl_files() {
    local run=$1 t d
    for t in "${TARGET_ORDER[@]}"; do
        d=${ROOT[$t]}/files-$run
        target_ok "$t" && mkdir -p "$d"
        settle
        if measure "$run" "$t" create "${BIO[@]}" create "$d" "$NFILES"; then
            show "$run" "$t" create s
            settle
            measure "$run" "$t" stat "${BIO[@]}" stat "$d" "$NFILES" && show "$run" "$t" stat s
            settle
            measure "$run" "$t" delete "${BIO[@]}" delete "$d" "$NFILES" && show "$run" "$t" delete s
        else
            record "$run" "$t" stat ERR; record "$run" "$t" delete ERR
        fi
        target_ok "$t" && cleanup_dir "$d"
    done
}

wl_untar() {
    local run=$1 t d
    for t in "${TARGET_ORDER[@]}"; do
        d=${ROOT[$t]}/untar-$run
        target_ok "$t" && mkdir -p "$d"
        settle
        tar -tf "$FX/tree.tar" >/dev/null   # fixture and tar binary in the page cache for everyone
        measure "$run" "$t" untar "${BIO[@]}" run tar -xf "$FX/tree.tar" -C "$d" && show "$run" "$t" untar s
        target_ok "$t" && { settle; cleanup_dir "$d"; }
    done
}

wl_clone() {
    local run=$1 t d
    for t in "${TARGET_ORDER[@]}"; do
        d=${ROOT[$t]}/clone-$run
        settle
        cat "$FX"/repo.git/objects/pack/* >/dev/null   # warm the source repository
        git -C "$FX/repo.git" rev-parse HEAD >/dev/null
        measure "$run" "$t" git_clone "${BIO[@]}" run git clone -q "file://$FX/repo.git" "$d" && show "$run" "$t" git_clone s
        target_ok "$t" && { settle; cleanup_dir "$d"; }
    done
}

# Daemon memory with many files in the tree: create RSS_FILES empty files (1000 per directory),
# stat them all, read VmRSS/VmHWM of the daemon. The files are not deleted through the mount
# (the whole work directory goes away at the end).
wl_rss() {
    local v
    target_ok syncfs || { record 1 syncfs rss_stat ERR; return; }
    settle
    read -r v _ < <(python3 "$HELPERS/bio.py" rss "$SYNCFS_PID") && record 1 syncfs rss_idle "$v"
    mkdir -p "$SYNCFS_MP/rss"
    if measure 1 syncfs rss_create_s "${BIO[@]}" tree "$SYNCFS_MP/rss" "$RSS_FILES"; then
        log "created $RSS_FILES files on SyncFS in $LAST s"
        settle
        read -r v _ < <(python3 "$HELPERS/bio.py" rss "$SYNCFS_PID") && record 1 syncfs rss_files "$v"
        if step find "$SYNCFS_MP/rss" -ls; then
            settle
            read -r v _ < <(python3 "$HELPERS/bio.py" rss "$SYNCFS_PID") && record 1 syncfs rss_stat "$v"
            log "SyncFS daemon VmRSS with $RSS_FILES files: $v KiB"
        else
            ERRORS=$((ERRORS + 1)); log "ERROR: find over the $RSS_FILES files failed"
            record 1 syncfs rss_stat ERR
        fi
    else
        record 1 syncfs rss_stat ERR
    fi
    target_ok syncfs && read -r _ v < <(python3 "$HELPERS/bio.py" rss "$SYNCFS_PID") && record 1 syncfs rss_hwm "$v"
}

# shellcheck source=bench/walk.sh
source "$HELPERS/walk.sh"

# ---------------------------------------------------------------- main
T_START=$EPOCHREALTIME
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
if awk -v n="$(nproc)" '{ exit !($1 > n / 2) }' /proc/loadavg; then
    log "warning: the machine is busy (load average $LOAD_START on $(nproc) CPUs); results will be noisy"
fi
log "work directory $W ($FSTYPE); targets: ${TARGET_ORDER[*]}; runs: $RUNS; size $SIZE_H"
TREE_MIB=0
[[ ${#WANT_W[@]} -gt 0 ]] && make_fixtures
mkdir -p "$W/native"
# rclone first, so it does not inherit the write end of the SyncFS lifeline FIFO.
[[ -n ${WANT_T[rclone]:-} ]] && start_rclone
[[ -n ${WANT_T[hp]:-} && ${#WANT_W[@]} -gt 0 ]] && { hp_build; hp_start; }
[[ -n ${WANT_T[syncfs]:-} && $SYNC_MODE != only && $PH_MODE != only && $MERGE_MODE != only && $SERVER_MODE != only ]] && start_syncfs

for ((run = 1; run <= RUNS && ${#WANT_W[@]} > 0; run++)); do
    log "---- run $run of $RUNS"
    [[ -n ${WANT_W[seq]:-} ]] && wl_seq "$run"
    [[ -n ${WANT_W[rand]:-} ]] && wl_rand "$run"
    [[ -n ${WANT_W[files]:-} ]] && wl_files "$run"
    [[ -n ${WANT_W[untar]:-} ]] && wl_untar "$run"
    [[ -n ${WANT_W[clone]:-} ]] && wl_clone "$run"
    [[ -n ${WANT_W[walk]:-} ]] && wl_walk "$run"
done
[[ $DO_RSS == 1 ]] && { log "---- daemon memory test ($RSS_FILES files)"; wl_rss; }
if [[ -n $SYNCFS_PID ]] && target_ok syncfs; then
    read -r v h < <(python3 "$HELPERS/bio.py" rss "$SYNCFS_PID")
    [[ $DO_RSS == 1 ]] || record 1 syncfs rss_hwm "$h"
fi
if [[ -n $RCLONE_PID ]] && target_ok rclone; then
    read -r v _ < <(python3 "$HELPERS/bio.py" rss "$RCLONE_PID") && record 1 rclone rclone_rss_end "$v"
fi

# ---------------------------------------------------------------- report
notes=()
notes+=("native = a plain directory on the same $FSTYPE file system as the SyncFS container/state and the rclone remote/cache.")
[[ -n ${WANT_T[hp]:-} ]] && notes+=("hp = libfuse 3.14's example/passthrough_hp.cc (the FUSE ceiling: a passthrough of a local directory with 86400 s entry/attribute timeouts, splice and the writeback cache), compiled at bench time from Debian's fuse3_3.14.0.orig.tar.xz (SHA-256 checked against Debian's fuse3_3.14.0-4.dsc), mounted --foreground over a plain directory on the same disk.")
[[ -n ${WANT_W[seq]:-} ]] && notes+=("Warm read = read right after the write + fsync, without a warm-up read. Cold read: sync + 'echo 3 > /proc/sys/vm/drop_caches' (page cache, dentries, inodes). That empties the kernel's page cache of the FUSE files and of the daemons' backing files (SyncFS cache/container files, rclone's VFS cache file), but not any cache inside a daemon's own memory. rclone's cold read is served from its on-disk VFS cache, not from the remote.")
[[ -n ${WANT_W[rand]:-} ]] && notes+=("Random I/O: fio psync, direct=0, invalidate=0, 1 job, QD 1, file laid out with 1 MiB writes and read once before the random read; random write without fsync.")
[[ -n ${WANT_W[files]:-} ]] && notes+=("Create/stat/delete: one Python process per phase, one directory, O_CREAT|O_EXCL + 4 KiB write + close per file; stat = lstat right after creating (warm dentries; on FUSE mounts the first stat after a write still asks the daemon, a second pass is served from the kernel's attribute cache). Between timed steps the script waits for rclone's and SyncFS's uploads (syncfs-mount sync), runs sync and waits until the daemons are idle.")
[[ -n ${WANT_W[untar]:-} ]] && notes+=("Untar: GNU tar of a deterministic synthetic tree ($TREE_FILES files, text-like content), tarball read from the page cache.")
[[ -n ${WANT_W[clone]:-} ]] && notes+=("git clone: file:// URL (pack transfer + index-pack + checkout) of a deterministic repository generated with git fast-import ($COMMITS commits, $REPO_FILES files).")
[[ -n ${WANT_W[walk]:-} ]] && notes+=("Tree walks: $WALK_FILES empty files in directories of 1000, created through each target (untimed); cold = after sync + drop_caches before each command, warm = right after one untimed ls -lR; output to /dev/null, LC_ALL=C. ls -lR also asks for security.selinux and system.posix_acl_access of every file.")
[[ -n ${HP_WALK_SKIPPED:-} ]] && notes+=("hp did not run the tree walks: passthrough_hp keeps one open descriptor per inode, and its limit here (hard limit $(ulimit -Hn), not raisable in this container) is below $WALK_FILES files; use --walk-files to compare at a size it can hold.")
[[ $DO_RSS == 1 ]] && notes+=("Daemon memory: $RSS_FILES empty files in directories of 1000 created through the mount, then 'find -ls' over them; VmRSS of the daemon from /proc/PID/status.")
notes+=("Load average (1/5/15 min) at start: $LOAD_START; at end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs.")
[[ $ERRORS -gt 0 ]] && notes+=("$ERRORS step(s) failed; see the log output ('error' cells).")
{
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
    echo "nproc=$(nproc)"
    echo "mem=$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
    echo "kernel=$(uname -r)"
    echo "fs=$FSTYPE ($(df --output=source "$WORKDIR" | tail -n 1))"
    if [[ -n $SYNCFS_BIN ]]; then
        echo "syncfs_binary=$SYNCFS_BIN"
        echo "syncfs_rev=$SYNCFS_ID"
    fi
    echo "rclone_version=$(rclone version 2>/dev/null | head -n 1 | awk '{ print $2 }')"
    echo "fio_version=$(fio --version 2>/dev/null)"
    [[ -n ${HP_ID:-} ]] && echo "hp_version=$HP_ID"
    echo "runs=$([[ ${#WANT_W[@]} -gt 0 ]] && echo "$RUNS" || echo 1)"
    echo "quick=$QUICK"
    echo "size=$SIZE_H"
    echo "rand_size=$RAND_SIZE_H"
    echo "rand_time=$RAND_TIME"
    echo "files=$NFILES"
    echo "tree_files=$TREE_FILES"
    echo "tree_mib=$TREE_MIB"
    echo "commits=$COMMITS"
    echo "repo_files=$REPO_FILES"
    echo "rss_files=$RSS_FILES"
    echo "walk_files=$WALK_FILES"
    (IFS=$'\x1f'; j="${notes[*]}"; echo "notes=${j//$'\x1f'/ ;; }")
} >"$META"

# Unmount before reporting so the report never waits on a mount.
stop_syncfs
stop_rclone
hp_stop

[[ -n $RAW ]] && cp "$RESULTS" "$RAW"
MD=${OUT:--}
echo
python3 "$HELPERS/report.py" "$RESULTS" "$META" "$MD"
log "total time $(python3 -c "print(f'{($EPOCHREALTIME - $T_START) / 60:.1f}')") min; $ERRORS error(s)"
# Sync benchmarks: two mounts of one container (their own mounts; SyncFS only).
if [[ $SYNC_MODE != skip && -n $SYNCFS_BIN ]]; then
    log "---- sync benchmarks"
    sync_args=(--runs "$RUNS")
    [[ $QUICK == 1 ]] && sync_args+=(--edits 20 --dedup-mib 64 --random-mib 32)
    [[ -n $OUT ]] && sync_args+=(--out "$OUT")
    echo
    timeout -k 10 3600 python3 "$HELPERS/sync.py" "$SYNCFS_BIN" "$W" "${sync_args[@]}" \
        || { ERRORS=$((ERRORS + 1)); log "ERROR: the sync benchmarks failed"; }
fi
# run_script_step WHAT TIMEOUT SCRIPT WORKDIR ARGS… — a helper benchmark script with the SyncFS
# binary, in the background like a step, so the watchdog and the cleanup can stop it.
run_script_step() {
    local what=$1 limit=$2 script=$3
    shift 3
    timeout -k 10 "$limit" python3 "$HELPERS/$script" "$SYNCFS_BIN" "$@" &
    STEP_PID=$!
    echo "$STEP_PID" >"$W/step.pid"
    wait "$STEP_PID" || { ERRORS=$((ERRORS + 1)); log "ERROR: $what failed"; }
    STEP_PID=
    : >"$W/step.pid"
}
# Placeholder benchmarks: a container of many files attached by a fresh mount (their own mounts,
# their own rclone mount; SyncFS binary required). Run in the background like a step, so the
# watchdog and the cleanup can stop it.
if [[ $PH_MODE != skip && -n $SYNCFS_BIN ]]; then
    log "---- placeholder benchmarks"
    ph_args=(--runs "$RUNS")
    [[ $QUICK == 1 ]] && ph_args+=(--quick)
    [[ -n $PH_FILES ]] && ph_args+=(--files "$PH_FILES")
    [[ -n $PH_RCLONE ]] || ph_args+=(--no-rclone)
    [[ -n $OUT ]] && ph_args+=(--out "$OUT")
    echo
    run_script_step "the placeholder benchmarks" 5400 placeholders.py "$W/" "${ph_args[@]}"
fi
# Merge benchmark: two mounts of one container (their own mounts; SyncFS binary required).
if [[ $MERGE_MODE != skip && -n $SYNCFS_BIN ]]; then
    log "---- merge benchmark"
    merge_args=(--runs "$RUNS")
    [[ $QUICK == 1 ]] && merge_args+=(--size-mib 1)
    [[ -n $OUT ]] && merge_args+=(--out "$OUT")
    echo
    run_script_step "the merge benchmark" 1800 merge.py "$W" "${merge_args[@]}"
fi
# Sync server benchmarks: `syncfs-mount serve` on loopback, its own mounts and load clients.
if [[ $SERVER_MODE != skip && -n $SYNCFS_BIN ]]; then
    log "---- sync server benchmarks"
    server_args=(--runs "$RUNS")
    [[ $QUICK == 1 ]] && server_args+=(--edits 20 --seconds 2)
    [[ -n $OUT ]] && server_args+=(--out "$OUT")
    echo
    run_script_step "the sync server benchmarks" 1800 server.py "$W" "${server_args[@]}"
    # On PostgreSQL + S3 (#16): two `serve --database` processes, 8 mounts, against the embedded
    # server in the same run; needs the services' environment (scripts/services.sh start).
    if [[ -n ${SYNCFS_TEST_PG_URL:-} && -n ${SYNCFS_TEST_S3_ENDPOINT:-} ]]; then
        echo
        run_script_step "the PostgreSQL + S3 server benchmarks" 1800 server_db.py "$W" "${server_args[@]}"
    else
        log "PostgreSQL + S3 server benchmarks skipped: no SYNCFS_TEST_PG_URL/SYNCFS_TEST_S3_* (run scripts/services.sh start and source what it prints)"
    fi
    if [[ ${MILLION:-0} == 1 ]]; then run_script_step "the 1,000,000-entry container" 3600 million.py "$W" ${OUT:+--out "$OUT"}; fi
fi
[[ -n $OUT ]] && log "Markdown written to $OUT"
exit 0
