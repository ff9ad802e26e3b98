#!/usr/bin/env python3
"""Small-file benchmarks of SyncFS, run by scripts/bench.sh (or alone).

For each container kind — a local container, `syncfs-mount serve` (embedded), and, when the
environment of scripts/services.sh is set, `serve --database` on PostgreSQL + S3 — one mount,
then per run three write-heavy steps, each followed by `syncfs-mount sync`:
  - untar a generated tree of TREE_FILES files (GNU tar)
  - create FILES x 4 KiB files (a Python loop of open(O_CREAT|O_EXCL)/write/close)
  - git clone of a generated repository of COMMITS commits
The step's own time and the time until uploaded (the end of the step until `sync` returns), with
the targets: untar uploaded <= 3 s after, create <= 2 s, git clone <= 1.5 s.

Then, on the local container, the folder while it uploads: the create step's time on an idle
mount against its time while a backlog (the tree untarred twice just before, not yet uploaded)
uploads; the target is >= 90 % of the idle throughput.

Prints a Markdown table (and JSON on stderr). Always stops what it started.

Usage: small_files.py BINARY WORKDIR [--runs N] [--tree-files N] [--files N] [--commits N]
                      [--repo-files N] [--quick] [--out FILE]
"""
import argparse, json, os, shutil, signal, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server import Server  # noqa: E402
from server_db import DatabaseServer, Scratch  # noqa: E402
from sync import Mount, goal  # noqa: E402

HELPERS = os.path.dirname(os.path.abspath(__file__))
# Seconds from the end of a step until everything it wrote is committed.
UPLOAD_TARGETS = {"untar": 3.0, "create": 2.0, "git_clone": 1.5}
FOREGROUND_TARGET = 0.9


def log(msg):
    print(time.strftime("%H:%M:%S") + " [bench-small-files] " + msg, file=sys.stderr, flush=True)


def make_fixtures(work, tree_files, repo_files, commits):
    """The tarball and the bare repository, as bench.sh makes them."""
    tree, tarball, repo = os.path.join(work, "tree"), os.path.join(work, "tree.tar"), os.path.join(work, "repo.git")
    subprocess.run([sys.executable, os.path.join(HELPERS, "fixtures.py"), "tree", tree, str(tree_files)], check=True)
    subprocess.run(["tar", "--sort=name", "--mtime=@0", "--owner=0", "--group=0", "--numeric-owner",
                    "-cf", tarball, "-C", tree, "."], check=True)
    shutil.rmtree(tree)
    subprocess.run(["git", "init", "-q", "--bare", repo], check=True)
    subprocess.run(["git", "-C", repo, "symbolic-ref", "HEAD", "refs/heads/main"], check=True)
    fast = subprocess.Popen([sys.executable, os.path.join(HELPERS, "fixtures.py"), "fastimport", str(repo_files),
                             str(commits)], stdout=subprocess.PIPE)
    subprocess.run(["git", "-C", repo, "fast-import", "--quiet"], stdin=fast.stdout, check=True)
    fast.wait()
    subprocess.run(["git", "-C", repo, "repack", "-adq"], check=True)
    return tarball, repo


