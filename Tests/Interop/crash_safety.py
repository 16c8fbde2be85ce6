#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Crash safety of the real appd: SIGKILL it at random moments during a stream of
acknowledged durable writes, restart it, and check that every acknowledged write and its event
are in the database and that SQLite's integrity check passes.

Usage: crash_safety.py APPD_BINARY [CYCLES]
"""
import json
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

from harness import check as _check, exchange as call, finish, replay


def check(name, condition, detail=""):
    _check(name, condition, detail, quiet=True)


def start(binary, sock_path, data_dir):
    proc = subprocess.Popen([binary, "--socket", sock_path, "--data-dir", data_dir, "--log-level", "error"])
    deadline = time.time() + 15
    while time.time() < deadline:
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(sock_path)
            call(s, "io.appd.Daemon.Ping", {})
            return proc, s
        except OSError:
            time.sleep(0.02)
    proc.kill()
    raise SystemExit("appd did not start")


def main():
    binary = sys.argv[1]
    cycles = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    acked = {}  # n -> seq
    counter = [0]
    with tempfile.TemporaryDirectory() as directory:
        sock_path = os.path.join(directory, "appd.sock")
        data_dir = os.path.join(directory, "data")
        for cycle in range(cycles):
            proc, sock = start(binary, sock_path, data_dir)
            stop = threading.Event()

            def writer():
                while not stop.is_set():
                    counter[0] += 1
                    n = counter[0]
                    try:
                        reply = call(sock, "io.appd.Bus.Publish", {"topic": "crash.write", "payload": {"n": n}, "durable": True})
                    except (OSError, ValueError):
                        return
                    if "error" in reply:
                        print("error reply", reply)
                        return
                    acked[n] = reply["parameters"]["seq"]

            thread = threading.Thread(target=writer)
            thread.start()
            time.sleep(random.uniform(0.05, 0.4))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            stop.set()
            thread.join(timeout=10)
            sock.close()
            check(f"cycle {cycle}: appd was killed", proc.returncode == -signal.SIGKILL, proc.returncode)

        database = sqlite3.connect(os.path.join(data_dir, "appd.db"))
        integrity = database.execute("PRAGMA integrity_check").fetchone()[0]
        check("PRAGMA integrity_check is ok", integrity == "ok", integrity)
        rows = {seq: json.loads(payload)["n"] for seq, payload in database.execute("SELECT seq, payload FROM appd_events WHERE topic = 'crash.write'")}
        missing = [n for n, seq in acked.items() if rows.get(seq) != n]
        check(f"all {len(acked)} acknowledged writes are in the log with their sequence", not missing, missing[:10])
        check("writes were acknowledged in every run", len(acked) > cycles, len(acked))
        database.close()

        # And the daemon starts again on what the last kill left.
        proc, sock = start(binary, sock_path, data_dir)
        sock.settimeout(10)
        replies, _ = replay(sock, ["crash.*"], len(rows))
        seqs = [r["parameters"]["seq"] for r in replies]
        check("Subscribe(since: 0) replays the whole log in order", seqs == sorted(rows), (len(seqs), len(rows)))
        sock.close()
        proc.send_signal(signal.SIGTERM)
        check("appd exits 0 on SIGTERM after the crashes", proc.wait(timeout=20) == 0)

        # Graceful shutdown under load: SIGTERM while four clients write; exit 0, nothing lost.
        proc, first = start(binary, sock_path, data_dir)
        first.close()
        graceful = {}
        lock = threading.Lock()

        def loaded_writer(worker):
            s = socket.socket(socket.AF_UNIX)
            s.connect(sock_path)
            n = 0
            while True:
                n += 1
                key = f"{worker}-{n}"
                try:
                    reply = call(s, "io.appd.Bus.Publish", {"topic": "graceful.write", "payload": {"key": key}, "durable": True})
                except (OSError, ValueError):
                    return
                if "error" in reply:
                    return
                with lock:
                    graceful[key] = reply["parameters"]["seq"]

        writers = [threading.Thread(target=loaded_writer, args=(w,)) for w in range(4)]
        for w in writers:
            w.start()
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        for w in writers:
            w.join(timeout=10)
        check("appd exits 0 on SIGTERM under load", code == 0, code)
        database = sqlite3.connect(os.path.join(data_dir, "appd.db"))
        stored = {json.loads(p)["key"]: seq for seq, p in database.execute("SELECT seq, payload FROM appd_events WHERE topic = 'graceful.write'")}
        lost = [k for k, seq in graceful.items() if stored.get(k) != seq]
        check(f"all {len(graceful)} writes acknowledged before the shutdown are stored", not lost and len(graceful) > 0, lost[:10])
        check("integrity_check ok after the graceful shutdown", database.execute("PRAGMA integrity_check").fetchone()[0] == "ok")
        database.close()
    print(f"acknowledged writes: {len(acked)} over {cycles} SIGKILLs")
    finish()


if __name__ == "__main__":
    main()
