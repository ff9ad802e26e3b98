#!/usr/bin/env python3
"""Sync benchmarks of SyncFS, run by scripts/bench.sh (or alone).

Measures, with the release binary, on two mounts of one local container:
  - propagation: close on mount A -> new content visible on mount B, N edits: p50, p99 (ms)
  - propagation by kind of change with the mass-delete guard on (change_kinds.py): new files,
    overwrites and deletes of established files: p50, p95 (ms), medians of the runs
  - upload pipeline throughput per core (chunk + SHA-256 + zlib level 1), one thread:
    a source tree (text) and random data (`syncfs-bench measure-pipeline`)
  - dedup: bytes uploaded after a 1-byte insert in the middle of a large file
  - compression: bytes stored in the container's chunk files vs bytes written (source tree)
Prints a Markdown table (and JSON with --json). Always unmounts what it mounted.

Usage: sync.py BINARY WORKDIR [--edits N] [--kind-trials N] [--dedup-size MiB] [--runs N] [--tree DIR]
               [--out FILE]
"""
import argparse, json, os, shutil, signal, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from binaries import bench_binary  # noqa: E402
import change_kinds  # noqa: E402

def log(msg):
    print(time.strftime("%H:%M:%S") + " [bench-sync] " + msg, file=sys.stderr, flush=True)


def create_flag(binary, container):
    """`--create` for a local container with a binary that makes containers only on request (a
    first mount of a fresh path needs it); nothing for a server URL or an older binary."""
    if "://" in container:
        return []
    r = subprocess.run([binary, "mount", "--help"], capture_output=True)
    return ["--create"] if b"--create" in r.stdout else []

class Mount:
    """One syncfs-mount daemon in the foreground with a lifeline (stdin pipe)."""
    def __init__(self, binary, container, mountpoint, state, delay_ms, extra=()):
        os.makedirs(mountpoint, exist_ok=True)
        self.mountpoint = mountpoint
        self.binary = binary
        self.state = state
        self.argv = [binary, "mount", container, mountpoint, "--state-dir", state, "--foreground", "--lifeline",
                     "--upload-delay", str(delay_ms), "--log-level", "warning", *create_flag(binary, container),
                     *extra]
        self.start()

    def start(self):
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(self.state + ".log", "ab"))
        line = self.proc.stdout.readline()
        if line.strip() != b"ready":
            raise RuntimeError("mount failed: " + open(self.state + ".log").read()[-2000:])

    def restart(self):
        """Unmounts (the queue drained) and mounts again: what the container has is then
        established for the mass-delete guard."""
        self.sync()
        self.stop()
        self.start()

    def status(self):
        out = subprocess.run([self.binary, "status", self.mountpoint, "--json"], capture_output=True, check=True)
        return json.loads(out.stdout)

    def sync(self):
        subprocess.run([self.binary, "sync", self.mountpoint, "--timeout", "600"], check=True,
                       stderr=subprocess.DEVNULL)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        subprocess.run(["fusermount3", "-u", "-z", self.mountpoint], stderr=subprocess.DEVNULL)

