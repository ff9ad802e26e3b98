#!/usr/bin/env python3
"""Merge benchmark of SyncFS, run by scripts/bench.sh (or alone).

Two mounts of one local container that hold uploads back (long upload delay); a text file of
SIZE MiB (lines of ~60 bytes) synced to both; then A edits a line near the start and B a line
near the end, A syncs first, and B's `syncfs-mount sync` is timed: B's commit is refused, B reads
base, local and remote, merges them three-way (diff3) and commits the result. Measured per run:
  - merge: B's `sync` (upload attempt + conflict + download of base/remote by chunk + merge +
    upload of the merged file + commit), ms
  - visible: from the start of B's sync until A reads the merged file, ms
Checks that both mounts end with the merged content (both edits, no conflict copy).
Prints a Markdown table (medians). Always unmounts what it mounted.

Usage: merge.py BINARY WORKDIR [--size-mib N] [--runs N] [--out FILE]
"""
import argparse, os, shutil, signal, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sync import Mount, log  # noqa: E402


def text_file(size_mib):
    lines = []
    total, n = 0, 0
    while total < size_mib << 20:
        line = f"line {n:08d}: the quick brown fox jumps over the lazy dog {n % 97:02d}\n"
        lines.append(line)
        total += len(line)
        n += 1
    return lines


def write(path, lines):
    with open(path, "w") as f:
        f.writelines(lines)
        f.flush()
        os.fsync(f.fileno())


def one_run(a, b, name, lines):
    path_a = os.path.join(a.mountpoint, name)
    path_b = os.path.join(b.mountpoint, name)
    write(path_a, lines)
    a.sync()
    deadline = time.time() + 300
    while time.time() < deadline:
        try:
            if os.path.getsize(path_b) == sum(len(x) for x in lines):
                with open(path_b) as f:
                    if f.read() == "".join(lines):
                        break
        except OSError:
            pass
        time.sleep(0.05)
    else:
        raise RuntimeError("the base never reached B")
    on_a = list(lines)
    on_a[10] = "edited on A\n"
    on_b = list(lines)
    on_b[-10] = "edited on B\n"
    write(path_a, on_a)
    write(path_b, on_b)
    a.sync()
    expected = list(lines)
    expected[10] = "edited on A\n"
    expected[-10] = "edited on B\n"
    expected = "".join(expected)
    start = time.monotonic()
    b.sync()
    merged_ms = (time.monotonic() - start) * 1000
    deadline = time.time() + 300
    while time.time() < deadline:
        try:
            with open(path_a) as f:
                if f.read() == expected:
                    break
        except OSError:
            pass
        time.sleep(0.02)
    else:
        raise RuntimeError("A never showed the merged file")
    visible_ms = (time.monotonic() - start) * 1000
    with open(path_b) as f:
        if f.read() != expected:
            raise RuntimeError("B does not hold the merged file")
    copies = [n for n in os.listdir(a.mountpoint) if n.startswith(name.rsplit(".", 1)[0] + " (conflict")]
    if copies:
        raise RuntimeError(f"unexpected conflict copies: {copies}")
    return merged_ms, visible_ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("workdir")
    ap.add_argument("--size-mib", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()

    work = os.path.join(args.workdir, "bench-merge")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    mounts = []
    merges, visibles = [], []
    try:
        container = os.path.join(work, "container")
        a = Mount(args.binary, container, os.path.join(work, "a"), os.path.join(work, "state-a"), 600000)
        mounts.append(a)
        b = Mount(args.binary, container, os.path.join(work, "b"), os.path.join(work, "state-b"), 600000)
        mounts.append(b)
        lines = text_file(args.size_mib)
        log(f"merge of a {args.size_mib} MiB text file ({len(lines)} lines), {args.runs} runs")
        for run in range(args.runs):
            merged, visible = one_run(a, b, f"merge-{run}.txt", lines)
            log(f"run {run + 1}: merge {merged:.0f} ms, visible on A {visible:.0f} ms")
            merges.append(merged)
            visibles.append(visible)
    finally:
        for m in mounts:
            m.stop()
        shutil.rmtree(work, ignore_errors=True)

    lines = ["| merge measure | SyncFS (median of %d) |" % args.runs, "|---|---|"]
    lines.append(f"| {args.size_mib} MiB text file, edits on both sides: B's sync (conflict, download, "
                 f"diff3, upload, commit) | {statistics.median(merges):.0f} ms |")
    lines.append(f"| … until A reads the merged file | {statistics.median(visibles):.0f} ms |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + table + "\n")


if __name__ == "__main__":
    main()
