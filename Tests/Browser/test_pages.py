"""The web page in a real browser: signing in, browsing what a mount wrote, previews, a folder
as a zip, sessions, and what a hostile name, page or user would try. Screenshots of each screen
go to .build/browser-artefacts/."""
import http.server
import json
import io
import os
import struct
import threading
import unittest
import urllib.parse
import urllib.error
import urllib.request
import zipfile
import zlib

from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

import support
from support import PASSWORD, screenshot, wait_until

HOSTILE = '<img src=x onerror="window.pwned=1">'


def png(width, height):
    """A small valid PNG (a red rectangle)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


class WebPagesTest(support.StackTestCase):
    @classmethod
    def prepare(cls, stack):
        token = stack.container("team")
        stack.container("other")
        stack.user("alice", {"team": "editor"})
        stack.user("victor", {"team": "viewer"})
        stack.user("ada", {"team": "admin"})
        stack.user("newcomer", {})
        stack.serve("--quota", "team=10GB")
        cls.mount = stack.mount("team", token)
        cls.write("docs/readme.txt", b"hello <b>web</b>\n")
        cls.write(f"docs/{HOSTILE}.txt", b"a hostile name\n")
        cls.write("photo.png", png(40, 30))
        cls.write("nested/deeper/data.bin", os.urandom(300_000))
        cls.write("nested/\u00e9t\u00e9.txt", "\u00e9t\u00e9\n".encode())
        for index in range(250):
            cls.write(f"many/file-{index:03d}.txt", b"x" * index)
        stack.sync(cls.mount)

    @classmethod
    def write(cls, path, data):
        full = os.path.join(cls.mount, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as file:
            file.write(data)

    def open(self, path):
        self.driver.get(self.stack.url + path)

    def sign_in(self, user="alice", password=PASSWORD, totp=None, expect_in=True):
        """Signs in through the form; returns once the page says who is signed in (unless the
        sign-in is expected to fail), so the next navigation carries the new cookie."""
        support.sign_in(self.driver, self.stack.url, user, password, totp)
        if expect_in:
            wait_until(lambda: self.signed_in_as() == user, f"{user} signed in")

    def signed_in_as(self):
        names = self.driver.find_elements(By.CSS_SELECTOR, ".who")
        return names[0].text if names else None

    def entry_names(self):
        """The names the folder's table shows, read in one step: a page replaced between finding
        the cells and reading them cannot leave the list half old, half new."""
        return self.driver.execute_script(
            "return Array.from(document.querySelectorAll('#entries .name'), cell => cell.innerText)")

    # -- Signing in

    def test_a_wrong_password_is_refused_and_the_right_one_lets_in(self):
        self.sign_in(password="not the password at all", expect_in=False)
        error = wait_until(lambda: self.driver.find_elements(By.ID, "signin-error"), "the sign-in error")
        self.assertIn("wrong", error[0].text)
        self.assertIsNone(self.signed_in_as())
        screenshot(self.driver, "signin-refused")
        self.sign_in()
        wait_until(lambda: self.signed_in_as() == "alice", "alice signed in")
        self.assertEqual([a.text for a in self.driver.find_elements(By.CSS_SELECTOR, "#containers a")], ["team"])
        row = self.driver.find_element(By.CSS_SELECTOR, "#containers tbody tr").text
        self.assertRegex(row, r"team editor [0-9.]+ kB [0-9.]+ kB 10\.0 GB \(0 % used\) browse")
        screenshot(self.driver, "containers")
        cookie = self.driver.get_cookie("syncfs-session")
        self.assertTrue(cookie["httpOnly"])
        self.assertEqual(cookie["sameSite"], "Strict")

    def test_signed_out_pages_lead_to_the_sign_in_form(self):
        self.driver.delete_all_cookies()
        self.open("/c/team/?path=docs")
        wait_until(lambda: self.driver.find_elements(By.ID, "signin"), "the sign-in form")
        self.assertTrue(self.driver.current_url.endswith("/login"))

    # -- Browsing

    def test_a_folder_written_by_a_mount_is_listed_and_a_new_file_appears(self):
        self.sign_in()
        self.open("/c/team/?path=docs")
        self.assertEqual(sorted(self.entry_names()), sorted([f"{HOSTILE}.txt", "readme.txt"]))
        crumbs = [item.text for item in self.driver.find_elements(By.CSS_SELECTOR, ".crumbs li")]
        self.assertEqual(crumbs, ["team", "docs"])
        screenshot(self.driver, "folder")
        self.write("docs/later.txt", b"written after the page was open\n")
        self.stack.sync(self.mount)
        self.driver.refresh()
        self.assertIn("later.txt", self.entry_names())

    def test_a_hostile_name_is_shown_as_text_and_runs_nothing(self):
        self.sign_in()
        self.open("/c/team/?path=docs")
        self.assertIn(f"{HOSTILE}.txt", self.entry_names())
        link = [a for a in self.driver.find_elements(By.CSS_SELECTOR, "#entries a") if a.text == f"{HOSTILE}.txt"]
        link[0].click()
        wait_until(lambda: self.driver.find_element(By.TAG_NAME, "h1").text == f"{HOSTILE}.txt", "the file page")
        self.assertIsNone(self.driver.execute_script("return window.pwned"))
        self.assertEqual(self.driver.find_elements(By.CSS_SELECTOR, "main img"), [])
        with self.assertRaises(NoAlertPresentException):
            self.driver.switch_to.alert.text
        screenshot(self.driver, "hostile-name")

    def test_pages_have_a_policy_and_no_inline_script(self):
        self.sign_in()
        for path in ("/", "/c/team/", "/c/team/file?path=docs/readme.txt", "/sessions"):
            self.open(path)
            inline = self.driver.execute_script("return document.querySelectorAll('script:not([src])').length")
            self.assertEqual(inline, 0, path)
            handlers = self.driver.execute_script(
                "return [...document.querySelectorAll('*')].filter(e => [...e.attributes]"
                ".some(a => a.name.startsWith('on'))).length")
            self.assertEqual(handlers, 0, path)
        status, headers, _ = support.Session(self.stack.url).get("/login")
        self.assertIn("script-src 'self'", headers["Content-Security-Policy"])
        self.assertNotIn("unsafe-inline", headers["Content-Security-Policy"].split("style-src")[0])

    def test_a_text_file_and_an_image_are_previewed(self):
        self.sign_in()
        self.open("/c/team/file?path=docs/readme.txt")
        self.assertEqual(self.driver.find_element(By.ID, "preview-text").text, "hello <b>web</b>")
        screenshot(self.driver, "file-text")
        self.open("/c/team/file?path=photo.png")
        image = self.driver.find_element(By.ID, "preview-image")
        wait_until(lambda: self.driver.execute_script("return arguments[0].complete", image), "the image loaded")
        self.assertEqual(self.driver.execute_script("return arguments[0].naturalWidth", image), 40)
        screenshot(self.driver, "file-image")

    def test_sorting_filtering_and_pages(self):
        self.sign_in()
        self.open("/c/team/?path=many")
        self.assertEqual(len(self.entry_names()), 200)
        self.assertIn("1–200 of 250", self.driver.find_element(By.ID, "count").text)
        self.driver.find_element(By.CSS_SELECTOR, "a[rel=next]").click()
        wait_until(lambda: len(self.entry_names()) == 50, "the second page")
        self.driver.find_element(By.LINK_TEXT, "Size").click()
        wait_until(lambda: self.entry_names()[:1] == ["file-249.txt"], "the largest first")
        field = self.driver.find_element(By.ID, "filter")
        field.clear()
        field.send_keys("file-10", Keys.ENTER)
        wait_until(lambda: len(self.entry_names()) == 10, "ten matches")
        self.assertEqual(self.entry_names()[0], "file-109.txt")
        screenshot(self.driver, "folder-filtered")

    def test_a_folder_downloads_as_a_zip_equal_to_the_mount(self):
        self.sign_in()
        self.open("/c/team/?path=nested")
        href = self.driver.find_element(By.ID, "zip").get_attribute("href")
        session = support.Session(self.stack.url)
        session.sign_in("alice")
        status, headers, body = session.get(urllib.parse.urlsplit(href)._replace(scheme="", netloc="").geturl())
        self.assertEqual(status, 200)
        self.assertEqual(headers["Content-Type"], "application/zip")
        archive = zipfile.ZipFile(io.BytesIO(body))
        self.assertIsNone(archive.testzip())
        files = {info.filename: archive.read(info) for info in archive.infolist() if not info.is_dir()}
        expected = {}
        base = os.path.join(self.mount, "nested")
        for folder, _, names in os.walk(base):
            for name in names:
                path = os.path.join(folder, name)
                with open(path, "rb") as file:
                    expected[os.path.relpath(path, base)] = file.read()
        self.assertEqual(files, expected)

    # -- Who may see what

    def test_a_container_the_user_is_not_a_member_of_is_refused(self):
        self.sign_in("victor")
        self.open("/c/other/")
        self.assertIn("not a member", self.driver.find_element(By.ID, "failure").text)
        self.open("/c/nonexistent/")
        self.assertIn("not a member", self.driver.find_element(By.ID, "failure").text)
        self.open("/c/team/?path=docs/../../other")
        self.assertIn("not a path", self.driver.find_element(By.ID, "failure").text)
        screenshot(self.driver, "refused")

    def test_a_change_from_another_site_is_refused(self):
        self.sign_in()
        wait_until(lambda: self.signed_in_as() == "alice", "alice signed in")
        target = self.stack.url + "/logout"
        page = f'<form action="{target}" method="post"><input name="csrf" value="x"></form>' \
               '<script>document.forms[0].submit()</script>'.encode()

        class Hostile(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *arguments):
                pass

        hostile = http.server.HTTPServer(("127.0.0.2", 0), Hostile)
        threading.Thread(target=hostile.serve_forever, daemon=True).start()
        try:
            self.driver.get(f"http://127.0.0.2:{hostile.server_port}/")
            wait_until(lambda: self.driver.current_url.startswith(target), "the forged form submitted")
            self.open("/")
            self.assertEqual(self.signed_in_as(), "alice")
        finally:
            hostile.shutdown()
            hostile.server_close()
        session = support.Session(self.stack.url)
        session.sign_in("alice")
        _, _, page_body = session.get("/sessions")
        csrf = page_body.decode().split('name="csrf" value="')[1].split('"')[0]
        status, _, _ = session.post("/logout", {"csrf": csrf}, {"Origin": "http://evil.example"})
        self.assertEqual(status, 403)
        status, _, _ = session.post("/logout", {"csrf": "0" * 64})
        self.assertEqual(status, 403)
        self.assertEqual(session.get("/sessions")[0], 200)

    def test_another_browser_is_listed_and_signed_out_from_here(self):
        agent = "the other browser of test_another_browser"
        other = support.Session(self.stack.url, agent=agent)
        status, _, _ = other.sign_in("alice")
        self.assertEqual(status, 303)
        self.assertEqual(other.get("/")[0], 200)
        self.sign_in()
        self.open("/sessions")
        rows = self.driver.find_elements(By.CSS_SELECTOR, "#sessions tbody tr")
        self.assertGreaterEqual(len(rows), 2)
        screenshot(self.driver, "sessions")
        buttons = [row.find_element(By.TAG_NAME, "button") for row in rows
                   if agent in row.text and "signed in" in row.text]
        self.assertTrue(buttons, "the other session is listed as signed in")
        buttons[0].click()
        wait_until(lambda: not [row for row in self.driver.find_elements(By.CSS_SELECTOR, "#sessions tbody tr")
                                if agent in row.text and "signed in" in row.text], "the other browser signed out")
        status, headers, _ = other.get("/")
        self.assertEqual((status, headers.get("Location")), (303, "/login"))
        self.assertEqual(self.signed_in_as(), "alice")

    def test_a_device_is_listed_and_revoked_from_the_account_page(self):
        body = json.dumps({"user": "alice", "container": "team", "device": "laptop <b>",
                           "password": PASSWORD}).encode()
        request = urllib.request.Request(self.stack.url + "/v1/login", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            grant = json.loads(response.read())
        probe = urllib.request.Request(self.stack.url + "/v1/containers/team",
                                       headers={"Authorization": "Bearer " + grant["token"]})
        with urllib.request.urlopen(probe, timeout=30) as response:
            self.assertEqual(response.status, 200)
        self.sign_in()
        self.open("/sessions")
        rows = [row for row in self.driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr")
                if grant["device"] in row.text]
        self.assertIn("laptop <b>", rows[0].text)
        self.assertIn(grant["tokenID"], self.driver.find_element(By.ID, "tokens").text)
        screenshot(self.driver, "account")
        rows[0].find_element(By.TAG_NAME, "button").click()
        self.driver.switch_to.alert.accept()
        # While the next page loads the table may be absent: look for any matching row, never index.
        wait_until(lambda: any(grant["device"] in row.text and "revoked" in row.text
                               for row in self.driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr")),
                   "the device revoked")
        with self.assertRaises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(probe, timeout=30)
        self.assertEqual(refused.exception.code, 401)

    # -- Running a container

    def test_an_admin_manages_members_and_links_and_reads_the_audit_log(self):
        self.sign_in("alice")
        self.open("/c/team/admin")
        self.assertIn("only its admins", self.driver.find_element(By.ID, "failure").text)
        self.sign_in("ada")
        self.open("/c/team/")
        self.driver.find_element(By.ID, "admin-link").click()
        wait_until(lambda: self.driver.find_elements(By.ID, "members"), "the admin page")
        storage = self.driver.find_element(By.ID, "storage").text
        self.assertRegex(storage, r"Files and folders\s+2[0-9]{2}")
        self.driver.find_element(By.ID, "new-member").send_keys("newcomer")
        self.driver.find_element(By.CSS_SELECTOR, "#add-member button").click()
        wait_until(lambda: "newcomer" in self.driver.find_element(By.ID, "members").text, "the new member")
        self.driver.find_element(By.ID, "link-path").send_keys("docs")
        self.driver.find_element(By.ID, "link-password").send_keys("a link password")
        self.driver.find_element(By.CSS_SELECTOR, "#create-link button").click()
        created = wait_until(lambda: self.driver.find_elements(By.ID, "new-link-address"), "the new link")
        link = created[0].text
        self.assertTrue(link.startswith("/s/"), link)
        screenshot(self.driver, "admin")
        anonymous = support.Session(self.stack.url)
        status, headers, _ = anonymous.get(link)
        self.assertEqual(status, 401)
        self.assertIn("Basic", headers["WWW-Authenticate"])
        import base64
        basic = {"Authorization": "Basic " + base64.b64encode(b"x:a link password").decode()}
        request = urllib.request.Request(self.stack.url + link, headers=basic)
        with urllib.request.urlopen(request, timeout=30) as response:
            self.assertEqual(response.status, 200)
            page = response.read().decode()
            self.assertEqual(response.headers["Referrer-Policy"], "no-referrer")
        self.assertIn("readme.txt", page)
        self.assertNotIn(HOSTILE, page)
        row = [r for r in self.driver.find_elements(By.CSS_SELECTOR, "#links tbody tr")
               if "live" in r.text and "docs" in r.text][0]
        link_id = row.text.split()[0]
        row.find_element(By.TAG_NAME, "button").click()
        wait_until(lambda: any(r.text.startswith(link_id) and "revoked" in r.text for r in
                               self.driver.find_elements(By.CSS_SELECTOR, "#links tbody tr")), "the link revoked")
        self.assertEqual(anonymous.get(link)[0], 404)
        audit = self.driver.find_element(By.ID, "audit").text
        self.assertIn("role-change", audit)
        self.assertIn("link-revoke", audit)
        self.assertIn("user:ada/web:", audit)

    def test_a_link_opened_signed_out_works_until_revoked_and_a_drop_box_takes_files(self):
        self.sign_in("ada")
        self.open("/c/team/admin")
        self.driver.find_element(By.ID, "link-path").send_keys("docs")
        self.driver.find_element(By.CSS_SELECTOR, "#create-link button").click()
        view = wait_until(lambda: self.driver.find_elements(By.ID, "new-link-address"), "the link")[0].text
        self.driver.find_element(By.ID, "link-path").send_keys("nested")
        self.driver.find_element(By.CSS_SELECTOR, "#link-kind option[value=upload-only]").click()
        self.driver.find_element(By.CSS_SELECTOR, "#create-link button").click()
        drop = wait_until(lambda: [a.text for a in self.driver.find_elements(By.ID, "new-link-address")
                                   if a.text != view], "the drop box link")[0]
        stranger = support.browser()
        try:
            stranger.get(self.stack.url + view)
            names = [cell.text for cell in stranger.find_elements(By.CSS_SELECTOR, "#entries .name")]
            self.assertIn("readme.txt", names)
            self.assertEqual(stranger.find_elements(By.CSS_SELECTOR, ".who"), [])
            screenshot(stranger, "link-view")
            source = os.path.join(self.stack.directory, "dropped in.txt")
            with open(source, "w") as file:
                file.write("from a stranger\n")
            stranger.get(self.stack.url + drop)
            stranger.find_element(By.ID, "drop-files").send_keys(source)
            wait_until(lambda: "sent" in stranger.find_element(By.ID, "drop-progress").text, "the file sent")
            screenshot(stranger, "link-dropbox")
            target = os.path.join(self.mount, "nested", "dropped in.txt")
            wait_until(lambda: os.path.exists(target), "the dropped file on the mount")
            self.open("/c/team/admin")
            rows = [r for r in self.driver.find_elements(By.CSS_SELECTOR, "#links tbody tr")
                    if "live" in r.text and "docs" in r.text and "view" in r.text]
            link_id = rows[0].text.split()[0]
            rows[0].find_element(By.TAG_NAME, "button").click()
            wait_until(lambda: any(row.text.startswith(link_id) and "revoked" in row.text for row in
                                   self.driver.find_elements(By.CSS_SELECTOR, "#links tbody tr")), "the link revoked")
            stranger.get(self.stack.url + view)
            self.assertIn("does not work", stranger.find_element(By.ID, "failure").text)
        finally:
            stranger.quit()

    # -- Phones and keyboards

    def test_a_phone_width_fits_and_every_field_has_a_label(self):
        phone = support.browser(360, 740)
        try:
            phone.get(self.stack.url + "/login")
            for page in ("signin",):
                unlabeled = phone.execute_script(
                    "return [...document.querySelectorAll('input:not([type=hidden]), button')].filter(e => "
                    "!(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.textContent.trim()).length")
                self.assertEqual(unlabeled, 0, page)
            phone.find_element(By.ID, "user").send_keys("alice", Keys.TAB, PASSWORD, Keys.ENTER)
            wait_until(lambda: phone.find_elements(By.CSS_SELECTOR, ".who"), "signed in by keyboard")
            for path in ("/", "/c/team/?path=docs", "/c/team/file?path=docs/readme.txt"):
                phone.get(self.stack.url + path)
                overflow = phone.execute_script(
                    "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
                self.assertLessEqual(overflow, 0, path)
            phone.get(self.stack.url + "/c/team/?path=docs")
            screenshot(phone, "phone-folder")
        finally:
            phone.quit()


if __name__ == "__main__":
    unittest.main()
