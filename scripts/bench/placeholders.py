#!/usr/bin/env python3
"""Placeholder benchmarks of SyncFS, run by scripts/bench.sh (or alone).

A container holding N small files (about 1 KiB each, spread over D directories) and one large
file (100 MiB of mixed random and text data) is mounted with a fresh state directory (mount B),
which should store names and attributes only (placeholders) and download on the first read.
Measures, with the release binary, medians of --runs runs:
  - attach: from starting `syncfs-mount mount` until B shows the whole tree (`feedCaughtUp` of
    `status --json`; without it, until a walk of the tree finds every name), goal < 10 s, and
    the content downloaded meanwhile (should be 0); a first mount prints `ready` only once it is
    attached, so the first status after `ready` must say caught up (checked in every run)
  - `ls -lR` of the tree on B: cold (the first after the attach) and warm (the second), against
    the same tree in a plain directory (native) and over `rclone mount --vfs-cache-mode full` of
    that directory (if rclone is installed); the content downloaded by it (should be 0)
  - after those, `find` and `du -s` of the tree, each after dropping the kernel's caches (the
    tree walks), on B, native and rclone
  - the large file: time to the first 4 KiB (open + read) and a full read (cat) of the
    placeholder, a second full read, against native (and rclone)
  - the daemon's RSS after `ls -lR`, goal < 150 MB
Prints a Markdown table (and JSON with --json). Always unmounts what it mounted.

The container is built once per invocation, before the timed runs: by the hidden
`syncfs-bench seed-container` (the Container API without a mount; falls back to copying the tree
into a mount A and `syncfs-mount sync` when the binary lacks it), staged on tmpfs when possible
(every container commit is durable: one fsync each on a disk) and then copied to WORKDIR.

Today's binary (before placeholders) downloads everything at attach; the script works with it:
`status` without `--json` when that option is refused, catch-up by counting names when
`feedCaughtUp` is missing, and a fresh state directory instead of `syncfs-mount evict`.

Usage: placeholders.py BINARY WORKDIR [--files N] [--dirs D] [--file-kib K] [--big-mib M]
                       [--runs N] [--quick] [--populate auto|seed|mount] [--jobs N] [--no-tmpfs]
                       [--no-rclone] [--no-drop-caches] [--attach-timeout S] [--json [FILE]]
                       [--out FILE] [--strict] [--keep] [--populate-only]
(see --help). Works in WORKDIR/bench-placeholders, deleted at the end.
"""
import argparse, ctypes, glob, json, os, random, select, shutil, signal, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from binaries import bench_binary  # noqa: E402

MiB = 1 << 20
ATTACH_GOAL_S = 10.0
RSS_GOAL_MB = 150.0


def find_stat(root):
    """A walk that stats every name but reads no xattrs (`ls -l` also asks for security.selinux
    and system.posix_acl_access of every file: two round trips each to a FUSE daemon)."""
    return ["find", root, "-printf", "%m %n %s %T@ %p\n"]


