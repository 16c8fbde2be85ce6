#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Two real appd processes on one PostgreSQL database, each on its own socket: what must hold
across instances (docs/postgres.md), then the crash-kill cycles with two instances under load.

Usage: postgres_instances.py APPD_BINARY POSTGRES_URL [CYCLES] [CLUSTER_DIR]
(`Tests/Postgres/cluster start DIR` starts a throwaway server and prints a URL; given its DIR,
the suite also restarts the server under the instances.)
"""
import hashlib
import hmac
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from harness import call, check, exchange, finish, free_port, replay

SECRET = "whsec_instances_secret"


def psql(url, sql):
    out = subprocess.run(["psql", url, "-qAt", "-v", "ON_ERROR_STOP=1", "-c", sql], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise SystemExit(f"psql failed: {out.stderr.strip()}")
    return out.stdout.strip()


class Instance:
    def __init__(self, binary, directory, name, url):
        self.binary, self.name, self.url = binary, name, url
        self.dir = os.path.join(directory, name)
        os.makedirs(self.dir, exist_ok=True)
        self.sock = os.path.join(self.dir, "appd.sock")
        self.http = free_port()
        self.proc = None

    def start(self):
        env = dict(os.environ, APPD_STRIPE_WEBHOOK_SECRETS=SECRET, APPD_DATABASE=self.url)
        self.proc = subprocess.Popen(
            [self.binary, "--socket", self.sock, "--data-dir", os.path.join(self.dir, "data"), "--log-level", "error",
             "--http-listen", f"127.0.0.1:{self.http}",
             # Limits small enough to reach: 10 calls a second, 40 at once, settled every 0.2 s.
             "--account-calls-per-minute", "600", "--account-call-burst", "40", "--shared-limits-seconds", "0.2"], env=env)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                call(self.sock, "io.appd.Daemon.Ping")
                return self
            except OSError:
                time.sleep(0.05)
        self.proc.kill()
        raise SystemExit(f"appd {self.name} did not start")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            return self.proc.wait(timeout=30)
        return None

    def post(self, path, body, headers):
        request = urllib.request.Request(f"http://127.0.0.1:{self.http}{path}", data=body, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code


def sign_up(instance, email, password="instances password"):
    reply = call(instance.sock, "io.appd.Auth.SignUp", {"email": email, "password": password})
    return reply["parameters"]["user"]["id"]


def sign_in(instance, email, password="instances password"):
    return call(instance.sock, "io.appd.Auth.SignIn", {"email": email, "password": password})


def session(instance, email):
    """A connection on `instance` authenticated as `email`, onboarded."""
    token = sign_in(instance, email)["parameters"]["session"]["accessToken"]
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(20)
    s.connect(instance.sock)
    exchange(s, "io.appd.Auth.Authenticate", {"accessToken": token})
    exchange(s, "io.appd.Auth.CompleteOnboarding", {})
    return s, token


def send_chat(instance, token, conversation):
    """One chat Send streamed to its end; the error name, or None when it succeeded."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(20)
    s.connect(instance.sock)
    try:
        exchange(s, "io.appd.Auth.Authenticate", {"accessToken": token})
        s.sendall(json.dumps({"method": "io.appd.Chat.Send", "parameters": {"conversationId": conversation, "text": "hello"}, "more": True}).encode() + b"\0")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return "closed"
            data += chunk
            *frames, data = data.split(b"\0")
            for frame in frames:
                reply = json.loads(frame)
                if "error" in reply:
                    return reply["error"]
                if not reply.get("continues"):
                    return None
    finally:
        s.close()


