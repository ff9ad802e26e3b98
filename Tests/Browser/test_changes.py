"""Changes made on the web page reach the mounts as ordinary commits: a new folder, a rename, a
move, a delete, and uploads (a 50 MB file, and one whose connection drops midway and resumes).
A viewer sees no controls and a forced request is refused."""
import hashlib
import os
import socket
import threading
import unittest

from selenium.webdriver.common.by import By

import support
from support import screenshot, wait_until


def read(path):
    with open(path) as file:
        return file.read()


def digest(path):
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


class DroppingProxy:
    """A TCP proxy to the server that cuts one connection once `drop_after` bytes went upstream
    in all (a dropped connection in the middle of an upload)."""

    def __init__(self, target_port, drop_after):
        self.target_port = target_port
        self.drop_after = drop_after
        self.upstream_bytes = 0
        self.dropped = 0
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.running = True
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while self.running:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            threading.Thread(target=self.pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self.pump, args=(server, client, False), daemon=True).start()

    def pump(self, source, sink, upstream):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if upstream:
                    with self.lock:
                        self.upstream_bytes += len(data)
                        cut = self.dropped == 0 and self.upstream_bytes > self.drop_after
                        if cut:
                            self.dropped += 1
                    if cut:
                        break
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()

    def close(self):
        self.running = False
        self.listener.close()


