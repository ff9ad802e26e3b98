"""An encrypted container on the web page: browsed and downloaded in the browser with the
recovery key typed into the page; the key never reaches the server (every request the browser
made and the server's log are searched for it); a server that changes what it hands over is
caught; and no other page of the container is served."""
import base64
import hashlib
import http.server
import json
import os
import re
import struct
import threading
import unittest
import urllib.request

from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By

import support
from support import run, screenshot, wait_until

HOSTILE = '<img src=x onerror="window.pwned=1">'


def digest(path):
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


def reserved_id(purpose, sequence):
    label = f"syncfs-sealed-v1 {purpose}".encode()
    return hashlib.sha256(struct.pack(">I", len(label)) + label + struct.pack(">Q", sequence)).digest()[:16].hex()


def recovery_key_text(secret):
    """A well-formed recovery key (`SFR1-`, base32 of the secret and its checksum) for `secret`."""
    body = base64.b32encode(secret + hashlib.sha256(secret).digest()[:2]).decode().rstrip("=")
    return "SFR1-" + "-".join(body[i:i + 4] for i in range(0, len(body), 4))


class LyingProxy:
    """An HTTP proxy in front of the server that hands the browser a changed container (a hostile
    server): with `swap`, two records' sealed bytes change places in each list of sealed entries;
    with `flip`, one bit of every chunk it hands over changes; with `drop`, the ledger entries
    whose sequences it names are left out of the list (`"newest"`: the newest one)."""

    def __init__(self, target, swap=False, flip=False, drop=()):
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                request = urllib.request.Request(target + self.path, headers={
                    key: value for key, value in self.headers.items() if key.lower() in ("cookie", "user-agent")})
                try:
                    with urllib.request.urlopen(request, timeout=60) as response:
                        status, headers, body = response.status, response.headers, response.read()
                except urllib.error.HTTPError as error:
                    status, headers, body = error.code, error.headers, error.read()
                if swap and self.path.split("?")[0].endswith("/sealed-entries") and status == 200:
                    body = proxy.swap(body)
                if drop and self.path.split("?")[0].endswith("/sealed-entries") and status == 200:
                    body = proxy.drop(body, drop)
                if flip and "/sealed-chunk?" in self.path and status == 200:
                    body = body[:-1] + bytes([body[-1] ^ 1])
                    proxy.flipped += 1
                self.send_response(status)
                for key in ("Content-Type", "Content-Security-Policy", "Location"):
                    if headers.get(key):
                        self.send_header(key, headers[key])
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *arguments):
                pass

        self.swapped = 0
        self.flipped = 0
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def swap(self, body):
        listing = json.loads(body)
        format_ids = {reserved_id(purpose, n) for purpose in ("ledger-id", "keyring-id") for n in range(1, 500)}
        records = [entry for entry in listing["entries"] if entry["id"] not in format_ids and entry["chunks"]]
        first, second = records[0], records[1]
        first["sealed"], second["sealed"] = second["sealed"], first["sealed"]
        self.swapped += 1
        return json.dumps(listing).encode()

    def drop(self, body, sequences):
        listing = json.loads(body)
        ledger = {reserved_id("ledger-id", n): n for n in range(1, 500)}
        present = [ledger[entry["id"]] for entry in listing["entries"] if entry["id"] in ledger]
        gone = {max(present) if n == "newest" else n for n in sequences}
        listing["entries"] = [e for e in listing["entries"] if ledger.get(e["id"]) not in gone]
        self.dropped = sorted(gone)
        return json.dumps(listing).encode()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class SealedPageTest(support.StackTestCase):
    @classmethod
    def prepare(cls, stack):
        token = stack.container("vault")
        stack.container("other")
        stack.user("alice", {"vault": "editor"})
        stack.user("vic", {"vault": "viewer"})
        stack.user("mallory", {"other": "admin"})
        stack.serve()
        cls.mount = os.path.join(stack.directory, "mount-vault")
        os.mkdir(cls.mount)
        printed = run("mount", f"{stack.url}/vault", cls.mount, "--token-file", token,
                      "--state-dir", cls.mount + ".state", "--create-encrypted",
                      "--device-key", os.path.join(stack.directory, "device-key"))
        stack.mounts.append(cls.mount)
        found = re.search(r"SFR1-[A-Z2-7-]+", printed)
        if not found:
            raise AssertionError(f"the first mount printed no recovery key: {printed}")
        cls.recovery = found.group(0)
        os.makedirs(os.path.join(cls.mount, "docs"))
        with open(os.path.join(cls.mount, "notes.txt"), "w") as file:
            file.write("sealed notes\n")
        with open(os.path.join(cls.mount, "docs", f"{HOSTILE}.txt"), "w") as file:
            file.write("a hostile name, still only a name\n")
        stack.sync(cls.mount)
        # A second key epoch: the live tree is sealed again under it, and what follows too.
        run("rekey", f"{stack.url}/vault", "--new-epoch", "--token-file", token,
            "--device-key", os.path.join(stack.directory, "device-key"))
        with open(os.path.join(cls.mount, "docs", "big.bin"), "wb") as file:
            # Incompressible and compressible parts: raw and zlib chunks both.
            file.write(os.urandom(3 << 20) + b"the same line again and again\n" * 120_000)
        stack.sync(cls.mount)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.driver.quit()
        cls.driver = support.browser(network_log=True)
        cls.downloads = os.path.join(cls.stack.directory, "downloads")
        os.mkdir(cls.downloads)
        cls.driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": cls.downloads})

    def sign_in(self):
        support.sign_in(self.driver, self.stack.url, "alice")
        wait_until(lambda: self.driver.find_elements(By.CSS_SELECTOR, ".who"), "the signed-in page")

    def open_with(self, key, base=None):
        self.driver.get((base or self.stack.url) + "/c/vault/")
        field = self.driver.find_element(By.ID, "recovery-key")
        field.send_keys(key)
        self.driver.find_element(By.CSS_SELECTOR, "#sealed-open button").click()
        self.assertEqual(field.get_attribute("value"), "", "the key field is cleared at once")

    def shown_names(self):
        return [cell.text for cell in self.driver.find_elements(By.CSS_SELECTOR, "#sealed-list tbody td:first-child")]

    def error_text(self):
        return wait_until(lambda: self.driver.find_element(By.ID, "sealed-error").is_displayed()
                          and self.driver.find_element(By.ID, "sealed-error").text, "an error on the page")

    def test_the_recovery_key_opens_the_container_in_the_browser_and_never_reaches_the_server(self):
        self.sign_in()
        self.driver.get(self.stack.url + "/c/vault/")
        self.assertIn("encrypted by its devices", self.driver.find_element(By.ID, "sealed-notice").text)
        self.assertFalse(self.driver.find_element(By.ID, "sealed-list").is_displayed())
        screenshot(self.driver, "sealed-locked")

        self.open_with(self.recovery[:-3] + "AAA")
        self.assertIn("not a recovery key", self.error_text())
        self.open_with(recovery_key_text(os.urandom(32)))
        self.assertIn("not this container's", self.error_text())
        self.assertFalse(self.driver.find_element(By.ID, "sealed-list").is_displayed())

        # Lower case and spaces, as a person may type it.
        self.open_with(self.recovery.lower().replace("-", " "))
        wait_until(lambda: "notes.txt" in self.shown_names(),
                   lambda: "the opened container's root; the page says: "
                   + self.driver.find_element(By.ID, "sealed-error").text)
        self.assertEqual(self.shown_names()[0], "docs", "folders first")
        opened = self.driver.find_element(By.ID, "sealed-status").text
        self.assertIn("entries checked, 2 key epochs", opened)
        # The head the page checked is the one the device shows in `status`.
        head = re.search(r"ledger entry \d+ \([0-9a-f]{16}\)", run("status", self.mount))
        self.assertIsNotNone(head)
        self.assertIn(head.group(0), opened)
        screenshot(self.driver, "sealed-open")
        self.driver.find_element(By.LINK_TEXT, "docs").click()
        wait_until(lambda: "big.bin" in self.shown_names(), "the docs folder")
        self.assertIn(f"{HOSTILE}.txt", self.shown_names())
        self.assertIsNone(self.driver.execute_script("return window.pwned"))
        self.assertEqual(self.driver.find_elements(By.CSS_SELECTOR, "main img"), [])
        with self.assertRaises(NoAlertPresentException):
            self.driver.switch_to.alert.text
        self.assertEqual(self.driver.find_element(By.ID, "sealed-heading").text, "docs")

        self.driver.find_element(By.CSS_SELECTOR, "button[title='Download big.bin']").click()
        saved = os.path.join(self.downloads, "big.bin")
        wait_until(lambda: os.path.exists(saved) and not os.path.exists(saved + ".crdownload")
                   and os.path.getsize(saved) == os.path.getsize(os.path.join(self.mount, "docs", "big.bin")),
                   "the downloaded file", timeout=120)
        self.assertEqual(digest(saved), digest(os.path.join(self.mount, "docs", "big.bin")))
        screenshot(self.driver, "sealed-folder")

        # What the browser sent: GETs of the page, the sealed entries and chunks (and the sign-in).
        requests = []
        for line in self.driver.get_log("performance"):
            message = json.loads(line["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                requests.append(message["params"]["request"])
        self.assertTrue(any("/sealed-chunk?id=" in r["url"] for r in requests), "chunks were fetched")
        forms = {self.recovery, self.recovery.replace("-", ""), self.recovery.lower(),
                 self.recovery.lower().replace("-", " "), self.recovery[5:].replace("-", "")}
        for request in requests:
            self.assertTrue(request["method"] == "GET" or request["url"].endswith("/login"), request["url"])
            text = json.dumps(request).lower()
            for form in forms:
                self.assertNotIn(form.lower(), text)
        log = self.stack.server_log().lower()
        for form in forms:
            self.assertNotIn(form.lower(), log)

    def test_a_server_that_swaps_two_records_is_caught(self):
        self.sign_in()
        proxy = LyingProxy(self.stack.url, swap=True)
        try:
            self.open_with(self.recovery, base=proxy.url)
            self.assertIn("does not check out (the server withholds or changed entry", self.error_text())
            self.assertEqual(proxy.swapped, 1)
            self.assertFalse(self.driver.find_element(By.ID, "sealed-list").is_displayed())
            screenshot(self.driver, "sealed-alarm")
        finally:
            proxy.close()

    def test_a_chunk_the_server_changed_is_refused_and_nothing_is_saved(self):
        self.sign_in()
        proxy = LyingProxy(self.stack.url, flip=True)
        try:
            self.open_with(self.recovery, base=proxy.url)
            wait_until(lambda: "notes.txt" in self.shown_names(), "the opened container's root")
            self.driver.find_element(By.CSS_SELECTOR, "button[title='Download notes.txt']").click()
            self.assertIn("a chunk does not open with its key", self.error_text())
            self.assertGreater(proxy.flipped, 0)
            self.assertFalse(os.path.exists(os.path.join(self.downloads, "notes.txt")))
        finally:
            proxy.close()

    def test_a_server_that_withholds_ledger_entries_is_caught(self):
        self.sign_in()
        # The newest entry left out: what it named is stored, unnamed or with another digest than the
        # ledger shown has. One in the middle left out: the entries after it are named by no entry shown.
        for drop, words in ((("newest",), "does not check out"), ((2,), "that no ledger entry it shows names")):
            proxy = LyingProxy(self.stack.url, drop=drop)
            try:
                self.open_with(self.recovery, base=proxy.url)
                self.assertIn(words, self.error_text())
                self.assertFalse(self.driver.find_element(By.ID, "sealed-list").is_displayed())
            finally:
                proxy.close()

    def test_only_members_read_it_and_nothing_changes_it_through_the_page(self):
        outsider = support.Session(self.stack.url)
        outsider.sign_in("mallory")
        for path in ("/c/vault/", "/c/vault/sealed-entries", "/c/vault/sealed-chunk?id=" + "0" * 64):
            self.assertEqual(outsider.get(path)[0], 403, path)
        member = support.Session(self.stack.url)
        member.sign_in("vic")
        # A chunk is asked for by exactly one 64-digit ID, and only one the container holds sealed.
        for path, status in (("/c/vault/sealed-chunk?id=zz", 400), ("/c/vault/sealed-chunk?id=../x", 400),
                             ("/c/vault/sealed-chunk?id=" + "0" * 64 + "&path=x", 400),
                             ("/c/vault/sealed-chunk?id=" + "0" * 64, 404)):
            self.assertEqual(member.get(path)[0], status, path)
        viewer = support.Session(self.stack.url)
        viewer.sign_in("vic")
        status, headers, body = viewer.get("/c/vault/sealed-entries")
        self.assertEqual(status, 200)
        self.assertEqual(headers["Cache-Control"], "private, no-store")
        self.assertGreater(len(json.loads(body)["entries"]), 3)
        editor = support.Session(self.stack.url)
        editor.sign_in("alice")
        _, _, page = editor.get("/c/vault/")
        csrf = page.decode().split('name="csrf" value="')[1].split('"')[0]
        same_origin = {"Origin": self.stack.url}
        for action in ("mkdir", "rename", "delete", "commit", "missing", "create-link", "set-member", "restore"):
            status, _, body = editor.post(f"/c/vault/{action}", {"csrf": csrf, "path": "notes.txt", "name": "x"},
                                          headers=same_origin)
            self.assertEqual(status, 403, action)
            self.assertIn(b"encrypted", body)

    def test_no_other_page_of_an_encrypted_container_is_served(self):
        session = support.Session(self.stack.url)
        session.sign_in("alice")
        for path in ("/c/vault/file?path=notes.txt", "/c/vault/raw?path=notes.txt", "/c/vault/zip", "/c/vault/trash"):
            status, _, body = session.get(path)
            self.assertEqual(status, 403, path)
            self.assertIn(b"encrypted", body)
        status, _, body = session.get("/")
        self.assertIn(b"open it with its recovery key", body)
        status, headers, body = session.get("/c/vault/sealed-entries")
        self.assertEqual(status, 200)
        listing = json.loads(body)
        stored = b"".join(base64.b64decode(entry["sealed"]) for entry in listing["entries"])
        self.assertGreater(len(stored), 0)
        self.assertNotIn(b"notes.txt", stored)
        self.assertNotIn("notes.txt", body.decode())
        outsider = support.Session(self.stack.url)
        self.assertEqual(outsider.get("/c/vault/sealed-entries")[0], 303)


if __name__ == "__main__":
    unittest.main()
