#!/usr/bin/env python3
"""Web page benchmarks of SyncFS, run by scripts/bench.sh with the server benchmarks (or alone).

With the release binary, on loopback: a container of one folder with N files
(`syncfs-bench seed-synthetic`), served by `syncfs-mount serve`, a user signed in; then the time
from request to the whole page for the folder's first page by name, sorted by size, filtered,
its last page, a file's page and the containers list: p50 and p95 over R requests each (ms),
against the goal of the folder page under 50 ms p95 at 10,000 entries. Prints a Markdown table
(and JSON on stderr). Always stops what it started.

Usage: web.py BINARY WORKDIR [--entries N] [--requests R] [--out FILE]
"""
import argparse, http.cookiejar, json, os, shutil, signal, statistics, subprocess, sys, time
import urllib.parse, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from binaries import bench_binary  # noqa: E402

PASSWORD = "correct horse battery staple"


def log(msg):
    print(time.strftime("%H:%M:%S") + " [bench-web] " + msg, file=sys.stderr, flush=True)


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *arguments):
        return None


def run(binary, *arguments):
    return subprocess.run([binary, *arguments], capture_output=True, check=True).stdout.decode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("workdir")
    ap.add_argument("--entries", type=int, default=10000)
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--runs", type=int, default=1, help="accepted for bench.sh; the requests are the samples")
    ap.add_argument("--out")
    args = ap.parse_args()
    work = os.path.join(args.workdir, "bench-web")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work, mode=0o700)
    root = os.path.join(work, "root")
    os.makedirs(root, mode=0o700)
    server = None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        log(f"seed-synthetic: one folder of {args.entries} files")
        run(bench_binary(args.binary), "seed-synthetic", os.path.join(root, "box"), "--dirs", "1",
            "--files-per-dir", str(args.entries))
        run(args.binary, "user", "add", "--root", root, "bench")
        password = os.path.join(work, "password")
        with open(password, "w") as file:
            file.write(PASSWORD + "\n")
        os.chmod(password, 0o600)
        run(args.binary, "user", "passwd", "--root", root, "bench", "--password-file", password)
        run(args.binary, "member", "add", "--root", root, "--user", "bench", "--container", "box", "--role", "editor")
        with open(os.path.join(work, "serve.log"), "w") as serve_log:
            server = subprocess.Popen([args.binary, "serve", "--root", root, "--listen", "127.0.0.1:0",
                                       "--log-level", "warning"], stdout=subprocess.PIPE, stderr=serve_log)
        url = server.stdout.readline().decode().split()[-1]
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect())

        def fetch(path, data=None):
            try:
                with opener.open(url + path, data=data, timeout=60) as response:
                    return response.status, response.read()
            except urllib.error.HTTPError as error:
                return error.code, error.read()

        _, page = fetch("/login")
        token = page.decode().split('name="csrf" value="')[1].split('"')[0]
        status, _ = fetch("/login", urllib.parse.urlencode(
            {"csrf": token, "user": "bench", "password": PASSWORD}).encode())
        assert status == 303, f"sign-in answered {status}"
        _, listing = fetch("/c/box/")
        folder = listing.decode().split('href="/c/box/?path=')[1].split('"')[0]
        last_page = (args.entries + 199) // 200
        _, first = fetch(f"/c/box/?path={folder}")
        some_file = first.decode().split(f'href="/c/box/file?path=')[1].split('"')[0].replace("&amp;", "&")
        pages = [
            ("folder of %d, first page by name" % args.entries, f"/c/box/?path={folder}"),
            ("the same, sorted by size", f"/c/box/?path={folder}&sort=size&order=desc"),
            ("the same, filtered", f"/c/box/?path={folder}&filter=7"),
            ("the same, last page", f"/c/box/?path={folder}&page={last_page}"),
            ("the same, a filter matching nothing (reading the folder only)", f"/c/box/?path={folder}&filter=zzzz"),
            ("a file's page (text preview, versions)", f"/c/box/file?path={some_file}"),
            ("the containers", "/"),
        ]
        rows, results = [], {"entries": args.entries, "requests": args.requests, "pages": {}}
        for label, path in pages:
            times = []
            for _ in range(args.requests):
                started = time.perf_counter()
                status, body = fetch(path)
                times.append((time.perf_counter() - started) * 1000)
                assert status == 200, f"{path} answered {status}"
            p50, p95 = statistics.median(times), percentile(times, 0.95)
            results["pages"][label] = {"p50_ms": round(p50, 2), "p95_ms": round(p95, 2), "bytes": len(body)}
            rows.append(f"| {label} | {p50:.1f} | {p95:.1f} | {len(body) // 1024} |")
            log(f"{label}: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
        folder_p95 = results["pages"][pages[0][0]]["p95_ms"]
        table = ["", f"### Web page render times ({args.entries:,}-entry folder, {args.requests} requests each, loopback)",
                 "", "| Page | p50 ms | p95 ms | KiB |", "| --- | --- | --- | --- |", *rows, "",
                 f"Goal: the folder page under 50 ms p95: {'met' if folder_p95 < 50 else 'NOT met'} ({folder_p95:.1f} ms).",
                 f"Server RSS after the requests: {rss_kib(server.pid) // 1024} MiB.", ""]
        print("\n".join(table))
        print(json.dumps(results), file=sys.stderr)
        if args.out:
            with open(args.out, "a") as file:
                file.write("\n".join(table) + "\n")
    finally:
        if server and server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(work, ignore_errors=True)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


if __name__ == "__main__":
    main()
