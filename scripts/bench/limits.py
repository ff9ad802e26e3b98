#!/usr/bin/env python3
"""Bandwidth limit benchmark of SyncFS, run by scripts/bench.sh (or alone).

Two mounts of one local container: A with `--upload-limit RATE`, B with `--download-limit RATE`.
A file of SIZE MiB of random content (incompressible: the bytes on the wire are the file's) is
written on A, then:
  - upload: from the file's close until A's `syncfs-mount sync` returns (uploaded, committed)
  - download: B reads the whole file (a placeholder: every chunk is fetched under B's limit)
Each is compared with its target, SIZE / RATE (50 MiB at 2 MiB/s: 25 s): measured seconds and
the ratio measured / target (1.00 is exact; the first second's burst makes it a little less).
Prints a Markdown table. Always unmounts what it mounted.

Usage: limits.py BINARY WORKDIR [--size-mib N] [--rate-mib N] [--out FILE]
"""
import argparse, os, shutil, signal, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sync import Mount, log  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("workdir")
    ap.add_argument("--size-mib", type=int, default=50)
    ap.add_argument("--rate-mib", type=int, default=2)
    ap.add_argument("--out")
    args = ap.parse_args()

    work = os.path.join(args.workdir, "bench-limits")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    rate = f"{args.rate_mib}M"
    target = args.size_mib / args.rate_mib
    size = args.size_mib << 20
    mounts = []
    try:
        container = os.path.join(work, "container")
        a = Mount(args.binary, container, os.path.join(work, "a"), os.path.join(work, "state-a"), 100,
                  extra=("--upload-limit", rate))
        mounts.append(a)
        b = Mount(args.binary, container, os.path.join(work, "b"), os.path.join(work, "state-b"), 100,
                  extra=("--download-limit", rate))
        mounts.append(b)
        log(f"bandwidth limits: {args.size_mib} MiB of random content at {rate}/s each way (target {target:.1f} s)")
        content = os.urandom(size)
        path_a = os.path.join(a.mountpoint, "limited.bin")
        with open(path_a, "wb") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        start = time.monotonic()
        a.sync()
        upload = time.monotonic() - start
        log(f"upload: {upload:.2f} s ({upload / target:.3f} of the target)")
        path_b = os.path.join(b.mountpoint, "limited.bin")
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if os.path.getsize(path_b) == size:
                    break
            except OSError:
                pass
            time.sleep(0.05)
        else:
            raise RuntimeError("the file never appeared on B")
        start = time.monotonic()
        with open(path_b, "rb") as f:
            read = f.read()
        download = time.monotonic() - start
        if read != content:
            raise RuntimeError("B read other content than A wrote")
        log(f"download: {download:.2f} s ({download / target:.3f} of the target)")
    finally:
        for m in mounts:
            m.stop()
        shutil.rmtree(work, ignore_errors=True)

    lines = ["| bandwidth limit | target | measured | measured / target |", "|---|---|---|---|"]
    lines.append(f"| {args.size_mib} MiB random upload at `--upload-limit {rate}` (close → `sync` returns) "
                 f"| {target:.1f} s | {upload:.2f} s | {upload / target:.3f} |")
    lines.append(f"| {args.size_mib} MiB random download at `--download-limit {rate}` (full read of the placeholder) "
                 f"| {target:.1f} s | {download:.2f} s | {download / target:.3f} |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + table + "\n")
    if not all(abs(x / target - 1) <= 0.05 for x in (upload, download)):
        log("ERROR: a transfer is outside the target ± 5 %")
        sys.exit(1)


if __name__ == "__main__":
    main()
