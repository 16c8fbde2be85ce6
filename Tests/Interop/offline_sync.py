#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Offline clients against the real appd over HTTP (issue 32): a reply lost after the request
was read, then a retry with the same Idempotency-Key (one todo, the same reply); 20 concurrent
requests with one key (one effect); the same key with another body (422); two devices updating
one todo from the same version (one 200, one 412 with the todo as it stands); a device away
while todos are added, edited and deleted, caught up by Changes (tombstones included) and then
by an SSE subscription from its cursor; the example client contrib/clients/offline_todos.py
(two devices, one offline, a lost reply, a conflict); and SIGKILL of appd at random moments among keyed
writes in flight, 20 cycles: after each restart every key retried returns its first reply and
every acknowledged write exists exactly once. With a PostgreSQL URL, two appd instances share
one schema and the same key sent through both at once has one effect.

Usage: offline_sync.py APPD_BINARY [POSTGRES_URL]
"""
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
import uuid

from harness import check, finish, free_port

PASSWORD = "correct horse battery staple"


class Appd:
    def __init__(self, binary, directory, name="a", database=None):
        self.binary, self.directory, self.database = binary, directory, database
        self.sock = os.path.join(directory, f"{name}.sock")
        self.data = os.path.join(directory, "data")
        self.port = free_port()
        self.log_path = os.path.join(directory, f"{name}.log")
        self.proc = None
        self.start()

    def start(self):
        env = dict(os.environ)
        if self.database:
            env["APPD_DATABASE"] = self.database
        self.proc = subprocess.Popen(
            [self.binary, "--socket", self.sock, "--data-dir", self.data, "--log-level", "warning",
             "--http-listen", f"127.0.0.1:{self.port}", "--http-rate-limit-per-minute", "0", "--account-calls-per-minute", "0"],
            env=env, stderr=open(self.log_path, "a"))
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.02)
        raise SystemExit("appd did not start: " + open(self.log_path).read()[-2000:])

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)

    def call(self, method, body, token=None, headers=None, timeout=30):
        """(status, headers, reply) of one POST /v1/<interface>/<Method>."""
        interface, name = method.rsplit(".", 1)
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        sent = {"Content-Type": "application/json", **(headers or {})}
        if token:
            sent["Authorization"] = f"Bearer {token}"
        conn.request("POST", f"/v1/{interface}/{name}", json.dumps(body), sent)
        response = conn.getresponse()
        data = response.read()
        conn.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, json.loads(data) if data else {}

    def user(self, email):
        """A signed-up, onboarded account's access token."""
        status, _, reply = self.call("io.appd.Auth.SignUp", {"email": email, "password": PASSWORD})
        if status != 200 or "session" not in reply:
            raise SystemExit(f"SignUp failed: {status} {reply}")
        token = reply["session"]["accessToken"]
        self.call("io.appd.Auth.CompleteOnboarding", {}, token)
        return token

    def todos(self, token):
        """Every todo of the account (List, page by page)."""
        todos, cursor = [], None
        while True:
            status, _, reply = self.call("io.appd.Todos.List", {"limit": 500, **({"cursor": cursor} if cursor else {})}, token)
            if status != 200:
                return None
            todos += reply["todos"]
            cursor = reply.get("nextCursor")
            if not cursor:
                return todos


def keyed_add(appd, token, key, title, timeout=30):
    return appd.call("io.appd.Todos.Add", {"title": title}, token, {"Idempotency-Key": key}, timeout=timeout)


