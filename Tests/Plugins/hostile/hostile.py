#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A hostile external plugin for the sandbox tests: it tries what a plugin must not be able to
do and reports what happened. Standard library only (the varlink protocol by hand, on the
socket appd passes as fd 3), so it runs with any python3 in /usr/bin.

<interface>.Probe(action, target) -> (ok, detail), where <interface> is its first argument
(io.appd.tests.Hostile when none), so that several copies can run side by side:
  read PATH      read a byte of a file
  write PATH     create a file
  connect PORT   open a TCP connection to 127.0.0.1:PORT
  pid PID        whether process PID is visible (/proc/PID exists)
  uid -          the uid it runs as (detail)
  allocate MB    allocate and touch MB MiB, and keep them
  tmpfs MB       write MB MiB into /tmp (kept)
  datafill MB    write MB MiB into its data folder, in files of 4 MiB
  datafile MB    write one file of MB MiB into its data folder
  manyfiles N    create N empty files in its data folder
  hold N         open N connections to appd's socket and keep them; detail: how many stayed open
  print TEXT     write TEXT (with \\r and \\e for CR and ESC) as a line on stderr
  admin PATH     call the admin method io.appd.Auth.ListUsers on the varlink socket PATH;
                 detail: the reply, or the error it got
"""
import json
import os
import socket
import sys
import threading
import time

NAME = sys.argv[1] if len(sys.argv) > 1 else "io.appd.tests.Hostile"
INTERFACE = """interface %s

method Probe(action: string, target: string) -> (ok: bool, detail: string)
""" % NAME
kept = []


def probe(action, target):
    try:
        if action == "read":
            with open(target, "rb") as f:
                f.read(1)
            return True, "read"
        if action == "write":
            with open(target, "w") as f:
                f.write("x")
            return True, "written"
        if action == "connect":
            with socket.create_connection(("127.0.0.1", int(target)), timeout=2):
                return True, "connected"
        if action == "pid":
            return os.path.exists("/proc/%s" % target), "pids: %d" % sum(1 for p in os.listdir("/proc") if p.isdigit())
        if action == "uid":
            return True, str(os.getuid())
        if action == "allocate":
            block = bytearray(int(target) << 20)
            for i in range(0, len(block), 4096):
                block[i] = 1
            kept.append(block)
            return True, "allocated"
        if action == "tmpfs":
            with open("/tmp/fill-%d" % len(kept), "wb") as f:
                for _ in range(int(target)):
                    f.write(b"x" * (1 << 20))
            kept.append(None)
            return True, "written"
        if action == "datafill":
            folder = os.environ.get("APPD_PLUGIN_DATA", ".")
            for n in range((int(target) + 3) // 4):
                with open(os.path.join(folder, "fill-%d" % n), "wb") as f:
                    for _ in range(4):
                        f.write(b"x" * (1 << 20))
            return True, "written"
        if action == "manyfiles":
            folder = os.path.join(os.environ.get("APPD_PLUGIN_DATA", "."), "many")
            os.makedirs(folder, exist_ok=True)
            for n in range(int(target)):
                open(os.path.join(folder, "f%d" % n), "wb").close()
            return True, "created"
        if action == "datafile":
            with open(os.path.join(os.environ.get("APPD_PLUGIN_DATA", "."), "big"), "wb") as f:
                for _ in range(int(target)):
                    f.write(b"x" * (1 << 20))
            return True, "written"
        if action == "hold":
            sockets = []
            for _ in range(int(target)):
                s = socket.socket(socket.AF_UNIX)
                s.connect(os.environ["APPD_SOCKET"])
                sockets.append(s)
            time.sleep(0.5)
            open_count = 0
            for s in sockets:
                try:
                    if s.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK) != b"":
                        open_count += 1
                except BlockingIOError:
                    open_count += 1  # nothing to read, not closed: still open
                except OSError:
                    pass
            kept.extend(sockets)
            return True, "open: %d" % open_count
        if action == "admin":
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(5)
                s.connect(target)
                s.sendall(json.dumps({"method": "io.appd.Auth.ListUsers", "parameters": {}}).encode() + b"\0")
                reply = b""
                while not reply.endswith(b"\0"):
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    reply += chunk
            answer = json.loads(reply.rstrip(b"\0") or b"{}")
            return "error" not in answer and "parameters" in answer, json.dumps(answer)[:300]
        if action == "print":
            sys.stderr.write(target.replace("\\r", "\r").replace("\\e", "\x1b") + "\n")
            sys.stderr.flush()
            return True, "printed"
        return False, "unknown action"
    except Exception as error:  # what stopped it is the answer
        return False, "%s: %s" % (type(error).__name__, error)


def answer(call):
    method = call.get("method", "")
    if method == "org.varlink.service.GetInfo":
        return {"parameters": {"vendor": "appd tests", "product": "hostile", "version": "1", "url": "", "interfaces": ["org.varlink.service", NAME]}}
    if method == "org.varlink.service.GetInterfaceDescription":
        return {"parameters": {"description": INTERFACE}}
    if method == NAME + ".Probe":
        p = call.get("parameters", {})
        ok, detail = probe(p.get("action", ""), p.get("target", ""))
        return {"parameters": {"ok": ok, "detail": detail}}
    return {"error": "org.varlink.service.MethodNotFound", "parameters": {"method": method}}


def serve(connection):
    data = b""
    with connection:
        while True:
            chunk = connection.recv(65536)
            if not chunk:
                return
            data += chunk
            while b"\0" in data:
                frame, data = data.split(b"\0", 1)
                connection.sendall(json.dumps(answer(json.loads(frame))).encode() + b"\0")


listener = socket.socket(fileno=3)
while True:
    client, _ = listener.accept()
    threading.Thread(target=serve, args=(client,), daemon=True).start()
