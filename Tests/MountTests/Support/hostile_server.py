#!/usr/bin/env python3
"""A hostile sync server for HostileContainerMountTest: it speaks the container
protocol of doc/PROTOCOL.md (enough of it for a mount to follow a container) and serves a scripted
feed mixing every class of bad remote entry with good ones.

Safety: every hostile entry aims at the sentinel tree `SENTINEL` the test made beside the mount
point (`MOUNTPOINT/..` is its parent); nothing here names a path outside the test's temporary
directory, and symlink targets point at the sentinel only.

Loopback only (127.0.0.1). The server accepts any bearer token, stores nothing the client sends
(commits get 503), and exits by itself after --lifetime seconds.

Phase 1 (before the release file exists): a good directory `docs` with `docs/readme.txt`.
Phase 2 (once the test wrote the sentinel's absolute path into the release file): the hostile
entries, good ones between them, and good ones at the end. Then it writes --expect-file: what a
correct client must show (refusals by file ID, good files with their content, symlinks with their
targets, modes, files whose reads must fail).
"""

import argparse
import hashlib
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = "0" * 32
FILE, DIRECTORY, SYMLINK = 1, 2, 3


def name(text):
    return list(text.encode() if isinstance(text, str) else text)


class Script:
    """The feed: entries in version order, and the chunks they reference."""

    def __init__(self, sentinel):
        self.entries = []  # (phase, entry)
        self.chunks = {}  # hash hex -> (payload bytes, plain length header)
        self.next_id = 0x5EC0000000000000_0000000000000000
        self.expect = {"refused": {}, "cycle": [], "good": {}, "symlinks": {}, "modes": {}, "lying": [],
                       "absentNames": []}
        self.sentinel = sentinel
        self.phase = 1

    def new_id(self):
        self.next_id += 1
        return "%032x" % self.next_id

    def chunk(self, content, answer=None):
        """Stores `content` as a raw chunk (or `answer` bytes under its hash); returns its hash."""
        digest = hashlib.sha256(content).hexdigest()
        served = content if answer is None else answer
        self.chunks[digest] = (served, len(served))
        return digest

    def put(self, state, entry_id=None, deleted=False):
        entry_id = entry_id or self.new_id()
        full = {"parent": ROOT, "name": [], "kind": FILE, "mode": 0o644, "mtime": 1732250000000000000, "size": 0,
                "xattrs": {}, "manifest": []}
        full.update(state)
        if full["parent"] is None:
            del full["parent"]
        entry = {"id": entry_id, "version": len(self.entries) + 1, "isDeleted": deleted, "device": "hostile",
                 "state": full}
        self.entries.append((self.phase, entry))
        return entry_id

    def file(self, file_name, content, parent=ROOT, mode=0o644, **extra):
        manifest = [{"hash": self.chunk(content), "length": len(content)}] if content else []
        state = {"parent": parent, "name": name(file_name), "kind": FILE, "mode": mode, "size": len(content),
                 "manifest": manifest}
        state.update(extra)
        return self.put(state)

    def directory(self, dir_name, parent=ROOT, mode=0o755, entry_id=None, **extra):
        state = {"parent": parent, "name": name(dir_name), "kind": DIRECTORY, "mode": mode}
        state.update(extra)
        return self.put(state, entry_id)

    def symlink(self, link_name, target, parent=ROOT, **extra):
        state = {"parent": parent, "name": name(link_name), "kind": SYMLINK, "mode": 0o777,
                 "symlinkTarget": list(target)}
        state.update(extra)
        return self.put(state)

    def refused(self, entry_id, what):
        self.expect["refused"][entry_id] = what
        return entry_id

    def good(self, path, content):
        self.expect["good"][path] = content.decode()


