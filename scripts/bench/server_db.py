#!/usr/bin/env python3
"""Sync server benchmarks on PostgreSQL + S3, run by scripts/bench.sh --server-db
(or alone), against the services of `scripts/services.sh start` (its environment:
SYNCFS_TEST_PG_URL, SYNCFS_TEST_S3_ENDPOINT, SYNCFS_TEST_S3_REGION, SYNCFS_TEST_S3_ACCESS_KEY_ID,
SYNCFS_TEST_S3_SECRET_ACCESS_KEY). A scratch database and bucket of its own, removed at the end.

  - two `serve --database … --chunk-store s3://…` processes, 8 mounts of one container split
    4 + 4 between them: propagation across the processes (write + close on a mount of one, until
    a mount of the other reads it), p50/p99 per run, median of runs
  - commits/s and chunk MB/s (`syncfs-bench measure-server`, 8 clients) against one database
    process, against both at once (4 + 4 clients, summed), and against the embedded server
    (`serve --root`) in the same run, interleaved; the ratio of commit rates (goal >= 50 %)
  - propagation by kind of change (change_kinds.py) across the processes, guard on
  - the serve processes' RSS after the load
Each figure is printed with the 1-minute load average taken beside it (the machine may be shared).
Prints a Markdown table (and JSON on stderr). Always stops what it started.

Usage: server_db.py BINARY WORKDIR [--edits N] [--kind-trials N] [--runs N] [--seconds S] [--out FILE]
"""
import argparse, json, os, shutil, signal, statistics, subprocess, sys, time, uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from binaries import bench_binary  # noqa: E402
from sync import Mount, goal, kind_rows, measure_kinds, percentile, propagation, report  # noqa: E402
from server import Server  # noqa: E402

NAMES = ["SYNCFS_TEST_PG_URL", "SYNCFS_TEST_S3_ENDPOINT", "SYNCFS_TEST_S3_REGION",
         "SYNCFS_TEST_S3_ACCESS_KEY_ID", "SYNCFS_TEST_S3_SECRET_ACCESS_KEY"]

def log(msg):
    print(time.strftime("%H:%M:%S") + " [bench-server-db] " + msg, file=sys.stderr, flush=True)

def load():
    return os.getloadavg()[0]

class DatabaseServer:
    """`syncfs-mount serve --database URL --chunk-store STORE --tokens DIR` on 127.0.0.1."""
    def __init__(self, binary, backend, log_path):
        self.proc = subprocess.Popen([binary, "serve", *backend, "--listen", "127.0.0.1:0",
                                      "--log-level", "warning"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=open(log_path, "ab"))
        line = self.proc.stdout.readline().decode().strip()
        if not line.startswith("listening on "):
            raise RuntimeError("serve --database failed: " + open(log_path).read()[-2000:])
        self.origin = line[len("listening on "):]

    rss_kib = Server.rss_kib
    stop = Server.stop

class Scratch:
    """A database and a bucket of this run's own (the bucket is made by server-init)."""
    def __init__(self, env, work):
        suffix = uuid.uuid4().hex[:12]
        self.admin = env["SYNCFS_TEST_PG_URL"]
        self.db_name = f"syncfs_bench_{suffix}"
        self.database = self.admin.rsplit("/", 1)[0] + "/" + self.db_name
        self.bucket = f"syncfs-bench-{suffix}"
        self.endpoint, self.region = env["SYNCFS_TEST_S3_ENDPOINT"], env["SYNCFS_TEST_S3_REGION"]
        self.store = f"s3://{self.bucket}/bench?endpoint={self.endpoint}&region={self.region}"
        self.keys = (env["SYNCFS_TEST_S3_ACCESS_KEY_ID"], env["SYNCFS_TEST_S3_SECRET_ACCESS_KEY"])
        self.work = work
        subprocess.run(["psql", self.admin, "-v", "ON_ERROR_STOP=1", "-qc", f"CREATE DATABASE {self.db_name}"],
                       check=True, capture_output=True)

    def remove(self):
        subprocess.run(["psql", self.admin, "-qc", f"DROP DATABASE IF EXISTS {self.db_name} WITH (FORCE)"],
                       capture_output=True)
        # The bucket: list and delete through curl --aws-sigv4, the keys in a private config file.
        config = os.path.join(self.work, "s3-curl.conf")
        fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f'user = "{self.keys[0]}:{self.keys[1]}"\naws-sigv4 = "aws:amz:{self.region}:s3"\n'
                    'header = "x-amz-content-sha256: '
                    'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"\nsilent\nmax-time = 30\n')
        url = self.endpoint + "/" + self.bucket
        try:
            for _ in range(1000):
                listed = subprocess.run(["curl", "-K", config, url + "?list-type=2"], capture_output=True).stdout
                keys = [k.split(b"</Key>")[0].decode() for k in listed.split(b"<Key>")[1:]]
                if not keys:
                    break
                # One curl for the page, 16 deletes at a time (one process per key took minutes).
                subprocess.run(["curl", "-K", config, "--parallel", "--parallel-max", "16", "-X", "DELETE",
                                *[url + "/" + key for key in keys]], capture_output=True)
            subprocess.run(["curl", "-K", config, "-X", "DELETE", url], capture_output=True)
        finally:
            os.unlink(config)

