# shellcheck shell=bash
# scripts/bench/report.sh — sourced by scripts/bench.sh: the run's notes and settings (meta.env)
# for bench/report.py.
# Not a program of its own: it uses the variables and functions bench.sh defines before sourcing it.

# write_meta — the notes and settings of the run, for report.py.
write_meta() {
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
    [[ -n $PAGE_REPORTING_NOTE ]] && notes+=("$PAGE_REPORTING_NOTE")
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

}
