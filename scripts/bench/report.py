#!/usr/bin/env python3
"""Summarise scripts/bench.sh results.

  report.py RESULTS.tsv META.env MARKDOWN_OUT   ("-": print only)

RESULTS.tsv lines: run <TAB> target <TAB> workload <TAB> value   (value "ERR" on failure)
META.env lines:    key=value
Prints a plain-text table and the Markdown version on stdout and writes the Markdown to
MARKDOWN_OUT. Exit status 0 (the verdicts are in the output, not in the status).
"""
import math
import statistics
import sys
from collections import defaultdict

TARGETS = [("native", "native"), ("syncfs", "SyncFS"), ("rclone", "rclone"), ("hp", "hp")]

# key, label, unit, kind, goal
#   kind "thr":  value is a rate, ratio = target / native
#   kind "ops":  value is seconds for N operations, shown as ops/s, ratio = native time / target time
#   kind "time": value is seconds, ratio = target time / native time
#   goal: (">=", x) on the ratio, ("<=", x) on the ratio, or None
WORKLOADS = [
    ("seq_write", "Sequential write {size} (1 MiB blocks + fsync)", "MiB/s", "thr", (">=", 0.75)),
    ("seq_read_warm", "Sequential read {size}, warm", "MiB/s", "thr", (">=", 0.85)),
    ("seq_read_cold", "Sequential read {size}, cold (drop_caches)", "MiB/s", "thr", None),
    ("rand_read", "4 KiB random read {rand_size}, warm, {rand_time} s", "IOPS", "thr", (">=", 0.8)),
    ("rand_write", "4 KiB random write {rand_size}, {rand_time} s", "IOPS", "thr", None),
    ("create", "Create {files} × 4 KiB files", "files/s", "ops", (">=", 0.45)),
    ("stat", "Stat {files} files (warm)", "files/s", "ops", None),
    ("delete", "Delete {files} files", "files/s", "ops", None),
    ("untar", "Untar {tree_files} files ({tree_mib} MiB)", "s", "time", ("<=", 1.6)),
    ("git_clone", "git clone {commits} commits, {repo_files} files", "s", "time", ("<=", 1.45)),
    ("walk_find_cold", "find of {walk_files} files, cold", "s", "time", ("<=", 3.0)),
    ("walk_lslr_cold", "ls -lR of {walk_files} files, cold", "s", "time", ("<=", 3.0)),
    ("walk_du_cold", "du -s of {walk_files} files, cold", "s", "time", ("<=", 3.0)),
    ("walk_lslr_warm", "ls -lR of {walk_files} files, warm", "s", "time", ("<=", 2.0)),
    ("walk_find_warm", "find of {walk_files} files, warm", "s", "time", ("<=", 2.0)),
    ("walk_du_warm", "du -s of {walk_files} files, warm", "s", "time", ("<=", 2.0)),
]
RSS_GOAL_MB = 150.0


def load(results):
    data = defaultdict(list)  # (target, workload) -> [float | None]
    with open(results) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4:
                continue
            _, target, wl, val = parts
            data[(target, wl)].append(None if val == "ERR" else float(val))
    return data


def median(vals):
    if not vals:
        return None
    if any(v is None for v in vals):
        return "ERR"
    return statistics.median(vals)


def fmt_num(x):
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def fmt_value(kind, unit, v, n_ops):
    if v is None:
        return "—"
    if v == "ERR":
        return "error"
    if kind == "ops":
        return f"{fmt_num(n_ops / v)} ({v:.2f} s)"
    if unit == "IOPS":
        return f"{fmt_num(v)} ({v * 4 / 1024:.1f} MiB/s)"
    if unit == "s":
        return f"{v:.2f} s"
    return f"{fmt_num(v)}"


def ratio(kind, native, v):
    if not isinstance(native, float) or not isinstance(v, float) or v == 0 or native == 0:
        return None
    if kind == "thr":
        return v / native
    if kind == "ops":
        return native / v
    return v / native


def fmt_ratio(kind, r):
    if r is None:
        return "—"
    return f"{r:.2f}×" if kind == "time" else f"{r:.2f}"


def verdict(goal, r, v):
    if goal is None:
        return ""
    if v is None:
        return "not run"
    if r is None:
        return "FAIL (error)" if v == "ERR" else "—"
    op, x = goal
    ok = r >= x if op == ">=" else r <= x
    return "PASS" if ok else "FAIL"


def better(kind):
    """Time ratios are better when lower, the others when higher: a score where higher wins."""
    return (lambda r: 1 / r) if kind == "time" else (lambda r: r)


def versus_best(kind, r_s, r_r, r_h):
    """SyncFS against the better of rclone and hp in the same run (the issue's goal: ≥)."""
    others = [r for r in (r_r, r_h) if r is not None]
    if r_s is None or not others or r_s <= 0:
        return ""
    score = better(kind)
    best = max(score(r) for r in others)
    return f"{'PASS' if score(r_s) >= best else 'FAIL'} ({score(r_s) / best:.2f}×)"


