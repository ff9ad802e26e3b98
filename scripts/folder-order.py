#!/usr/bin/env python3
"""The folder graph inside Sources/SyncFS, checked by type references (doc/ARCHITECTURE.md).

The folders of the SyncFS target form a graph without cycles (USES below: which folders each may
use). A file may name the types declared in its own folder and in the folders its folder may use,
never another: arrows point one way, as `scripts/lint.sh` already checks for imports between
modules.

How it works (standard library only, no Swift parser):
- every top-level `struct`, `class`, `enum`, `protocol`, `actor` and `typealias` declared in a
  folder's files belongs to that folder (nested types are reached through their outer type);
- every capitalised identifier in a file, comments and string literals left out, that is such a
  type is a reference (an `extension T` counts: it adds to T from where it is written);
- a member that an extension in a folder adds to a type of a lower folder (`extension
  SyncFileSystem { func f … }` in Sync) belongs to the extension's folder: `.f` or `f(` in a
  lower folder is a reference to `SyncFileSystem.f` (names also declared, or used as labels,
  outside that folder are left out: they cannot be told apart);
- a reference from a folder to a type of a folder it may not use is a *back-reference*. It fails the
  check unless the allowlist (`scripts/folder-order-allowlist.txt`; one line per file and type:
  `FILE TYPE WHY…`, `#` comments) names it; an allowlist line that matches nothing also fails,
  so the list only shrinks as the back-references are removed.
- It prints the counts: back-references, allowlisted ones, and cross-folder cycles (pairs of
  folders that name each other's types, and the groups of folders that reach each other).

Limits: no type inference (a member whose name is also declared elsewhere is not followed); a
nested type that shadows a top-level type of another folder shows up as a reference (rename it).

Usage: scripts/folder-order.py [--allowlist FILE] [--root Sources/SyncFS] [--verbose]
       scripts/folder-order.py --self-test   (the check on made-up trees)
Exit status: 0 when every back-reference is allowlisted and every allowlist line is used, 1 if not.
"""

import argparse
import os
import re
import sys

# Which folders each folder of Sources/SyncFS may use (name the types of). Every folder must be
# listed; the arrows must form no cycle (checked). FUSE and Sync never use each other; Report
# (terminal output for the command line) uses nothing. Keep it the graph the code has: an arrow
# no file uses any more is printed, to be removed.
USES = {
    "Model": set(),
    "Support": set(),
    "Report": set(),
    "Metadata": {"Model", "Support"},
    "Outbox": {"Metadata", "Model"},
    "Cache": {"Model"},
    "Tree": {"Cache", "Metadata", "Model", "Outbox", "Support"},
    "Residency": {"Cache", "Model", "Support", "Tree"},
    "Echo": {"Cache", "Model", "Tree"},
    "Core": {"Cache", "Echo", "Metadata", "Model", "Outbox", "Residency", "Support", "Tree"},
    "Locks": {"Support"},
    "Sync": {"Cache", "Core", "Echo", "Metadata", "Model", "Outbox", "Residency", "Support", "Tree"},
    "FUSE": {"Cache", "Core", "Locks", "Model", "Support", "Tree"},
    "Daemon": {"Cache", "Core", "FUSE", "Locks", "Metadata", "Model", "Outbox", "Support", "Sync", "Tree"},
}


def reachable(uses):
    """For each folder, every folder it reaches through the arrows (itself excluded)."""
    found = {}
    for start in uses:
        seen, todo = set(), list(uses[start])
        while todo:
            folder = todo.pop()
            if folder not in seen:
                seen.add(folder)
                todo.extend(uses.get(folder, ()))
        found[start] = seen
    return found


DECLARATION = re.compile(
    r"^(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*"
    r"(?:(?:public|package|internal|fileprivate|private|final|indirect|nonisolated)\s+)*"
    r"(?:struct|class|enum|protocol|actor|typealias)\s+([A-Za-z_][A-Za-z0-9_]*)"
)
IDENTIFIER = re.compile(r"\b[A-Z][A-Za-z0-9_]*\b")


def strip_comments_and_strings(text):
    """The code of a Swift file with comments and string literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    depth = 0  # nested /* */ comments
    while i < n:
        c = text[i]
        if depth > 0:
            if text.startswith("/*", i):
                depth += 1
                i += 2
            elif text.startswith("*/", i):
                depth -= 1
                i += 2
            else:
                out.append("\n" if c == "\n" else " ")
                i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            depth = 1
            i += 2
        elif text.startswith('"""', i):
            end = text.find('"""', i + 3)
            end = n if end < 0 else end + 3
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            i += 1
            while i < n and text[i] != '"' and text[i] != "\n":
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        else:
            out.append(c)
            i += 1
    return "".join(out)