def percentile(values, p):
    values = sorted(values)
    k = (len(values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)

def propagation(a, b, edits):
    """Write + close on A, then poll B (fresh open + read each time) until it shows the content."""
    name = "propagation.txt"
    with open(os.path.join(a.mountpoint, name), "w") as f:
        f.write("start\n")
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            if open(os.path.join(b.mountpoint, name)).read() == "start\n":
                break
        except FileNotFoundError:
            pass
        time.sleep(0.005)
    samples = []
    for i in range(edits):
        content = f"edit {i} " + "x" * (i % 97) + "\n"
        t0 = time.perf_counter()
        with open(os.path.join(a.mountpoint, name), "w") as f:
            f.write(content)
        while True:
            try:
                with open(os.path.join(b.mountpoint, name)) as f:
                    if f.read() == content:
                        break
            except FileNotFoundError:
                pass
            if time.perf_counter() - t0 > 30:
                raise RuntimeError(f"edit {i} did not arrive within 30 s")
            time.sleep(0.001)
        samples.append((time.perf_counter() - t0) * 1000)
    return samples

def measure_kinds(a, b, trials, runs, prefix=""):
    """change_kinds.measure `runs` times: {PREFIX KIND_p50_ms, ..._p95_ms}, medians of the runs."""
    per_run = []
    for run in range(runs):
        per_run.append(change_kinds.measure(a, b, trials, f"{prefix}kinds-{run}"))
    results = {}
    for kind in change_kinds.KINDS:
        results[f"{prefix}{kind}_p50_ms"] = statistics.median(percentile(r[kind], 50) for r in per_run)
        results[f"{prefix}{kind}_p95_ms"] = statistics.median(percentile(r[kind], 95) for r in per_run)
    return results

def kind_rows(results, where, prefix=""):
    """Table rows for measure_kinds' results: p50 (p95) per kind, goal p50 < 150 ms."""
    labels = {"new": "a new file", "overwrite": "an overwrite of an established text file",
              "overwrite_random": "an overwrite of an established file with random bytes",
              "delete": "a delete of an established file"}
    rows = []
    for kind in change_kinds.KINDS:
        p50, p95 = results[f"{prefix}{kind}_p50_ms"], results[f"{prefix}{kind}_p95_ms"]
        rows.append((f"Propagation{where} of {labels[kind]}, guard on, p50 (p95)", f"{p50:.0f} ms ({p95:.0f} ms)",
                     "p50 < 150 ms", goal(p50 < 150)))
    return rows

def pipeline(binary, paths, level=1):
    out = subprocess.run([bench_binary(binary), "measure-pipeline", "--level", str(level), *paths], capture_output=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])

def goal(ok):
    return "PASS" if ok else "FAIL"

def report(title, rows, results, out):
    """Prints rows (measure, value, goal, PASS/FAIL) as a Markdown table, the raw results as JSON
    on stderr, and appends the table to `out` if given."""
    lines = [f"| {title} | SyncFS | goal | |", "|---|---|---|---|"]
    lines += [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} |" for r in rows]
    table = "\n".join(lines)
    print(table)
    print(json.dumps(results), file=sys.stderr)
    if out:
        with open(out, "a") as f:
            f.write("\n" + table + "\n")