def geomean_line(shared, index, name):
    """Geometric mean of SyncFS's score over another target's, over the workloads both ran."""
    q = [better(k)(row[0]) / better(k)(row[index]) for k, *row in shared
         if row[index] is not None and row[0] > 0 and row[index] > 0]
    if not q:
        return None
    return f"Geometric mean of SyncFS's ratios over {name}'s ({len(q)} shared workloads, higher is better): " \
           f"{math.exp(sum(math.log(x) for x in q) / len(q)):.2f}×"


def fmt_goal(kind, goal):
    if goal is None:
        return ""
    op, x = goal
    sym = "≥" if op == ">=" else "≤"
    return f"{sym} {x}×" if kind == "time" else f"{sym} {x}"


def main():
    results, meta_path, md_out = sys.argv[1:4]
    meta = {}
    with open(meta_path) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            if k:
                meta[k] = v
    data = load(results)
    fmtargs = defaultdict(str, meta)

    headers = ["Workload", "unit", "native", "SyncFS", "SyncFS/native", "goal", "SyncFS result",
               "rclone", "rclone/native", "rclone vs goal", "hp", "hp/native", "SyncFS vs best FUSE"]
    rows = []
    shared = []  # (kind, SyncFS, rclone, hp ratios) of every workload SyncFS ran
    passed, failed = [], []
    for key, label, unit, kind, goal in WORKLOADS:
        meds = {t: median(data.get((t, key), [])) for t, _ in TARGETS}
        if all(m is None for m in meds.values()):
            continue
        n_ops = float(meta.get("files", "0") or 0)
        nat = meds["native"]
        r_s = ratio(kind, nat, meds["syncfs"])
        r_r = ratio(kind, nat, meds["rclone"])
        r_h = ratio(kind, nat, meds["hp"])
        v_s = verdict(goal, r_s, meds["syncfs"])
        v_r = verdict(goal, r_r, meds["rclone"])
        name = label.format_map(fmtargs)
        if v_s.startswith("PASS"):
            passed.append(name)
        elif v_s.startswith("FAIL"):
            failed.append(name)
        rows.append([
            name, unit,
            fmt_value(kind, unit, nat, n_ops),
            fmt_value(kind, unit, meds["syncfs"], n_ops),
            fmt_ratio(kind, r_s), fmt_goal(kind, goal), v_s,
            fmt_value(kind, unit, meds["rclone"], n_ops),
            fmt_ratio(kind, r_r), v_r,
            fmt_value(kind, unit, meds["hp"], n_ops),
            fmt_ratio(kind, r_h), versus_best(kind, r_s, r_r, r_h),
        ])
        if r_s is not None:
            shared.append((kind, r_s, r_r, r_h))

    # Daemon memory (KiB in the results; reported in MB = 10^6 bytes and MiB).
    rss_rows = []
    rss_labels = [
        ("rss_idle", "SyncFS daemon RSS, idle before the {rss_files}-file test"),
        ("rss_files", "SyncFS daemon RSS after creating {rss_files} files"),
        ("rss_stat", "SyncFS daemon RSS after stat of all {rss_files} files"),
        ("rss_hwm", "SyncFS daemon peak RSS (VmHWM) during the run"),
        ("rss_create_s", "(time to create the {rss_files} files, s)"),
        ("rclone_rss_end", "rclone RSS at the end of the run (reference)"),
    ]
    rss_result = None
    for key, label in rss_labels:
        t = "rclone" if key.startswith("rclone") else "syncfs"
        m = median(data.get((t, key), []))
        if m is None:
            continue
        name = label.format_map(fmtargs)
        if m == "ERR":
            rss_rows.append([name, "error", ""])
            if key == "rss_stat":
                rss_result = "FAIL (error)"
            continue
        if key == "rss_create_s":
            rss_rows.append([name, f"{m:.1f} s", ""])
            continue
        mb = m * 1024 / 1e6
        res = ""
        if key == "rss_stat":
            res = "PASS" if mb < RSS_GOAL_MB else "FAIL"
            rss_result = res
            res += f" (goal < {RSS_GOAL_MB:.0f} MB)"
        rss_rows.append([name, f"{mb:.1f} MB ({m / 1024:.1f} MiB)", res])
    if rss_result == "PASS":
        passed.append(f"daemon RSS with {meta.get('rss_files', '?')} files")
    elif rss_result:
        failed.append(f"daemon RSS with {meta.get('rss_files', '?')} files")

    # Where the sequential reads were served from (daemon /proc/PID/io deltas, KiB in the results).
    io_rows = []
    for t, tname in TARGETS[1:]:
        cells = []
        for kind in ("warm", "cold"):
            for m in ("cpu", "rchar", "disk"):
                v = median(data.get((t, f"io_{kind}_{m}"), []))
                if not isinstance(v, float):
                    cells.append("—")
                elif m == "cpu":
                    cells.append(f"{v / 1000:.2f}")
                else:
                    cells.append(f"{v / 1024:,.0f}")
        if any(c != "—" for c in cells):
            io_rows.append([tname] + cells)
    io_headers = ["daemon", "warm: CPU s", "warm: read() MiB", "warm: disk MiB",
                  "cold: CPU s", "cold: read() MiB", "cold: disk MiB"]

    # ---- plain text ----
    out = []
    if rows:
        widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(len(headers))]
        line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
        out.append(line)
        out.append("-" * len(line))
        for r in rows:
            out.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
        out.append("")
    if io_rows:
        out.append(f"Daemon I/O during the {meta.get('size', '?')} sequential reads (median; /proc/PID/io):")
        for r in [io_headers] + io_rows:
            out.append("  ".join(str(c).ljust(16) for c in r))
        out.append("")
    if rss_rows:
        w0 = max(len(r[0]) for r in rss_rows)
        w1 = max(len(r[1]) for r in rss_rows)
        for r in rss_rows:
            out.append(f"{r[0].ljust(w0)}  {r[1].ljust(w1)}  {r[2]}")
        out.append("")
    summary = []
    if passed or failed:
        summary.append(f"SyncFS targets passed: {len(passed)} of {len(passed) + len(failed)}")
        for p in passed:
            summary.append(f"  PASS  {p}")
        for p in failed:
            summary.append(f"  FAIL  {p}")
    out += summary
    print("\n".join(out))

    # ---- markdown ----
    md = []
    md.append(f"### Benchmark {meta.get('date', '')}")
    md.append("")
    md.append(f"- Machine: {meta.get('cpu', '?')}, {meta.get('nproc', '?')} CPUs, "
              f"{meta.get('mem', '?')} RAM, kernel {meta.get('kernel', '?')}; "
              f"disk: {meta.get('fs', '?')}")
    md.append(f"- SyncFS: `{meta.get('syncfs_binary', '—')}` ({meta.get('syncfs_rev', '?')}); "
              f"rclone {meta.get('rclone_version', '?')} `mount --vfs-cache-mode full` over a local "
              f"directory; fio {meta.get('fio_version', '?')}")
    if meta.get("hp_version"):
        md.append(f"- hp: {meta['hp_version']}, `--foreground` over a local directory")
    md.append(f"- Median of {meta.get('runs', '?')} run(s){' (QUICK mode: small sizes)' if meta.get('quick') == '1' else ''}; "
              f"ratios: throughput = target/native, time = target time/native time; "
              f"files/s ratios = native time/target time.")
    md.append("")
    if rows:
        md.append("| " + " | ".join(headers) + " |")
        md.append("|" + "|".join("---" if i < 2 else "---:" for i in range(len(headers))) + "|")
        for r in rows:
            md.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
        md.append("")
        for index, name in ((1, "rclone"), (2, "passthrough_hp")):
            line = geomean_line(shared, index, name)
            if line:
                md.append(f"- {line}")
        md.append("")
    if io_rows:
        md.append(f"Where the {meta.get('size', '?')} sequential reads were served from — what the FUSE daemon did "
                  "during the client's read: CPU time (utime+stime), bytes through read()/pread() (`rchar`; "
                  "splice and mmap are not counted) and bytes fetched from disk (`read_bytes`), from "
                  "`/proc/PID/stat` and `/proc/PID/io`. CPU ≈ 0 → the kernel's page cache of the FUSE file "
                  "answered without the daemon; disk ≈ 0 with daemon CPU → the daemon served the data from its "
                  "backing file in the page cache or from its own memory; disk ≈ size → from disk.")
        md.append("")
        md.append("| " + " | ".join(io_headers) + " |")
        md.append("|---" + "|---:" * (len(io_headers) - 1) + "|")
        for r in io_rows:
            md.append("| " + " | ".join(r) + " |")
        md.append("")
    if rss_rows:
        md.append("| Memory | value | result |")
        md.append("|---|---:|---|")
        for r in rss_rows:
            md.append(f"| {r[0]} | {r[1]} | {r[2]} |")
        md.append("")
    if summary:
        md.append("**" + summary[0] + "**" + (": " + "; ".join(s.strip() for s in summary[1:]) if len(summary) > 1 else ""))
        md.append("")
    notes = meta.get("notes", "")
    if notes:
        md.append("Notes:")
        for n in notes.split(" ;; "):
            md.append(f"- {n}")
        md.append("")
    text = "\n".join(md)
    if md_out != "-":
        with open(md_out, "w") as f:
            f.write(text)
    print()
    print("---- Markdown" + (f" (also written to {md_out})" if md_out != "-" else "") + " ----")
    print(text)


if __name__ == "__main__":
    main()