def stripe(event_id, user):
    body = json.dumps({
        "id": event_id, "type": "customer.subscription.created", "created": int(time.time()),
        "data": {"object": {"customer": "cus_" + event_id, "metadata": {"userId": user}, "status": "active",
                            "current_period_end": int(time.time()) + 86400 * 30,
                            "items": {"data": [{"price": {"id": "price_1", "lookup_key": "pro_monthly"}}]}}},
    }).encode()
    t = int(time.time())
    mac = hmac.new(SECRET.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return body, {"Stripe-Signature": f"t={t},v1={mac}", "Content-Type": "application/json"}


def wait_for(condition, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def lease_holder(url, name):
    """The application_name (appd/<pid>) of the connection holding a consumer's lease."""
    return psql(url, f"""
        SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.classid::int = hashtext(current_schema())
          AND l.objid::int = hashtext('consumer.{name}')""")


def what_must_hold(a, b, url):
    # Accounts and sessions.
    sign_up(a, "ada@example.com")
    reply = sign_in(b, "ada@example.com")
    check("a user signed up on A signs in on B", "parameters" in reply, reply)
    s_b, token = session(b, "ada@example.com")
    s_a = socket.socket(socket.AF_UNIX)
    s_a.connect(a.sock)
    exchange(s_a, "io.appd.Auth.Authenticate", {"accessToken": token})
    check("B serves the session before the sign-out", "parameters" in exchange(s_b, "io.appd.Todos.List", {}))
    # A stream on B over HTTP (SSE), opened with the same session: it ends within a second of the
    # sign-out on A (the sign-out's signal reaches B when it commits; B's session cache is on).
    stream = http.client.HTTPConnection("127.0.0.1", b.http, timeout=5)
    stream.request("POST", "/v1/io.appd.Bus/Subscribe", json.dumps({"topics": ["todos.*"]}),
                   {"Content-Type": "application/json", "Accept": "text/event-stream", "Authorization": f"Bearer {token}"})
    response = stream.getresponse()
    check("B opens the user's event stream", response.status == 200, response.status)
    exchange(s_a, "io.appd.Auth.SignOut", {})
    signed_out = time.monotonic()
    after = exchange(s_b, "io.appd.Todos.List", {})
    check("a sign-out on A takes effect on B's next call", after.get("error", "").startswith("io.appd.Auth."), after)
    ending = []
    try:
        for raw in response:
            ending.append(raw.decode().rstrip("\n"))
            if ending[-1].startswith("data: ") and "io.appd.Auth." in ending[-1]:
                break
    except OSError:
        pass
    ended = time.monotonic() - signed_out
    stream.close()
    check("the stream on B opened with that session ends within a second of the sign-out on A",
          any("io.appd.Auth." in line for line in ending) and ended < 1.0, (ending[-3:], round(ended, 3)))
    s_a.close()
    s_b.close()

    # One account driving both instances for 3 s stays within its budget plus the stated slack
    # ((N - 1) x burst + N x rate x interval, docs/postgres.md), where each instance alone would
    # allow the whole budget again (about 2 x 70 here).
    sign_up(a, "limits@example.com")
    s_a, _ = session(a, "limits@example.com")
    s_b, _ = session(b, "limits@example.com")
    started, allowed, refused = time.monotonic(), 0, 0
    while time.monotonic() - started < 3:
        for s in (s_a, s_b):
            reply = exchange(s, "io.appd.Todos.List", {})
            if "error" not in reply:
                allowed += 1
            elif reply.get("error") == "io.appd.Bus.RateLimited":
                refused += 1
        time.sleep(0.004)
    elapsed = time.monotonic() - started
    budget, slack = 40 + 10 * elapsed, 40 + 2 * 10 * 0.2 + 10
    check("an account driving both instances gets its budget, not twice it (within the stated slack)",
          0.8 * budget <= allowed <= budget + slack and refused > 0, (allowed, refused, round(budget, 1), slack))
    print(f"     allowed {allowed} in {elapsed:.1f} s (budget {budget:.0f}, slack {slack:.0f}), refused {refused}")
    s_a.close()
    s_b.close()

    # Throttling counts failures from both instances: 5 free failures in all, not per instance.
    sign_up(a, "eve@example.com")
    for i in range(5):
        target = a if i % 2 == 0 else b
        call(target.sock, "io.appd.Auth.SignIn", {"email": "eve@example.com", "password": "wrong password!"})
    throttled = call(b.sock, "io.appd.Auth.SignIn", {"email": "eve@example.com", "password": "wrong password!"})
    check("sign-in throttling counts failures from both instances", throttled.get("error") == "io.appd.Auth.TooManyAttempts", throttled)

    # The paywall's free quota is exact across instances: 10 free Sends, 20 at once over A and B.
    sign_up(a, "quota@example.com")
    s, token = session(a, "quota@example.com")
    conversation = exchange(s, "io.appd.Chat.CreateConversation", {})["parameters"]["conversation"]["id"]
    s.close()
    results = []
    lock = threading.Lock()

    def send(instance):
        outcome = send_chat(instance, token, conversation)
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=send, args=(a if i % 2 == 0 else b,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    succeeded = sum(1 for r in results if r is None)
    denied = sum(1 for r in results if r == "io.appd.Payments.PaymentRequired")
    check("20 concurrent Sends over A and B with 10 free: exactly 10 succeed", succeeded == 10 and denied == 10, results)

    # A webhook delivered to A and B at once has one effect.
    user = sign_up(a, "pro@example.com")
    body, headers = stripe("evt_both", user)
    statuses = []
    posts = [threading.Thread(target=lambda i=i: statuses.append((a if i % 2 == 0 else b).post("/webhooks/stripe", body, headers))) for i in range(6)]
    for t in posts:
        t.start()
    for t in posts:
        t.join(timeout=30)
    check("every delivery of the webhook is acknowledged (200)", statuses == [200] * 6, statuses)
    stored = psql(url, "SELECT count(*) FROM payments_events WHERE event_id = 'evt_both'")
    changes = psql(url, f"SELECT count(*) FROM payments_history WHERE user_id = '{user}'")
    events = psql(url, f"SELECT count(*) FROM appd_events WHERE topic = 'payments.entitlementChanged' AND owner = '{user}'")
    check("the webhook has one effect across instances", (stored, changes, events) == ("1", "1", "1"), (stored, changes, events))

    # Expiry runs once: a grant that lapses in 2 s is expired by one instance, one change.
    call(a.sock, "io.appd.Payments.Grant", {"email": "ada@example.com", "entitlement": "pro", "reason": "trial",
                                            "expiresAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 2))})
    ada = psql(url, "SELECT id FROM auth_users WHERE email = 'ada@example.com'")
    expired = wait_for(lambda: psql(url, f"SELECT count(*) FROM payments_history WHERE user_id = '{ada}' AND change = 'expired'") != "0", 40)
    time.sleep(1.5)
    count = psql(url, f"SELECT count(*) FROM payments_history WHERE user_id = '{ada}' AND change = 'expired'")
    check("an entitlement lapsing is expired once across instances", expired and count == "1", count)

    # A durable consumer runs on one instance; when that one dies, the other takes over.
    holders = {name: lease_holder(url, name) for name in ["todos.accountDeleted", "rating.signals"]}
    check("each durable consumer is held by exactly one instance", all(h.count("\n") == 0 and h.startswith("appd/") for h in holders.values()), holders)
    return holders["todos.accountDeleted"]


def failover(a, b, url, holder):
    dead, alive = (a, b) if holder == f"appd/{a.proc.pid}" else (b, a)
    sign_up(alive, "gone@example.com")
    s, _ = session(alive, "gone@example.com")
    for i in range(3):
        exchange(s, "io.appd.Todos.Add", {"title": f"todo {i}"})
    user = psql(url, "SELECT id FROM auth_users WHERE email = 'gone@example.com'")
    dead.kill()
    reply = exchange(s, "io.appd.Auth.DeleteAccount", {"password": "instances password"})
    s.close()
    check("the survivor serves while the other is dead", "error" not in reply, reply)
    erased = wait_for(lambda: psql(url, f"SELECT count(*) FROM todos WHERE owner = '{user}'") == "0", 20)
    check("the survivor took over the todos erasure consumer and ran it", erased)
    check("the lease moved to the survivor", lease_holder(url, "todos.accountDeleted") == f"appd/{alive.proc.pid}")
    dead.start()


def kill_cycles(a, b, url, cycles):
    """SIGKILL one instance at random under load on both; every acknowledged write survives."""
    acked = {}
    lock = threading.Lock()
    errors_on_survivor = []
    for cycle in range(cycles):
        victim, survivor = random.sample([a, b], 2)
        stop = threading.Event()

        def writer(instance, tag):
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(20)
            s.connect(instance.sock)
            n = 0
            while not stop.is_set():
                n += 1
                key = f"{cycle}-{tag}-{n}"
                try:
                    reply = exchange(s, "io.appd.Bus.Publish", {"topic": "instances.write", "payload": {"key": key}, "durable": True})
                except (OSError, ValueError):
                    if instance is survivor:
                        errors_on_survivor.append((key, "connection"))
                    return
                if "error" in reply:
                    if instance is survivor:
                        errors_on_survivor.append((key, reply))
                    return
                with lock:
                    acked[key] = reply["parameters"]["seq"]
            s.close()

        threads = [threading.Thread(target=writer, args=(inst, f"{inst.name}{w}")) for inst in (a, b) for w in range(2)]
        for t in threads:
            t.start()
        time.sleep(random.uniform(0.1, 0.5))
        victim.kill()
        time.sleep(0.3)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        victim.start()
    check(f"the survivor kept serving through {cycles} kills of the other", not errors_on_survivor, errors_on_survivor[:5])
    rows = psql(url, "SELECT seq, payload FROM appd_events WHERE topic = 'instances.write' ORDER BY seq")
    stored = {}
    for line in rows.splitlines():
        seq, payload = line.split("|", 1)
        stored[json.loads(payload)["key"]] = int(seq)
    lost = [k for k, seq in acked.items() if stored.get(k) != seq]
    check(f"all {len(acked)} acknowledged writes on both instances are in the log with their sequence", not lost and len(acked) > cycles, lost[:10])

    # Each restarted instance catches up: replay from 0 gives the whole log in order, and a
    # live subscriber on one receives what is written through the other.
    for instance in (a, b):
        logged = [int(x) for x in psql(url, "SELECT seq FROM appd_events WHERE topic = 'instances.write' ORDER BY seq").split()]
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect(instance.sock)
        replies, data = replay(s, ["instances.*"], len(logged))
        seqs = [r["parameters"]["seq"] for r in replies]
        check(f"{instance.name}: Subscribe(since: 0) replays the shared log in order", seqs == logged, (len(seqs), len(logged)))
        other = b if instance is a else a
        reply = call(other.sock, "io.appd.Bus.Publish", {"topic": "instances.write", "payload": {"key": "live"}, "durable": True})
        data += s.recv(1 << 16) if not data.endswith(b"\0") else b""
        while b"\0" not in data:
            data += s.recv(1 << 16)
        live = json.loads(data.split(b"\0")[0])
        check(f"{instance.name}: a live subscriber receives what {other.name} commits", live["parameters"]["seq"] == reply["parameters"]["seq"], live)
        s.close()
    print(f"acknowledged writes: {len(acked)} over {cycles} SIGKILLs of one of two instances")


def server_restart(a, b, url, cluster):
    """The server goes away and comes back: calls fail with a typed error meanwhile (no crash),
    then both instances serve again and a subscriber that stayed connected gets what is written
    after the restart."""
    sub = socket.socket(socket.AF_UNIX)
    sub.settimeout(30)
    sub.connect(b.sock)
    sub.sendall(json.dumps({"method": "io.appd.Bus.Subscribe", "parameters": {"topics": ["restart.*"]}, "more": True}).encode() + b"\0")
    time.sleep(0.3)
    here = os.path.dirname(os.path.abspath(__file__))
    cluster_script = os.path.join(here, "..", "Postgres", "cluster")
    subprocess.run([cluster_script, "stop", cluster], check=True, capture_output=True)
    down = call(a.sock, "io.appd.Bus.Publish", {"topic": "restart.write", "payload": {"n": 0}, "durable": True})
    check("while the server is down a durable write fails with StorageFailed (io)",
          down.get("error") == "io.appd.Bus.StorageFailed" and down.get("parameters", {}).get("kind") == "io", down)
    check("both instances still answer while the server is down",
          all("error" not in call(i.sock, "io.appd.Daemon.Ping") for i in (a, b)))
    subprocess.run([cluster_script, "start", cluster], check=True, capture_output=True)
    back = wait_for(lambda: "error" not in call(a.sock, "io.appd.Bus.Publish", {"topic": "restart.write", "payload": {"n": 1}, "durable": True}), 20)
    check("after the server is back, writes succeed again", back)
    data = b""
    deadline = time.time() + 20
    while b"\0" not in data and time.time() < deadline:
        data += sub.recv(65536)
    event = json.loads(data.split(b"\0")[0]) if b"\0" in data else {}
    check("a subscriber on B that stayed connected gets what A wrote after the restart",
          event.get("parameters", {}).get("payload", {}).get("n") == 1, event)
    sub.close()


def tls_passes_through(binary, url, directory):
    """The URL's TLS settings reach libpq as they are (libpq ignores TLS on a Unix socket, so
    the check is that it reads them: a wrong sslmode stops appd at start with libpq's reason)."""
    proc = subprocess.run(
        [binary, "--socket", os.path.join(directory, "tls.sock"), "--data-dir", os.path.join(directory, "tls"), "--log-level", "error"],
        env=dict(os.environ, APPD_DATABASE=url + "&sslmode=verify-every-thing&connect_timeout=5"), capture_output=True, text=True, timeout=30)
    check("the URL's sslmode reaches libpq: a wrong one stops appd with libpq's reason",
          proc.returncode != 0 and 'invalid sslmode value: "verify-every-thing"' in proc.stderr, (proc.returncode, proc.stderr[-300:]))


def main():
    binary, server = sys.argv[1], sys.argv[2]
    cycles = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    cluster = sys.argv[4] if len(sys.argv) > 4 else None
    schema = "appd_instances_" + str(os.getpid())
    psql(server, f"CREATE SCHEMA {schema}")
    url = server + ("&" if "?" in server else "?") + f"options=-csearch_path%3D{schema}%2Cpublic"
    with tempfile.TemporaryDirectory() as directory:
        tls_passes_through(binary, url, directory)
        a = Instance(binary, directory, "A", url)
        b = Instance(binary, directory, "B", url)
        # Started together: the migrations run once (the schema lock, then the migrations lease), neither fails.
        threads = [threading.Thread(target=i.start) for i in (a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        try:
            # One row per built-in plugin: auth, todos, payments, chat, rating, settings, files.
            rows = psql(url, "SELECT count(*) FROM appd_schema")
            check("two instances started at once on a new database both serve",
                  all(i.proc.poll() is None for i in (a, b)) and rows == "7", f"{rows} plugins' schemas")
            status = call(a.sock, "io.appd.Daemon.Status")["parameters"]
            check("appctl status names the shared database", status.get("paths", {}).get("database") == url, status.get("paths"))
            holder = what_must_hold(a, b, url)
            failover(a, b, url, holder)
            kill_cycles(a, b, url, cycles)
            if cluster:
                server_restart(a, b, url, cluster)
            check("A exits 0 on SIGTERM", a.stop() == 0)
            check("B exits 0 on SIGTERM", b.stop() == 0)
        finally:
            for i in (a, b):
                if i.proc and i.proc.poll() is None:
                    i.proc.kill()
            psql(server, f"DROP SCHEMA {schema} CASCADE")
    finish()


if __name__ == "__main__":
    main()
