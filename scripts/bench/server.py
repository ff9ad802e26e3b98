#!/usr/bin/env python3
"""Sync server benchmarks of SyncFS, run by scripts/bench.sh (or alone).

With the release binary, on loopback:
  - propagation through the server: two mounts of one served container (`syncfs-mount serve`,
    plain HTTP on 127.0.0.1), close on mount A -> new content visible on mount B, N edits: p50,
    p99 (ms); the same on two mounts of a local container in the same run, for the ratio
  - commits per second and chunk upload MB/s with 8 concurrent clients
    (`syncfs-bench measure-server`), and the server's RSS after them
Prints a Markdown table (and JSON on stderr). Always stops what it started.

Usage: server.py BINARY WORKDIR [--edits N] [--runs N] [--clients N] [--seconds S] [--out FILE]
"""
import argparse, json, os, shutil, signal, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from binaries import bench_binary  # noqa: E402
from sync import Mount, goal, kind_rows, measure_kinds, percentile, propagation, report  # noqa: E402

def log(msg):
    print(time.strftime("%H:%M:%S") + " [bench-server] " + msg, file=sys.stderr, flush=True)

class Server:
    """`syncfs-mount serve` on 127.0.0.1, any free port."""
    def __init__(self, binary, root):
        os.makedirs(root, exist_ok=True)
        self.binary, self.root = binary, root
        self.proc = subprocess.Popen([binary, "serve", "--root", root, "--listen", "127.0.0.1:0",
                                      "--log-level", "warning"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=open(root + ".log", "ab"))
        line = self.proc.stdout.readline().decode().strip()
        if not line.startswith("listening on "):
            raise RuntimeError("serve failed: " + open(root + ".log").read()[-2000:])
        self.origin = line[len("listening on "):]

    def token(self, container):
        out = subprocess.run([self.binary, "token", "create", "--root", self.root, "--container", container,
                              "--label", "bench"], capture_output=True, check=True)
        path = os.path.join(self.root + "-" + container + ".token")
        with open(path, "w") as f:
            f.write(out.stdout.decode())
        os.chmod(path, 0o600)
        return path

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

def measure_propagation(a, b, edits, runs):
    p50s, p99s = [], []
    for _ in range(runs):
        samples = propagation(a, b, edits)
        p50s.append(percentile(samples, 50))
        p99s.append(percentile(samples, 99))
    return statistics.median(p50s), statistics.median(p99s)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("workdir")
    ap.add_argument("--edits", type=int, default=100)
    ap.add_argument("--kind-trials", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--out")
    args = ap.parse_args()

    work = os.path.join(args.workdir, "bench-server")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    results = {}
    mounts, servers = [], []
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        server = Server(args.binary, os.path.join(work, "srv"))
        servers.append(server)
        token = server.token("box")
        url = server.origin + "/box"
        a = Mount(args.binary, url, os.path.join(work, "a"), os.path.join(work, "state-a"), 100,
                  ["--token-file", token])
        mounts.append(a)
        b = Mount(args.binary, url, os.path.join(work, "b"), os.path.join(work, "state-b"), 100,
                  ["--token-file", token])
        mounts.append(b)
        log(f"propagation through the server, {args.edits} edits x {args.runs} runs")
        results["server_p50_ms"], results["server_p99_ms"] = measure_propagation(a, b, args.edits, args.runs)
        log(f"propagation by kind of change through the server, {args.kind_trials} each x {args.runs} runs")
        results.update(measure_kinds(a, b, args.kind_trials, args.runs, prefix="server_"))
        for m in mounts:
            m.stop()
        mounts.clear()

        container = os.path.join(work, "local-container")
        a = Mount(args.binary, container, os.path.join(work, "la"), os.path.join(work, "state-la"), 100)
        mounts.append(a)
        b = Mount(args.binary, container, os.path.join(work, "lb"), os.path.join(work, "state-lb"), 100)
        mounts.append(b)
        log(f"propagation through a local container, {args.edits} edits x {args.runs} runs")
        results["local_p50_ms"], results["local_p99_ms"] = measure_propagation(a, b, args.edits, args.runs)
        for m in mounts:
            m.stop()
        mounts.clear()

        log(f"load: {args.clients} clients, {args.seconds} s per phase, {args.runs} runs")
        rss_before = server.rss_kib()
        loads = []
        for _ in range(args.runs):
            out = subprocess.run([bench_binary(args.binary), "measure-server", url, "--token-file", token, "--clients",
                                  str(args.clients), "--seconds", str(args.seconds)],
                                 capture_output=True, check=True)
            loads.append(json.loads(out.stdout.decode().strip().splitlines()[-1]))
        results["commits_per_s"] = statistics.median(r["commits_per_s"] for r in loads)
        results["commit_p50_ms"] = statistics.median(r["commit_p50_ms"] for r in loads)
        results["commit_p99_ms"] = statistics.median(r["commit_p99_ms"] for r in loads)
        results["chunk_mb_per_s"] = statistics.median(r["chunk_mb_per_s"] for r in loads)
        results["server_rss_before_mib"] = rss_before / 1024
        results["server_rss_after_mib"] = server.rss_kib() / 1024
    finally:
        for m in mounts:
            m.stop()
        for s in servers:
            s.stop()
        shutil.rmtree(work, ignore_errors=True)

    ratio = results["server_p50_ms"] / max(1e-9, results["local_p50_ms"])
    rows = [
        ("Propagation through the server, p50", f"{results['server_p50_ms']:.0f} ms "
         f"(local container: {results['local_p50_ms']:.0f} ms, {ratio:.2f}×)", "< 300 ms",
         goal(results["server_p50_ms"] < 300)),
        ("Propagation through the server, p99", f"{results['server_p99_ms']:.0f} ms "
         f"(local container: {results['local_p99_ms']:.0f} ms)", "< 1000 ms", goal(results["server_p99_ms"] < 1000)),
        *kind_rows(results, " through the server", prefix="server_"),
        (f"Commits/s, {args.clients} clients", f"{results['commits_per_s']:.0f}/s (p50 "
         f"{results['commit_p50_ms']:.1f} ms, p99 {results['commit_p99_ms']:.1f} ms)", "", ""),
        (f"Chunk upload, {args.clients} clients, 1 MiB chunks", f"{results['chunk_mb_per_s']:.0f} MB/s", "", ""),
        ("Server RSS before → after the load", f"{results['server_rss_before_mib']:.0f} → "
         f"{results['server_rss_after_mib']:.0f} MiB", "", ""),
    ]
    report("server measure", rows, results, args.out)

if __name__ == "__main__":
    main()