EXTENSION = re.compile(r"^(?:(?:public|package|internal|fileprivate|private)\s+)?extension\s+([A-Za-z_][A-Za-z0-9_]*)")
MEMBER = re.compile(r"\b(?:func|var|let|case)\s+([A-Za-z_][A-Za-z0-9_]*)")
LABEL = re.compile(r"\b([a-z_][A-Za-z0-9_]*)\s*:")


def extension_members(code):
    """(type, member) for the members declared directly in the file's top-level extensions."""
    found, current, depth = [], None, 0
    for line in code.splitlines():
        if depth == 0:
            match = EXTENSION.match(line)
            current = match.group(1) if match else None
        elif depth == 1 and current:
            found += [(current, name) for name in MEMBER.findall(line)]
        depth += line.count("{") - line.count("}")
        if depth == 0 and "}" in line:
            current = None
    return found


def swift_files(root):
    for folder in sorted(os.listdir(root)):
        path = os.path.join(root, folder)
        if not os.path.isdir(path):
            continue
        for directory, _, names in os.walk(path):
            for name in sorted(names):
                if name.endswith(".swift"):
                    yield folder, os.path.join(directory, name)


def read_allowlist(path):
    allowed = {}
    if not os.path.exists(path):
        return allowed
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.split(None, 2)
            if len(fields) < 3:
                print(f"{path}:{number}: expected FILE TYPE WHY, got: {line}", file=sys.stderr)
                sys.exit(1)
            allowed[(fields[0], fields[1])] = number
    return allowed


def cycles(edges, folders):
    """Strongly connected components of more than one folder (Tarjan)."""
    index, low, stack, on_stack, result = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                result.append(sorted(component, key=folders.index))

    for v in folders:
        if v not in index:
            visit(v)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="Sources/SyncFS")
    parser.add_argument("--allowlist", default="scripts/folder-order-allowlist.txt")
    parser.add_argument("--verbose", action="store_true", help="list the allowlisted back-references too")
    args = parser.parse_args()

    fail = False
    files = list(swift_files(args.root))
    for folder in sorted({folder for folder, _ in files}):
        if folder not in USES:
            print(f"folder-order: {args.root}/{folder} is not in USES of scripts/folder-order.py; "
                  "name the folders it may use", file=sys.stderr)
            fail = True
    for group in cycles({a: set(b) for a, b in USES.items()}, sorted(USES)):
        print(f"folder-order: the arrows of USES form a cycle: {' '.join(group)}", file=sys.stderr)
        fail = True
    reach = reachable(USES)

    codes, declared_in = {}, {}
    for folder, path in files:
        with open(path, encoding="utf-8") as handle:
            code = strip_comments_and_strings(handle.read())
        codes[path] = (folder, code)
        for line in code.splitlines():
            match = DECLARATION.match(line)  # top level: no indentation
            if match:
                name = match.group(1)
                if name in declared_in and declared_in[name] != folder:
                    print(f"folder-order: {name} is declared in both {declared_in[name]} and {folder}",
                          file=sys.stderr)
                    fail = True
                declared_in[name] = folder

    # Members an extension in a folder adds to a type of a lower folder: a lower folder calling
    # them depends on the extension's folder. A name declared (or used as a label) anywhere
    # outside that folder is ambiguous and left out.
    declared_elsewhere = {}
    for path, (folder, code) in codes.items():
        for name in set(MEMBER.findall(code)) | set(LABEL.findall(code)):
            declared_elsewhere.setdefault(name, set()).add(folder)
    added_by = {}
    for path, (folder, code) in codes.items():
        for type_name, member in extension_members(code):
            home = declared_in.get(type_name)
            if home in USES and folder in USES and home != folder and home in reach[folder]:
                if declared_elsewhere.get(member, set()) <= {folder}:
                    added_by[member] = (type_name, folder)

    allowed = read_allowlist(args.allowlist)
    used = set()
    edges = {}
    back, unlisted = [], []
    for path, (folder, code) in sorted(codes.items()):
        references = [(name, declared_in.get(name)) for name in sorted(set(IDENTIFIER.findall(code)))]
        for member, (type_name, home) in sorted(added_by.items()):
            # `value.member` or a call `member(` (inside the type's own extensions).
            if re.search(r"\.\s*" + member + r"\b|\b" + member + r"\s*\(", code):
                references.append((f"{type_name}.{member}", home))
        for name, target in references:
            if target is None or target == folder or folder not in USES or target not in USES:
                continue
            edges.setdefault(folder, set()).add(target)
            if target not in USES[folder]:
                back.append((path, name, folder, target))
                if (path, name) in allowed:
                    used.add((path, name))
                else:
                    unlisted.append((path, name, folder, target))

    for path, name, folder, target in unlisted:
        print(f"folder-order: {path} ({folder}) uses {name}, declared in {target}, a folder it may not use; "
              f"move the type, or pass a value of a folder it may use (only an arrow being removed goes in "
              f"{args.allowlist}: '{path} {name} WHY')", file=sys.stderr)
        fail = True
    for (path, name), number in sorted(allowed.items(), key=lambda item: item[1]):
        if (path, name) not in used:
            print(f"folder-order: {args.allowlist}:{number}: {path} no longer uses {name} from a folder "
                  "it may not use; remove the line", file=sys.stderr)
            fail = True
    if args.verbose:
        for path, name, folder, target in back:
            print(f"  back-reference: {path} ({folder}) -> {name} ({target})")

    present = {folder for folder, _ in files}
    unused = sorted((a, b) for a in USES if a in present for b in USES[a] if b in present and b not in edges.get(a, ()))
    if unused:
        print("folder-order: arrows of USES no file follows (remove them): "
              + ", ".join(f"{a} -> {b}" for a, b in unused))
    pairs = sorted((a, b) for a in edges for b in edges[a] if a < b and a in edges.get(b, ()))
    groups = cycles(edges, sorted(f for f in USES if f in edges or any(f in t for t in edges.values())))
    print(f"folder order: {len(back)} back-references ({len(back) - len(unlisted)} allowlisted, "
          f"{len(unlisted)} not), {len(pairs)} cross-folder cycles between two folders"
          + "".join(f" [{a} <-> {b}]" for a, b in pairs)
          + f", {len(groups)} group{'' if len(groups) == 1 else 's'} of folders in a cycle"
          + "".join(" [" + " ".join(group) + "]" for group in groups))
    return 1 if fail else 0


