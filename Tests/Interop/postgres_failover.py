#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A PostgreSQL failover under load: a primary with a synchronous streaming standby, two real
appd instances on a multi-host URL (libpq's `target_session_attrs=read-write`), writers adding
todos with idempotency keys through both; the primary is killed with SIGKILL and the standby
promoted. What must hold (docs/postgres.md, "Failover"):

- every write acknowledged before, during or after the switch is on the promoted server, once;
- a write in flight fails with the documented retryable error (io.appd.Bus.StorageFailed, kind
  io or busy: the category `unavailable`, HTTP 503) or the connection ends, and retrying it with
  its key has its effect exactly once;
- both instances write again on the new primary without a restart; a live subscriber that stayed
  connected and a replay from 0 both see every acknowledged write.

Usage: postgres_failover.py APPD_BINARY [WORK_DIR]
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from harness import call, check, exchange, finish

BIN = sorted(d for d in os.listdir("/usr/lib/postgresql"))[-1]
PG = f"/usr/lib/postgresql/{BIN}/bin"
RETRYABLE = {"io.appd.Bus.StorageFailed"}


def as_postgres(args, **kwargs):
    if os.getuid() == 0:
        args = ["runuser", "-u", "postgres", "--"] + args
    done = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def psql(directory, port, sql, db="appd_test"):
    return as_postgres([f"{PG}/psql", "-h", directory, "-p", str(port), "-U", "postgres", "-d", db, "-qAtc", sql]).stdout.strip()


class Server:
    def __init__(self, directory, name, port):
        self.dir, self.name, self.port = directory, name, port
        self.data = os.path.join(directory, name)

    def start(self, extra=()):
        as_postgres([f"{PG}/pg_ctl", "-D", self.data, "-l", self.data + ".log", "-w", "-t", "60", "start", "-o",
                     " ".join([f"-k {self.dir}", f"-p {self.port}", "-c listen_addresses=''", "-c max_connections=200",
                               "-c synchronous_commit=on", "-c fsync=on", f"-c cluster_name={self.name}"] + list(extra))])

    def pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())


class Appd:
    def __init__(self, binary, directory, name, url):
        self.binary, self.name, self.url = binary, name, url
        self.dir = os.path.join(directory, name)
        os.makedirs(self.dir, exist_ok=True)
        self.sock = os.path.join(self.dir, "appd.sock")

    def start(self):
        self.proc = subprocess.Popen(
            [self.binary, "--socket", self.sock, "--data-dir", os.path.join(self.dir, "data"), "--log-level", "warning",
             "--account-calls-per-minute", "0"], env=dict(os.environ, APPD_DATABASE=self.url), stderr=open(self.dir + ".log", "w"))
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                call(self.sock, "io.appd.Daemon.Ping")
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit(f"appd {self.name} did not start")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


def user(instance, email):
    call(instance.sock, "io.appd.Auth.SignUp", {"email": email, "password": "failover password"})
    token = call(instance.sock, "io.appd.Auth.SignIn", {"email": email, "password": "failover password"})["parameters"]["session"]["accessToken"]
    call(instance.sock, "io.appd.Auth.CompleteOnboarding", {}, token=token)
    return token


def connect(instance, token):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(instance.sock)
    exchange(s, "io.appd.Auth.Authenticate", {"accessToken": token})
    return s


def keyed(s, title):
    return exchange(s, "io.appd.Todos.Add", {"title": title}, key=title)


