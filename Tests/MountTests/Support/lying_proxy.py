#!/usr/bin/env python3
"""A lying sync server for FailoverLiarMountTest: an HTTP proxy on 127.0.0.1 in front of a real
`syncfs-mount serve` (--upstream http://127.0.0.1:PORT) that forwards every request unchanged
(token included; but a feed request it will alter without its `Accept`, so the page comes in
JSON) and alters only the answers of the change feed (`GET .../changes`):

- every page with entries gets one more entry: a file named --inject-name (an empty file, so no
  chunk is needed) with the ID --inject-id, in the root, at the version of the page's last entry;
- every entry named --hide-name comes as deleted (a tombstone at its own version);
- with --lie-after FILE, answers are honest until FILE exists.

Everything else (the tree digest included) is the honest server's answer: a liar that also
forges the digest is caught by a server switch all the same, since the check compares with the
server switched to. Loopback only; exits by itself after --lifetime seconds.
"""

import argparse
import http.client
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def altered_page(body, inject_id, inject_name, hide_name):
    page = json.loads(body)
    entries = page.get("entries", [])
    for entry in entries:
        if bytes(entry["state"]["name"]) == hide_name:
            entry["isDeleted"] = True
    if entries:
        last = entries[-1]
        entries.append({
            "id": inject_id,
            "version": last["version"],
            "isDeleted": False,
            "device": "liar",
            "state": {
                "parent": "0" * 32, "name": list(inject_name), "kind": 1, "mode": 0o644,
                "mtime": 1732250000000000000, "size": 0, "xattrs": {}, "manifest": [],
            },
        })
    return json.dumps(page).encode()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream-port", type=int, required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--inject-id", required=True)
    parser.add_argument("--inject-name", required=True)
    parser.add_argument("--hide-name", required=True)
    parser.add_argument("--lifetime", type=int, default=300)
    parser.add_argument("--lie-after")
    options = parser.parse_args()
    inject_name = options.inject_name.encode()
    hide_name = options.hide_name.encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def forward(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            path = self.path.split("?")[0]
            lying = options.lie_after is None or os.path.exists(options.lie_after)
            alters = lying and self.command == "GET" and path.endswith("/changes")
            # A page it alters is asked for in JSON (no `Accept`), as a server older than the
            # binary form answers: the client reads either form, then checks what it says.
            dropped = ("host", "connection", "accept") if alters else ("host", "connection")
            headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped}
            upstream = http.client.HTTPConnection("127.0.0.1", options.upstream_port, timeout=60)
            try:
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
                status, answer_headers = answer.status, answer.getheaders()
            finally:
                upstream.close()
            if alters and status == 200:
                data = altered_page(data, options.inject_id, inject_name, hide_name)
            self.send_response(status)
            for key, value in answer_headers:
                if key.lower() not in ("content-length", "connection", "transfer-encoding", "date", "server"):
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = forward

        def log_message(self, format, *args):
            sys.stderr.write("lying proxy: " + (format % args) + "\n")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(options.port_file + ".tmp", "w") as file:
        file.write(str(server.server_address[1]))
    os.rename(options.port_file + ".tmp", options.port_file)
    threading.Timer(options.lifetime, lambda: os._exit(0)).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
