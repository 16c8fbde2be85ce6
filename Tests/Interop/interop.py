#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Interop with third-party varlink clients against the real appd binary.

Usage: interop.py APPD_BINARY
Starts appd on a temporary socket, talks to it with PyPI's `varlink` (library and CLI) and
`asyncvarlink` (pipelining), and prints 'N passed, N failed'.
"""
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import asyncvarlink
import varlink
from asyncvarlink.clientprotocol import VarlinkClientProtocol
from asyncvarlink.message import VarlinkMethodCall
from asyncvarlink.util import connect_unix_varlink

from harness import check as _check, finish


def check(name, condition, detail=""):
    _check(name, condition, detail, quiet=False)


def start_appd(binary, socket_path):
    data = os.path.join(os.path.dirname(socket_path), "data")
    proc = subprocess.Popen([binary, "--socket", socket_path, "--data-dir", data, "--log-level", "warning"], stderr=subprocess.PIPE)
    deadline = time.time() + 10
    while time.time() < deadline:
        if os.path.exists(socket_path):
            try:
                varlink.Client(address="unix:" + socket_path).get_interfaces()
                return proc
            except Exception:
                pass
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("appd did not start")


def sync_client_checks(address):
    client = varlink.Client(address=address)
    interfaces = client.get_interfaces()
    check("GetInfo lists the interfaces", set(["io.appd.Daemon", "io.appd.Bus", "org.varlink.service"]) <= set(interfaces), interfaces)
    for name in interfaces:
        try:
            client.get_interface(name)  # fetched and parsed by the Python parser
            check(f"Python parser accepts {name}", True)
        except Exception as error:
            check(f"Python parser accepts {name}", False, repr(error))
    with client.open("io.appd.Daemon") as daemon:
        daemon.Ping()
        check("a normal call (Ping)", True)
        status = daemon.Status()
        check("Status has version and pid", "version" in status and "pid" in status, status)
    # An error reply with its parameters, on a raw connection so the client cannot pre-validate.
    with client.open("org.varlink.service") as service:
        try:
            service.GetInterfaceDescription("no.such.interface")
            check("an error reply raises", False, "no error")
        except varlink.VarlinkError as error:
            check("an error reply raises", error.error() == "org.varlink.service.InterfaceNotFound", error.error())
            check("the error carries its parameters", error.parameters().get("interface") == "no.such.interface", error.parameters())
    # Oneway: no reply; the connection stays usable for the next call.
    with client.open("io.appd.Daemon") as daemon:
        daemon.Ping(_oneway=True)
        daemon.Ping()
        check("a oneway call, then a normal call", True)
    # Streaming: subscribe, publish from another connection, read the event.
    received = []

    def subscriber():
        with client.open("io.appd.Bus") as bus:
            for reply in bus.Subscribe(["interop.*"], None, _more=True):
                received.append(reply)
                break

    thread = threading.Thread(target=subscriber, daemon=True)
    thread.start()
    deadline = time.time() + 10
    while time.time() < deadline and not received:
        with client.open("io.appd.Bus") as bus:
            bus.Publish("interop.hello", {"n": 1})
        time.sleep(0.1)
    thread.join(timeout=5)
    check("a streaming call (Subscribe) delivers events", bool(received) and received[0]["topic"] == "interop.hello", received)


def auth_checks(address):
    """Python signs up, authenticates its connection, and calls a protected method."""
    client = varlink.Client(address=address)
    with client.open("io.appd.Auth") as auth:
        try:
            auth.WhoAmI()
            check("a protected method without a session is refused", False, "no error")
        except varlink.VarlinkError as error:
            check("a protected method without a session is refused", error.error() == "io.appd.Auth.Unauthenticated", error.error())
        auth.SignUp("py@example.com", "python password", "Py")
        session = auth.SignIn("py@example.com", "python password")["session"]
        check("SignIn returns tokens", len(session["accessToken"]) == 43 and len(session["refreshToken"]) == 43, session.keys())
        auth.Authenticate(session["accessToken"])
        me = auth.WhoAmI()["user"]
        check("after Authenticate the connection is signed in", me["email"] == "py@example.com" and me["displayName"] == "Py", me)
        try:
            auth.SignIn("py@example.com", "wrong password")
            check("a wrong password is InvalidCredentials", False, "no error")
        except varlink.VarlinkError as error:
            check("a wrong password is InvalidCredentials", error.error() == "io.appd.Auth.InvalidCredentials", error.error())


def appctl_tty_login_check(appctl, socket_path):
    """appctl login prompts on a terminal and does not echo the password."""
    import pty
    import select
    env = dict(os.environ, XDG_CONFIG_HOME=tempfile.mkdtemp())
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(appctl, [appctl, "--socket", socket_path, "login", "py@example.com"], env)
    out = b""

    def read_for(seconds):
        nonlocal out
        end = time.time() + seconds
        while time.time() < end:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    out += os.read(fd, 1024)
                except OSError:
                    return

    read_for(1.0)
    os.write(fd, b"python password\n")
    read_for(3.0)
    _, status = os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    check("appctl login prompts on a TTY", "Password for py@example.com:" in text, text)
    check("appctl login does not echo the password", "python password" not in text, text)
    check("appctl login signs in", os.waitstatus_to_exitcode(status) == 0 and "signed in as py@example.com" in text, text)


def cli_checks(address):
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "varlink.cli", *args], capture_output=True, text=True, timeout=30)

    info = cli("info", address)
    check("varlink.cli info", info.returncode == 0 and "io.appd.Daemon" in info.stdout, info.stdout + info.stderr)
    status = cli("call", address + "/io.appd.Daemon.Status", "{}")
    try:
        check("varlink.cli call Status", "version" in json.loads(status.stdout), status.stdout)
    except ValueError:
        check("varlink.cli call Status", False, status.stdout + status.stderr)
    helptext = cli("help", address + "/io.appd.Bus")
    check("varlink.cli help prints the IDL", "interface io.appd.Bus" in helptext.stdout, helptext.stdout + helptext.stderr)
    bad = cli("call", address + "/io.appd.Daemon.Ping", '{"bogus": 1}')
    check("varlink.cli shows InvalidParameter", "InvalidParameter" in bad.stdout + bad.stderr, bad.stdout + bad.stderr)


async def pipelining_checks(socket_path):
    transport, protocol = await connect_unix_varlink(VarlinkClientProtocol, socket_path)
    try:
        calls = [
            protocol.call(VarlinkMethodCall("org.varlink.service.GetInterfaceDescription", {"interface": name}))
            for name in ["io.appd.Daemon", "io.appd.Bus", "org.varlink.service"] * 20
        ]
        results = await asyncio.wait_for(asyncio.gather(*calls), timeout=20)
        names = [json.dumps(r[0].parameters["description"]).split("interface ")[1].split("\\n")[0] for r in results]
        expected = ["io.appd.Daemon", "io.appd.Bus", "org.varlink.service"] * 20
        check("asyncvarlink: 60 pipelined calls answered in order", names == expected, names[:6])
        await protocol.call(VarlinkMethodCall("io.appd.Daemon.Ping", {}, oneway=True))
        reply = await asyncio.wait_for(protocol.call(VarlinkMethodCall("io.appd.Daemon.Ping", {})), timeout=10)
        check("asyncvarlink: oneway then a call", reply[0].parameters == {}, reply)
        replies = []
        async for result in protocol.call_more(VarlinkMethodCall("io.appd.Daemon.Ping", {}, more=True)):
            replies.append(result[0])
        check("asyncvarlink: 'more' on a single-reply method ends after one reply", len(replies) == 1 and not replies[0].continues, replies)
    finally:
        transport.close()


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as directory:
        socket_path = os.path.join(directory, "appd.sock")
        proc = start_appd(binary, socket_path)
        try:
            address = "unix:" + socket_path
            sync_client_checks(address)
            auth_checks(address)
            appctl_tty_login_check(os.path.join(os.path.dirname(binary), "appctl"), socket_path)
            cli_checks(address)
            asyncio.run(pipelining_checks(socket_path))
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=20)
            check("appd exits 0 on SIGTERM", code == 0, code)
    finish()


if __name__ == "__main__":
    main()