def main():
    binary = sys.argv[1]
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="appd-failover-")
    # The servers' directory belongs to the postgres user (initdb refuses root); appd's are its own.
    top, work = work, os.path.join(work, "pg")
    os.makedirs(work, exist_ok=True)
    if os.getuid() == 0:
        os.chmod(top, 0o755)  # a mktemp -d directory is 0700: the postgres user must reach pg/ in it
        shutil.chown(work, "postgres")
    primary, standby = Server(work, "primary", 54341), Server(work, "standby", 54342)
    as_postgres([f"{PG}/initdb", "-D", primary.data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"])
    primary.start(["-c wal_level=replica", "-c max_wal_senders=4"])
    as_postgres([f"{PG}/createdb", "-h", work, "-p", str(primary.port), "-U", "postgres", "appd_test"])
    as_postgres([f"{PG}/pg_basebackup", "-h", work, "-p", str(primary.port), "-U", "postgres", "-D", standby.data, "-R", "-X", "stream"])
    standby.start(["-c hot_standby=on"])
    # From now on every commit waits until the standby has flushed it: what appd acknowledges is on both.
    psql(work, primary.port, "ALTER SYSTEM SET synchronous_standby_names = 'standby'", db="postgres")
    psql(work, primary.port, "SELECT pg_reload_conf()", db="postgres")
    deadline = time.time() + 30
    while time.time() < deadline and psql(work, primary.port, "SELECT sync_state FROM pg_stat_replication", db="postgres") != "sync":
        time.sleep(0.1)
    check("the standby streams synchronously from the primary",
          psql(work, primary.port, "SELECT sync_state FROM pg_stat_replication", db="postgres") == "sync")

    url = (f"host={work},{work} port={primary.port},{standby.port} dbname=appd_test user=postgres "
           "target_session_attrs=read-write connect_timeout=3")
    a, b = Appd(binary, top, "A", url), Appd(binary, top, "B", url)
    for instance in (a, b):
        instance.start()
    try:
        token = user(a, "writer@example.com")
        # A live subscriber on B that stays connected through the switch.
        live = connect(b, token)
        live.sendall(json.dumps({"method": "io.appd.Bus.Subscribe", "parameters": {"topics": ["todos.created"]}, "more": True}).encode() + b"\0")
        seen_live, live_data = [], [b""]

        def listen():
            try:
                while True:
                    chunk = live.recv(1 << 16)
                    if not chunk:
                        return
                    live_data[0] += chunk
                    *frames, live_data[0] = live_data[0].split(b"\0")
                    for frame in frames:
                        reply = json.loads(frame)
                        title = reply.get("parameters", {}).get("payload", {}).get("title")
                        if title:
                            seen_live.append(title)
            except OSError:
                return

        threading.Thread(target=listen, daemon=True).start()

        acked, errors, retried = set(), {}, set()
        lock = threading.Lock()
        stop = threading.Event()
        switched = threading.Event()

        def writer(instance, tag):
            n = 0
            s = connect(instance, token)
            while not stop.is_set():
                n += 1
                title = f"{tag}-{n}"
                deadline = time.time() + 60
                while time.time() < deadline:
                    try:
                        reply = keyed(s, title)
                    except (OSError, ValueError):
                        with lock:
                            errors["connection"] = errors.get("connection", 0) + 1
                        time.sleep(0.2)
                        s = connect(instance, token)
                        continue
                    if "error" not in reply:
                        with lock:
                            acked.add(title)
                        break
                    with lock:
                        errors[reply["error"]] = errors.get(reply["error"], 0) + 1
                        retried.add(title)
                    time.sleep(0.1)
                else:
                    with lock:
                        errors["gave up"] = errors.get("gave up", 0) + 1

        threads = [threading.Thread(target=writer, args=(inst, f"{inst.name}{w}")) for inst in (a, b) for w in range(3)]
        for t in threads:
            t.start()
        time.sleep(2)
        before = len(acked)
        # The primary dies (SIGKILL of the postmaster and its children), the standby is promoted.
        killed_at = time.monotonic()
        # As if its machine died: the postmaster first (so it restarts nothing), then every child.
        postmaster = primary.pid()
        children = [int(p) for p in subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()]
        for pid in [postmaster] + children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # a child that ended on its own meanwhile
        time.sleep(0.5)
        as_postgres([f"{PG}/pg_ctl", "-D", standby.data, "-w", "promote"])
        promoted_at = time.monotonic()
        # Writes go on once both instances reach the new primary.
        count_at_promotion = len(acked)
        resumed = False
        deadline = time.time() + 60
        while time.time() < deadline:
            if len(acked) > count_at_promotion + 20:
                resumed = True
                break
            time.sleep(0.1)
        resumed_after = time.monotonic() - promoted_at
        time.sleep(1)
        stop.set()
        for t in threads:
            t.join(timeout=90)
        print(f"acknowledged {before} writes before the kill, {len(acked)} in all; writes resumed {resumed_after:.1f} s after the promotion "
              f"({promoted_at - killed_at:.1f} s after the kill); errors seen: {errors}")
        check("writes resume on the promoted standby without restarting appd", resumed, resumed_after)
        check("every error a writer saw is the documented retryable one or the connection",
              set(errors) <= RETRYABLE | {"connection"}, errors)
        check("no writer gave up", "gave up" not in errors, errors)
        rows = psql(work, standby.port, "SELECT title, COUNT(*) FROM todos WHERE title LIKE 'A%' OR title LIKE 'B%' GROUP BY title").splitlines()
        stored = {r.split("|")[0]: int(r.split("|")[1]) for r in rows}
        lost = sorted(acked - set(stored))
        check(f"all {len(acked)} acknowledged writes are on the promoted server", not lost, lost[:10])
        check("each once, including the retried ones", all(c == 1 for c in stored.values()) and retried <= set(stored),
              [t for t, c in stored.items() if c != 1][:10])
        # The subscriber that stayed on B, and a replay from 0, see every acknowledged write.
        deadline = time.time() + 30
        while time.time() < deadline and not acked <= set(seen_live):
            time.sleep(0.2)
        check("a live subscriber that stayed connected saw every acknowledged write", acked <= set(seen_live),
              sorted(acked - set(seen_live))[:10])
        s = connect(a, token)
        s.sendall(json.dumps({"method": "io.appd.Bus.Subscribe", "parameters": {"topics": ["todos.created"], "since": 0}, "more": True}).encode() + b"\0")
        replayed, data = set(), b""
        deadline = time.time() + 30
        while time.time() < deadline and not acked <= replayed:
            data += s.recv(1 << 20)
            *frames, data = data.split(b"\0")
            for frame in frames:
                title = json.loads(frame).get("parameters", {}).get("payload", {}).get("title")
                if title:
                    replayed.add(title)
        check("a replay from 0 on A has every acknowledged write", acked <= replayed, sorted(acked - replayed)[:10])
        s.close()
        live.close()
        check("A exits 0 on SIGTERM", a.stop() == 0)
        check("B exits 0 on SIGTERM", b.stop() == 0)
    finally:
        for instance in (a, b):
            if instance.proc.poll() is None:
                instance.proc.kill()
            elif instance.proc.returncode not in (0, None):
                print(f"appd {instance.name} exited with {instance.proc.returncode}; its log: {instance.dir}.log")
        for server in (standby, primary):
            subprocess.run(["runuser", "-u", "postgres", "--", f"{PG}/pg_ctl", "-D", server.data, "-m", "immediate", "stop"] if os.getuid() == 0
                           else [f"{PG}/pg_ctl", "-D", server.data, "-m", "immediate", "stop"], capture_output=True)
    finish()


if __name__ == "__main__":
    main()
