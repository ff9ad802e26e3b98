#!/usr/bin/env python3
"""Figures of the code's shape: the largest types, the longest functions, `try?` and sleeps.

Counts lines of Swift source (standard library only, no Swift parser): a type's lines are
those of its declaration and of every extension of it, wherever they are; a function's lines
run from its `func`/`init` line to its closing brace (braces in strings and comments are
skipped). Used to record before/after figures of refactorings (doc/DEVELOPMENT.md).

Usage: scripts/code-figures.py [--top N] [ROOT...]   (default ROOT: Sources)
"""

import argparse
import os
import re
import sys

TYPE = re.compile(
    r"^\s*(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private|final|indirect)\s+)*"
    r"(?:struct|class|enum|actor|extension)\s+([A-Za-z_][A-Za-z0-9_.]*)"
)
FUNC = re.compile(
    r"^\s*(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private|final|static|class|"
    r"override|mutating|nonisolated|convenience|required)\s+)*(?:func\s+([A-Za-z_][A-Za-z0-9_]*)|(init)[?!]?\s*[(<])"
)


def code_only(line, in_block):
    """The line without comments and string literals; whether a block comment is still open."""
    out = []
    i = 0
    in_string = False
    while i < len(line):
        if in_block:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), True
            i = end + 2
            in_block = False
            continue
        c = line[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
            continue
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            in_block = True
            i += 2
            continue
        if c == '"':
            in_string = True
        else:
            out.append(c)
        i += 1
    return "".join(out), in_block


def blocks(path):
    """(kind, name, first line, length) of every type body and function in the file."""
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    found = []
    open_blocks = []  # (kind, name, start line, depth at which it opened)
    depth = 0
    in_block = False
    pending = None
    for number, raw in enumerate(lines, 1):
        code, in_block = code_only(raw, in_block)
        if pending is None:
            match = TYPE.match(code)
            if match:
                pending = ("type", match.group(1).split(".")[0], number)
            else:
                match = FUNC.match(code)
                if match:
                    pending = ("func", match.group(1) or match.group(2), number)
        for c in code:
            if c == "{":
                if pending is not None:
                    open_blocks.append((pending[0], pending[1], pending[2], depth))
                    pending = None
                depth += 1
            elif c == "}":
                depth -= 1
                if open_blocks and open_blocks[-1][3] == depth:
                    kind, name, start, _ = open_blocks.pop()
                    found.append((kind, name, start, number - start + 1))
        if pending is not None and pending[0] == "func" and "{" not in code and FUNC.match(code) is None:
            # A protocol requirement has no body: the next declaration starts anew.
            stripped = code.strip()
            if stripped.startswith(("var ", "let ", "case ", "}")):
                pending = None
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*", default=["Sources"])
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    types = {}
    functions = []
    try_optional = 0
    for root in args.roots:
        for directory, _, names in os.walk(root):
            for name in sorted(names):
                if not name.endswith(".swift"):
                    continue
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as handle:
                    try_optional += handle.read().count("try?")
                for kind, symbol, start, length in blocks(path):
                    if kind == "type":
                        types[symbol] = types.get(symbol, 0) + length
                    else:
                        functions.append((length, f"{path}:{start} {symbol}"))
    print(f"largest types (lines, with their extensions), top {args.top}:")
    for symbol, length in sorted(types.items(), key=lambda item: -item[1])[: args.top]:
        print(f"  {length:5d}  {symbol}")
    functions.sort(reverse=True)
    print(f"longest functions, top {args.top}:")
    for length, where in functions[: args.top]:
        print(f"  {length:5d}  {where}")
    print(f"functions over 60 lines: {sum(1 for length, _ in functions if length > 60)} of {len(functions)}")
    print(f"try? in {', '.join(args.roots)}: {try_optional}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
