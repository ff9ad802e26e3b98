#!/usr/bin/env python3
"""Deterministic fixtures for scripts/bench.sh.

  fixtures.py tree DIR NFILES        write a synthetic source tree (seeded, same bytes every time)
  fixtures.py fastimport NFILES NCOMMITS   print a `git fast-import` stream on stdout

Both use a fixed seed, so every run on every machine produces the same data.
"""
import os
import random
import sys

WORDS = (
    "let var func return if else guard struct class enum case switch for in while "
    "import public private internal static self init deinit throws try await async "
    "Int String Data UInt64 Bool Array Dictionary Optional nil true false where "
    "buffer offset length inode handle cache state entry node path name mode size "
    "read write open close flush fsync lookup rename unlink mkdir rmdir getattr"
).split()


def text_blob(rng, size):
    """Source-code-like text of about `size` bytes."""
    out = []
    n = 0
    indent = 0
    while n < size:
        k = rng.randint(2, 10)
        line = "    " * indent + " ".join(rng.choice(WORDS) for _ in range(k))
        r = rng.random()
        if r < 0.12 and indent < 4:
            line += " {"
            indent += 1
        elif r < 0.24 and indent > 0:
            line = "    " * (indent - 1) + "}"
            indent -= 1
        out.append(line)
        n += len(line) + 1
    return ("\n".join(out) + "\n").encode()


def file_size(rng):
    # Roughly log-normal, median ~4 KiB, clamped to [64 B, 256 KiB].
    return int(min(256 * 1024, max(64, rng.lognormvariate(8.3, 1.1))))


def tree_paths(rng, nfiles):
    """Directory layout: ~20 files per directory, up to 4 levels deep."""
    ndirs = max(1, nfiles // 20)
    dirs = ["src"]
    for i in range(1, ndirs):
        parent = rng.choice(dirs[-50:]) if rng.random() < 0.7 else rng.choice(dirs)
        if parent.count("/") >= 4:
            parent = "src"
        dirs.append(f"{parent}/d{i:04d}")
    exts = [".swift", ".c", ".h", ".md", ".txt", ".json"]
    return [f"{rng.choice(dirs)}/f{i:05d}{rng.choice(exts)}" for i in range(nfiles)]


def cmd_tree(root, nfiles):
    rng = random.Random(20261121)
    for p in tree_paths(rng, nfiles):
        full = os.path.join(root, p)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(text_blob(rng, file_size(rng)))


def cmd_fastimport(nfiles, ncommits):
    rng = random.Random(4242)
    out = sys.stdout.buffer
    paths = tree_paths(rng, nfiles)
    contents = {p: text_blob(rng, min(file_size(rng), 16 * 1024)) for p in paths}
    ts = 1_700_000_000

    def data(b):
        out.write(b"data %d\n" % len(b))
        out.write(b)
        out.write(b"\n")

    for c in range(ncommits):
        ts += rng.randint(60, 7200)
        out.write(b"commit refs/heads/main\n")
        out.write(b"committer Bench <bench@example.invalid> %d +0000\n" % ts)
        data(b"commit %d\n\nSynthetic history for the SyncFS benchmark.\n" % c)
        if c == 0:
            changed = paths
        else:
            changed = [rng.choice(paths) for _ in range(rng.randint(1, 4))]
        for p in changed:
            if c > 0:
                # Edit a few lines in place so the history deltifies like real code.
                lines = contents[p].split(b"\n")
                for _ in range(rng.randint(1, 5)):
                    i = rng.randrange(len(lines))
                    lines[i] = b"    " + " ".join(rng.choice(WORDS) for _ in range(6)).encode()
                contents[p] = b"\n".join(lines)
            out.write(b"M 100644 inline " + p.encode() + b"\n")
            data(contents[p])
        out.write(b"\n")
    out.write(b"done\n")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "tree":
        cmd_tree(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 4 and sys.argv[1] == "fastimport":
        cmd_fastimport(int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
