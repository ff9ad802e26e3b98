# shellcheck shell=bash
# scripts/bench/common.sh — sourced by scripts/bench.sh: logging, process and mount checks, and the measured-step machinery
# (step, measure, record, settle, drop_caches).
# Not a program of its own: it uses the variables and functions bench.sh defines before sourcing it.

log() { printf '%s [bench] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

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

# wait_mounted MP PID LOG MESSAGE — waits up to 30 s until MP is a mount point; if it is not
# (or PID died first), prints the end of LOG and dies with MESSAGE.
wait_mounted() {
    local mp=$1 pid=$2 log_file=$3 message=$4 i
    for ((i = 0; i < 300; i++)); do
        is_mounted "$mp" && return 0
        alive "$pid" || break
        sleep 0.1
    done
    is_mounted "$mp" && return 0
    tail -n 20 "$log_file" >&2
    die "$message"
}
