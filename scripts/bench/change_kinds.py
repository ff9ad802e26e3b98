"""Propagation by kind of change, with the mass-delete guard on (its defaults): close/unlink on
mount A -> visible on mount B, one change at a time, for new files, overwrites of established
text files, overwrites of established files with random bytes (what the guard inspects), and
deletes of established files. Files are made established by remounting A after they synced; a
tree of 10 x `trials` other established files stands beside them, so the trials are a small part
of the tree, as one person's edits are (on a tree of only the trials, the deletes and random
overwrites together are a third of it: the guard's fraction rule rightly trips).
Used by sync.py (a local container) and server.py (through `syncfs-mount serve`)."""
import os, time

KINDS = ("new", "overwrite", "overwrite_random", "delete")


def _wait(check, what, deadline_s=30):
    t0 = time.perf_counter()
    while True:
        try:
            if check():
                return
        except FileNotFoundError:
            pass
        if time.perf_counter() - t0 > deadline_s:
            raise RuntimeError(f"{what} did not arrive within {deadline_s} s")
        time.sleep(0.001)


def _read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def measure(a, b, trials, folder):
    """Returns {kind: [milliseconds per trial]} for KINDS, with files in `folder` (new, below
    both mount points); restarts A once."""
    os.mkdir(os.path.join(a.mountpoint, folder))
    names = {kind: [f"{folder}/{kind}-{i}.dat" for i in range(trials)] for kind in KINDS if kind != "new"}
    for i in range(10 * trials):
        with open(os.path.join(a.mountpoint, folder, f"other-{i}.txt"), "w") as f:
            f.write(f"another file of the tree {i}\n")
    for kind, files in names.items():
        for i, name in enumerate(files):
            with open(os.path.join(a.mountpoint, name), "wb") as f:
                f.write(f"established {kind} {i}\n".encode() * 50)
    last = os.path.join(b.mountpoint, names["delete"][-1])
    a.sync()
    _wait(lambda: os.path.exists(last), "the established files")
    a.restart()
    samples = {kind: [] for kind in KINDS}
    for i in range(trials):
        for kind in KINDS:
            if kind == "new":
                name = f"{folder}/new-{i}.dat"
                content = f"new file {i}\n".encode() * 50
            elif kind == "overwrite":
                name = names[kind][i]
                content = f"edited {i}\n".encode() * 60
            elif kind == "overwrite_random":
                name = names[kind][i]
                content = os.urandom(4096)
            else:
                name = names[kind][i]
                content = None
            target = os.path.join(b.mountpoint, name)
            t0 = time.perf_counter()
            if content is None:
                os.unlink(os.path.join(a.mountpoint, name))
                _wait(lambda: not os.path.exists(target), f"delete {i}")
            else:
                with open(os.path.join(a.mountpoint, name), "wb") as f:
                    f.write(content)
                _wait(lambda: _read(target, "rb") == content, f"{kind} {i}")
            samples[kind].append((time.perf_counter() - t0) * 1000)
    return samples
