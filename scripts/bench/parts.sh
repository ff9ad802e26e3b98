# shellcheck shell=bash
# scripts/bench/parts.sh — sourced by scripts/bench.sh: the benchmark parts that run their own
# mounts after the table (sync, placeholders, merge, limits, server), each a script of scripts/bench/.
# Not a program of its own: it uses the variables and functions bench.sh defines before sourcing it.

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

# run_parts — the benchmark parts that run their own mounts after the table.
run_parts() {
    # Sync benchmarks: two mounts of one container (their own mounts; SyncFS only).
    if [[ $SYNC_MODE != skip && -n $SYNCFS_BIN ]]; then
        log "---- sync benchmarks"
        sync_args=(--runs "$RUNS")
        [[ $QUICK == 1 ]] && sync_args+=(--edits 20 --kind-trials 10 --dedup-mib 64 --random-mib 32 --upload-mib 64)
        [[ -n $OUT ]] && sync_args+=(--out "$OUT")
        echo
        timeout -k 10 3600 python3 "$HELPERS/sync.py" "$SYNCFS_BIN" "$W" "${sync_args[@]}" \
            || { ERRORS=$((ERRORS + 1)); log "ERROR: the sync benchmarks failed"; }
        # The same on an end-to-end encrypted container: its cost is the difference (doc/CRYPTO.md).
        log "---- sync benchmarks, encrypted container"
        echo
        timeout -k 10 3600 python3 "$HELPERS/sync.py" "$SYNCFS_BIN" "$W" "${sync_args[@]}" --encrypted \
            || { ERRORS=$((ERRORS + 1)); log "ERROR: the encrypted sync benchmarks failed"; }
    fi
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
    # Bandwidth limit benchmark: two mounts of one container, limited each way (their own mounts).
    if [[ $LIMITS_MODE != skip && -n $SYNCFS_BIN ]]; then
        log "---- bandwidth limit benchmark"
        echo
        run_script_step "the bandwidth limit benchmark" 600 limits.py "$W" ${OUT:+--out "$OUT"}
    fi
    # Small files: untar, create and git clone, then `sync`, on each container kind (their own
    # mounts and servers; PostgreSQL + S3 when the services' environment is set).
    if [[ $SMALL_MODE != skip && -n $SYNCFS_BIN ]]; then
        log "---- small-file benchmarks"
        small_args=(--runs "$RUNS")
        [[ $QUICK == 1 ]] && small_args+=(--quick)
        [[ -n $OUT ]] && small_args+=(--out "$OUT")
        echo
        run_script_step "the small-file benchmarks" 3600 small_files.py "$W" "${small_args[@]}"
    fi
    # Sync server benchmarks: `syncfs-mount serve` on loopback, its own mounts and load clients.
    if [[ $SERVER_MODE != skip && -n $SYNCFS_BIN ]]; then
        log "---- sync server benchmarks"
        server_args=(--runs "$RUNS")
        [[ $QUICK == 1 ]] && server_args+=(--edits 20 --kind-trials 10 --seconds 2)
        [[ -n $OUT ]] && server_args+=(--out "$OUT")
        echo
        run_script_step "the sync server benchmarks" 1800 server.py "$W" "${server_args[@]}"
        # On PostgreSQL + S3: two `serve --database` processes, 8 mounts, against the embedded
        # server in the same run; needs the services' environment (scripts/services.sh start).
        if [[ -n ${SYNCFS_TEST_PG_URL:-} && -n ${SYNCFS_TEST_S3_ENDPOINT:-} ]]; then
            echo
            run_script_step "the PostgreSQL + S3 server benchmarks" 1800 server_db.py "$W" "${server_args[@]}"
        else
            log "PostgreSQL + S3 server benchmarks skipped: no SYNCFS_TEST_PG_URL/SYNCFS_TEST_S3_* (run scripts/services.sh start and source what it prints)"
        fi
        # The web page: render times of a 10,000-entry folder and the other pages (goal: 50 ms p95).
        echo
        web_args=()
        [[ $QUICK == 1 ]] && web_args+=(--requests 20)
        [[ -n $OUT ]] && web_args+=(--out "$OUT")
        run_script_step "the web page benchmarks" 600 web.py "$W" "${web_args[@]}"
        if [[ ${MILLION:-0} == 1 ]]; then
            echo
            run_script_step "the 1,000,000-entry container" 3600 million.py "$W" ${OUT:+--out "$OUT"}
        fi
    fi
}
