# shellcheck shell=bash
# scripts/bench/back_to_back.sh — sourced by scripts/bench.sh: the workload `b2b`, create and
# untar measured as an independent harness measures them. Each target in turn, right after the
# previous target's step: no `settle` (no wait for the sync clients' uploads, for dirty pages or
# for the daemons to go idle) between steps or targets, so a sync client's uploads of one step run
# during the next steps, its own and the other targets'. The other workloads settle before each
# step, which measures a target with nothing else running; a user's machine does not wait.
# Not a program of its own: it uses the variables and functions bench.sh defines before sourcing it.

# wl_back_to_back RUN — create NFILES × 4 KiB (bio.py create: open(O_CREAT|O_EXCL)/write/close)
# on every target in turn, then untar the tree on every target in turn; recorded as create_b2b
# and untar_b2b. Settles once before the first step and once after the last (then cleans up).
wl_back_to_back() {
    local run=$1 t
    settle
    tar -tf "$FX/tree.tar" >/dev/null   # fixture and tar binary in the page cache for everyone
    for t in "${TARGET_ORDER[@]}"; do
        target_ok "$t" && mkdir -p "${ROOT[$t]}/b2b-create-$run" "${ROOT[$t]}/b2b-untar-$run"
    done
    for t in "${TARGET_ORDER[@]}"; do
        measure "$run" "$t" create_b2b "${BIO[@]}" create "${ROOT[$t]}/b2b-create-$run" "$NFILES" \
            && show "$run" "$t" create_b2b s
    done
    for t in "${TARGET_ORDER[@]}"; do
        measure "$run" "$t" untar_b2b "${BIO[@]}" run tar -xf "$FX/tree.tar" -C "${ROOT[$t]}/b2b-untar-$run" \
            && show "$run" "$t" untar_b2b s
    done
    settle
    for t in "${TARGET_ORDER[@]}"; do
        target_ok "$t" && cleanup_dir "${ROOT[$t]}/b2b-create-$run" && cleanup_dir "${ROOT[$t]}/b2b-untar-$run"
    done
}

# report_back_to_back [MD_FILE] — the table: create and untar back to back, per target, medians,
# and SyncFS against hp (the FUSE ceiling); the goal is SyncFS ≥ hp on both rows. Printed, and
# appended to MD_FILE when given. Nothing when the workload did not run.
report_back_to_back() {
    python3 - "$RESULTS" "$NFILES" "$TREE_FILES" "${1:-}" "$HELPERS" <<'PY'
import statistics, sys
results, nfiles, tree_files, md = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
sys.path.insert(0, sys.argv[5])
from results import successful_values
vals = successful_values(results)
rows = [("create_b2b", f"Create {nfiles} × 4 KiB files, back to back"),
        ("untar_b2b", f"Untar {tree_files} files, back to back")]
if not any(w == wl for _, w in vals for wl, _ in rows):
    sys.exit(0)
names = [("native", "native"), ("hp", "hp"), ("syncfs", "SyncFS"), ("rclone", "rclone")]
targets = [(t, n) for t, n in names if any((t, w) in vals for w, _ in rows)]
head = ["Step (no wait for uploads)"] + [n for _, n in targets] + ["SyncFS vs hp", "Goal (≥ hp)"]
out = ["", "| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 2) + "|---|"]
for w, label in rows:
    med = {t: statistics.median(vals[(t, w)]) for t, _ in targets if (t, w) in vals}
    row = [label] + [f"{med[t]:.2f} s" if t in med else "—" for t, _ in targets]
    if "syncfs" in med and "hp" in med and med["syncfs"] > 0:
        speed = med["hp"] / med["syncfs"]   # > 1: SyncFS faster than hp
        row += [f"{speed:.2f}×", "PASS" if speed >= 1 else "FAIL"]
    else:
        row += ["—", "—"]
    out.append("| " + " | ".join(row) + " |")
out.append("")
out.append("Back to back: each target right after the previous target's step, without waiting for "
           "any sync client's uploads (an independent harness's order); SyncFS vs hp is hp's time / "
           "SyncFS's time (above 1: faster than the FUSE ceiling's passthrough). Medians over the runs.")
text = "\n".join(out) + "\n"
sys.stdout.write(text)
if md and md != "-":
    with open(md, "a") as f:
        f.write(text)
PY
}
