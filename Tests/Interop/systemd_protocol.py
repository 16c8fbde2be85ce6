#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The systemd service protocol against the real appd: sd_notify (READY=1 only once it serves,
STATUS=, STOPPING=1, WATCHDOG=1) and socket activation (LISTEN_FDS/LISTEN_PID).

Usage: systemd_protocol.py APPD_BINARY
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

from harness import check as _check, finish


def check(name, condition, detail=""):
    _check(name, condition, detail, quiet=False)


def ping(path):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(path)
    s.sendall(b'{"method":"io.appd.Daemon.Ping"}\0')
    data = b""
    while not data.endswith(b"\0"):
        data += s.recv(4096)
    s.close()
    return json.loads(data[:-1])


def receive_all(notify, seconds):
    messages = []
    notify.settimeout(0.1)
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            messages.append(notify.recv(4096).decode())
        except socket.timeout:
            pass
    return messages


def notify_checks(binary, directory):
    notify_path = os.path.join(directory, "notify.sock")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    sock_path = os.path.join(directory, "appd.sock")
    env = dict(os.environ, NOTIFY_SOCKET=notify_path, WATCHDOG_USEC="200000", WATCHDOG_PID="")
    env.pop("WATCHDOG_PID")
    proc = subprocess.Popen([binary, "--socket", sock_path, "--data-dir", os.path.join(directory, "data")], env=env, stderr=subprocess.DEVNULL)
    notify.settimeout(15)
    first = notify.recv(4096).decode()
    check("READY=1 is sent", "READY=1" in first, first)
    check("READY=1 carries a STATUS=", "STATUS=serving on " + sock_path in first, first)
    check("when READY=1 arrives the socket already answers", ping(sock_path).get("error") is None)
    later = receive_all(notify, 0.6)
    check("WATCHDOG=1 pings at half the interval", sum("WATCHDOG=1" in m for m in later) >= 3, later)
    proc.send_signal(signal.SIGTERM)
    end = receive_all(notify, 1.0)
    check("STOPPING=1 is sent on SIGTERM", any("STOPPING=1" in m for m in end), end)
    check("appd exits 0", proc.wait(timeout=20) == 0)
    notify.close()


def activation_checks(binary, directory):
    sock_path = os.path.join(directory, "activated.sock")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(sock_path)
    listener.listen(16)
    os.chmod(sock_path, 0o660)
    fd = listener.fileno()
    # systemd puts the socket at fd 3 and sets LISTEN_PID to the service's own pid.
    script = f'exec 3<&{fd}; LISTEN_PID=$$ LISTEN_FDS=1 LISTEN_FDNAMES=varlink exec "$0" "$@"'
    proc = subprocess.Popen(
        ["sh", "-c", script, binary, "--socket", sock_path, "--data-dir", os.path.join(directory, "data2")],
        pass_fds=(fd,), stderr=subprocess.DEVNULL)
    reply = None
    deadline = time.time() + 15
    while time.time() < deadline and reply is None:
        try:
            reply = ping(sock_path)
        except OSError:
            time.sleep(0.05)
    check("an activated appd serves the socket it was given", reply is not None and reply.get("error") is None, reply)
    check("it keeps the socket's mode (it did not bind a new one)", oct(os.stat(sock_path).st_mode & 0o777) == "0o660")
    proc.send_signal(signal.SIGTERM)
    check("an activated appd exits 0", proc.wait(timeout=20) == 0)
    check("it leaves systemd's socket file in place", os.path.exists(sock_path))
    listener.close()


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as directory:
        notify_checks(binary, directory)
        activation_checks(binary, directory)
    finish()


if __name__ == "__main__":
    main()
