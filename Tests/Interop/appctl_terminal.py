#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""appctl at a terminal (a real pseudo-terminal, Python's pty): a password being set is asked
twice without echo, and two that differ change nothing; a password being checked is asked once.

Usage: appctl_terminal.py APPD_BINARY APPCTL_BINARY
"""
import os
import pty
import select
import signal
import termios
import subprocess
import sys
import tempfile
import time

from harness import call, check, finish


def converse(argv, answers, env, timeout=20):
    """Runs argv on a pty; each (prompt, line) answers `line` once `prompt` was shown. Returns
    (exit status, everything shown)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(argv[0], argv, env)
    shown = b""
    deadline = time.time() + timeout
    pending = list(answers)
    status = None
    while status is None:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the child closed its side
                chunk = b""
            shown += chunk
        # Answer once the prompt is shown and echo is off: appctl turns echo off with
        # TCSAFLUSH, which drops anything typed before.
        if pending and pending[0][0].encode() in shown.split(b"\n")[-1] and not termios.tcgetattr(fd)[3] & termios.ECHO:
            os.write(fd, pending.pop(0)[1].encode() + b"\n")
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            status = raw
            while select.select([fd], [], [], 0.05)[0]:  # what it wrote last
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                shown += chunk
        elif time.time() > deadline:
            os.kill(pid, signal.SIGKILL)  # an unanswered prompt must not hang the suite
            _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), shown.decode(errors="replace")


def main():
    appd, appctl = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as directory:
        sock = os.path.join(directory, "appd.sock")
        proc = subprocess.Popen([appd, "--socket", sock, "--data-dir", os.path.join(directory, "data"), "--log-level", "error"])
        for _ in range(500):
            if os.path.exists(sock):
                break
            time.sleep(0.02)
        env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(directory, "config"))
        try:
            status, shown = converse([appctl, "--socket", sock, "auth", "sign-up", "--email", "ada@example.com"],
                                     [("Password:", "first password"), ("Again:", "other password")], env)
            check("a new password is asked twice; two that differ are refused", status == 64 and "Again:" in shown and "differ" in shown, (status, shown))
            check("and the typed passwords are not echoed", "first password" not in shown and "other password" not in shown, shown)
            reply = call(sock, "io.appd.Auth.SignIn", {"email": "ada@example.com", "password": "first password"})
            check("nothing was created", reply.get("error") == "io.appd.Auth.InvalidCredentials", reply)
            status, shown = converse([appctl, "--socket", sock, "auth", "sign-up", "--email", "ada@example.com"],
                                     [("Password:", "first password"), ("Again:", "first password")], env)
            check("the same password twice signs up", status == 0, (status, shown))
            status, shown = converse([appctl, "--socket", sock, "auth", "sign-in", "--email", "ada@example.com"],
                                     [("Password:", "first password")], env)
            check("a password being checked is asked once", status == 0 and "Again:" not in shown, (status, shown))
        finally:
            call(sock, "io.appd.Daemon.Shutdown")
            proc.wait(timeout=30)
    finish()


if __name__ == "__main__":
    main()