def eventually(condition, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def lost_reply(appd, token):
    key = str(uuid.uuid4())
    body = json.dumps({"title": "sent from a train"})
    s = socket.create_connection(("127.0.0.1", appd.port))
    s.sendall((f"POST /v1/io.appd.Todos/Add HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer {token}\r\n"
               f"Idempotency-Key: {key}\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode())
    s.close()  # the reply is lost
    check("lost reply: the write happened once the server read it", eventually(lambda: len(appd.todos(token) or []) == 1))
    status, headers, reply = keyed_add(appd, token, key, "sent from a train")
    again = keyed_add(appd, token, key, "sent from a train")[2]
    check("lost reply: the retry gets the todo, with its ETag", status == 200 and reply["todo"]["title"] == "sent from a train" and headers.get("etag") == '"1"', f"{status} {reply} {headers}")
    check("lost reply: every retry gets the same reply", again == reply, f"{again} {reply}")
    check("lost reply: one todo exists", len(appd.todos(token)) == 1)


def concurrent_key(appd, token):
    key = str(uuid.uuid4())
    results = []
    barrier = threading.Barrier(20)

    def send():
        barrier.wait()
        results.append(keyed_add(appd, token, key, "exactly once"))

    threads = [threading.Thread(target=send) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = [r for r in results if r[0] == 200]
    in_use = [r for r in results if r[0] == 409 and r[2].get("error") == "io.appd.Bus.IdempotencyKeyInUse"]
    check("20 requests with one key: each got the reply or 409 in use", len(ok) + len(in_use) == 20 and ok, [r[0] for r in results])
    check("20 requests with one key: every 409 says when to retry", all("retry-after" in r[1] for r in in_use))
    check("20 requests with one key: one reply", len({json.dumps(r[2], sort_keys=True) for r in ok}) == 1)
    check("20 requests with one key: one effect", sum(t["title"] == "exactly once" for t in appd.todos(token)) == 1)
    status, _, reply = keyed_add(appd, token, key, "something else")
    check("the same key with another body: 422", status == 422 and reply.get("error") == "io.appd.Bus.IdempotencyKeyReused", f"{status} {reply}")
    status, _, reply = appd.call("io.appd.Todos.List", {}, token, {"Idempotency-Key": key})
    check("a key on a method that changes nothing: 400, named", status == 400 and reply.get("error") == "io.appd.Bus.IdempotencyNotSupported", f"{status} {reply}")
    status, _, reply = keyed_add(appd, token, "", "x")
    status2, _, reply2 = keyed_add(appd, token, "k" * 256, "x")
    check("an empty or overlong key: 400 InvalidIdempotencyKey",
          (status, reply.get("error"), status2, reply2.get("error")) == (400, "io.appd.Bus.InvalidIdempotencyKey", 400, "io.appd.Bus.InvalidIdempotencyKey"), f"{status} {reply} {status2} {reply2}")


def two_devices(appd, token):
    status, headers, reply = appd.call("io.appd.Todos.Add", {"title": "shared"}, token)
    todo_id, etag = reply["todo"]["id"], headers.get("etag")
    phone = appd.call("io.appd.Todos.Update", {"id": todo_id, "title": "from the phone"}, token, {"If-Match": etag})
    tablet = appd.call("io.appd.Todos.Update", {"id": todo_id, "title": "from the tablet"}, token, {"If-Match": etag})
    check("two devices from one version: the first wins with the next ETag", phone[0] == 200 and phone[1].get("etag") == '"2"', phone)
    check("two devices from one version: the second gets 412 with the todo as it stands",
          tablet[0] == 412 and tablet[2].get("error") == "io.appd.Todos.Conflict" and tablet[2]["parameters"]["todo"] == phone[2]["todo"], tablet)
    status, _, reply = appd.call("io.appd.Todos.Update", {"id": todo_id, "title": "x"}, token, {"If-Match": "W/\"2\""})
    check("a weak or malformed If-Match: 400", status == 400, f"{status} {reply}")
    status, _, reply = appd.call("io.appd.Todos.Get", {"id": todo_id}, token, {"If-Match": '"2"'})
    check("If-Match on a method that takes no version: 400", status == 400, f"{status} {reply}")
    status, _, _ = appd.call("io.appd.Todos.Delete", {"id": todo_id}, token, {"If-Match": '"2"'})
    check("a delete at the version seen: done", status == 200)


def pull(appd, token, cursor=None, limit=3):
    """Pulls until caught up; (changes applied to a dict, cursor)."""
    seen = {}
    while True:
        body = {"limit": limit}
        if cursor is not None:
            body["cursor"] = cursor
        status, _, page = appd.call("io.appd.Todos.Changes", body, token)
        if status != 200:
            return None, status, page
        for change in page["changes"]:
            seen[change["id"]] = None if change["deleted"] else change["todo"]
        cursor = page["nextCursor"]
        if not page["more"]:
            return seen, cursor, page


def catch_up_then_subscribe(appd, token):
    local = {t["id"]: t for t in appd.todos(token)}
    first, cursor, _ = pull(appd, token)
    check("a first pull returns every todo", first == local, f"{first} {local}")
    ids = [appd.call("io.appd.Todos.Add", {"title": f"while away {i}"}, token)[2]["todo"]["id"] for i in range(4)]
    appd.call("io.appd.Todos.Update", {"id": ids[0], "notes": "edited"}, token)
    appd.call("io.appd.Todos.Complete", {"id": ids[1]}, token)
    appd.call("io.appd.Todos.Delete", {"id": ids[2]}, token)
    gone = next(iter(local), None)
    if gone:
        appd.call("io.appd.Todos.Delete", {"id": gone}, token)
    changes, new_cursor, _ = pull(appd, token, cursor)
    for todo_id, todo in changes.items():
        if todo is None:
            local.pop(todo_id, None)
        else:
            local[todo_id] = todo
    server = {t["id"]: t for t in appd.todos(token)}
    check("a device that was away catches up exactly, deletions included", local == server, f"{sorted(local)} {sorted(server)}")
    check("the pull names the deletions as tombstones", changes.get(ids[2], "missing") is None and (gone is None or changes.get(gone, "missing") is None))
    # Written after the pull, before subscribing: the subscription from the cursor replays it.
    later = appd.call("io.appd.Todos.Add", {"title": "between pull and subscribe"}, token)[2]["todo"]["id"]
    conn = http.client.HTTPConnection("127.0.0.1", appd.port, timeout=10)
    conn.request("POST", "/v1/io.appd.Bus/Subscribe", json.dumps({"topics": ["todos.*"]}),
                 {"Content-Type": "application/json", "Accept": "text/event-stream", "Authorization": f"Bearer {token}", "Last-Event-ID": str(new_cursor)})
    response = conn.getresponse()
    line, event = b"", None
    deadline = time.time() + 10
    while time.time() < deadline and event is None:
        line = response.fp.readline()
        if line.startswith(b"data: "):
            event = json.loads(line[6:])
    conn.close()
    check("pull then subscribe from the cursor: the write in between arrives first, once",
          event is not None and event["topic"] == "todos.created" and event["payload"]["todoId"] == later and event["seq"] > new_cursor, event)
    status, _, reply = appd.call("io.appd.Todos.Changes", {"cursor": -5}, token)
    check("a cursor the feed cannot serve is answered, not crashed on", status in (200, 410), f"{status} {reply}")


def kill_cycles(binary, cycles):
    """Keyed writes in flight, SIGKILL at a random moment, restart, retry every key."""
    with tempfile.TemporaryDirectory() as directory:
        appd = Appd(binary, directory)
        token = appd.user("crash@example.com")
        first_reply = {}  # key -> reply seen before any kill
        sent = []  # every key ever sent (acknowledged or not)
        lock = threading.Lock()
        for cycle in range(cycles):
            stop = threading.Event()

            def writer(n):
                i = 0
                while not stop.is_set():
                    key = f"c{cycle}-w{n}-{i}"
                    i += 1
                    with lock:
                        sent.append(key)
                    try:
                        status, _, reply = keyed_add(appd, token, key, key, timeout=5)
                    except (OSError, http.client.HTTPException):
                        return
                    if status == 200:
                        with lock:
                            first_reply[key] = reply

            threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
            for t in threads:
                t.start()
            time.sleep(random.uniform(0.05, 0.4))
            appd.kill()
            stop.set()
            for t in threads:
                t.join()
            appd.start()
        # Every key retried after the last restart: the first reply again, and one todo per key.
        mismatched, failed = [], []
        for key in sent:
            status, _, reply = keyed_add(appd, token, key, key)
            if status != 200:
                failed.append((key, status, reply))
            elif key in first_reply and reply != first_reply[key]:
                mismatched.append(key)
        titles = [t["title"] for t in appd.todos(token)]
        acknowledged = set(first_reply)
        check(f"kill -9 x{cycles}: {len(acknowledged)} acknowledged of {len(sent)} keyed writes", len(acknowledged) > cycles)
        check("kill -9: every retried key succeeds", not failed, failed[:3])
        check("kill -9: every acknowledged key returns its original reply", not mismatched, mismatched[:5])
        check("kill -9: every key's write exists exactly once", sorted(titles) == sorted(set(sent)),
              f"{len(titles)} todos for {len(set(sent))} keys; duplicates: {[t for t in set(titles) if titles.count(t) > 1][:5]}")
        appd.stop()


def two_instances(binary, server):
    schema = f"appd_offline_{os.getpid()}"
    subprocess.run(["psql", server, "-qAt", "-v", "ON_ERROR_STOP=1", "-c", f"CREATE SCHEMA {schema}"], check=True, capture_output=True)
    url = server + ("&" if "?" in server else "?") + f"options=-csearch_path%3D{schema}%2Cpublic"
    try:
        with tempfile.TemporaryDirectory() as directory:
            a = Appd(binary, directory, "a", url)
            b = Appd(binary, directory, "b", url)
            token = a.user("pg@example.com")
            for round_ in range(10):
                key = str(uuid.uuid4())
                results = []
                barrier = threading.Barrier(8)

                def send(appd):
                    barrier.wait()
                    results.append(keyed_add(appd, token, key, f"pg {round_}"))

                threads = [threading.Thread(target=send, args=(a if i % 2 else b,)) for i in range(8)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                ok = {json.dumps(r[2], sort_keys=True) for r in results if r[0] == 200}
                check(f"two instances, one key, round {round_}: one reply, the rest in use",
                      len(ok) == 1 and all(r[0] in (200, 409) for r in results), [(r[0], r[2].get("error")) for r in results], quiet=True)
            titles = [t["title"] for t in a.todos(token)]
            check("two PostgreSQL instances: the same key through both at once has one effect", sorted(titles) == [f"pg {i}" for i in range(10)], titles)
            a.stop()
            b.stop()
    finally:
        subprocess.run(["psql", server, "-qAt", "-c", f"DROP SCHEMA {schema} CASCADE"], capture_output=True)


def main():
    binary = sys.argv[1]
    server = sys.argv[2] if len(sys.argv) > 2 else None
    if server:
        two_instances(binary, server)
        finish()
    with tempfile.TemporaryDirectory() as directory:
        appd = Appd(binary, directory)
        lost_reply(appd, appd.user("train@example.com"))
        concurrent_key(appd, appd.user("burst@example.com"))
        two_devices(appd, appd.user("devices@example.com"))
        catch_up_then_subscribe(appd, appd.user("away@example.com"))
        example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "contrib", "clients", "offline_todos.py")
        run = subprocess.run([sys.executable, example, "--api", f"http://127.0.0.1:{appd.port}/v1", "--token", appd.user("example@example.com"), "demo"],
                             capture_output=True, text=True, timeout=120)
        check("contrib/clients/offline_todos.py: two devices, one offline, end with the server's exact state",
              run.returncode == 0 and "both devices hold the server's exact state" in run.stdout, run.stdout[-1500:] + run.stderr[-1500:])
        appd.stop()
    kill_cycles(binary, 20)
    finish()


if __name__ == "__main__":
    main()