def measure(binary, url, token, clients, seconds):
    out = subprocess.run([bench_binary(binary), "measure-server", url, "--token-file", token, "--clients", str(clients),
                          "--seconds", str(seconds)], capture_output=True, check=True)
    return json.loads(out.stdout.decode().strip().splitlines()[-1])

def measure_both(binary, urls, token, clients, seconds):
    """Half the clients on each URL at once; rates summed."""
    procs = [subprocess.Popen([bench_binary(binary), "measure-server", url, "--token-file", token, "--clients",
                               str(clients // len(urls)), "--seconds", str(seconds)], stdout=subprocess.PIPE)
             for url in urls]
    results = []
    for p in procs:
        out, _ = p.communicate()
        if p.returncode != 0:
            raise RuntimeError("measure-server failed")
        results.append(json.loads(out.decode().strip().splitlines()[-1]))
    return {"commits_per_s": sum(r["commits_per_s"] for r in results),
            "chunk_mb_per_s": sum(r["chunk_mb_per_s"] for r in results)}

def print_report(results, args):
    ratio = results["db_commits_per_s"] / max(1e-9, results["embedded_commits_per_s"])
    pl, ll = results["propagation_load"], results["load_load"]
    rows = [
        ("Propagation across two database processes, 8 mounts, p50", f"{results['db_p50_ms']:.0f} ms (load {pl:.1f})",
         "< 300 ms", goal(results["db_p50_ms"] < 300)),
        ("Propagation across two database processes, 8 mounts, p99", f"{results['db_p99_ms']:.0f} ms (load {pl:.1f})",
         "< 1000 ms", goal(results["db_p99_ms"] < 1000)),
        (f"Commits/s, {args.clients} clients, one database process",
         f"{results['db_commits_per_s']:.0f}/s (p50 {results['db_commit_p50_ms']:.1f} ms, p99 "
         f"{results['db_commit_p99_ms']:.1f} ms; embedded: {results['embedded_commits_per_s']:.0f}/s, "
         f"{ratio * 100:.0f} %; load {ll:.1f})", ">= 50 % of embedded", goal(ratio >= 0.5)),
        (f"Commits/s, {args.clients} clients split over both processes",
         f"{results['both_commits_per_s']:.0f}/s (load {ll:.1f})", "", ""),
        (f"Chunk upload, {args.clients} clients, 1 MiB chunks, one database process",
         f"{results['db_chunk_mb_per_s']:.0f} MB/s (both: {results['both_chunk_mb_per_s']:.0f} MB/s; embedded: "
         f"{results['embedded_chunk_mb_per_s']:.0f} MB/s; load {ll:.1f})", "", ""),
        *kind_rows(results, " across two database processes", prefix="db_"),
        ("Server RSS after the load", " / ".join(f"{r:.0f}" for r in results["db_rss_mib"])
         + f" MiB (embedded: {results['embedded_rss_mib']:.0f} MiB)", "", ""),
    ]
    report("server on PostgreSQL + S3", rows, results, args.out)


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
    missing = [n for n in NAMES if not os.environ.get(n)]
    if missing:
        sys.exit("server_db.py: " + ", ".join(missing) + " not set: run `scripts/services.sh start` and "
                 "source what it prints")
    env = os.environ
    os.environ["AWS_ACCESS_KEY_ID"] = env["SYNCFS_TEST_S3_ACCESS_KEY_ID"]
    os.environ["AWS_SECRET_ACCESS_KEY"] = env["SYNCFS_TEST_S3_SECRET_ACCESS_KEY"]

    work = os.path.join(args.workdir, "bench-server-db")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    results = {}
    mounts, servers, scratch = [], [], None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        scratch = Scratch(env, work)
        tokens = os.path.join(work, "tokens")
        backend = ["--database", scratch.database, "--chunk-store", scratch.store, "--tokens", tokens]
        out = subprocess.run([args.binary, "server-init", *backend[:4], "--create", "box", "--tokens", tokens],
                             capture_output=True, check=True)
        token = os.path.join(work, "db.token")
        fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(out.stdout.decode())
        db = [DatabaseServer(args.binary, backend, os.path.join(work, f"serve-{i}.log")) for i in range(2)]
        servers += db
        embedded = Server(args.binary, os.path.join(work, "embedded"))
        servers.append(embedded)
        embedded_token = embedded.token("box")
        urls = [s.origin + "/box" for s in db]

        log("8 mounts, 4 on each database server")
        for i in range(8):
            mounts.append(Mount(args.binary, urls[i % 2], os.path.join(work, f"m{i}"),
                                os.path.join(work, f"state-m{i}"), 100, ["--token-file", token]))
        # Writer on one process, reader on the other, four pairs in turn; every mount follows.
        pairs = [(0, 1), (3, 2), (4, 5), (7, 6)]
        p50s, p99s, loads = [], [], []
        for run in range(args.runs):
            loads.append(load())
            samples = []
            for w, r in pairs:
                samples += propagation(mounts[w], mounts[r], max(1, args.edits // len(pairs)))
            p50s.append(percentile(samples, 50))
            p99s.append(percentile(samples, 99))
            log(f"propagation run {run + 1}: p50 {p50s[-1]:.0f} ms, p99 {p99s[-1]:.0f} ms, load {loads[-1]:.1f}")
        results["db_p50_ms"], results["db_p99_ms"] = statistics.median(p50s), statistics.median(p99s)
        results["propagation_load"] = statistics.median(loads)
        log(f"propagation by kind of change across the processes, {args.kind_trials} each x {args.runs} runs")
        results.update(measure_kinds(mounts[0], mounts[1], args.kind_trials, args.runs, prefix="db_"))
        for m in mounts:
            m.stop()
        mounts.clear()

        log(f"load: {args.clients} clients, {args.seconds} s per phase, {args.runs} interleaved runs")
        one, both, local, loads = [], [], [], []
        for run in range(args.runs):
            loads.append(load())
            one.append(measure(args.binary, urls[0], token, args.clients, args.seconds))
            both.append(measure_both(args.binary, urls, token, args.clients, args.seconds))
            local.append(measure(args.binary, embedded.origin + "/box", embedded_token, args.clients, args.seconds))
            log(f"run {run + 1}: database {one[-1]['commits_per_s']:.0f} commits/s "
                f"{one[-1]['chunk_mb_per_s']:.0f} MB/s; both {both[-1]['commits_per_s']:.0f}/s "
                f"{both[-1]['chunk_mb_per_s']:.0f} MB/s; embedded {local[-1]['commits_per_s']:.0f}/s "
                f"{local[-1]['chunk_mb_per_s']:.0f} MB/s; load {loads[-1]:.1f}")
        for name, rs in (("db", one), ("both", both), ("embedded", local)):
            results[f"{name}_commits_per_s"] = statistics.median(r["commits_per_s"] for r in rs)
            results[f"{name}_chunk_mb_per_s"] = statistics.median(r["chunk_mb_per_s"] for r in rs)
        results["db_commit_p50_ms"] = statistics.median(r["commit_p50_ms"] for r in one)
        results["db_commit_p99_ms"] = statistics.median(r["commit_p99_ms"] for r in one)
        results["load_load"] = statistics.median(loads)
        results["db_rss_mib"] = [s.rss_kib() / 1024 for s in db]
        results["embedded_rss_mib"] = embedded.rss_kib() / 1024
        print_report(results, args)  # before the cleanup, which may be slow
    finally:
        for m in mounts:
            m.stop()
        for s in servers:
            s.stop()
        if scratch:
            scratch.remove()
        shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    main()