class WebChangesTest(support.StackTestCase):
    @classmethod
    def prepare(cls, stack):
        token = stack.container("team")
        stack.user("alice", {"team": "editor"})
        stack.user("victor", {"team": "viewer"})
        stack.serve()
        cls.mount = stack.mount("team", token)
        os.makedirs(os.path.join(cls.mount, "inbox"))
        os.makedirs(os.path.join(cls.mount, "archive"))
        for name in ("rename-me.txt", "move-me.txt", "delete-me.txt", "keep.txt"):
            with open(os.path.join(cls.mount, "inbox", name), "w") as file:
                file.write(name)
        os.makedirs(os.path.join(cls.mount, "doomed/below"))
        with open(os.path.join(cls.mount, "doomed/below/file.txt"), "w") as file:
            file.write("deleted with its folder")
        stack.sync(cls.mount)

    def sign_in(self, user="alice", base=None):
        support.sign_in(self.driver, base or self.stack.url, user)
        wait_until(lambda: self.driver.find_elements(By.CSS_SELECTOR, ".who"), f"{user} signed in")

    def on_mount(self, path):
        return os.path.join(self.mount, path)

    def test_a_viewer_sees_no_controls_and_a_forced_change_is_refused(self):
        self.sign_in("victor")
        self.driver.get(self.stack.url + "/c/team/?path=inbox")
        self.assertEqual(self.driver.find_elements(By.ID, "upload"), [])
        self.assertEqual(self.driver.find_elements(By.ID, "new-folder"), [])
        self.driver.get(self.stack.url + "/c/team/file?path=inbox/keep.txt")
        self.assertEqual(self.driver.find_elements(By.ID, "changes"), [])
        screenshot(self.driver, "viewer-file")
        session = support.Session(self.stack.url)
        session.sign_in("victor")
        _, _, page = session.get("/sessions")
        csrf = page.decode().split('name="csrf" value="')[1].split('"')[0]
        status, _, body = session.post("/c/team/delete", {"csrf": csrf, "path": "inbox/keep.txt"})
        self.assertEqual(status, 403, body)
        status, _, _ = session.post("/c/team/missing", {"csrf": csrf})
        self.assertEqual(status, 403)
        self.assertTrue(os.path.exists(self.on_mount("inbox/keep.txt")))

    def test_a_new_folder_a_rename_a_move_and_a_delete_reach_the_mount(self):
        self.sign_in()
        self.driver.get(self.stack.url + "/c/team/?path=inbox")
        screenshot(self.driver, "editor-folder")
        self.driver.find_element(By.ID, "new-folder").send_keys("made on the web")
        self.driver.find_element(By.CSS_SELECTOR, "form[action$='/mkdir'] button").click()
        wait_until(lambda: os.path.isdir(self.on_mount("inbox/made on the web")), "the new folder on the mount")

        self.driver.get(self.stack.url + "/c/team/file?path=inbox/rename-me.txt")
        self.driver.find_element(By.CSS_SELECTOR, "#changes summary").click()
        field = self.driver.find_element(By.ID, "rename-name")
        field.clear()
        field.send_keys("renamed.txt")
        self.driver.find_element(By.CSS_SELECTOR, "form[action$='/rename'] button").click()
        wait_until(lambda: os.path.exists(self.on_mount("inbox/renamed.txt")), "the rename on the mount")
        self.assertFalse(os.path.exists(self.on_mount("inbox/rename-me.txt")))

        self.driver.get(self.stack.url + "/c/team/file?path=inbox/move-me.txt")
        self.driver.find_element(By.CSS_SELECTOR, "#changes summary").click()
        field = self.driver.find_element(By.ID, "move-to")
        field.clear()
        field.send_keys("archive")
        self.driver.find_element(By.CSS_SELECTOR, "form[action$='/move'] button").click()
        wait_until(lambda: os.path.exists(self.on_mount("archive/move-me.txt")), "the move on the mount")

        for path in ("inbox/delete-me.txt", "doomed"):
            page = "file" if path.endswith(".txt") else ""
            self.driver.get(f"{self.stack.url}/c/team/{page}?path={path}")
            self.driver.find_element(By.CSS_SELECTOR, "#changes summary").click()
            self.driver.find_element(By.ID, "delete").click()
            self.driver.switch_to.alert.accept()
            wait_until(lambda: not os.path.exists(self.on_mount(path)), f"{path} deleted on the mount")
        screenshot(self.driver, "after-changes")

    def test_an_old_version_restored_on_the_page_reaches_the_mount(self):
        target = self.on_mount("inbox/versions.txt")
        for text in ("first version\n", "second version\n"):
            with open(target, "w") as file:
                file.write(text)
            self.stack.sync(self.mount)
        self.sign_in()
        self.driver.get(self.stack.url + "/c/team/file?path=inbox/versions.txt")
        rows = self.driver.find_elements(By.CSS_SELECTOR, "#versions tbody tr")
        self.assertEqual(len(rows), 2)
        self.assertIn("this version", rows[0].text)
        screenshot(self.driver, "versions")
        rows[1].find_element(By.TAG_NAME, "button").click()
        wait_until(lambda: read(target) == "first version\n", "the old version on the mount")
        wait_until(lambda: len(self.driver.find_elements(By.CSS_SELECTOR, "#versions tbody tr")) == 3,
                   "the restore listed as the newest version")

    def test_a_deleted_file_comes_back_from_the_trash(self):
        target = self.on_mount("inbox/trash-me.txt")
        with open(target, "w") as file:
            file.write("bring me back\n")
        self.stack.sync(self.mount)
        os.unlink(target)
        self.stack.sync(self.mount)
        self.sign_in()
        self.driver.get(self.stack.url + "/c/team/?path=inbox")
        self.driver.find_element(By.ID, "trash-link").click()
        rows = wait_until(lambda: [row for row in self.driver.find_elements(By.CSS_SELECTOR, "#deleted tbody tr")
                                   if "trash-me.txt" in row.text], "the file in the trash")
        self.assertIn("inbox", rows[0].text)
        screenshot(self.driver, "trash")
        rows[0].find_element(By.TAG_NAME, "button").click()
        wait_until(lambda: os.path.exists(target) and read(target) == "bring me back\n",
                   "the file back on the mount")

    def upload(self, path, base):
        self.driver.get(base + "/c/team/?path=inbox")
        self.driver.find_element(By.ID, "upload-files").send_keys(path)

    def test_a_50_mb_upload_reaches_the_mount(self):
        source = os.path.join(self.stack.directory, "fifty.bin")
        with open(source, "wb") as file:
            file.write(os.urandom(50_000_000))
        self.sign_in()
        self.upload(source, self.stack.url)
        wait_until(lambda: "fifty.bin" in self.driver.page_source and not self.driver.find_elements(
            By.CSS_SELECTOR, "#upload-progress li"), "the page reloaded with the upload", timeout=120)
        target = self.on_mount("inbox/fifty.bin")
        wait_until(lambda: os.path.exists(target) and os.path.getsize(target) == 50_000_000,
                   "the upload on the mount", timeout=120)
        self.assertEqual(digest(target), digest(source))

    def test_an_upload_whose_connection_drops_resumes(self):
        source = os.path.join(self.stack.directory, "dropped.bin")
        with open(source, "wb") as file:
            file.write(os.urandom(40_000_000))
        port = int(self.stack.url.rsplit(":", 1)[1])
        proxy = DroppingProxy(port, drop_after=18_000_000)
        try:
            base = f"http://127.0.0.1:{proxy.port}"
            self.sign_in(base=base)
            self.upload(source, base)
            wait_until(lambda: any("retrying" in line.text for line in self.driver.find_elements(
                By.CSS_SELECTOR, "#upload-progress li")) or proxy.dropped, "the dropped connection", timeout=120)
            target = self.on_mount("inbox/dropped.bin")
            wait_until(lambda: os.path.exists(target) and os.path.getsize(target) == 40_000_000,
                       "the resumed upload on the mount", timeout=180)
            self.assertEqual(digest(target), digest(source))
            self.assertEqual(proxy.dropped, 1)
            # Every piece went up about once: the resume sent what was missing, not the file again.
            self.assertLess(proxy.upstream_bytes, 40_000_000 + 2 * 4 * 1024 * 1024 + 1_000_000)
        finally:
            proxy.close()


if __name__ == "__main__":
    unittest.main()
