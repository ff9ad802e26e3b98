# shellcheck shell=bash
# scripts/bench/targets.sh — sourced by scripts/bench.sh: starting and stopping the rclone and SyncFS mounts (hp: bench/hp.sh),
# and the cleanup on every exit path.
# Not a program of its own: it uses the variables and functions bench.sh defines before sourcing it.

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
    restore_page_reporting
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
    wait_mounted "$RCLONE_MP" "$RCLONE_PID" "$LOGS/rclone.log" "rclone mount did not come up"
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
    # The workloads delete 10,000 files at once: the mass-delete guard would rightly hold
    # every upload after that step (and `sync` exit 75), so the bench measures without it.
    [[ $("$SYNCFS_BIN" mount --help 2>/dev/null) == *--no-guard* ]] && create+=(--no-guard)
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