def dir_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            if not os.path.islink(p):
                total += os.lstat(p).st_size
    return total

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("workdir")
    ap.add_argument("--edits", type=int, default=100)
    ap.add_argument("--kind-trials", type=int, default=30)
    ap.add_argument("--dedup-mib", type=int, default=1024)
    ap.add_argument("--random-mib", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tree", default="/usr/include")
    ap.add_argument("--upload-mib", type=int, default=256)
    ap.add_argument("--encrypted", action="store_true",
                    help="both mounts on an end-to-end encrypted container (mount --create-encrypted)")
    ap.add_argument("--out")
    args = ap.parse_args()

    work = os.path.join(args.workdir, "bench-sync")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    results = {}
    mounts = []
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        # Pipeline throughput (no mount): text tree and random data.
        rnd = os.path.join(work, "random.bin")
        with open(rnd, "wb") as f:
            for _ in range(args.random_mib):
                f.write(os.urandom(1 << 20))
        log("pipeline throughput")
        text = [pipeline(args.binary, [args.tree]) for _ in range(args.runs)]
        rand = [pipeline(args.binary, [rnd]) for _ in range(args.runs)]
        results["pipeline_text_mb_s"] = statistics.median(r["mb_per_s_median"] for r in text)
        results["pipeline_random_mb_s"] = statistics.median(r["mb_per_s_median"] for r in rand)
        results["pipeline_text_ratio"] = text[0]["compression_ratio"]
        results["pipeline_text_bytes"] = text[0]["bytes"]
        os.unlink(rnd)

        container = os.path.join(work, "container")
        key = ["--device-key", os.path.join(work, "device-key")] if args.encrypted else []
        a = Mount(args.binary, container, os.path.join(work, "a"), os.path.join(work, "state-a"), 100,
                  (["--create-encrypted"] if args.encrypted else []) + key)
        mounts.append(a)
        b = Mount(args.binary, container, os.path.join(work, "b"), os.path.join(work, "state-b"), 100,
                  (["--encrypted"] if args.encrypted else []) + key)
        mounts.append(b)

        log(f"propagation, {args.edits} edits x {args.runs} runs")
        p50s, p99s = [], []
        for _ in range(args.runs):
            samples = propagation(a, b, args.edits)
            p50s.append(percentile(samples, 50))
            p99s.append(percentile(samples, 99))
        results["propagation_p50_ms"] = statistics.median(p50s)
        results["propagation_p99_ms"] = statistics.median(p99s)

        log(f"propagation by kind of change, {args.kind_trials} each x {args.runs} runs")
        results.update(measure_kinds(a, b, args.kind_trials, args.runs))

        log(f"upload through the mount: {args.upload_mib} MiB of random data, x {args.runs} runs")
        speeds = []
        for run in range(args.runs):
            path = os.path.join(a.mountpoint, f"upload-{run}.bin")
            with open(path, "wb") as f:
                for _ in range(args.upload_mib):
                    f.write(os.urandom(1 << 20))
            started = time.monotonic()
            a.sync()
            speeds.append(args.upload_mib * 1.048576 / (time.monotonic() - started))
        results["upload_random_mb_s"] = statistics.median(speeds)

        log("compression on a source tree")
        before = a.status()["encodedBytesUploaded"]
        shutil.copytree(args.tree, os.path.join(a.mountpoint, "tree"), symlinks=True)
        a.sync()
        written = dir_bytes(os.path.join(a.mountpoint, "tree"))
        uploaded = a.status()["encodedBytesUploaded"] - before
        results["tree_bytes_written"] = written
        results["tree_bytes_uploaded"] = uploaded
        results["tree_stored_ratio"] = written / max(1, uploaded)

        log(f"dedup: {args.dedup_mib} MiB file, then a 1-byte insert in the middle")
        big = os.path.join(a.mountpoint, "big.bin")
        with open(big, "wb") as f:
            for _ in range(args.dedup_mib):
                f.write(os.urandom(1 << 20))
        a.sync()
        before = a.status()
        half = args.dedup_mib << 19
        tmp = os.path.join(a.mountpoint, ".big.bin.tmp")
        with open(big, "rb") as src, open(tmp, "wb") as dst:
            dst.write(src.read(half))
            dst.write(b"!")
            while True:
                chunk = src.read(1 << 24)
                if not chunk:
                    break
                dst.write(chunk)
        os.rename(tmp, big)
        a.sync()
        after = a.status()
        results["dedup_file_mib"] = args.dedup_mib
        results["dedup_bytes_uploaded"] = after["encodedBytesUploaded"] - before["encodedBytesUploaded"]
        results["container_chunk_bytes"] = dir_bytes(os.path.join(container, "chunks"))
    finally:
        for m in mounts:
            m.stop()
        shutil.rmtree(work, ignore_errors=True)

    rows = [
        ("Propagation close→visible, p50", f"{results['propagation_p50_ms']:.0f} ms", "< 200 ms",
         goal(results["propagation_p50_ms"] < 200)),
        ("Propagation close→visible, p99", f"{results['propagation_p99_ms']:.0f} ms", "< 1000 ms",
         goal(results["propagation_p99_ms"] < 1000)),
        *kind_rows(results, ""),
        ("Upload pipeline, text (source tree), 1 core", f"{results['pipeline_text_mb_s']:.0f} MB/s", "≥ 80 MB/s",
         goal(results["pipeline_text_mb_s"] >= 80)),
        ("Upload pipeline, random data, 1 core", f"{results['pipeline_random_mb_s']:.0f} MB/s", "", ""),
        (f"Upload through the mount, {args.upload_mib} MiB random, close→committed",
         f"{results['upload_random_mb_s']:.0f} MB/s", "", ""),
        (f"Dedup: uploaded after a 1-byte insert in a {results['dedup_file_mib']} MiB file",
         f"{results['dedup_bytes_uploaded'] / 1048576:.2f} MiB", "< 10 MiB",
         goal(results["dedup_bytes_uploaded"] < 10 << 20)),
        ("Compression of a source tree (bytes written / bytes uploaded)",
         f"{results['tree_stored_ratio']:.2f}× ({results['tree_bytes_written'] / 1048576:.0f} MiB → "
         f"{results['tree_bytes_uploaded'] / 1048576:.0f} MiB)", "", ""),
    ]
    report("sync measure" + (" (encrypted container)" if args.encrypted else ""), rows, results, args.out)

if __name__ == "__main__":
    main()
