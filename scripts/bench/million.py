#!/usr/bin/env python3
"""A container of 1,000,000 entries, run by `scripts/bench.sh --server-only --million`
(or alone). Not part of the default run: it takes ~10-20 minutes.

On both backends, the embedded server (`serve --root`) and PostgreSQL + S3 (`serve --database …
--chunk-store s3://…`, against the services of `scripts/services.sh start`; the database part is
skipped, and said so, without their environment):
  - the container: `--dirs` directories (default 1,000) of `--files-per-dir` tiny files (default
    1,000), written by `syncfs-bench seed-synthetic` (the container's import, 10,000 entries per
    transaction; 16 distinct file contents, so 16 chunks of a few bytes), then moved into
    PostgreSQL + S3 by `syncfs-mount container copy` (timed: the way a user moves a container)
  - attach by a new mount: from starting `syncfs-mount mount` (a fresh state directory) until
    it prints `ready` (a first mount serves only once its tree is attached), and until
    `find MOUNT | wc -l` counts every entry; the mount's RSS after the attach and after the walk
  - feed catch-up: the attached mount is stopped, `measure-server --create N` commits N new
    files through the server (8 clients; N in `--catchup`, default 10000,100000), the mount is
    started again on the same state directory: time until the file committed last (the highest
    version) is there; then how long one `syncfs-mount status` takes
  - the server's RSS after the attach and after each catch-up
Each figure has the 1-minute load average beside it. Prints a Markdown table (and JSON on
stderr). Always stops what it started and removes its database, bucket and files.

Usage: million.py BINARY WORKDIR [--dirs N] [--files-per-dir N] [--catchup N,N] [--backends LIST]
                  [--out FILE]
"""
import argparse, json, os, shutil, signal, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from binaries import bench_binary  # noqa: E402
from server import Server  # noqa: E402
from server_db import NAMES, DatabaseServer, Scratch  # noqa: E402
from sync import goal, report  # noqa: E402

def log(msg):
    print(time.strftime("%H:%M:%S") + " [bench-million] " + msg, file=sys.stderr, flush=True)

def load():
    return os.getloadavg()[0]

