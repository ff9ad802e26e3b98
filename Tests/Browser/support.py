"""What the browser tests stand on: the built `syncfs-mount` serving a root on loopback, real
FUSE mounts of its containers, and headless Chromium driven by Selenium (Debian's chromium,
chromium-driver and python3-selenium).

Every wait ends on a condition (`wait_until`), never on a fixed sleep. Every mount is unmounted
and the server stopped, whatever a test did (`Stack.close`).
"""
import http.cookiejar
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import unittest
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

BINARY = os.environ.get("SYNCFS_MOUNT_BINARY", os.path.abspath(".build/debug/syncfs-mount"))
ARTEFACTS = os.environ.get("SYNCFS_BROWSER_ARTEFACTS", os.path.abspath(".build/browser-artefacts"))
PASSWORD = "correct horse battery staple"


def wait_until(condition, what, timeout=30.0):
    """Polls `condition` until it returns something true; fails naming `what` (or what it returns,
    if a function) after `timeout`."""
    deadline = time.monotonic() + timeout
    last_error = None
    while True:
        try:
            value = condition()
        except WebDriverException as error:
            # The page is being replaced under the condition: an element it found is stale, gone,
            # or (Chromium's words) "does not belong to the document". Look again; a driver that
            # stays broken still ends the wait, with its last error.
            value, last_error = None, error
        if value:
            return value
        if time.monotonic() > deadline:
            described = what() if callable(what) else what
            cause = f" (last error: {last_error.msg})" if last_error else ""
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {described}{cause}")
        time.sleep(0.05)


def run(*arguments, stdin=None):
    """Runs `syncfs-mount ARGUMENTS`; its standard output, or an error with what it said."""
    done = subprocess.run(
        [BINARY, *arguments], input=stdin, capture_output=True, text=True, timeout=120,
        preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, []))
    if done.returncode != 0:
        raise AssertionError(f"syncfs-mount {' '.join(arguments)} failed ({done.returncode}): {done.stderr}")
    return done.stdout


class Stack:
    """A server root with users and containers, served on loopback, and mounts of it."""

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix="syncfs-browser-")
        os.chmod(self.directory, 0o700)
        self.root = os.path.join(self.directory, "root")
        os.mkdir(self.root, 0o700)
        self.mounts = []
        self.server = None
        self.url = None

    def user(self, name, containers):
        """Adds user `name` with `PASSWORD` and a role in each container (`{name: role}`)."""
        run("user", "add", "--root", self.root, name)
        password_file = os.path.join(self.directory, "password")
        with open(password_file, "w") as file:
            file.write(PASSWORD + "\n")
        os.chmod(password_file, 0o600)
        run("user", "passwd", "--root", self.root, name, "--password-file", password_file)
        for container, role in containers.items():
            run("member", "add", "--root", self.root, "--user", name, "--container", container, "--role", role)

    def container(self, name):
        """Creates container `name` and returns a token file for it."""
        token = run("token", "create", "--root", self.root, "--container", name).strip()
        path = os.path.join(self.directory, f"{name}.token")
        with open(path, "w") as file:
            file.write(token + "\n")
        os.chmod(path, 0o600)
        return path

    def serve(self, *options):
        """Starts `serve` on loopback with `options` besides its root and address."""
        with open(os.path.join(self.directory, "serve.log"), "w") as log:
            self.server = subprocess.Popen(
                [BINARY, "serve", "--root", self.root, "--listen", "127.0.0.1:0", *options], stdout=subprocess.PIPE,
                stderr=log, text=True, preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, []))
        line = self.server.stdout.readline()
        if not line.startswith("listening on "):
            raise AssertionError(f"serve did not start: {line!r} {self.server_log()}")
        self.url = line.split()[-1]

    def server_log(self):
        with open(os.path.join(self.directory, "serve.log"), errors="replace") as file:
            return file.read()

    def mount(self, container, token_file):
        """Mounts `container` of the server; its mount point."""
        point = os.path.join(self.directory, f"mount-{container}-{len(self.mounts)}")
        state = point + ".state"
        os.mkdir(point)
        run("mount", f"{self.url}/{container}", point, "--token-file", token_file, "--state-dir", state)
        self.mounts.append(point)
        return point

    def sync(self, point):
        run("sync", point, "--timeout", "60")

    def close(self):
        for point in reversed(self.mounts):
            subprocess.run([BINARY, "unmount", point], capture_output=True, timeout=120)
            if os.path.ismount(point):
                subprocess.run(["fusermount3", "-u", "-z", point], capture_output=True)
        if self.server:
            self.server.terminate()
            try:
                self.server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.server.kill()
            self.server.stdout.close()
        shutil.rmtree(self.directory, ignore_errors=True)


class Session:
    """A signed-in session without a browser (urllib with its own cookie jar): another device."""

    def __init__(self, url, agent="Python-urllib (a test's other device)"):
        self.url = url
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar), NoRedirect())
        self.opener.addheaders = [("User-Agent", agent)]

    def get(self, path):
        try:
            with self.opener.open(self.url + path, timeout=30) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()

    def post(self, path, fields, headers=None):
        request = urllib.request.Request(
            self.url + path, data=urllib.parse.urlencode(fields).encode(), headers=headers or {}, method="POST")
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()

    def sign_in(self, user, password=PASSWORD):
        status, _, body = self.get("/login")
        token = body.decode().split('name="csrf" value="')[1].split('"')[0]
        return self.post("/login", {"csrf": token, "user": user, "password": password})


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *arguments):
        return None


def browser(width=1280, height=900, network_log=False):
    """Headless Chromium at this window size; with `network_log`, every request it makes is in
    `driver.get_log("performance")` (DevTools' Network events)."""
    options = Options()
    if network_log:
        options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 f"--window-size={width},{height}", "--lang=en-US"):
        options.add_argument(flag)
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(60)
    return driver


def sign_in(driver, base, user, password=PASSWORD, totp=None):
    """Signs `driver` in at `base` as `user` through the sign-in form (its cookies cleared first)."""
    from selenium.webdriver.common.by import By
    driver.delete_all_cookies()
    driver.get(base + "/login")
    driver.find_element(By.ID, "user").send_keys(user)
    driver.find_element(By.ID, "password").send_keys(password)
    if totp:
        driver.find_element(By.ID, "totp").send_keys(totp)
    driver.find_element(By.CSS_SELECTOR, "#signin button[type=submit]").click()


def screenshot(driver, name):
    """Saves the page as ARTEFACTS/NAME.png (the whole page's height)."""
    os.makedirs(ARTEFACTS, exist_ok=True)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    width = driver.get_window_size()["width"]
    driver.set_window_size(width, max(400, min(height + 140, 4000)))
    driver.save_screenshot(os.path.join(ARTEFACTS, f"{name}.png"))


class StackTestCase(unittest.TestCase):
    """A test class with one `Stack` served, the mounts `prepare` makes, and one browser, all
    taken away after its last test whatever happened."""

    @classmethod
    def prepare(cls, stack):
        """Adds containers, users and mounts to `stack` before and after `stack.serve()`."""
        raise NotImplementedError

    @classmethod
    def setUpClass(cls):
        cls.stack = Stack()
        try:
            cls.prepare(cls.stack)
            cls.driver = browser()
        except BaseException:
            cls.stack.close()
            raise

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "driver", None):
            cls.driver.quit()
        cls.stack.close()