def log(msg):
    print(time.strftime("%H:%M:%S") + " [bench-placeholders] " + msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- fixtures

# Bytes -> text-like characters (letters by rough frequency, spaces, some newlines and
# punctuation): compresses a little (to ~75% with zlib level 1), never repeats (no dedup).
_TEXT = ("eeeeeeeeettttttaaaaaaoooooiiiiinnnnnsssssrrrrhhhhlllddduuccmmffggppwwyybbvkjxqz"
         "EATOINSRHLDC0123456789.,;:()_-=" + " " * 24)
_TEXT = (_TEXT * 3)[:252] + "\n\n\n\n"
TEXT_TABLE = bytes(ord(c) for c in _TEXT)
assert len(TEXT_TABLE) == 256


def text_bytes(rng, n):
    return rng.randbytes(n).translate(TEXT_TABLE)


def make_tree(root, nfiles, ndirs, file_bytes, big_bytes, seed=20261122):
    """The fixture tree: nfiles text files of about file_bytes (±50%) in ndirs directories
    d000..., and big.bin (1 MiB pieces alternating random and text). Returns the entry count."""
    rng = random.Random(seed)
    os.makedirs(root)
    dirs = [os.path.join(root, f"d{i:03d}") for i in range(ndirs)]
    for d in dirs:
        os.mkdir(d)
    lo, hi = max(1, file_bytes // 2), max(1, file_bytes * 3 // 2)
    for i in range(nfiles):
        with open(os.path.join(dirs[i % ndirs], f"f{i:06d}.txt"), "wb") as f:
            f.write(text_bytes(rng, rng.randint(lo, hi)))
    if big_bytes > 0:
        with open(os.path.join(root, "big.bin"), "wb") as f:
            left, k = big_bytes, 0
            while left > 0:
                n = min(MiB, left)
                f.write(rng.randbytes(n) if k % 2 == 0 else text_bytes(rng, n))
                left -= n
                k += 1
    return ndirs + nfiles + (1 if big_bytes > 0 else 0)


def count_entries(root):
    """Names below root (not root itself), walking with scandir (d_type; no stat per entry)."""
    n, stack = 0, [root]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for e in it:
                n += 1
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
    return n


# ---------------------------------------------------------------- system helpers

def can_drop_caches():
    return os.access("/proc/sys/vm/drop_caches", os.W_OK)


def drop_caches():
    subprocess.run(["sync"], check=False)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def rss(pid):
    vals = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                vals[k] = int(v.split()[0]) * 1024
    return vals.get("VmRSS"), vals.get("VmHWM")


def is_mounted(mp):
    with open("/proc/mounts") as f:
        return any(line.split()[1] == mp for line in f)


def mounts_under(path):
    path = path.rstrip("/") + "/"
    with open("/proc/mounts") as f:
        return sorted((l.split()[1] for l in f if l.split()[1].startswith(path)), reverse=True)


def remove_tree(path):
    """rm -rf that never crosses into another file system (a mount left behind)."""
    subprocess.run(["rm", "-rf", "--one-file-system", path], check=False)


def timed(cmd, **kw):
    """Runs cmd (stdout to /dev/null); returns wall seconds. Raises on failure."""
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, env=dict(os.environ, LC_ALL="C"), **kw)
    return time.perf_counter() - t0


def first_bytes(path, n=4096):
    """Seconds for open + one read of n bytes (the first bytes of a placeholder)."""
    t0 = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.read(fd, n)
    finally:
        dt = time.perf_counter() - t0
        os.close(fd)
    if len(data) != n:
        raise RuntimeError(f"short read of {path}: {len(data)} bytes")
    return dt


def _pdeathsig():
    # The child gets SIGTERM if this script dies (rclone then unmounts).
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


# ---------------------------------------------------------------- mounts


def create_flag(binary, container):
    """`--create` for a local container with a binary that makes containers only on request (a
    first mount of a fresh path needs it); nothing for a server URL or an older binary."""
    if "://" in container:
        return []
    r = subprocess.run([binary, "mount", "--help"], capture_output=True)
    return ["--create"] if b"--create" in r.stdout else []

class Mount:
    """One syncfs-mount daemon in the foreground with a lifeline (stdin pipe)."""
    json_flag = None  # None: not yet known whether `status --json` is accepted

    def __init__(self, binary, container, mountpoint, state, timeout=120):
        os.makedirs(mountpoint, exist_ok=True)
        self.mountpoint = mountpoint
        self.binary = binary
        self.state = state
        self.log_path = state + ".log"
        self.proc = subprocess.Popen(
            [binary, "mount", container, mountpoint, "--state-dir", state, "--foreground", "--lifeline",
             "--log-level", "warning", *create_flag(binary, container)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(self.log_path, "ab"))
        self.pid = self.proc.pid
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else b""
        if line.strip() != b"ready":
            self.stop()
            raise RuntimeError(f"mount of {mountpoint} failed: " + self.log_tail())

    def log_tail(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-2000:]
        except OSError:
            return "(no log)"

    def alive(self):
        return self.proc.poll() is None

    def status(self):
        """The mount's status as a dict: `status --json`, or plain `status` (today's JSON)."""
        if Mount.json_flag is not False:
            r = subprocess.run([self.binary, "status", self.mountpoint, "--json"], capture_output=True)
            if r.returncode == 0:
                Mount.json_flag = True
                return json.loads(r.stdout.decode().strip().splitlines()[-1])
            if Mount.json_flag is True or r.returncode == 65:
                raise RuntimeError(f"status failed ({r.returncode}): {r.stderr.decode().strip()}")
            Mount.json_flag = False
            log("`status --json` refused; using `status` (today's CLI)")
        r = subprocess.run([self.binary, "status", self.mountpoint], capture_output=True)
        if r.returncode != 0:
            raise RuntimeError(f"status failed ({r.returncode}): {r.stderr.decode().strip()}")
        return json.loads(r.stdout.decode().strip().splitlines()[-1])

    def sync(self, timeout=3600):
        subprocess.run([self.binary, "sync", self.mountpoint, "--timeout", str(timeout)], check=True,
                       stderr=subprocess.DEVNULL)

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        if is_mounted(self.mountpoint):
            subprocess.run(["fusermount3", "-u", "-z", self.mountpoint], stderr=subprocess.DEVNULL)


class Rclone:
    """`rclone mount REMOTE MP --vfs-cache-mode full` of a plain directory, its own cache dir."""

    def __init__(self, remote, mountpoint, cache, config, log_path):
        os.makedirs(mountpoint, exist_ok=True)
        os.makedirs(cache, exist_ok=True)
        self.mountpoint = mountpoint
        self.proc = subprocess.Popen(
            ["rclone", "mount", remote, mountpoint, "--vfs-cache-mode", "full", "--cache-dir", cache,
             "--log-level", "NOTICE", *os.environ.get("RCLONE_MOUNT_ARGS", "").split()],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(log_path, "ab"),
            env=dict(os.environ, RCLONE_CONFIG=config), preexec_fn=_pdeathsig)
        self.pid = self.proc.pid
        deadline = time.time() + 30
        while not is_mounted(mountpoint):
            if self.proc.poll() is not None or time.time() > deadline:
                self.stop()
                raise RuntimeError("rclone mount did not come up; see " + log_path)
            time.sleep(0.1)

    def stop(self):
        for _ in range(5):
            if not is_mounted(self.mountpoint):
                break
            if subprocess.run(["fusermount3", "-u", self.mountpoint], stderr=subprocess.DEVNULL).returncode == 0:
                break
            time.sleep(1)
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        if is_mounted(self.mountpoint):
            subprocess.run(["fusermount3", "-u", "-z", self.mountpoint], stderr=subprocess.DEVNULL)


def has_subcommand(binary, name, command="syncfs-mount"):
    # `BINARY NAME --help` prints the root's help (exit 0) for an unknown NAME; `help NAME`
    # prints NAME's usage line only if NAME exists (hidden subcommands included).
    if not os.access(binary, os.X_OK):
        return False
    r = subprocess.run([binary, "help", name], capture_output=True)
    return r.returncode == 0 and f"USAGE: {command} {name}".encode() in r.stdout


# ---------------------------------------------------------------- the benchmark

class Bench:
    def __init__(self, args, work):
        self.a = args
        self.work = work
        self.mounts = []   # everything to stop in the end
        self.stage = None  # tmpfs staging directory, removed in the end
        self.drop = args.drop_caches and can_drop_caches()
        self.samples = {}  # key -> [values], one per run
        self.info = {}     # single values
        self.notes = []

    def add(self, key, value):
        self.samples.setdefault(key, []).append(value)

    def cold(self):
        if self.drop:
            drop_caches()

    def stop_all(self):
        for m in reversed(self.mounts):
            try:
                m.stop()
            except Exception as e:  # keep stopping the others
                log(f"stopping {m.mountpoint}: {e}")
        self.mounts = []

    def track(self, m):
        self.mounts.append(m)
        with open(os.path.join(self.work, "pids"), "a") as f:  # for the watchdog
            f.write(f"{m.pid}\n")
        return m

    def untrack(self, m):
        m.stop()
        self.mounts.remove(m)

    # ---- container

    def populate(self, tree, container):
        a = self.a
        method = a.populate
        if method == "auto":
            method = "seed" if has_subcommand(bench_binary(a.binary), "seed-container", "syncfs-bench") else "mount"
        target = container
        if a.tmpfs and os.path.isdir("/dev/shm"):
            # Leftovers of a killed run of ours (its PID is gone) would hold RAM: remove them.
            for old in glob.glob("/dev/shm/syncfs-ph-stage-*"):
                try:
                    os.kill(int(old.rsplit("-", 1)[1]), 0)
                except (ValueError, ProcessLookupError):
                    shutil.rmtree(old, ignore_errors=True)
                except PermissionError:
                    pass
            self.stage = f"/dev/shm/syncfs-ph-stage-{os.getpid()}"
            shutil.rmtree(self.stage, ignore_errors=True)
            os.makedirs(self.stage)
            target = os.path.join(self.stage, "container")
        where = "tmpfs, then copied" if self.stage else "in place"
        log(f"populating the container ({method}, {where})")
        t0 = time.perf_counter()
        if method == "seed":
            out = subprocess.run([bench_binary(a.binary), "seed-container", tree, target, "--jobs", str(a.jobs)],
                                 capture_output=True, check=True)
            log("seed-container: " + out.stdout.decode().strip())
        else:
            state = os.path.join(self.stage or self.work, "state-a")
            m = self.track(Mount(a.binary, target, os.path.join(self.work, "a"), state))
            log("copying the tree into mount A")
            subprocess.run(["cp", "-R", "--preserve=mode,timestamps", tree + "/.", m.mountpoint], check=True)
            t_copy = time.perf_counter() - t0
            log(f"copied in {t_copy:.1f} s; waiting for the uploads (syncfs-mount sync)")
            m.sync()
            self.untrack(m)
            self.info["populate_copy_s"] = t_copy
        t_pop = time.perf_counter() - t0
        t_stage = 0.0
        if self.stage:
            t1 = time.perf_counter()
            subprocess.run(["cp", "-a", target, container], check=True)
            shutil.rmtree(self.stage, ignore_errors=True)
            self.stage = None
            t_stage = time.perf_counter() - t1
        self.info.update(populate_method=method, populate_on_tmpfs=where != "in place",
                         populate_s=t_pop, populate_copy_to_disk_s=t_stage)
        log(f"container ready: {t_pop:.1f} s" + (f" + {t_stage:.1f} s copying it to disk" if t_stage else ""))

    # ---- SyncFS

    def mount_b(self, container, run, suffix=""):
        """Mounts B on a fresh state directory; returns (mount, seconds to ready, seconds to caught up)."""
        state = os.path.join(self.work, f"state-b{run}{suffix}")
        mp = os.path.join(self.work, "b")
        t0 = time.perf_counter()
        m = self.track(Mount(self.a.binary, container, mp, state))
        t_ready = time.perf_counter() - t0
        # A first mount says `ready` only once its tree is attached: the first
        # status after `ready` must already say caught up (a walk would cost seconds at 100,000).
        first = m.status()
        self.add("syncfs_caught_up_at_ready", 1 if first.get("feedCaughtUp", False) else 0)
        deadline = t0 + self.a.attach_timeout
        last_log = time.time()
        while True:
            if not m.alive():
                raise RuntimeError("daemon B exited during the attach: " + m.log_tail())
            st = m.status()
            if "feedCaughtUp" in st:
                if st["feedCaughtUp"]:
                    break
                time.sleep(0.05)
            else:
                if "attach_by_count" not in self.info:
                    self.info["attach_by_count"] = True
                    log("status has no feedCaughtUp: catch-up = every name visible (walks of the tree)")
                n = count_entries(mp)
                if n >= self.expected:
                    break
                if time.time() - last_log > 10:
                    log(f"attach: {n} of {self.expected} names so far")
                    last_log = time.time()
                time.sleep(0.05)
            if time.perf_counter() > deadline:
                raise RuntimeError(f"B did not catch up within {self.a.attach_timeout} s")
        t_caught = time.perf_counter() - t0
        return m, t_ready, t_caught

    def make_placeholder_again(self, m, big, container, run):
        """Makes big.bin a placeholder again: `evict` if the CLI has it, else a fresh state dir."""
        if self.has_evict:
            if self.has_download:
                subprocess.run([self.a.binary, "download", big, "--timeout", "600"], check=True,
                               stderr=subprocess.DEVNULL)
            else:
                with open(big, "rb") as f:
                    while f.read(MiB):
                        pass
            # The kernel sends RELEASE after close() returns: a refusal ("open") may be a moment early.
            for attempt in range(20):
                r = subprocess.run([self.a.binary, "evict", big], capture_output=True)
                if r.returncode == 0:
                    return m
                time.sleep(0.25)
            raise RuntimeError(f"evict {big} failed ({r.returncode}): {r.stderr.decode().strip()}")
        self.untrack(m)
        m, _, _ = self.mount_b(container, run, suffix="-again")
        return m

    def run_syncfs(self, container, run):
        a = self.a
        log(f"run {run}: attach (fresh state directory)")
        m, t_ready, t_attach = self.mount_b(container, run)
        self.add("syncfs_ready_s", t_ready)
        self.add("syncfs_attach_s", t_attach)
        st = m.status()
        self.add("syncfs_attach_downloaded", st.get("bytesDownloaded", 0))
        if "files" in st:
            self.info["files_after_attach"] = st["files"]
        self.add("syncfs_rss_attach", rss(m.pid)[0])
        log(f"run {run}: attached in {t_attach:.2f} s (ready {t_ready:.2f} s); "
            f"{st.get('bytesDownloaded', 0) / MiB:.1f} MiB downloaded")
        before = st.get("bytesDownloaded", 0)
        self.cold()
        self.add("syncfs_ls_cold_s", timed(["ls", "-lR", m.mountpoint]))
        self.add("syncfs_ls_warm_s", timed(["ls", "-lR", m.mountpoint]))
        self.add("syncfs_find_s", timed(find_stat(m.mountpoint)))
        self.cold_walks(m.mountpoint, "syncfs")
        n = count_entries(m.mountpoint)  # untimed check, after the timed listings
        if n != self.expected:
            raise RuntimeError(f"B shows {n} names after the attach, expected {self.expected}")
        st = m.status()
        self.add("syncfs_ls_downloaded", st.get("bytesDownloaded", 0) - before)
        r, h = rss(m.pid)
        self.add("syncfs_rss_ls", r)
        self.add("syncfs_hwm", h)
        if a.big_mib > 0:
            big = os.path.join(m.mountpoint, "big.bin")
            self.cold()
            self.add("syncfs_big_first_s", first_bytes(big))
            m = self.make_placeholder_again(m, big, container, run)
            before = m.status().get("bytesDownloaded", 0)
            self.cold()
            self.add("syncfs_big_read_s", timed(["cat", big]))
            got = m.status().get("bytesDownloaded", 0) - before
            self.add("syncfs_big_read_downloaded", got)
            if self.has_evict and got == 0 and "big_read_cached" not in self.info:
                self.info["big_read_cached"] = True
                log("warning: the full read of the evicted file downloaded nothing (served from a cache?)")
            self.add("syncfs_big_reread_s", timed(["cat", big]))
        self.untrack(m)

    def cold_walks(self, root, prefix):
        """The tree walks over the placeholders, each after dropping the kernel's caches
        (the daemon's memory stays): `find` (names only) and `du -s` (every file's blocks)."""
        if not self.drop:
            return
        self.cold()
        self.add(f"{prefix}_find_cold_s", timed(["find", root]))
        self.cold()
        self.add(f"{prefix}_du_cold_s", timed(["du", "-s", root]))

    # ---- native and rclone

    def run_plain(self, root, prefix, run, rss_pid=None):
        self.cold()
        self.add(f"{prefix}_ls_cold_s", timed(["ls", "-lR", root]))
        self.add(f"{prefix}_ls_warm_s", timed(["ls", "-lR", root]))
        self.add(f"{prefix}_find_s", timed(find_stat(root)))
        self.cold_walks(root, prefix)
        if rss_pid:
            self.add(f"{prefix}_rss_ls", rss(rss_pid)[0])
        if self.a.big_mib > 0:
            big = os.path.join(root, "big.bin")
            self.cold()
            self.add(f"{prefix}_big_first_s", first_bytes(big))
            self.cold()
            self.add(f"{prefix}_big_read_s", timed(["cat", big]))
            self.add(f"{prefix}_big_reread_s", timed(["cat", big]))

    def run_rclone(self, tree, run):
        config = os.path.join(self.work, "rclone.conf")
        open(config, "w").close()
        cache = os.path.join(self.work, f"rclone-cache{run}")
        m = self.track(Rclone(tree, os.path.join(self.work, "rclone"), cache, config,
                              os.path.join(self.work, "rclone.log")))
        try:
            self.run_plain(m.mountpoint, "rclone", run, rss_pid=m.pid)
        finally:
            self.untrack(m)
            shutil.rmtree(cache, ignore_errors=True)

    # ---- main

    def run(self):
        a = self.a
        self.has_evict = has_subcommand(a.binary, "evict")
        self.has_download = has_subcommand(a.binary, "download")
        tree = os.path.join(self.work, "native")
        container = os.path.join(self.work, "container")
        log(f"fixture: {a.files} files of ~{a.file_kib} KiB in {a.dirs} directories + {a.big_mib} MiB big.bin")
        t0 = time.perf_counter()
        self.expected = make_tree(tree, a.files, a.dirs, int(a.file_kib * 1024), a.big_mib * MiB)
        self.info["fixture_s"] = time.perf_counter() - t0
        self.populate(tree, container)
        if a.populate_only:
            return
        use_rclone = a.rclone and shutil.which("rclone") is not None
        if a.rclone and not use_rclone:
            self.notes.append("rclone is not installed: no rclone column.")
        for run in range(1, a.runs + 1):
            self.run_syncfs(container, run)
            log(f"run {run}: native")
            self.run_plain(tree, "native", run)
            if use_rclone:
                log(f"run {run}: rclone")
                self.run_rclone(tree, run)
        self.info.update(has_evict=self.has_evict, drop_caches=self.drop, rclone=use_rclone,
                         status_json=bool(Mount.json_flag))


# ---------------------------------------------------------------- report

def med(samples, key):
    v = samples.get(key)
    return statistics.median(v) if v else None


def report(b, args):
    s, info = b.samples, b.info
    m = {k: med(s, k) for k in s}

    def sec(v):
        return "—" if v is None else (f"{v:.2f} s" if v >= 0.1 else f"{v * 1000:.1f} ms")

    def ms(v):
        return "—" if v is None else f"{v * 1000:.1f} ms"

    def mb(v):
        return "—" if v is None else f"{v / 1e6:.1f} MB ({v / MiB:.1f} MiB)"

    def rate(t):
        return "" if t is None else f" ({args.big_mib / t:,.0f} MiB/s)"

    def verdict(ok):
        return "PASS" if ok else "FAIL"

    big = f"{args.big_mib} MiB"
    n = f"{args.files:,}"
    rows = []
    att = m.get("syncfs_attach_s")
    rows.append((f"Attach {n} files + {big} (mount start → whole tree visible)", sec(att), "", "",
                 "< 10 s", "" if att is None else verdict(att < ATTACH_GOAL_S)))
    rows.append(("  (mount start → `ready`)", sec(m.get("syncfs_ready_s")), "", "", "", ""))
    at_ready = s.get("syncfs_caught_up_at_ready")
    if at_ready:
        rows.append(("Tree complete at `ready` (runs)", f"{sum(at_ready)} of {len(at_ready)}", "", "",
                     "all", verdict(sum(at_ready) == len(at_ready))))
    dl = max(s.get("syncfs_attach_downloaded", [0]))
    rows.append(("Content downloaded by the attach (max of runs)", f"{dl / MiB:.1f} MiB", "", "", "0",
                 verdict(dl == 0)))
    rows.append((f"ls -lR of {n} files, cold", sec(m.get("syncfs_ls_cold_s")), sec(m.get("native_ls_cold_s")),
                 sec(m.get("rclone_ls_cold_s")), "", ""))
    rows.append((f"ls -lR of {n} files, warm", sec(m.get("syncfs_ls_warm_s")), sec(m.get("native_ls_warm_s")),
                 sec(m.get("rclone_ls_warm_s")), "", ""))
    rows.append((f"find -printf of {n} files (stats, no xattrs), after ls -lR", sec(m.get("syncfs_find_s")),
                 sec(m.get("native_find_s")), sec(m.get("rclone_find_s")), "", ""))
    for key, label in (("find_cold", "find"), ("du_cold", "du -s")):
        if m.get(f"syncfs_{key}_s") is not None:
            rows.append((f"{label} of {n} files, cold (caches dropped, after the listings)",
                         sec(m.get(f"syncfs_{key}_s")), sec(m.get(f"native_{key}_s")),
                         sec(m.get(f"rclone_{key}_s")), "", ""))
    dl = max(s.get("syncfs_ls_downloaded", [0]))
    rows.append(("Content downloaded by ls -lR (max of runs)", f"{dl / MiB:.1f} MiB", "", "", "0", verdict(dl == 0)))
    if args.big_mib > 0:
        rows.append((f"{big} file: open + first 4 KiB", ms(m.get("syncfs_big_first_s")),
                     ms(m.get("native_big_first_s")), ms(m.get("rclone_big_first_s")), "", ""))
        rows.append((f"{big} file: full read (cat) of the placeholder",
                     sec(m.get("syncfs_big_read_s")) + rate(m.get("syncfs_big_read_s")),
                     sec(m.get("native_big_read_s")) + rate(m.get("native_big_read_s")),
                     sec(m.get("rclone_big_read_s")) + rate(m.get("rclone_big_read_s")), "", ""))
        rows.append((f"{big} file: second full read",
                     sec(m.get("syncfs_big_reread_s")) + rate(m.get("syncfs_big_reread_s")),
                     sec(m.get("native_big_reread_s")) + rate(m.get("native_big_reread_s")),
                     sec(m.get("rclone_big_reread_s")) + rate(m.get("rclone_big_reread_s")), "", ""))
        v = m.get("syncfs_big_read_downloaded")
        rows.append(("  (downloaded by that full read, encoded)", "—" if v is None else f"{v / MiB:.1f} MiB",
                     "", "", "", ""))
    r = m.get("syncfs_rss_ls")
    rows.append((f"Daemon RSS with {n} placeholders, after ls -lR", mb(r), "", mb(m.get("rclone_rss_ls")),
                 "< 150 MB", "" if r is None else verdict(r / 1e6 < RSS_GOAL_MB)))
    rows.append(("  (RSS right after the attach)", mb(m.get("syncfs_rss_attach")), "", "", "", ""))
    if info.get("files_after_attach"):
        f = info["files_after_attach"]
        rows.append(("  (files by state after the attach, last run)",
                     ", ".join(f"{k} {v:,}" for k, v in f.items()), "", "", "", ""))
    pop = f"{info['populate_s']:.1f} s ({info['populate_method']}"
    pop += ", on tmpfs" if info.get("populate_on_tmpfs") else ""
    pop += f"; + {info['populate_copy_to_disk_s']:.1f} s copying to disk)" if info.get("populate_copy_to_disk_s") else ")"
    rows.append(("(building the container, untimed fixture)", pop, "", "", "", ""))

    lines = ["| placeholder measure | SyncFS | native | rclone | goal | |", "|---|---:|---:|---:|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    notes = [f"Median of {args.runs} run(s); each run attaches with a fresh state directory."]
    if info.get("attach_by_count"):
        notes.append("`status` had no `feedCaughtUp` (binary before placeholders): the attach ends when a "
                     "walk of the tree finds every name (walks repeated; resolution ≈ one walk).")
    if not info.get("status_json"):
        notes.append("`status --json` was refused: plain `status` used (today's CLI).")
    if not info.get("has_evict"):
        notes.append("No `syncfs-mount evict`: the full read of the placeholder is made on another fresh "
                     "state directory (a second attach).")
    cold = ("Cold = after `sync; echo 3 > /proc/sys/vm/drop_caches`" if info.get("drop_caches")
            else "Cold = without dropping the page cache (not root, or --no-drop-caches)")
    cold += "; SyncFS's cold ls -lR right after the attach"
    if info.get("attach_by_count") and not info.get("drop_caches"):
        cold += " (after the walks that detected it: the kernel may already cache names and attributes)"
    if info.get("rclone"):
        cold += ", rclone's on a fresh mount and VFS cache"
    notes.append(cold + ".")
    if info.get("big_read_cached"):
        notes.append("WARNING: a full read of the evicted large file downloaded nothing: it was served "
                     "from a cache, not from the container.")
    notes += b.notes
    table = "\n".join(lines) + "\n\n" + "\n".join("- " + x for x in notes)
    failed = [r[0] for r in rows if r[5] == "FAIL"]
    return table, {"medians": m, "samples": s, "info": info, "failed": failed,
                   "goals": {"attach_s": ATTACH_GOAL_S, "rss_mb": RSS_GOAL_MB}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("workdir")
    ap.add_argument("--files", type=int, help="small files in the container (default 100000; --quick 2000)")
    ap.add_argument("--dirs", type=int, help="directories they are spread over (default 100; --quick 20)")
    ap.add_argument("--file-kib", type=float, default=1.0, help="mean small-file size in KiB (default 1)")
    ap.add_argument("--big-mib", type=int, help="size of the large file in MiB (default 100; --quick 16; 0: none)")
    ap.add_argument("--runs", type=int, help="runs; medians are reported (default 3; --quick 1)")
    ap.add_argument("--quick", action="store_true", help="smoke test: small sizes, 1 run")
    ap.add_argument("--populate", choices=["auto", "seed", "mount"], default="auto",
                    help="build the container with seed-container or through a mount (default auto)")
    ap.add_argument("--jobs", type=int, default=4, help="seed-container --jobs (default 4)")
    ap.add_argument("--no-tmpfs", dest="tmpfs", action="store_false",
                    help="build the container in WORKDIR instead of on /dev/shm")
    ap.add_argument("--no-rclone", dest="rclone", action="store_false", help="skip the rclone column")
    ap.add_argument("--no-drop-caches", dest="drop_caches", action="store_false",
                    help="never drop the page cache for cold measures")
    ap.add_argument("--attach-timeout", type=float, default=600, help="seconds (default 600)")
    ap.add_argument("--json", nargs="?", const="-", metavar="FILE",
                    help="also write the results as JSON to FILE (default: stdout, after the table)")
    ap.add_argument("--out", help="append the Markdown table to FILE")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (fixture, container)")
    ap.add_argument("--strict", action="store_true", help="exit with 1 if a goal or check fails")
    ap.add_argument("--populate-only", action="store_true",
                    help="only build the fixture and the container, print their timings as JSON")
    args = ap.parse_args()
    quick = args.quick
    args.files = args.files if args.files is not None else (2000 if quick else 100_000)
    args.dirs = args.dirs if args.dirs is not None else (20 if quick else 100)
    args.big_mib = args.big_mib if args.big_mib is not None else (16 if quick else 100)
    args.runs = args.runs if args.runs is not None else (1 if quick else 3)
    if args.files < 1 or args.dirs < 1 or args.runs < 1 or args.big_mib < 0 or args.file_kib <= 0:
        ap.error("--files, --dirs, --runs must be positive, --big-mib >= 0, --file-kib > 0")
    args.binary = os.path.realpath(args.binary)

    work = os.path.join(os.path.realpath(args.workdir), "bench-placeholders")
    if mounts_under(work):
        sys.exit(f"placeholders.py: mounts under {work} exist; not touching it")
    remove_tree(work)
    os.makedirs(work)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # Safety net if this script is SIGKILLed: bench.sh's watchdog, on our work directory (it
    # stops the daemons listed in WORK/pids, unmounts what is under WORK and deletes it).
    watchdog = subprocess.Popen(
        [os.path.join(os.path.dirname(os.path.abspath(__file__)), "watchdog.sh"), str(os.getpid()), work,
         os.path.join(os.path.dirname(work), "placeholders-watchdog.log")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    b = Bench(args, work)
    ok = False
    try:
        b.run()
        ok = True
    finally:
        b.stop_all()
        watchdog.terminate()
        watchdog.wait()
        if not ok:
            for path in sorted(glob.glob(os.path.join(work, "*.log"))):
                with open(path, errors="replace") as f:
                    tail = f.read()[-1500:].strip()
                if tail:
                    log(f"{os.path.basename(path)} (end):\n{tail}")
        if b.stage:
            shutil.rmtree(b.stage, ignore_errors=True)
        left = mounts_under(work)
        if left:
            log(f"ERROR: still mounted: {left}; not deleting {work}")
        elif not args.keep:
            remove_tree(work)
        if not ok:
            log("failed; logs of the daemons were in " + work + (" (kept)" if left or args.keep else " (deleted)"))

    if args.populate_only:
        print(json.dumps(b.info, sort_keys=True))
        return
    table, doc = report(b, args)
    print(table)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + table + "\n")
    if args.json:
        text = json.dumps(doc, sort_keys=True)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w") as f:
                f.write(text + "\n")
    if args.strict and doc["failed"]:
        log("failed: " + "; ".join(doc["failed"]))
        sys.exit(1)


if __name__ == "__main__":
    main()
