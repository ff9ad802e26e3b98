# scripts/bench/walk.sh — the `walk` workload of scripts/bench.sh: tree walks over WALK_FILES
# empty files in directories of 1000 (find, ls -lR, du), cold and warm.
#
# Sourced by bench.sh (needs its measure, show, settle, drop_caches, bio, cleanup_dir, record,
# target_ok, $ROOT, $TARGET_ORDER, $CAN_DROP, $BIO).
#
# Per target: the tree is created through the target (untimed), everything settles, then
#   cold  = after `sync; echo 3 > drop_caches` (the kernel's dentries, inodes and pages are gone,
#           a daemon's own memory is not): `find`, then (caches dropped again) `ls -lR`, `du -s`
#   warm  = right after the cold walks: `ls -lR`, `find`, `du -s` again
# Output of every command goes to /dev/null; LC_ALL=C so sorting does not depend on the locale.

# walk_cmd SHELL-COMMAND DIR — a measured command line (`bio run` times it; output discarded).
walk_cmd() { WALK=("${BIO[@]}" run sh -c "LC_ALL=C $1 \"\$0\" >/dev/null" "$2"); }

wl_walk() {
    local run=$1 t d
    for t in "${TARGET_ORDER[@]}"; do
        d=${ROOT[$t]}/walk-$run
        if [[ $t == hp ]] && (($(hp_max_files) < WALK_FILES + 100)); then
            # Not an error of the walk: hp holds a descriptor per inode (see hp.sh).
            log "hp: skipping the walk of $WALK_FILES files: passthrough_hp's descriptor limit ($(hp_max_files) + 200) is too low"
            HP_WALK_SKIPPED=1
            continue
        fi
        if ! target_ok "$t" || ! mkdir -p "$d" || ! bio tree "$d" "$WALK_FILES" >/dev/null 2>>"$LOGS/errors.log"; then
            local w
            ERRORS=$((ERRORS + 1))
            log "ERROR: creating the $WALK_FILES-file tree on $t failed: $(tail -c 400 "$LOGS/errors.log" | tr '\n' ' ')"
            for w in walk_find_cold walk_lslr_cold walk_du_cold walk_lslr_warm walk_find_warm walk_du_warm; do
                record "$run" "$t" "$w" ERR
            done
            continue
        fi
        if [[ $CAN_DROP == 1 ]]; then
            settle; drop_caches
            walk_cmd "find" "$d" && measure "$run" "$t" walk_find_cold "${WALK[@]}" && show "$run" "$t" walk_find_cold s
            settle; drop_caches
            walk_cmd "ls -lR" "$d" && measure "$run" "$t" walk_lslr_cold "${WALK[@]}" && show "$run" "$t" walk_lslr_cold s
            settle; drop_caches
            walk_cmd "du -s" "$d" && measure "$run" "$t" walk_du_cold "${WALK[@]}" && show "$run" "$t" walk_du_cold s
        fi
        # Warm: one untimed listing first, so every name and attribute has been asked once.
        bio run sh -c 'LC_ALL=C ls -lR "$0" >/dev/null' "$d" >/dev/null 2>&1
        walk_cmd "ls -lR" "$d" && measure "$run" "$t" walk_lslr_warm "${WALK[@]}" && show "$run" "$t" walk_lslr_warm s
        walk_cmd "find" "$d" && measure "$run" "$t" walk_find_warm "${WALK[@]}" && show "$run" "$t" walk_find_warm s
        walk_cmd "du -s" "$d" && measure "$run" "$t" walk_du_warm "${WALK[@]}" && show "$run" "$t" walk_du_warm s
        target_ok "$t" && { settle; cleanup_dir "$d"; }
    done
}
