#!/usr/bin/env python3
"""History's cost on the commit rate of a PostgreSQL server, A/B in one database:
the schema 4 `syncfs_commit_apply` (which copies the replaced row into `syncfs_versions`) against
the same function without that copy (the schema 3 write), swapped with CREATE OR REPLACE between
runs, interleaved. One `serve --database … --chunk-store DIR` process of BINARY,
`measure-server` with 8 clients (each rewrites its own file: every commit supersedes a version).
Per run: commits/s, and CPU time per commit of the serve process and of every PostgreSQL
process of the server (`/proc/PID/stat`; shared with whatever else uses that server), with the
1-minute load average. Needs SYNCFS_TEST_PG_URL (scripts/services.sh) and psql.

Usage: history_cost.py BINARY WORKDIR [--runs N] [--seconds S]
"""
import argparse, json, os, re, shutil, statistics, subprocess, sys, time, uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from binaries import bench_binary  # noqa: E402

def psql(url, sql):
    return subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-qAtc", sql], check=True,
                          capture_output=True, text=True).stdout

def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / os.sysconf("SC_CLK_TCK")

def postgres_pids():
    out = subprocess.run(["pgrep", "-x", "postgres"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("workdir")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=4)
    args = parser.parse_args()
    admin = os.environ["SYNCFS_TEST_PG_URL"]
    name = "syncfs_hist_" + uuid.uuid4().hex[:10]
    database = admin.rsplit("/", 1)[0] + "/" + name
    work = os.path.join(args.workdir, "bench-history-cost")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    psql(admin, f"CREATE DATABASE {name}")
    serve = None
    try:
        tokens, blobs = os.path.join(work, "tokens"), os.path.join(work, "blobs")
        backend = ["--database", database, "--chunk-store", blobs]
        out = subprocess.run([args.binary, "server-init", *backend, "--create", "box", "--tokens", tokens],
                             capture_output=True, check=True)
        token = os.path.join(work, "token")
        fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(out.stdout.decode())
        with_history = psql(database, "SELECT pg_get_functiondef('syncfs_commit_apply'::regproc)")
        without = re.sub(r"INSERT INTO syncfs_versions.*?ON CONFLICT DO NOTHING;", "", with_history, flags=re.S)
        assert without != with_history
        serve = subprocess.Popen([args.binary, "serve", *backend, "--tokens", tokens, "--listen", "127.0.0.1:0",
                                  "--log-level", "warning"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        origin = serve.stdout.readline().decode().strip()[len("listening on "):]
        # Warm up: the pool's connections (and their PostgreSQL backends) exist before counting.
        subprocess.run([bench_binary(args.binary), "measure-server", origin + "/box", "--token-file", token, "--clients", "8",
                        "--seconds", "1"], capture_output=True, check=True)
        rows = {"history": [], "no history": []}
        for run in range(args.runs):
            for variant, body in (("history", with_history), ("no history", without)):
                psql(database, body)
                pids = postgres_pids()
                before = (cpu_seconds([serve.pid]), cpu_seconds(pids))
                out = subprocess.run([bench_binary(args.binary), "measure-server", origin + "/box", "--token-file", token,
                                      "--clients", "8", "--seconds", str(args.seconds)],
                                     capture_output=True, check=True)
                result = json.loads(out.stdout.decode().strip().splitlines()[-1])
                after = (cpu_seconds([serve.pid]), cpu_seconds(pids))
                # measure-server's other phases also run in serve: count the commit phase's rate
                # and CPU per request of the whole run (the same in both variants).
                commits = result["commits"]
                row = {"commits_per_s": result["commits_per_s"], "p50_ms": result["commit_p50_ms"],
                       "serve_ms_per_commit": 1000 * (after[0] - before[0]) / max(1, commits),
                       "pg_ms_per_commit": 1000 * (after[1] - before[1]) / max(1, commits),
                       "load": os.getloadavg()[0],
                       "versions": int(psql(database, "SELECT count(*) FROM syncfs_versions"))}
                rows[variant].append(row)
                print(run, variant, json.dumps(row), file=sys.stderr, flush=True)
        print("| variant | commits/s median (runs) | serve CPU ms/commit | PostgreSQL CPU ms/commit | load |")
        print("|---|---|---:|---:|---|")
        for variant, runs in rows.items():
            rates = [r["commits_per_s"] for r in runs]
            print(f"| {variant} | {statistics.median(rates):.0f} ({', '.join(f'{x:.0f}' for x in rates)}) | "
                  f"{statistics.median(r['serve_ms_per_commit'] for r in runs):.2f} | "
                  f"{statistics.median(r['pg_ms_per_commit'] for r in runs):.2f} | "
                  f"{min(r['load'] for r in runs):.1f}–{max(r['load'] for r in runs):.1f} |")
    finally:
        if serve:
            serve.terminate()
            serve.wait()
        psql(admin, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    main()