def build(sentinel):
    s = Script(sentinel)
    pwned = b"pwned by a hostile server\n"

    # Phase 1: a good directory the test opens a handle in.
    docs = s.directory("docs")
    readme = b"hello from the hostile server\n"
    s.file("readme.txt", readme, parent=docs)
    s.good("docs/readme.txt", readme)

    s.phase = 2
    # Names that are not one path component, each aiming at the sentinel (MOUNT/.. is its parent).
    up = s.refused(s.directory(".."), "a directory named ..")
    into = s.directory("sentinel", parent=up)
    s.file("victim.txt", pwned, parent=into, mode=0o6777)
    s.file("planted.txt", pwned, parent=into, mode=0o6777)
    s.symlink("planted-link", b"victim.txt", parent=into)
    doomed = s.file("doomed.txt", b"", parent=into)
    s.put({"parent": into, "name": name("doomed.txt")}, entry_id=doomed, deleted=True)
    dot = s.refused(s.directory("."), "a directory named .")
    dot_up = s.refused(s.directory("..", parent=dot), "a directory named .. inside .")
    s.directory("sentinel", parent=dot_up)
    s.refused(s.file("../sentinel/victim.txt", pwned, mode=0o6777), "a name with /")
    s.refused(s.file("../sentinel/planted-slash.txt", pwned), "a name with / creating outside")
    nul = s.refused(s.directory(b"..\0x"), "a name with NUL (.. as a C string)")
    s.file("victim.txt", pwned, parent=s.directory("sentinel", parent=nul), mode=0o6777)
    s.refused(s.file("", pwned, mode=0o6777), "an empty name")
    s.refused(s.file("a" * 256, pwned), "a name of 256 bytes")
    good_one = b"good entries keep syncing between hostile ones\n"
    s.file("good-1.txt", good_one)
    s.good("good-1.txt", good_one)

    # Sizes and manifests.
    ten = b"0123456789"
    ten_hash = s.chunk(ten)
    s.refused(s.put({"name": name("size-lies.bin"), "size": 1000, "manifest": [{"hash": ten_hash, "length": 10}]}),
              "a size larger than the manifest")
    s.refused(s.put({"name": name("zero-chunk.bin"), "size": 10,
                     "manifest": [{"hash": ten_hash, "length": 10}, {"hash": ten_hash, "length": 0}]}),
              "a zero chunk length")
    s.refused(s.put({"name": name("negative-chunk.bin"), "size": 0,
                     "manifest": [{"hash": ten_hash, "length": 10}, {"hash": ten_hash, "length": -10}]}),
              "a negative chunk length")
    # Symlink targets, and content a kind cannot have.
    s.refused(s.symlink("empty-target", b""), "an empty symlink target")
    s.refused(s.symlink("nul-target", b"../sentinel\0x"), "a symlink target with NUL")
    s.refused(s.symlink("long-target", b"a" * 4096), "a symlink target of 4096 bytes")
    s.refused(s.symlink("link-with-manifest", b"t", manifest=[{"hash": ten_hash, "length": 10}], size=10),
              "a symlink with a manifest")
    s.refused(s.directory("dir-with-manifest", manifest=[{"hash": ten_hash, "length": 10}], size=10),
              "a directory with a manifest")
    # Parents.
    itself = s.new_id()
    s.refused(s.directory("itself", parent=itself, entry_id=itself), "its own parent")
    a, b = s.new_id(), s.new_id()
    s.directory("cycle-a", parent=b, entry_id=a)
    s.directory("cycle-b", parent=a, entry_id=b)
    s.expect["cycle"] = [a, b]
    s.refused(s.put({"parent": None, "name": [], "kind": FILE, "mode": 0o6777}, entry_id=ROOT),
              "a root that is a file")
    s.refused(s.file("caps", b"#!/bin/sh\n", mode=0o755, xattrs={"security.capability": [1, 0, 0, 2]}),
              "an xattr outside user.")
    # An existing directory (holding an open file of the test) re-sent as a file.
    s.refused(s.put({"name": name("docs"), "kind": FILE, "mode": 0o6777}, entry_id=docs), "a directory re-sent as a file")
    s.file("victim.txt", pwned, parent=docs, mode=0o6777)

    # Modes: setuid/setgid from a remote are not applied.
    tool = b"#!/bin/sh\necho tool\n"
    s.file("tool", tool, mode=0o6755)
    s.good("tool", tool)
    s.expect["modes"]["tool"] = 0o755
    s.directory("shared", mode=0o2775)
    s.expect["modes"]["shared"] = 0o775
    # Symlinks are data, pointing out or not, and nothing sent through them lands outside.
    out = s.symlink("out", b"../sentinel")
    s.expect["symlinks"]["out"] = "../sentinel"
    absolute = (sentinel + "/victim.txt").encode()
    s.symlink("abs", absolute)
    s.expect["symlinks"]["abs"] = absolute.decode()
    s.file("victim.txt", pwned, parent=out, mode=0o6777)
    # Manifests whose chunks lie: reads fail, never wrong bytes.
    fifty = b"A" * 50
    s.put({"name": name("short.bin"), "size": 100, "manifest": [{"hash": s.chunk(fifty), "length": 100}]})
    other = b"B" * 50
    s.put({"name": name("other.bin"), "size": 50, "manifest": [{"hash": s.chunk(other, answer=fifty), "length": 50}]})
    s.expect["lying"] = ["short.bin", "other.bin"]

    # Good entries after everything: the feed goes on.
    later = s.directory("later")
    inside = b"the last good entry\n"
    s.file("inside.txt", inside, parent=later)
    s.good("later/inside.txt", inside)
    two = b"good entries after the hostile ones\n"
    s.file("good-2.txt", two)
    s.good("good-2.txt", two)
    s.expect["absentNames"] = ["..", ".", "size-lies.bin", "zero-chunk.bin", "negative-chunk.bin", "empty-target",
                               "nul-target", "long-target", "link-with-manifest", "dir-with-manifest", "itself",
                               "cycle-a", "cycle-b", "caps", "sentinel", "victim.txt", "planted.txt"]
    return s