def self_test():
    """Runs the check on small made-up trees (`--self-test`; scripts/lint.sh runs it first)."""
    import subprocess
    import tempfile

    def run(files, allowlist):
        """Exit status and output of the check on `files`; `{root}` in `allowlist` is the tree."""
        with tempfile.TemporaryDirectory() as root:
            for name, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
                with open(os.path.join(root, name), "w", encoding="utf-8") as handle:
                    handle.write(text)
            allow = os.path.join(root, "allow.txt")
            with open(allow, "w", encoding="utf-8") as handle:
                handle.write(allowlist.replace("{root}", root))
            done = subprocess.run(
                [sys.executable, __file__, "--root", root, "--allowlist", allow], capture_output=True, text=True)
            return done.returncode, (done.stdout + done.stderr).replace(root + "/", "")

    model = {"Model/Id.swift": "public struct Id {}\n", "Core/Tree.swift": "final class Tree { var id: Id? }\n"}
    sync = {"Sync/Engine.swift": "/// Uses Tree.\nstruct Engine { let tree: Tree }\n"}
    cases = [
        ("downward references pass", model | sync, "", 0, "0 back-references"),
        ("a type of a higher folder fails", model | sync | {"Core/Up.swift": "extension Tree { func f(_ e: Engine) {} }\n"},
         "", 1, "Core/Up.swift (Core) uses Engine, declared in Sync"),
        ("a comment or string naming it does not count",
         model | sync | {"Core/Up.swift": "// Engine\nlet text = \"Engine\"\n"}, "", 0, "0 back-references"),
        ("an allowlisted one passes and is counted", model | sync | {"Core/Up.swift": "let e: Engine? = nil\n"},
         "{root}/Core/Up.swift Engine being removed\n", 0,
         "1 back-references (1 allowlisted, 0 not), 1 cross-folder cycles between two folders [Core <-> Sync]"),
        ("a stale allowlist line fails", model | sync, "{root}/Core/Up.swift Engine gone\n", 1, "remove the line"),
        ("a member an extension in a higher folder adds fails",
         model | sync | {"Sync/More.swift": "extension Tree {\n    func upward() {}\n}\n",
                         "Core/Call.swift": "extension Tree {\n    func g() { upward() }\n}\n"},
         "", 1, "uses Tree.upward, declared in Sync"),
        ("a folder missing from USES fails", model | {"Extra/X.swift": "struct X {}\n"}, "", 1, "Extra is not in USES"),
        ("a folder using one it may not fails (no order between them)",
         model | sync | {"FUSE/Ops.swift": "struct Ops { let e: Engine }\n"}, "", 1,
         "FUSE/Ops.swift (FUSE) uses Engine, declared in Sync, a folder it may not use"),
    ]
    failed = 0
    for title, files, allowlist, status, expected in cases:
        code, output = run(files, allowlist)
        if code != status or expected not in output:
            print(f"folder-order self-test: {title}: exit {code}, output:\n{output}", file=sys.stderr)
            failed += 1
    print(f"folder-order self-test: {len(cases) - failed} of {len(cases)} cases pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(self_test() if sys.argv[1:] == ["--self-test"] else main())
