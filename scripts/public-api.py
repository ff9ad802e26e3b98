#!/usr/bin/env python3
"""SyncFS's public API is what the command lines use; everything else is internal.

The `SyncFS` library has two clients, the shipped `Sources/syncfs-mount` and the benchmarks'
`Sources/syncfs-bench` (the tests use `@testable import`). This check fails on a `public` (or
`package`, `open`) declaration in `Sources/SyncFS` that the command lines cannot need:
- its name appears nowhere in `Sources/syncfs-mount` or `Sources/syncfs-bench`, and
- no other public declaration the command line needs names it in its signature (a type used
  only as the type of a public property, parameter or result: `PathStatus.state: ContentState`).
Initialisers and the members protocols require (`description`, `rawValue`, `hash(into:)`, `==`,
`<`, `encode(to:)`, `id`) are left alone: their visibility follows their type.

Lenient by design (names, not symbols): a declaration whose name the command line uses for
something else passes. Standard library only.

Usage: scripts/public-api.py [--verbose]   (exit 1 when a declaration could be internal)
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
strip = __import__("folder-order").strip_comments_and_strings

PUBLIC = re.compile(r"^\s*(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*(?:public|package|open)\b(?!\s*\()")
TYPE = re.compile(r"\b(?:struct|class|enum|protocol|actor|typealias)\s+([A-Za-z_][A-Za-z0-9_]*)")
MEMBER = re.compile(r"\b(?:func|var|let|case|subscript)\s+([A-Za-z_][A-Za-z0-9_]*|==|<)")
WITNESSES = {"description", "rawValue", "hash", "==", "<", "encode", "id", "errorDescription"}
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
CLIENTS = ["Sources/syncfs-mount", "Sources/syncfs-bench"]


def swift_files(root):
    for directory, _, names in os.walk(root):
        for name in sorted(names):
            if name.endswith(".swift"):
                yield os.path.join(directory, name)


def declarations(root):
    """(path, line number, name, signature) of every public declaration below `root`."""
    found = []
    for path in swift_files(root):
        with open(path, encoding="utf-8") as handle:
            lines = strip(handle.read()).splitlines()
        for number, line in enumerate(lines):
            if not PUBLIC.match(line):
                continue
            rest = PUBLIC.sub("", line, count=1)
            if re.match(r"\s*(?:(?:static|final|override|mutating|nonisolated|private\(set\))\s+)*init\b", rest):
                continue
            match = TYPE.search(rest) or MEMBER.search(rest)
            if not match:
                continue
            # The signature: up to the body's brace or the end of the declaration (a few lines).
            signature, following = [], lines[number + 1:number + 8] + [""]
            for index, part in enumerate(lines[number:number + 8]):
                signature.append(part.split("{")[0])
                text = "".join(signature)
                continues = re.match(r"\s*(?:\)|->|throws|where|async)", following[index])
                if "{" in part or (text.count("(") == text.count(")") and not continues):
                    break
            found.append((path, number + 1, match.group(1), " ".join(signature)))
    return found


def main():
    verbose = "--verbose" in sys.argv[1:]
    used = set()
    for client in CLIENTS:
        for path in swift_files(client):
            with open(path, encoding="utf-8") as handle:
                used |= set(IDENTIFIER.findall(handle.read()))
    found = declarations("Sources/SyncFS")
    needed = set(used) | WITNESSES
    while True:  # what the needed declarations name in their signatures is needed too
        more = {word for _, _, name, signature in found if name in needed for word in IDENTIFIER.findall(signature)}
        if more <= needed:
            break
        needed |= more
    extra = [(path, number, name) for path, number, name, _ in found if name not in needed]
    for path, number, name in extra:
        print(f"public-api: {path}:{number}: {name} is public but no command line uses it; make it internal",
              file=sys.stderr)
    public_types = sum(1 for _, _, _, signature in found if TYPE.search(PUBLIC.sub("", signature, count=1)))
    print(f"public API of SyncFS: {len(found)} public declarations ({public_types} types), "
          f"{len(extra)} not used by syncfs-mount or syncfs-bench")
    if verbose:
        for path, number, name, _ in found:
            print(f"  {path}:{number}: {name}")
    return 1 if extra else 0


if __name__ == "__main__":
    sys.exit(main())