def create_files(directory, count):
    """The create step: seconds for `count` open(O_CREAT|O_EXCL)/write 4 KiB/close."""
    os.makedirs(directory)
    payload = os.urandom(4096)
    start = time.perf_counter()
    for i in range(count):
        fd = os.open(os.path.join(directory, f"f{i:05d}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, payload)
        os.close(fd)
    return time.perf_counter() - start


def timed(argv):
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def steps(mount, tarball, repo, files):
    """name -> a function of a fresh directory that runs the step and returns its seconds."""
    def untar(directory):
        os.makedirs(directory)
        return timed(["tar", "-xf", tarball, "-C", directory])

    def clone(directory):
        return timed(["git", "clone", "-q", "file://" + repo, directory])

    return [("untar", untar), ("create", lambda d: create_files(d, files)), ("git_clone", clone)]


def measure_steps(mount, tarball, repo, files, runs, results, kind):
    for run in range(1, runs + 1):
        for name, step in steps(mount, tarball, repo, files):
            directory = os.path.join(mount.mountpoint, f"{name}-{run}")
            seconds = step(directory)
            start = time.perf_counter()
            mount.sync()
            uploaded = time.perf_counter() - start
            results.setdefault(kind, {}).setdefault(name, []).append((seconds, uploaded))
            log(f"{kind} run {run}: {name} {seconds:.2f} s, uploaded {uploaded:.2f} s after")
            shutil.rmtree(directory)
            mount.sync()


def measure_foreground(mount, tarball, files, runs):
    """Create throughput idle vs while a backlog uploads: (idle seconds, loaded seconds) medians."""
    idle, loaded = [], []
    for run in range(1, runs + 1):
        mount.sync()
        directory = os.path.join(mount.mountpoint, f"idle-{run}")
        idle.append(create_files(directory, files))
        mount.sync()
        shutil.rmtree(directory)
        mount.sync()
        backlog = [os.path.join(mount.mountpoint, f"backlog-{run}-{i}") for i in (1, 2)]
        for path in backlog:
            os.makedirs(path)
            subprocess.run(["tar", "-xf", tarball, "-C", path], check=True)
        pending = mount.status().get("pendingEntries")
        directory = os.path.join(mount.mountpoint, f"loaded-{run}")
        loaded.append(create_files(directory, files))
        log(f"foreground run {run}: idle {idle[-1]:.2f} s, with a backlog uploading {loaded[-1]:.2f} s"
            f" ({pending} changes queued at its start)")
        mount.sync()
        for path in [*backlog, directory]:
            shutil.rmtree(path)
        mount.sync()
    return statistics.median(idle), statistics.median(loaded)


def report(results, foreground, args, out):
    labels = {"untar": f"Untar {args.tree_files} files", "create": f"Create {args.files} × 4 KiB files",
              "git_clone": f"git clone of {args.commits} commits"}
    kinds = {"local": "local container", "serve": "serve (embedded)", "database": "serve (PostgreSQL + S3)"}
    lines = ["", "| Small files, then `sync` | Container | Step | Until uploaded | Target | Goal |",
             "|---|---|---:|---:|---:|---|"]
    summary = {}
    for kind, per_step in results.items():
        for name, samples in per_step.items():
            step = statistics.median(s for s, _ in samples)
            upload = statistics.median(u for _, u in samples)
            target = UPLOAD_TARGETS[name]
            summary[f"{kind}/{name}"] = {"step": step, "uploaded": upload}
            lines.append(f"| {labels[name]} | {kinds[kind]} | {step:.2f} s | {upload:.2f} s | ≤ {target:.1f} s |"
                         f" {goal(upload <= target)} |")
    if foreground:
        idle, loaded = foreground
        share = idle / loaded
        summary["foreground"] = {"idle": idle, "loaded": loaded}
        lines += ["", "| The folder while it uploads (local container) | Idle | While a backlog uploads | Share | Goal |",
                  "|---|---:|---:|---:|---|",
                  f"| Create {args.files} × 4 KiB files | {idle:.2f} s | {loaded:.2f} s | {share:.0%} |"
                  f" ≥ {FOREGROUND_TARGET:.0%}: {goal(share >= FOREGROUND_TARGET)} |"]
    lines += ["", f"Medians of {args.runs} runs. Until uploaded: from the end of the step until `syncfs-mount sync`"
              " returns. The backlog: the tree untarred twice just before, not yet uploaded."]
    text = "\n".join(lines) + "\n"
    print(text)
    print(json.dumps(summary), file=sys.stderr)
    if out:
        with open(out, "a") as f:
            f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("workdir")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tree-files", type=int, default=9000)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--commits", type=int, default=3000)
    ap.add_argument("--repo-files", type=int, default=1500)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.quick:
        args.runs, args.tree_files, args.files, args.commits, args.repo_files = 1, 500, 1000, 300, 200

    work = os.path.join(args.workdir, "bench-small-files")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    log(f"fixtures: a tree of {args.tree_files} files, a repository of {args.commits} commits")
    tarball, repo = make_fixtures(work, args.tree_files, args.repo_files, args.commits)
    results, foreground = {}, None
    env = os.environ
    kinds = ["local", "serve"]
    if env.get("SYNCFS_TEST_PG_URL") and env.get("SYNCFS_TEST_S3_ENDPOINT"):
        kinds.append("database")
    else:
        log("PostgreSQL + S3 skipped: no SYNCFS_TEST_PG_URL/SYNCFS_TEST_S3_* (scripts/services.sh start)")
    for kind in kinds:
        server, scratch, mount = None, None, None
        try:
            extra = ()
            if kind == "local":
                container = os.path.join(work, "container")
            elif kind == "serve":
                server = Server(args.binary, os.path.join(work, "served"))
                container = server.origin + "/bench"
                extra = ("--token-file", server.token("bench"))
            else:
                os.environ["AWS_ACCESS_KEY_ID"] = env["SYNCFS_TEST_S3_ACCESS_KEY_ID"]
                os.environ["AWS_SECRET_ACCESS_KEY"] = env["SYNCFS_TEST_S3_SECRET_ACCESS_KEY"]
                scratch = Scratch(env, work)
                tokens = os.path.join(work, "tokens")
                backend = ["--database", scratch.database, "--chunk-store", scratch.store, "--tokens", tokens]
                token = subprocess.run([args.binary, "server-init", *backend[:4], "--create", "bench", "--tokens",
                                        tokens], capture_output=True, check=True).stdout.decode()
                server = DatabaseServer(args.binary, backend, os.path.join(work, "serve-db.log"))
                token_file = os.path.join(work, "db.token")
                with open(os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                    f.write(token)
                container = server.origin + "/bench"
                extra = ("--token-file", token_file)
            mount = Mount(args.binary, container, os.path.join(work, f"mp-{kind}"), os.path.join(work, f"state-{kind}"),
                          100, extra=("--no-guard", *extra))
            measure_steps(mount, tarball, repo, args.files, args.runs, results, kind)
            if kind == "local":
                foreground = measure_foreground(mount, tarball, args.files, args.runs)
        finally:
            if mount:
                mount.stop()
            if server:
                server.stop()
            if scratch:
                scratch.remove()
    report(results, foreground, args, args.out)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
