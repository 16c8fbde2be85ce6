#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The operator console (issue 38) in a real browser: Debian's Chromium driven by selenium,
against the real appd and appctl binaries.

Signs in with the link `appctl console` prints (it works once); the overview lists the built-in
plugins running and an external one (the greeter, unconfined here) whose Disable and Enable
buttons work; a todo added with appctl shows on the live events page within a second; a user
disabled from the console fails their next call; an entitlement granted in the console shows in
the user's entitlements (and appctl sees it); the search finds by email; a delete needs the
email typed; the metrics page charts calls; the audit page shows the console's calls as the
admin's. Outside the browser: a POST without the CSRF token is refused, a bearer token from
SignIn gets nothing from /console, the console's cookie gets nothing from the app API, and
every response forbids framing and inline script. Screenshots of each page (1280x800, and the
overview phone-width) go to the folder given.

Usage: console_browser.py APPD APPCTL GREETER SCREENSHOT_DIR
"""
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.common.exceptions import StaleElementReferenceException

from harness import check, finish, free_port, post, wait_for

PASSWORD = "correct horse battery staple"


def get(port, path, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path, headers=headers or {})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, dict((k.lower(), v) for k, v in response.getheaders()), body


def console_post(port, path, body, headers):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json", **headers})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, json.loads(data) if data else {}


def main():
    appd, appctl, greeter, shots = sys.argv[1:5]
    os.makedirs(shots, exist_ok=True)
    work = tempfile.mkdtemp(prefix="appd-console-")
    plugins = os.path.join(work, "plugins")
    os.makedirs(os.path.join(plugins, "greeter"))
    shutil.copy(os.path.join(os.path.dirname(__file__), "..", "..", "contrib", "plugins", "greeter", "plugin.json"), os.path.join(plugins, "greeter"))
    shutil.copy(greeter, os.path.join(plugins, "greeter", "appd-plugin-greeter"))
    sock = os.path.join(work, "appd.sock")
    http_port, console_port = free_port(), free_port()
    log = open(os.path.join(work, "appd.log"), "w")
    proc = subprocess.Popen(
        [appd, "--socket", sock, "--data-dir", os.path.join(work, "data"), "--http-listen", f"127.0.0.1:{http_port}",
         "--console-listen", f"127.0.0.1:{console_port}", "--plugin-dirs", plugins, "--plugin-sandbox", "none",
         "--http-rate-limit-per-minute", "0", "--account-calls-per-minute", "0"],
        stdout=log, stderr=log)
    env = {**os.environ, "APPD_SOCKET": sock, "HOME": work, "XDG_CONFIG_HOME": os.path.join(work, "config")}

    def ctl(*arguments, stdin=None):
        return subprocess.run([appctl, *arguments], env=env, input=stdin, capture_output=True, text=True, timeout=30)

    driver = None
    try:
        def up():
            try:
                return get(http_port, "/readyz")[0] == 200
            except OSError:
                return False
        ready = wait_for(up, 30)
        check("appd starts with the console on its own listener", ready, open(os.path.join(work, "appd.log")).read()[-2000:])
        for email in ("alice@example.com", "bob@example.com", "carol@example.com"):
            status, reply = post(http_port, "io.appd.Auth.SignUp", {"email": email, "password": PASSWORD})
            check(f"sign up {email}", status == 200, str(reply), quiet=True)
        status, signed = post(http_port, "io.appd.Auth.SignIn", {"email": "bob@example.com", "password": PASSWORD})
        bob = signed["session"]["accessToken"]
        post(http_port, "io.appd.Auth.CompleteOnboarding", {}, token=bob)
        login = ctl("login", "alice@example.com", "--password-stdin", stdin=PASSWORD + "\n")
        onboard = ctl("onboard")
        check("appctl logs alice in", login.returncode == 0 and onboard.returncode == 0, login.stderr + onboard.stderr)
        wait_for(lambda: json.loads(ctl("--json", "plugins").stdout or "{}").get("plugins") and all(
            p["state"] == "running" for p in json.loads(ctl("--json", "plugins").stdout)["plugins"]), 30)

        link = ctl("console")
        url = link.stdout.strip()
        check("appctl console prints a one-time link to the console's address", link.returncode == 0 and url.startswith(f"http://127.0.0.1:{console_port}/console/login?token="),
              link.stdout + link.stderr)

        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,800", "--disable-dev-shm-usage"):
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        driver.set_page_load_timeout(30)

        def shot(name):
            driver.save_screenshot(os.path.join(shots, name + ".png"))

        def text(css):
            try:
                return driver.find_element(By.CSS_SELECTOR, css).text
            except Exception:
                return ""

        def rows(css):
            return driver.find_elements(By.CSS_SELECTOR, css)

        def steady(condition):
            """A condition over elements the page may re-render while it is read (the lists
            refresh as answers arrive): an element gone stale means "not yet", not a failure."""
            def checked():
                try:
                    return condition()
                except StaleElementReferenceException:
                    return False
            return checked

        def settled(read, tries=50):
            """Reads elements the page may re-render meanwhile, again until a read is not stale."""
            for _ in range(tries):
                try:
                    return read()
                except StaleElementReferenceException:
                    time.sleep(0.05)
            return read()

        # Sign-in: the link sets the cookie and lands on the overview.
        driver.get(url)
        check("the link signs the browser in and lands on /console/", driver.current_url.endswith("/console/"), driver.current_url)
        cookie = driver.get_cookie("appd_console")
        check("the session cookie is HttpOnly, SameSite=Strict, Path=/console", cookie and cookie.get("httpOnly") and cookie.get("sameSite") == "Strict" and cookie.get("path") == "/console",
              str(cookie))
        builtin = ["auth", "todos", "payments", "chat", "rating", "settings", "files"]
        overview = wait_for(lambda: all(text(f'#plugins tr[data-plugin="{name}"] td.state-running') == "running" for name in builtin + ["greeter"]), 10)
        check("the overview's plugins table shows the built-in plugins and the greeter running", overview, text("#plugins"))
        check("the overview shows the version, uptime and the event log's head", "Version" in text("#daemon-facts") and "Uptime" in text("#daemon-facts")
              and "Head" in text("#event-log"), text("#daemon-facts"))
        check("the overview lists this browser's console session", wait_for(lambda: "uid 0" in text("#daemon-facts") and "Console sessions" in text("#daemon-facts"), 10),
              text("#daemon-facts"))
        shot("overview")

        # The link is spent: a second browser visit, without the cookie, is refused.
        driver.delete_all_cookies()
        driver.get(url)
        check("the link works once: opened again it is refused", "used already" in driver.page_source, driver.page_source[:300])
        status, _, body = get(console_port, "/console/")
        check("without a session /console/ shows only the signed-out page", status == 401 and b"appctl console" in body and b"<script" not in body, str(status))
        driver.get(ctl("console").stdout.strip())
        check("a new link signs the browser in again", driver.current_url.endswith("/console/"), driver.current_url)
        wait_for(lambda: text('#plugins tr[data-plugin="greeter"] td.state-running'), 10)

        # An external plugin's buttons go through io.appd.Daemon.DisablePlugin / EnablePlugin.
        driver.find_element(By.CSS_SELECTOR, 'button[aria-label="Disable greeter"]').click()
        stopped = wait_for(lambda: text('#plugins tr[data-plugin="greeter"] td:nth-child(3)') == "stopped", 15)
        check("Disable stops the greeter (the table shows it stopped)", stopped, text("#plugins"))
        state = {p["name"]: p["state"] for p in json.loads(ctl("--json", "plugins").stdout)["plugins"]}
        check("appctl sees the greeter stopped too", state.get("greeter") == "stopped", str(state))
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, 'button[aria-label="Enable greeter"]'), 10)
        driver.find_element(By.CSS_SELECTOR, 'button[aria-label="Enable greeter"]').click()
        check("Enable starts it again", wait_for(lambda: text('#plugins tr[data-plugin="greeter"] td:nth-child(3)') == "running", 20), text("#plugins"))

        # Live events: a todo added with appctl appears within a second.
        driver.get(f"http://127.0.0.1:{console_port}/console/#events")
        check("the live events page connects", wait_for(lambda: text("#events-state").startswith("Connected"), 10), text("#events-state"))
        added = ctl("todos", "add", "Water the plants")
        started = time.time()
        seen = wait_for(lambda: any("Water the plants" in r.text for r in rows('#events tbody tr[data-topic="todos.created"]')), 5, every=0.02)
        elapsed = time.time() - started
        check("a todo added with appctl appears on the live events page within a second", added.returncode == 0 and seen and elapsed < 1.0, f"{elapsed:.3f} s {added.stderr}")
        shot("events")
        # Pause: events arriving meanwhile are counted, not shown.
        driver.find_element(By.ID, "events-pause").click()
        ctl("todos", "add", "Unseen while paused")
        check("paused, a new event is counted and not shown", wait_for(lambda: "1 events not shown" in text("#events-state"), 5)
              and not settled(lambda: any("Unseen while paused" in r.text for r in rows("#events tbody tr"))), text("#events-state"))
        driver.find_element(By.ID, "events-pause").click()
        # A topic filter: only what matches.
        field = driver.find_element(By.ID, "events-topics")
        field.clear()
        field.send_keys("payments.>")
        driver.find_element(By.CSS_SELECTOR, "#events-filter button[type=submit]").click()
        wait_for(lambda: text("#events-state").startswith("Connected"), 10)
        ctl("todos", "add", "Filtered out")
        time.sleep(0.5)  # a negative: give the event time to (not) arrive
        check("a topic filter keeps other topics out", not settled(lambda: any("Filtered out" in r.text for r in rows("#events tbody tr"))), "")

        # Users: search, open, grant, disable.
        driver.get(f"http://127.0.0.1:{console_port}/console/#users")
        wait_for(lambda: rows('#users tbody tr[data-email="alice@example.com"]'), 10)
        driver.find_element(By.ID, "users-query").send_keys("BOB")
        driver.find_element(By.CSS_SELECTOR, "#users-search button").click()
        emails = lambda: settled(lambda: [r.get_attribute("data-email") for r in rows("#users tbody tr")])
        found = wait_for(lambda: emails() == ["bob@example.com"], 10)
        check("searching 'BOB' finds bob only (any case)", found, str(emails()))
        driver.find_element(By.CSS_SELECTOR, 'button[aria-label="Open bob@example.com"]').click()
        check("opening bob shows his account", wait_for(lambda: text("#user-title") == "bob@example.com", 10), text("#user-title"))
        check("bob has no identities (email and password only)", "none" in text("#user-identities"), text("#user-identities"))
        driver.find_element(By.ID, "grant-entitlement").send_keys("pro")
        driver.find_element(By.ID, "grant-days").send_keys("30")
        driver.find_element(By.ID, "grant-reason").send_keys("support ticket 42")
        driver.find_element(By.CSS_SELECTOR, "#grant-form button").click()
        # The state cell says "active" or "inactive" (which contains "active"): compare the whole cell.
        granted = wait_for(lambda: text('#user-entitlements tr[data-entitlement="pro"] td:nth-child(2)') == "active", 10)
        check("a grant appears in the user's entitlements", granted, text("#user-entitlements"))
        reply = json.loads(ctl("--json", "call", "io.appd.Payments.UserStatus", '{"email": "bob@example.com"}').stdout or "{}")
        check("appctl sees bob's grant, from the admin with the reason", any(e["name"] == "pro" and e["active"] and e["source"] == "admin" and any(h.get("reference") == "support ticket 42" for h in e.get("history", [])) for e in reply.get("entitlements", [])), str(reply))
        status, _ = post(http_port, "io.appd.Todos.List", {}, token=bob)
        check("bob's calls work before he is disabled", status == 200, str(status))
        driver.find_element(By.ID, "user-toggle").click()
        check("Disable account: the page shows him disabled", wait_for(lambda: "disabled" in text("#user-facts") and text("#user-toggle") == "Enable account", 10), text("#user-facts"))
        status, reply = post(http_port, "io.appd.Todos.List", {}, token=bob)
        check("disabling a user in the console makes their next call fail (AccountDisabled)", status == 403 and reply.get("error") == "io.appd.Auth.AccountDisabled", f"{status} {reply}")
        shot("users")
        driver.find_element(By.ID, "user-toggle").click()
        wait_for(lambda: text("#user-toggle") == "Disable account", 10)
        check("Enable account: his calls work again", post(http_port, "io.appd.Todos.List", {}, token=bob)[0] == 200, "")

        # Delete with a typed confirmation.
        query = driver.find_element(By.ID, "users-query")
        query.clear()
        query.send_keys("carol")
        driver.find_element(By.CSS_SELECTOR, "#users-search button").click()
        wait_for(lambda: rows('button[aria-label="Open carol@example.com"]'), 10)
        driver.find_element(By.CSS_SELECTOR, 'button[aria-label="Open carol@example.com"]').click()
        wait_for(lambda: text("#user-title") == "carol@example.com", 10)
        delete = driver.find_element(By.ID, "delete-user")
        driver.find_element(By.ID, "delete-confirm").send_keys("carol@example.co")
        check("Delete stays disabled until the email is typed exactly", not delete.is_enabled(), "")
        driver.find_element(By.ID, "delete-confirm").send_keys("m")
        check("typed exactly, Delete is enabled", delete.is_enabled(), "")
        delete.click()
        gone = wait_for(lambda: driver.find_element(By.ID, "user-detail").get_attribute("hidden") is not None, 10)
        status, reply = post(http_port, "io.appd.Auth.SignIn", {"email": "carol@example.com", "password": PASSWORD})
        check("deleting an account in the console deletes it (she cannot sign in)", gone and status == 401, f"{status} {reply}")

        # Metrics: calls per second and p99 per method, from the registry.
        driver.get(f"http://127.0.0.1:{console_port}/console/#metrics")
        # Calls keep coming while the page samples every 2 s: the chart gathers points.
        def charted():
            for _ in range(10):
                post(http_port, "io.appd.Todos.List", {}, token=bob)
            return [f for f in rows("#charts figure") if f.get_attribute("data-method") == "io.appd.Todos.List http"
                    and int(f.get_attribute("data-points") or 0) >= 4 and "calls/s" in f.text and "p99" in f.text]
        check("the metrics page charts calls per second and p99 per method", wait_for(steady(charted), 20, every=0.2), text("#charts"))
        shot("metrics")
        # Opened afresh, it shows the last minute at once (appd keeps it), before its own second sample.
        driver.get(f"http://127.0.0.1:{console_port}/console/#audit")
        driver.get(f"http://127.0.0.1:{console_port}/console/#metrics")
        driver.refresh()
        opened = time.time()
        at_once = wait_for(lambda: [f for f in rows("#charts figure") if f.get_attribute("data-method") == "io.appd.Todos.List http"
                                    and int(f.get_attribute("data-points") or 0) >= 3], 1.8, every=0.05)
        check("a freshly opened metrics page shows the last minute at once", bool(at_once) and time.time() - opened < 1.9, text("#charts"))

        # Audit: the console's admin calls, as the admin whose link it was.
        driver.get(f"http://127.0.0.1:{console_port}/console/#audit")
        audited = wait_for(steady(lambda: [r.text for r in rows("#audit tbody tr") if "io.appd.Auth.DisableUser" in r.text and "console" in r.text]), 10)
        check("the audit page shows the console's DisableUser as an admin call from the console session", audited, text("#audit")[:500])
        shot("audit")

        # Phone width: the overview still reads (no horizontal scroll of the page itself).
        driver.set_window_size(390, 844)
        driver.get(f"http://127.0.0.1:{console_port}/console/#overview")
        wait_for(lambda: text('#plugins tr[data-plugin="auth"]'), 10)
        width = driver.execute_script("return document.documentElement.scrollWidth")
        check("at phone width the page does not scroll sideways", width <= 390, str(width))
        shot("overview-phone")
        driver.set_window_size(1280, 800)

        # Every control has a label (by <label for>, aria-label, or its own text).
        unlabelled = driver.execute_script("""
            return [...document.querySelectorAll('input, button')].filter((e) => {
              if (e.getAttribute('aria-label') || (e.tagName === 'BUTTON' && e.textContent.trim())) return false;
              return !(e.id && document.querySelector('label[for="' + e.id + '"]'));
            }).map((e) => e.id || e.outerHTML.slice(0, 60));""")
        check("every control has a label", unlabelled == [], str(unlabelled))
        # (The spent link's 401 is the one expected failure.)
        errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE" and "favicon" not in entry["message"] and "/console/login?token=" not in entry["message"]]
        check("the browser logged no errors (no CSP violation, no script error)", errors == [], str(errors)[:500])

        # Outside the browser: CSRF, bearer tokens, the cookie on the app API, headers.
        session_cookie = driver.get_cookie("appd_console")["value"]
        cookie_header = {"Cookie": f"appd_console={session_cookie}"}
        status, reply = console_post(console_port, "/console/api/call/io.appd.Auth.DisableUser", {"email": "alice@example.com"}, cookie_header)
        check("a POST without the CSRF token is refused (403)", status == 403 and "CSRF" in reply.get("reason", ""), f"{status} {reply}")
        status, reply = console_post(console_port, "/console/api/call/io.appd.Auth.DisableUser", {"email": "alice@example.com"}, {**cookie_header, "X-Appd-Csrf": "forged"})
        check("a POST with a forged CSRF token is refused (403)", status == 403, f"{status} {reply}")
        whoami = ctl("whoami")
        check("after the refused POSTs alice is still enabled (appctl whoami works)", whoami.returncode == 0, whoami.stdout + whoami.stderr)
        for path in ("/console/", "/console/api/metrics", "/console/api/audit", "/console/console.js"):
            status, _, body = get(console_port, path, {"Authorization": f"Bearer {bob}"})
            check(f"a bearer token from SignIn gets nothing from {path} (401)", status == 401 and b"appd_console" not in body and b"appd-csrf" not in body, str(status))
        status, reply = console_post(console_port, "/console/api/call/io.appd.Daemon.Status", {}, {"Authorization": f"Bearer {bob}"})
        check("a bearer token cannot call through the console either", status == 401, f"{status} {reply}")
        status, reply = post(http_port, "io.appd.Auth.ListUsers", {}, headers=cookie_header)
        check("the console's cookie gets nothing from the app API (admin methods are not routed)", status == 404, f"{status} {reply}")
        status, reply = post(http_port, "io.appd.Todos.List", {}, headers=cookie_header)
        check("the console's cookie is no session on the app API (401)", status == 401, f"{status} {reply}")
        status, headers, _ = get(console_port, "/console/", cookie_header)
        csp = headers.get("content-security-policy", "")
        check("CSP: no inline script, no framing", "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp and headers.get("x-frame-options") == "DENY", csp)
        status, reply = console_post(console_port, "/console/api/call/io.appd.Daemon.Shutdown", {}, {**cookie_header, "X-Appd-Csrf": driver.find_element(By.CSS_SELECTOR, 'meta[name="appd-csrf"]').get_attribute("content")})
        check("a method outside the console's list is not callable (Shutdown: 404)", status == 404, f"{status} {reply}")

        # Sessions: appctl lists them and ends them; the browser is then signed out, and its open
        # event streams end with it.
        driver.get(f"http://127.0.0.1:{console_port}/console/#events")
        wait_for(lambda: text("#events-state").startswith("Connected"), 10)
        stream = http.client.HTTPConnection("127.0.0.1", console_port, timeout=10)
        stream.request("GET", "/console/api/events?topics=todos.>", headers=cookie_header)
        streamed = stream.getresponse()
        check("the console's event stream is server-sent events", streamed.status == 200 and streamed.getheader("content-type") == "text/event-stream", str(streamed.status))
        listed = json.loads(ctl("--json", "console", "sessions").stdout or "{}").get("sessions", [])
        check("appctl console sessions lists the browser's session as uid 0", len(listed) >= 1 and listed[-1]["uid"] == os.getuid(), str(listed))
        ended = ctl("console", "end", "--all")
        check("appctl console end --all ends them", ended.returncode == 0 and "ended" in ended.stdout, ended.stdout + ended.stderr)
        status, _, _ = get(console_port, "/console/api/metrics", cookie_header)
        check("an ended session's cookie gets 401", status == 401, str(status))
        started = time.time()
        try:
            while streamed.read(1):
                pass
            closed = True
        except OSError:
            closed = False
        check("an ended session's open event stream ends (within 2 s)", closed and time.time() - started < 2.5, f"{time.time() - started:.2f} s")
        stream.close()
        check("the page that was watching events says it is signed out", wait_for(lambda: "Signed out" in text("#notice"), 10), text("#notice") + " / " + text("#events-state"))
        driver.get(f"http://127.0.0.1:{console_port}/console/")
        check("the browser sees the signed-out page", "not signed in" in driver.page_source, driver.page_source[:200])
    finally:
        if driver:
            driver.quit()
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        check("appd stops cleanly", proc.returncode == 0, open(os.path.join(work, "appd.log")).read()[-1500:])
        shutil.rmtree(work, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
