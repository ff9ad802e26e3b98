# shellcheck shell=bash
# scripts/bench/workloads.sh — sourced by scripts/bench.sh: the fixtures and the workloads (seq, rand, files, untar, clone, rss;
# walk is bench/walk.sh).
# Not a program of its own: it uses the variables and functions bench.sh defines before sourcing it.

# ---------------------------------------------------------------- fixtures
make_fixtures() {
    local t0=$EPOCHREALTIME
    if [[ -n ${WANT_W[untar]:-} || -n ${WANT_W[b2b]:-} ]]; then
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
        upload_time "$run" "$t" seq_write
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
            upload_time "$run" "$t" create
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
        upload_time "$run" "$t" untar
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
        upload_time "$run" "$t" git_clone
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