def cpu_s(pid):
    """User + system CPU seconds of process `pid` so far (less load-dependent than wall time)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0

def io_counts(pid):
    """/proc/PID/io: read syscalls, bytes read from storage, and bytes handed to write() so far
    (load-independent)."""
    try:
        with open(f"/proc/{pid}/io") as f:
            fields = dict(line.split(": ") for line in f.read().splitlines())
        return int(fields["syscr"]), int(fields["read_bytes"]), int(fields["wchar"])
    except (OSError, KeyError, ValueError):
        return 0, 0, 0

def rss_mib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0

class Mount:
    """`syncfs-mount mount URL MP --foreground --lifeline`; `ready` is awaited by `wait_ready`."""
    def __init__(self, binary, url, mountpoint, state, token):
        os.makedirs(mountpoint, exist_ok=True)
        self.binary, self.mountpoint, self.state = binary, mountpoint, state
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [binary, "mount", url, mountpoint, "--state-dir", state, "--token-file", token, "--foreground",
             "--lifeline", "--log-level", "warning"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(state + ".log", "ab"))

    def wait_ready(self):
        for line in self.proc.stdout:
            if line.strip() == b"ready":
                return time.monotonic() - self.started
        raise RuntimeError("mount failed: " + open(self.state + ".log").read()[-2000:])

    def status(self):
        out = subprocess.run([self.binary, "status", self.mountpoint, "--json"], capture_output=True)
        return json.loads(out.stdout) if out.returncode == 0 else {}

    def rss(self):
        return rss_mib(self.proc.pid)

    def cpu(self):
        return cpu_s(self.proc.pid)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=300)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        subprocess.run(["fusermount3", "-u", "-z", self.mountpoint], stderr=subprocess.DEVNULL)

def count_entries(mountpoint):
    out = subprocess.run(f"find {mountpoint} -mindepth 1 | wc -l", shell=True, capture_output=True, check=True)
    return int(out.stdout)

def measure_backend(args, name, url, token, server, work, expected):
    """Attach, then catch-ups; a dict of figures."""
    r = {"backend": name}
    mp, state = os.path.join(work, f"mnt-{name}"), os.path.join(work, f"state-{name}")
    log(f"{name}: attach by a new mount ({expected} entries)")
    r["server_rss_before_mib"] = server.rss_kib() / 1024
    m = Mount(args.binary, url, mp, state, token)
    try:
        r["attach_load"] = load()
        r["ready_s"] = m.wait_ready()
        r["ready_load"] = load()
        r["mount_rss_ready_mib"] = m.rss()
        r["mount_cpu_ready_s"] = m.cpu()
        r["mount_read_calls"], r["mount_read_bytes"], r["mount_written_bytes"] = io_counts(m.proc.pid)
        r["server_rss_attach_mib"] = server.rss_kib() / 1024
        # `ls -l` of one folder right after the mount (cold: nothing of it looked up yet).
        folder = os.path.join(mp, sorted(os.listdir(mp))[0])
        t = time.monotonic()
        subprocess.run(["ls", "-l", folder], stdout=subprocess.DEVNULL, check=True)
        r["ls_l_s"] = time.monotonic() - t
        r["ls_l_entries"] = len(os.listdir(folder))
        t = time.monotonic()
        n = count_entries(mp)
        r["walk_s"] = time.monotonic() - t
        r["all_listed_s"] = time.monotonic() - m.started
        r["walk_load"] = load()
        r["listed"] = n
        r["mount_rss_walk_mib"] = m.rss()
        log(f"{name}: ready {r['ready_s']:.1f} s, {n} entries listed after {r['all_listed_s']:.1f} s, "
            f"mount RSS {r['mount_rss_ready_mib']:.0f}/{r['mount_rss_walk_mib']:.0f} MiB, server RSS "
            f"{r['server_rss_attach_mib']:.0f} MiB, load {r['ready_load']:.1f}")
        if n != expected:
            raise RuntimeError(f"{name}: {n} entries listed, {expected} expected")
    finally:
        m.stop()
    r["catchup"] = []
    for count in args.catchup:
        c = {"changes": count}
        c["commit_load"] = load()
        out = subprocess.run([bench_binary(args.binary), "measure-server", url, "--token-file", token, "--clients", "8",
                              "--create", str(count)], capture_output=True, check=True)
        made = json.loads(out.stdout.decode().strip().splitlines()[-1])
        c["commit_s"] = made["seconds"]
        c["server_rss_commits_mib"] = server.rss_kib() / 1024
        log(f"{name}: {count} files committed by another client in {made['seconds']:.1f} s "
            f"(load {c['commit_load']:.1f}); mounting again")
        m = Mount(args.binary, url, mp, state, token)
        try:
            c["ready_s"] = m.wait_ready()
            c["load"] = load()
            # The file of the highest version: once it is there, every change before it is
            # applied (the follower applies the feed in order). A stat is a FUSE lookup; `status`
            # is not polled (it walks the whole tree: seconds at 1,000,000 entries).
            last = os.path.join(mp, made["last"])
            deadline = time.monotonic() + 3600
            while not os.path.exists(last):
                if time.monotonic() > deadline or m.proc.poll() is not None:
                    raise RuntimeError(f"{name}: {last} never appeared")
                time.sleep(0.05)
            c["caught_up_s"] = time.monotonic() - m.started
            c["mount_cpu_s"] = m.cpu()
            c["caught_up_load"] = load()
            c["mount_rss_mib"] = m.rss()
            c["server_rss_mib"] = server.rss_kib() / 1024
            t = time.monotonic()
            st = m.status()
            c["status_s"] = time.monotonic() - t
            c["caught_up_status"] = bool(st.get("feedCaughtUp"))
            log(f"{name}: caught up with {count} changes {c['caught_up_s']:.2f} s after the mount started "
                f"(ready {c['ready_s']:.2f} s), mount RSS {c['mount_rss_mib']:.0f} MiB, server RSS "
                f"{c['server_rss_mib']:.0f} MiB, load {c['caught_up_load']:.1f}")
            expected += count + (count + 999) // 1000 + 1
            n = count_entries(mp)
            c["listed"] = n
            if n != expected:
                raise RuntimeError(f"{name}: {n} entries listed after the catch-up, {expected} expected")
        finally:
            m.stop()
        r["catchup"].append(c)
    return r

def print_report(results, args):
    rows = []
    for r in results["backends"]:
        b = "embedded" if r["backend"] == "embedded" else "PostgreSQL + S3"
        rows.append((f"{b}: new mount → `ready` (tree attached), {results['entries']:,} entries",
                     f"{r['ready_s']:.1f} s (mount CPU {r['mount_cpu_ready_s']:.0f} s, {r['mount_read_calls']:,} reads, "
                     f"{r['mount_read_bytes'] / 1e6:.0f} MB from disk, {r['mount_written_bytes'] / 1e9:.1f} GB written; "
                     f"load {r['ready_load']:.1f})", "< 30 s", goal(r["ready_s"] < 30)))
        rows.append((f"{b}: `ls -l` of a folder of {r['ls_l_entries']:,} right after the mount",
                     f"{r['ls_l_s'] * 1000:.0f} ms", "< 50 ms (10,000 entries)",
                     goal(r["ls_l_s"] < 0.05) if r["ls_l_entries"] >= 10_000 else ""))
        rows.append((f"{b}: new mount → `find` lists all {results['entries']:,}",
                     f"{r['all_listed_s']:.1f} s (walk {r['walk_s']:.1f} s; load {r['walk_load']:.1f})", "", ""))
        rows.append((f"{b}: mount RSS after the attach / after the walk",
                     f"{r['mount_rss_ready_mib']:.0f} / {r['mount_rss_walk_mib']:.0f} MiB", "< 150 MiB",
                     goal(max(r['mount_rss_ready_mib'], r['mount_rss_walk_mib']) < 150)))
        rows.append((f"{b}: server RSS before / after the attach",
                     f"{r['server_rss_before_mib']:.0f} / {r['server_rss_attach_mib']:.0f} MiB", "< 200 MiB",
                     goal(r["server_rss_attach_mib"] < 200)))
        for c in r["catchup"]:
            rows.append((f"{b}: remount → `ready` before a catch-up of {c['changes']:,}", f"{c['ready_s']:.2f} s",
                         "< 2 s", goal(c["ready_s"] < 2)))
            rows.append((f"{b}: `status` after the catch-up of {c['changes']:,}", f"{c['status_s'] * 1000:.0f} ms",
                         "< 50 ms", goal(c["status_s"] < 0.05)))
            rows.append((f"{b}: catch-up of {c['changes']:,} changes (mount start → caught up)",
                         f"{c['caught_up_s']:.1f} s (commits took {c['commit_s']:.0f} s; load "
                         f"{c['caught_up_load']:.1f}); mount RSS {c['mount_rss_mib']:.0f} MiB, server RSS "
                         f"{c['server_rss_mib']:.0f} MiB", "< 10 s", goal(c["caught_up_s"] < 10)))
    report("a container of 1,000,000 entries", rows, results, args.out)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("workdir")
    ap.add_argument("--dirs", type=int, default=1000)
    ap.add_argument("--files-per-dir", type=int, default=1000)
    ap.add_argument("--catchup", default="10000,100000")
    ap.add_argument("--backends", default="embedded,database")
    ap.add_argument("--out")
    args = ap.parse_args()
    args.catchup = [int(x) for x in args.catchup.split(",") if x]
    backends = args.backends.split(",")
    if "database" in backends:
        missing = [n for n in NAMES if not os.environ.get(n)]
        if missing:
            log("PostgreSQL + S3 skipped: " + ", ".join(missing) + " not set (scripts/services.sh start)")
            backends.remove("database")
        else:
            os.environ["AWS_ACCESS_KEY_ID"] = os.environ["SYNCFS_TEST_S3_ACCESS_KEY_ID"]
            os.environ["AWS_SECRET_ACCESS_KEY"] = os.environ["SYNCFS_TEST_S3_SECRET_ACCESS_KEY"]
    work = os.path.join(args.workdir, "bench-million")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    results = {"entries": args.dirs * (args.files_per_dir + 1), "backends": []}
    servers, scratch = [], None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        root = os.path.join(work, "root")
        os.makedirs(root)
        log(f"seed-synthetic: {args.dirs} directories x {args.files_per_dir} files")
        out = subprocess.run([bench_binary(args.binary), "seed-synthetic", os.path.join(root, "box"), "--dirs", str(args.dirs),
                              "--files-per-dir", str(args.files_per_dir)], capture_output=True, check=True)
        seeded = json.loads(out.stdout.decode().strip().splitlines()[-1])
        results["seed_s"] = seeded["seconds"]
        log("seeded: " + json.dumps(seeded))
        if "database" in backends:
            scratch = Scratch(os.environ, work)
            db = ["--database", scratch.database, "--chunk-store", scratch.store]
            subprocess.run([args.binary, "server-init", *db], capture_output=True, check=True)
            log("container copy into PostgreSQL + S3")
            t, l0 = time.monotonic(), load()
            subprocess.run([args.binary, "container", "copy", os.path.join(root, "box"), "db:box", *db],
                           check=True, stderr=subprocess.PIPE)
            results["copy_s"], results["copy_load"] = time.monotonic() - t, max(l0, load())
            log(f"copied in {results['copy_s']:.0f} s")
        if "embedded" in backends:
            server = Server(args.binary, root)
            servers.append(server)
            token = server.token("box")
            results["backends"].append(measure_backend(args, "embedded", server.origin + "/box", token, server,
                                                       work, results["entries"]))
            server.stop()
        if "database" in backends:
            token = os.path.join(work, "db.token")
            out = subprocess.run([args.binary, "token", "create", "--database", scratch.database, "--container",
                                  "box", "--label", "bench"], capture_output=True, check=True)
            fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(out.stdout.decode())
            server = DatabaseServer(args.binary, db, os.path.join(work, "serve-db.log"))
            servers.append(server)
            results["backends"].append(measure_backend(args, "database", server.origin + "/box", token, server,
                                                       work, results["entries"]))
        print_report(results, args)
    finally:
        for s in servers:
            s.stop()
        if scratch:
            scratch.remove()
        subprocess.run(f"fusermount3 -u -z {work}/mnt-* 2>/dev/null", shell=True)
        shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    main()
