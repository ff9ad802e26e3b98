#!/usr/bin/env python3
"""Timed I/O primitives for scripts/bench.sh. Every command prints one number on stdout.

  bio.py seqwrite FILE BYTES [BS]    write BYTES in BS blocks (default 1 MiB) + fsync -> MiB/s
  bio.py seqread FILE [BS]           read the whole file in BS blocks -> MiB/s
  bio.py create DIR N [SIZE]         create N files of SIZE bytes (default 4096) -> seconds
  bio.py stat DIR N                  lstat the N files -> seconds
  bio.py delete DIR N                unlink the N files -> seconds
  bio.py tree DIR N                  create N empty files in subdirectories of 1000 -> seconds
  bio.py fio JSONFILE                print "IOPS MiB/s" of the first job of a fio JSON report
  bio.py run CMD...                  run CMD, exit with its status, print wall seconds
  bio.py quiesce TIMEOUT PID...      wait until the processes use < 2% CPU for 0.75 s -> seconds waited
  bio.py rclone-wait URL TIMEOUT     wait until rclone's VFS has no queued/running uploads -> seconds
  bio.py rss PID                     print "VmRSS VmHWM" in KiB

Timing uses time.perf_counter() around the I/O only (no interpreter start-up).
"""
import json
import os
import subprocess
import sys
import time

MiB = 1024 * 1024


def seqwrite(path, nbytes, bs=MiB):
    # Incompressible, non-zero payload: one random block reused (like fio's default buffers).
    buf = os.urandom(bs)
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        left = nbytes
        while left > 0:
            n = os.write(fd, buf if left >= bs else buf[:left])
            left -= n
        os.fsync(fd)
    finally:
        os.close(fd)
    dt = time.perf_counter() - t0
    print(f"{nbytes / MiB / dt:.3f}")


def seqread(path, bs=MiB):
    buf = bytearray(bs)
    mv = memoryview(buf)
    total = 0
    t0 = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            n = os.readv(fd, [mv])
            if n == 0:
                break
            total += n
    finally:
        os.close(fd)
    dt = time.perf_counter() - t0
    if total == 0:
        sys.exit("seqread: empty file")
    print(f"{total / MiB / dt:.3f}")


def names(d, n):
    return [os.path.join(d, f"f{i:05d}") for i in range(n)]


def create(d, n, size=4096):
    buf = os.urandom(size)
    paths = names(d, n)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    t0 = time.perf_counter()
    for p in paths:
        fd = os.open(p, flags, 0o644)
        if size:
            os.write(fd, buf)
        os.close(fd)
    print(f"{time.perf_counter() - t0:.6f}")


def stat(d, n):
    paths = names(d, n)
    t0 = time.perf_counter()
    for p in paths:
        st = os.lstat(p)
        if st.st_size != 4096:
            sys.exit(f"stat: {p} has size {st.st_size}, expected 4096")
    print(f"{time.perf_counter() - t0:.6f}")


def delete(d, n):
    paths = names(d, n)
    t0 = time.perf_counter()
    for p in paths:
        os.unlink(p)
    print(f"{time.perf_counter() - t0:.6f}")


def tree(d, n):
    t0 = time.perf_counter()
    for i in range(n):
        if i % 1000 == 0:
            sub = os.path.join(d, f"d{i // 1000:03d}")
            os.mkdir(sub)
        os.close(os.open(os.path.join(sub, f"f{i:06d}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    print(f"{time.perf_counter() - t0:.6f}")


def fio(path):
    with open(path) as f:
        text = f.read()
    # fio may print warnings before the JSON document.
    doc = json.loads(text[text.index("{"):])
    job = doc["jobs"][0]
    if job.get("error"):
        sys.exit(f"fio: job error {job['error']}")
    side = job["read"] if job["read"]["io_bytes"] > 0 else job["write"]
    print(f"{side['iops']:.1f} {side['bw_bytes'] / MiB:.3f}")


def run(cmd):
    t0 = time.perf_counter()
    rc = subprocess.call(cmd)
    dt = time.perf_counter() - t0
    if rc != 0:
        sys.exit(rc)
    print(f"{dt:.6f}")


def cpu_ticks(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime + stime (fields 14, 15)
        except (OSError, IndexError, ValueError):
            pass
    return total


def quiesce(timeout, pids):
    hz = os.sysconf("SC_CLK_TCK")
    t0 = time.perf_counter()
    quiet = 0
    last = cpu_ticks(pids)
    while time.perf_counter() - t0 < timeout:
        time.sleep(0.25)
        now = cpu_ticks(pids)
        # < 2 % of one CPU in this 0.25 s window (ticks are coarse: allow 1 tick).
        quiet = quiet + 1 if (now - last) <= max(1, 0.02 * 0.25 * hz) else 0
        last = now
        if quiet >= 3:
            break
    print(f"{time.perf_counter() - t0:.2f}")


def rclone_pending(url):
    import urllib.request
    req = urllib.request.Request(url.rstrip("/") + "/vfs/stats", data=b"{}",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        dc = json.load(r)["diskCache"]
    return dc["uploadsInProgress"] + dc["uploadsQueued"]


def rclone_wait(url, timeout):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        try:
            if rclone_pending(url) == 0:
                break
        except Exception as e:  # rc not up yet / transient
            print(f"rclone-wait: {e}", file=sys.stderr)
        time.sleep(0.25)
    print(f"{time.perf_counter() - t0:.2f}")


def rss(pid):
    vals = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                vals[k] = int(v.split()[0])
    print(vals["VmRSS"], vals["VmHWM"])


def main():
    a = sys.argv[1:]
    if not a:
        sys.exit(__doc__)
    cmd, args = a[0], a[1:]
    if cmd == "seqwrite":
        seqwrite(args[0], int(args[1]), int(args[2]) if len(args) > 2 else MiB)
    elif cmd == "seqread":
        seqread(args[0], int(args[1]) if len(args) > 1 else MiB)
    elif cmd == "create":
        create(args[0], int(args[1]), int(args[2]) if len(args) > 2 else 4096)
    elif cmd == "stat":
        stat(args[0], int(args[1]))
    elif cmd == "delete":
        delete(args[0], int(args[1]))
    elif cmd == "tree":
        tree(args[0], int(args[1]))
    elif cmd == "fio":
        fio(args[0])
    elif cmd == "run":
        run(args)
    elif cmd == "quiesce":
        quiesce(float(args[0]), args[1:])
    elif cmd == "rclone-wait":
        rclone_wait(args[0], float(args[1]))
    elif cmd == "rss":
        rss(args[0])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
