#!/usr/bin/env python3
"""No silent `try?` in Sources: every one is named, with its reason, in an allow-list.

A `try?` turns a failure into nil without a word. That is right for a probe (does the file
exist, does the text decode) or a best-effort cleanup on a path that already reports an error;
it is wrong inside a change of state, where memory and the database can part ways and nothing is
logged. There the fallible I/O goes first, before the tree changes, or the failure becomes a
logged, typed refusal.

The allow-list (`scripts/try-allowlist.txt`) has one line per file: `PATH: COUNT: REASON`, `#`
comments and blank lines ignored. COUNT is the number of `try?` the file may hold. The check
fails when a file holds a `try?` it does not list, holds more than listed, or fewer (lower the
count: the list only shrinks), and when a line names a file without any.

Usage: scripts/try-allowlist.py [--allowlist FILE] [--root Sources]
       scripts/try-allowlist.py --self-test
Exit status: 0 when the sources and the list agree, 1 if not. Prints the totals.
"""

import argparse
import os
import re
import sys
import tempfile

TRY_OPTIONAL = re.compile(r"\btry\?")
LINE = re.compile(r"^(?P<path>[^:]+):\s*(?P<count>\d+)\s*:\s*(?P<reason>\S.*)$")


def count_in(text):
    """`try?` in code: line comments are left out (a doc comment may mention one)."""
    total = 0
    for line in text.splitlines():
        code = line.split("//", 1)[0]
        total += len(TRY_OPTIONAL.findall(code))
    return total


def scan(root, base):
    counts = {}
    for directory, _, files in os.walk(root):
        for name in files:
            if not name.endswith(".swift"):
                continue
            path = os.path.join(directory, name)
            with open(path, encoding="utf-8") as handle:
                found = count_in(handle.read())
            if found:
                counts[os.path.relpath(path, base)] = found
    return counts


def read_allowlist(path):
    allowed, problems = {}, []
    with open(path, encoding="utf-8") as handle:
        for number, raw in enumerate(handle, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            match = LINE.match(line)
            if not match:
                problems.append(f"{path}:{number}: not `PATH: COUNT: REASON`: {line}")
                continue
            if match["path"] in allowed:
                problems.append(f"{path}:{number}: {match['path']} is listed twice")
            allowed[match["path"]] = int(match["count"])
    return allowed, problems


def check(counts, allowed):
    problems = []
    for path, found in sorted(counts.items()):
        listed = allowed.get(path)
        if listed is None:
            problems.append(f"{path}: {found} try? not in the allow-list (handle the error, or list it with a reason)")
        elif found > listed:
            problems.append(f"{path}: {found} try?, the allow-list allows {listed}")
        elif found < listed:
            problems.append(f"{path}: {found} try?, the allow-list says {listed}: lower it (the list only shrinks)")
    for path in sorted(set(allowed) - set(counts)):
        problems.append(f"{path}: listed in the allow-list but has no try?: remove the line")
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as base:
        root = os.path.join(base, "Sources")
        os.makedirs(os.path.join(root, "A"))
        with open(os.path.join(root, "A", "One.swift"), "w") as handle:
            handle.write("let x = try? f()\n/// try? in a comment\nlet y = retry?.z // try?\n")
        with open(os.path.join(root, "A", "Two.swift"), "w") as handle:
            handle.write("let entry: RemoteEntry? = nil\n")
        counts = scan(root, base)
        assert counts == {"Sources/A/One.swift": 1}, counts
        assert check(counts, {"Sources/A/One.swift": 1}) == []
        assert len(check(counts, {})) == 1
        assert "lower it" in check(counts, {"Sources/A/One.swift": 2})[0]
        assert "allows 0" in check(counts, {"Sources/A/One.swift": 0})[0]
        assert "remove the line" in check(counts, {"Sources/A/One.swift": 1, "Sources/B.swift": 1})[0]
        listing = os.path.join(base, "list.txt")
        with open(listing, "w") as handle:
            handle.write("# comment\n\nSources/A/One.swift: 1: a probe\nbroken line\n")
        allowed, problems = read_allowlist(listing)
        assert allowed == {"Sources/A/One.swift": 1} and len(problems) == 1, (allowed, problems)
    print("try-allowlist self-test: ok")
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--allowlist", default="scripts/try-allowlist.txt")
    parser.add_argument("--root", default="Sources")
    parser.add_argument("--self-test", action="store_true")
    arguments = parser.parse_args()
    if arguments.self_test:
        return self_test()
    counts = scan(arguments.root, os.path.dirname(os.path.abspath(arguments.root)))
    allowed, problems = read_allowlist(arguments.allowlist)
    problems += check(counts, allowed)
    for problem in problems:
        print(f"try-allowlist: {problem}", file=sys.stderr)
    total = sum(counts.values())
    print(f"try-allowlist: {total} try? in {len(counts)} files, all allow-listed" if not problems else
          f"try-allowlist: {total} try? in {len(counts)} files; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
