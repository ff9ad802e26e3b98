#!/usr/bin/env python3
"""O_TRUNC rewrites of existing files on a SyncFS mount: each rewrite of a non-empty file commits
its new size before the cache file shrinks (issue #14 item 2). Usage: scripts/bench/truncating-rewrites.py BINARY [N]"""
import os, subprocess, sys, tempfile, time, statistics
binary = sys.argv[1]; n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
base = tempfile.mkdtemp(prefix="otrunc-")
mnt, state, cont = base + "/mnt", base + "/state", base + "/container"
for d in (mnt, state, cont): os.makedirs(d)
subprocess.run([binary, "mount", cont, mnt, "--state-dir", state, "--create", "--upload-delay", "600000"], check=True,
               stdout=subprocess.DEVNULL)
try:
    files = [f"{mnt}/f{i}" for i in range(100)]
    for f in files:
        with open(f, "wb") as h: h.write(b"x" * 4096)
    def run(flags):
        start = time.perf_counter()
        for i in range(n):
            fd = os.open(files[i % 100], flags)
            os.write(fd, b"y" * 4096)
            os.close(fd)
        return (time.perf_counter() - start) / n * 1e6
    trunc, plain = [], []
    for _ in range(5):
        trunc.append(run(os.O_WRONLY | os.O_TRUNC))
        plain.append(run(os.O_WRONLY))
    print(f"O_TRUNC rewrite {statistics.median(trunc):.0f} us/file, overwrite without O_TRUNC {statistics.median(plain):.0f} us/file (medians of 5 x {n})")
finally:
    subprocess.run(["fusermount3", "-u", mnt])
    time.sleep(1)
    subprocess.run(["rm", "-rf", base])
