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

# shellcheck source=bench/common.sh
source "$HELPERS/common.sh"
# shellcheck source=bench/options.sh
source "$HELPERS/options.sh"

# Where each run whose workloads ran keeps its raw results and settings for `--report`.
LAST_RUN=$WORKDIR/syncfs-bench-last

# ---------------------------------------------------------------- --report: tables of the last run
if [[ $REPORT_ONLY == 1 ]]; then
    [[ -s $LAST_RUN/results.tsv && -s $LAST_RUN/meta.env ]] \
        || die "no saved run in $LAST_RUN (run scripts/bench.sh with workloads first)"
    setting() { sed -n "s/^$1=//p" "$LAST_RUN/meta.env" | head -n 1; }
    RESULTS=$LAST_RUN/results.tsv
    SIZE=$(to_bytes "$(setting size)") || die "no size in $LAST_RUN/meta.env"
    NFILES=$(setting files)
    TREE_FILES=$(setting tree_files)
    # shellcheck source=bench/uploads.sh
    source "$HELPERS/uploads.sh"
    # shellcheck source=bench/back_to_back.sh
    source "$HELPERS/back_to_back.sh"
    python3 "$HELPERS/report.py" "$RESULTS" "$LAST_RUN/meta.env" "${OUT:--}"
    report_uploads "$OUT"
    report_back_to_back "$OUT"
    exit 0
fi

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
        for product in syncfs-mount syncfs-bench; do
            if [[ ! -x $REPO_ROOT/.build/release/$product ]]; then
                log "building $product (swift build -c release) in $REPO_ROOT"
                (cd "$REPO_ROOT" && swift build -c release --product "$product") >&2 \
                    || die "swift build failed"
            fi
        done
    fi
    [[ -x $SYNCFS_BIN ]] || die "syncfs-mount binary not executable: $SYNCFS_BIN"
    SYNCFS_BIN=$(realpath "$SYNCFS_BIN")
    # The benchmarks' own commands (seed-container, measure-server, …) are syncfs-bench's,
    # built beside syncfs-mount (scripts/bench/binaries.py).
    [[ -x $(dirname "$SYNCFS_BIN")/syncfs-bench ]] \
        || die "syncfs-bench not found beside $SYNCFS_BIN (swift build --product syncfs-bench)"
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

# shellcheck source=bench/page_reporting.sh
source "$HELPERS/page_reporting.sh"
# shellcheck source=bench/targets.sh
source "$HELPERS/targets.sh"
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM
[[ -n ${WANT_T[hp]:-} ]] && hp_prerequisites   # after the trap: a failure still cleans up

# shellcheck source=bench/workloads.sh
source "$HELPERS/workloads.sh"
# shellcheck source=bench/uploads.sh
source "$HELPERS/uploads.sh"
# shellcheck source=bench/back_to_back.sh
source "$HELPERS/back_to_back.sh"
# shellcheck source=bench/walk.sh
source "$HELPERS/walk.sh"

# ---------------------------------------------------------------- main
T_START=$EPOCHREALTIME
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
if awk -v n="$(nproc)" '{ exit !($1 > n / 2) }' /proc/loadavg; then
    log "warning: the machine is busy (load average $LOAD_START on $(nproc) CPUs); results will be noisy"
fi
log "work directory $W ($FSTYPE); targets: ${TARGET_ORDER[*]}; runs: $RUNS; size $SIZE_H"
pause_page_reporting
TREE_MIB=0
[[ ${#WANT_W[@]} -gt 0 ]] && make_fixtures
mkdir -p "$W/native"
# rclone first, so it does not inherit the write end of the SyncFS lifeline FIFO.
[[ -n ${WANT_T[rclone]:-} ]] && start_rclone
[[ -n ${WANT_T[hp]:-} && ${#WANT_W[@]} -gt 0 ]] && { hp_build; hp_start; }
[[ -n ${WANT_T[syncfs]:-} && $SYNC_MODE != only && $PH_MODE != only && $MERGE_MODE != only && $SERVER_MODE != only && $LIMITS_MODE != only && $SMALL_MODE != only ]] && start_syncfs
[[ -n $SYNCFS_PID && ${#WANT_W[@]} -gt 0 ]] && upload_floor

for ((run = 1; run <= RUNS && ${#WANT_W[@]} > 0; run++)); do
    log "---- run $run of $RUNS"
    [[ -n ${WANT_W[seq]:-} ]] && wl_seq "$run"
    [[ -n ${WANT_W[rand]:-} ]] && wl_rand "$run"
    [[ -n ${WANT_W[files]:-} ]] && wl_files "$run"
    [[ -n ${WANT_W[untar]:-} ]] && wl_untar "$run"
    [[ -n ${WANT_W[clone]:-} ]] && wl_clone "$run"
    [[ -n ${WANT_W[walk]:-} ]] && wl_walk "$run"
    [[ -n ${WANT_W[b2b]:-} ]] && wl_back_to_back "$run"
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
# shellcheck source=bench/report.sh
source "$HELPERS/report.sh"
write_meta

# Unmount before reporting so the report never waits on a mount.
stop_syncfs
stop_rclone
hp_stop

[[ -n $RAW ]] && cp "$RESULTS" "$RAW"
MD=${OUT:--}
echo
python3 "$HELPERS/report.py" "$RESULTS" "$META" "$MD"
report_uploads "$OUT"
report_back_to_back "$OUT"
if [[ ${#WANT_W[@]} -gt 0 ]]; then
    mkdir -p "$LAST_RUN" && cp "$RESULTS" "$LAST_RUN/results.tsv" && cp "$META" "$LAST_RUN/meta.env" \
        && log "results saved in $LAST_RUN (scripts/bench.sh --report prints their tables again)"
fi
log "total time $(python3 -c "print(f'{($EPOCHREALTIME - $T_START) / 60:.1f}')") min; $ERRORS error(s)"
# shellcheck source=bench/parts.sh
source "$HELPERS/parts.sh"
run_parts
[[ -n $OUT ]] && log "Markdown written to $OUT"
exit 0
