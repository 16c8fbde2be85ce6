#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A fleet reconnecting at once after a restart: 2,000 clients connect to appd's control socket
and 2,000 to its HTTP listener in one burst, each with a timeout (Python's sockets then connect
without blocking, as most clients' do), and none is refused — the listen backlog is the
kernel's ceiling (net.core.somaxconn) by default. With `--listen-backlog 16` the same burst is
refused in part (EAGAIN on the Unix socket), which shows the check can fail.

Usage: reconnect_storm.py APPD_BINARY
"""
import errno
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile

from harness import check, finish, free_port, wait_for

CLIENTS = 2000


def start(binary, directory, *extra):
    port = free_port()
    sock = os.path.join(directory, "appd.sock")
    log = open(os.path.join(directory, "appd.log"), "a")
    proc = subprocess.Popen([binary, "--socket", sock, "--data-dir", os.path.join(directory, "data"), "--log-level", "warning",
                             "--http-listen", f"127.0.0.1:{port}", *extra], stderr=log)

    def ready():
        probe = socket.socket(socket.AF_UNIX)
        try:
            probe.connect(sock)
            return True
        except OSError:
            return False
        finally:
            probe.close()
    def http_ready():
        probe = socket.socket()
        try:
            probe.connect(("127.0.0.1", port))
            return True
        except OSError:
            return False
        finally:
            probe.close()
    # The control socket answers before the HTTP listener is bound: wait for both.
    if not wait_for(lambda: ready() and http_ready(), 30):
        raise SystemExit("appd did not start: " + open(os.path.join(directory, "appd.log")).read()[-2000:])
    return proc, sock, port


def burst(family, address):
    """Connects CLIENTS sockets as fast as possible, each with a timeout; (refused, errors)."""
    clients, refused, errors = [], 0, {}
    for _ in range(CLIENTS):
        client = socket.socket(family)
        client.settimeout(5)
        clients.append(client)
    for client in clients:
        try:
            client.connect(address)
        except OSError as error:
            refused += 1
            name = errno.errorcode.get(error.errno, str(error))
            errors[name] = errors.get(name, 0) + 1
    for client in clients:
        client.close()
    return refused, errors


def main():
    binary = sys.argv[1]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 3 * CLIENTS)), hard))
    directory = tempfile.mkdtemp(prefix="appd-storm-")
    try:
        proc, sock, port = start(binary, directory)
        try:
            refused, errors = burst(socket.AF_UNIX, sock)
            check(f"{CLIENTS} clients connecting to the control socket at once: none refused", refused == 0, f"{refused} refused: {errors}")
            refused, errors = burst(socket.AF_INET, ("127.0.0.1", port))
            check(f"{CLIENTS} clients connecting to the HTTP listener at once: none refused", refused == 0, f"{refused} refused: {errors}")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        proc, sock, port = start(binary, directory, "--listen-backlog", "16")
        try:
            refused, errors = burst(socket.AF_UNIX, sock)
            check("with --listen-backlog 16 the same burst is refused in part (the check can fail)", refused > 0, f"{refused} refused: {errors}")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
