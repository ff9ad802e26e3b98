# shellcheck shell=bash
# scripts/bench/uploads.sh — sourced by scripts/bench.sh: the cost of syncing itself. Right after
# each write-heavy step (sequential write, create, untar, git clone), how long until the target's
# sync client says everything the step wrote is uploaded; and the table of those times.
# Not a program of its own: it uses the variables and functions bench.sh defines before sourcing it.

# The workloads timed this way, as recorded by the workloads (a step WL gets WL_upload).
UPLOAD_WORKLOADS=(seq_write create untar git_clone)

# upload_time RUN TARGET WORKLOAD — call right after WORKLOAD's measured step (LAST set). SyncFS:
# the seconds until `syncfs-mount sync` returns (it makes every queued change ready at once — no
# upload delay — and returns when the container has committed them all). rclone: until its VFS
# has no queued or running upload (`bio.py rclone-wait`, polled every 0.25 s; rclone's own
# write-back delay, 5 s by default, is part of it). Recorded as WORKLOAD_upload; nothing for
# native and hp, which do not upload.
upload_time() {
    local run=$1 t=$2 wl=$3 t0 rc out
    [[ -n $LAST ]] || return 0
    case $t in
        syncfs)
            target_ok syncfs || return 0
            t0=$EPOCHREALTIME
            timeout 600 "$SYNCFS_BIN" sync "$SYNCFS_MP" --timeout 300 >/dev/null 2>>"$LOGS/upload.log"
            rc=$?
            out=$(python3 -c "print(f'{$EPOCHREALTIME - $t0:.3f}')")
            ;;
        rclone)
            target_ok rclone || return 0
            out=$(python3 "$HELPERS/bio.py" rclone-wait "$RCLONE_URL" 300 2>>"$LOGS/upload.log")
            rc=$?
            ;;
        *) return 0 ;;
    esac
    if [[ $rc -ne 0 || ! $out =~ ^[0-9.]+$ ]]; then
        ERRORS=$((ERRORS + 1))
        log "ERROR: waiting for the uploads of $wl on $t failed (exit $rc); see upload.log"
        record "$run" "$t" "${wl}_upload" ERR
        return 1
    fi
    record "$run" "$t" "${wl}_upload" "$out"
    log "run $run/$RUNS  $(printf '%-7s %-14s %s s' "$t" "${wl} uploaded" "$out")"
}

# upload_floor — the time of `syncfs-mount sync` with nothing queued (process start, one control
# round trip), three times: the floor under the SyncFS column. Recorded as sync_floor.
upload_floor() {
    local i t0
    target_ok syncfs || return 0
    timeout 600 "$SYNCFS_BIN" sync "$SYNCFS_MP" --timeout 300 >/dev/null 2>>"$LOGS/upload.log"
    for i in 1 2 3; do
        t0=$EPOCHREALTIME
        timeout 600 "$SYNCFS_BIN" sync "$SYNCFS_MP" --timeout 300 >/dev/null 2>>"$LOGS/upload.log" || return 0
        record "$i" syncfs sync_floor "$(python3 -c "print(f'{$EPOCHREALTIME - $t0:.3f}')")"
    done
}

# report_uploads [MD_FILE] — the table: per write-heavy step, the step's own time, the time
# until uploaded after it and their sum (written and uploaded), medians over the runs, for SyncFS
# and rclone. Printed, and appended to
# MD_FILE when given. Nothing when no such step ran on a syncing target.
report_uploads() {
    python3 - "$RESULTS" "$SIZE" "$NFILES" "$TREE_FILES" "${1:-}" "$HELPERS" <<'PY'
import statistics, sys
results, size, nfiles, tree_files, md = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
sys.path.insert(0, sys.argv[6])
from results import successful_values
vals = successful_values(results)
def med(t, w):
    v = vals.get((t, w))
    return statistics.median(v) if v else None
steps = [
    ("seq_write", f"Sequential write {size / 1048576:.0f} MiB + fsync"),
    ("create", f"Create {nfiles} × 4 KiB files"),
    ("untar", f"Untar {tree_files} files"),
    ("git_clone", "git clone"),
]
targets = [t for t in ("syncfs", "rclone") if any((t, f"{w}_upload") in vals for w, _ in steps)]
if not targets:
    sys.exit(0)
names = {"syncfs": "SyncFS", "rclone": "rclone"}
def step_seconds(t, w):
    v = med(t, w)
    if v is None:
        return None
    return size / 1048576 / v if w == "seq_write" else v   # seq_write is recorded in MiB/s
def cell(v):
    return "—" if v is None else f"{v:.2f} s"
# SyncFS's goals: seconds until uploaded after the step, and step + upload no slower than rclone's.
goals = {"create": 2.0, "untar": 3.0, "git_clone": 1.5}
head = ["Write-heavy step"]
for t in targets:
    head += [f"{names[t]}: step", f"{names[t]}: until uploaded", f"{names[t]}: step + upload",
             f"{names[t]}: uploaded / step"]
head.append("SyncFS goal")
out = ["", "| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 2) + "|---|"]
for w, label in steps:
    row = [label]
    if not any((t, f"{w}_upload") in vals for t in targets):
        continue
    totals = {}
    for t in targets:
        s, u = step_seconds(t, w), med(t, f"{w}_upload")
        both = None if s is None or u is None else s + u
        totals[t] = both
        row += [cell(s), cell(u), cell(both), "—" if both is None or s == 0 else f"{u / s:.2f}×"]
    verdicts = []
    upload = med("syncfs", f"{w}_upload")
    if w in goals and upload is not None:
        verdicts.append(f"uploaded ≤ {goals[w]:.1f} s: {'PASS' if upload <= goals[w] else 'FAIL'}")
    if totals.get("syncfs") is not None and totals.get("rclone") is not None:
        verdicts.append(f"≤ rclone: {'PASS' if totals['syncfs'] <= totals['rclone'] else 'FAIL'}")
    row.append("; ".join(verdicts) or "—")
    out.append("| " + " | ".join(row) + " |")
floor = med("syncfs", "sync_floor")
out.append("")
out.append("Time until uploaded = from the end of the step until the sync client says everything is uploaded "
           "(SyncFS: `syncfs-mount sync` returns — it skips the upload delay of 100 ms and waits for the "
           "container's commits; rclone: its VFS has no queued or running upload, polled every 0.25 s, "
           "including rclone's 5 s write-back delay); medians over the runs."
           + (f" `syncfs-mount sync` with nothing queued takes {floor:.2f} s (the floor of the column)." if floor is not None else ""))
text = "\n".join(out) + "\n"
sys.stdout.write(text)
if md and md != "-":
    with open(md, "a") as f:
        f.write(text)
PY
}