class Feed:
    """Phase 1 until the release file names the sentinel; then the whole script (the same IDs
    and versions for phase 1: the script is deterministic), and the expectations are written."""

    def __init__(self, release_file, expect_file):
        self.release_file = release_file
        self.expect_file = expect_file
        self.lock = threading.Lock()
        self.script = build("/nonexistent-sentinel")
        self.released = False

    def visible(self):
        with self.lock:
            if not self.released and os.path.exists(self.release_file):
                with open(self.release_file) as release:
                    sentinel = release.read().strip()
                if sentinel.startswith("/"):
                    self.script = build(sentinel)
                    with open(self.expect_file + ".tmp", "w") as out:
                        json.dump(self.script.expect, out)
                    os.rename(self.expect_file + ".tmp", self.expect_file)
                    self.released = True
            return [entry for phase, entry in self.script.entries if phase == 1 or self.released]

    def chunks(self):
        with self.lock:
            return self.script.chunks


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    feed = None
    container_name = None

    def log_message(self, format, *args):
        sys.stderr.write("hostile-server: " + (format % args) + "\n")

    def visible(self):
        return self.feed.visible()

    def send_json(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers:
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def error(self, status, code, message):
        self.send_json(status, {"error": code, "message": message})

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > 0:
            self.rfile.read(min(length, 64 << 20))

    def route(self):
        path, _, query = self.path.partition("?")
        params = dict(part.split("=", 1) for part in query.split("&") if "=" in part)
        prefix = "/v1/containers/" + self.container_name
        if path == "/v1/health":
            return ("health", None, params)
        if not self.headers.get("Authorization", "").lower().startswith("bearer "):
            return ("unauthorized", None, params)
        if path == prefix:
            return ("info", None, params)
        match = re.fullmatch(re.escape(prefix) + r"/(chunks|entries)/([0-9a-f]+)", path)
        if match:
            return (match.group(1), match.group(2), params)
        rest = {prefix + "/changes": "changes", prefix + "/changes/wait": "wait", prefix + "/commits": "commits",
                prefix + "/chunks/missing": "missing"}
        return (rest.get(path, "notFound"), None, params)

    def do_GET(self):
        what, argument, params = self.route()
        if what == "health":
            return self.send_json(200, {"status": "ok"})
        if what == "unauthorized":
            return self.error(401, "unauthorized", "a bearer token is needed")
        if what == "info":
            return self.send_json(200, {"id": "hostile-" + self.container_name, "name": self.container_name})
        if what == "entries":
            found = [entry for entry in self.visible() if entry["id"] == argument]
            if found:
                return self.send_json(200, found[-1])
            if argument == ROOT:
                return self.send_json(200, {"id": ROOT, "version": 0, "isDeleted": False, "device": "", "state": {
                    "name": [], "kind": DIRECTORY, "mode": 0o755, "mtime": 0, "size": 0, "xattrs": {},
                    "manifest": []}})
            return self.error(404, "entryNotFound", "no entry " + argument)
        if what == "chunks":
            chunks = self.feed.chunks()
            if argument not in chunks:
                return self.error(404, "chunkNotFound", "no chunk " + argument)
            payload, plain_length = chunks[argument]
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("SyncFS-Chunk-Encoding", "raw")
            self.send_header("SyncFS-Plain-Length", str(plain_length))
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            return self.wfile.write(payload)
        if what == "changes":
            after = int(params.get("after") or 0)
            limit = int(params.get("limit") or 1000)
            newer = [entry for entry in self.visible() if entry["version"] > after]
            page = newer[:limit]
            cursor = str(page[-1]["version"]) if page else (params.get("after") or "")
            return self.send_json(200, {"entries": page, "cursor": {"token": cursor},
                                        "moreComing": len(newer) > len(page)})
        if what == "wait":
            after = int(params.get("after") or 0)
            deadline = time.monotonic() + min(int(params.get("timeout") or 25000), 30000) / 1000
            while True:
                if any(entry["version"] > after for entry in self.visible()):
                    return self.send_json(200, {"changed": True})
                if time.monotonic() >= deadline:
                    return self.send_json(200, {"changed": False})
                time.sleep(0.05)
        return self.error(404, "notFound", "no such endpoint")

    def do_POST(self):
        self.read_body()
        what, _, _ = self.route()
        if what == "unauthorized":
            return self.error(401, "unauthorized", "a bearer token is needed")
        if what == "missing":
            return self.send_json(200, {"missing": []})
        return self.error(503, "unavailable", "this hostile server stores nothing")

    def do_PUT(self):
        self.read_body()
        return self.error(503, "unavailable", "this hostile server stores nothing")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--release-file", required=True,
                        help="phase 2 is served once this file holds the sentinel tree's absolute path")
    parser.add_argument("--port-file", required=True, help="written with the bound port")
    parser.add_argument("--expect-file", required=True, help="written with what a correct client shows")
    parser.add_argument("--name", default="box")
    parser.add_argument("--lifetime", type=float, default=180, help="seconds until the server exits by itself")
    options = parser.parse_args()

    Handler.feed = Feed(options.release_file, options.expect_file)
    Handler.container_name = options.name
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(options.port_file + ".tmp", "w") as out:
        out.write(str(server.server_address[1]))
    os.rename(options.port_file + ".tmp", options.port_file)
    stopper = threading.Timer(options.lifetime, server.shutdown)
    stopper.daemon = True
    stopper.start()
    server.serve_forever(poll_interval=0.2)


if __name__ == "__main__":
    main()
