#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The example mailer delivering over SMTP to a real SMTP server (aiosmtpd from PyPI) that
requires STARTTLS and AUTH, with a certificate from a throwaway CA the mailer is told to trust.
The mailer runs under the real appd in its sandbox (with "network": true). Checks: a sign-up's
welcome arrives over SMTP, authenticated, to the account's address; a reset message carries the
link built from authResetLinkTemplate and a token that resets the password; a message that
cannot be handed over while the server is down is delivered once it is back (nothing lost);
settings that would send a password in the clear are refused at start.

Usage: mailer_smtp.py APPD_BINARY REPO_ROOT
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from harness import call, certificates, check, finish, free_port, install_plugin, plugin_venv, wait_for

USER, PASSWORD = "mailer", "smtp secret"
received = []
logins = {}  # id(session) -> the user it authenticated as
lock = threading.Lock()


class Inbox:
    async def handle_DATA(self, server, session, envelope):
        with lock:
            received.append({
                "to": envelope.rcpt_tos, "data": envelope.content.decode("utf-8", "replace"),
                "user": logins.get(id(session)) if session.authenticated else None,
            })
        return "250 OK"


def authenticate(server, session, envelope, mechanism, auth_data):
    ok = isinstance(auth_data, LoginPassword) and auth_data.login == USER.encode() and auth_data.password == PASSWORD.encode()
    if ok:
        with lock:
            logins[id(session)] = auth_data.login.decode()
    return AuthResult(success=ok, handled=False)


def messages(subject):
    with lock:
        return [m for m in received if f"Subject: {subject}" in m["data"]]


def smtp_server(cert, key, port):
    import ssl
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    controller = Controller(
        Inbox(), hostname="127.0.0.1", port=port, tls_context=context, require_starttls=True, authenticator=authenticate,
        auth_required=True)
    controller.start()
    return controller


def start_appd(appd, directory, environment, extra=()):
    sock = os.path.join(directory, "appd.sock")
    proc = subprocess.Popen(
        [appd, "--socket", sock, "--data-dir", os.path.join(directory, "data"), "--log-level", "notice", *extra],
        stderr=subprocess.PIPE, text=True, env=environment)
    wait_for(lambda: os.path.exists(sock))
    return proc, sock


def mailer(sock):
    for plugin in call(sock, "io.appd.Daemon.Plugins")["parameters"]["plugins"]:
        if plugin["name"] == "mailer":
            return plugin
    return {}


def main():
    appd, root = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as directory:
        os.chmod(directory, 0o755)
        tls = os.path.join(directory, "tls")
        os.makedirs(tls)
        os.chmod(tls, 0o755)
        ca, cert, key = certificates(tls)
        os.chmod(ca, 0o644)
        venv = plugin_venv(directory, "varlink")
        install_plugin(root, "mailer", directory, venv, [tls])
        port = free_port()
        environment = dict(
            os.environ, PATH=os.path.join(venv, "bin") + ":/usr/bin:/bin", VIRTUAL_ENV=venv, APPD_MAILER_SMTP_HOST="127.0.0.1",
            APPD_MAILER_SMTP_PORT=str(port), APPD_MAILER_SMTP_CA=ca, APPD_MAILER_SMTP_USER=USER, APPD_MAILER_SMTP_PASSWORD=PASSWORD,
            APPD_AUTH_RESET_LINK_TEMPLATE="https://app.example.com/reset?token={token}")
        environment.pop("PYTHONPATH", None)
        server = smtp_server(cert, key, port)
        proc, sock = start_appd(appd, directory, environment)
        try:
            running = wait_for(lambda: mailer(sock).get("state") == "running")
            check("the mailer runs with SMTP settings, in its sandbox with the network", bool(running), str(mailer(sock)))
            wait_for(lambda: os.path.exists(os.path.join(directory, "data", "plugin-data", "mailer", "cursor")))

            call(sock, "io.appd.Auth.SignUp", {"email": "grace@example.com", "password": "first password"})
            welcome = wait_for(lambda: messages("Welcome"))
            check("a sign-up's welcome arrives over SMTP", bool(welcome), str(received))
            if welcome:
                check("to the account's address", welcome[0]["to"] == ["grace@example.com"], str(welcome[0]["to"]))
                check("after STARTTLS and AUTH as the configured user", welcome[0]["user"] == USER, str(welcome[0]["user"]))

            call(sock, "io.appd.Auth.RequestPasswordReset", {"email": "grace@example.com"})
            reset = wait_for(lambda: messages("Reset your password"))
            check("a reset message arrives over SMTP", bool(reset), str(received))
            body = reset[0]["data"] if reset else ""
            link = re.search(r"https://app\.example\.com/reset\?token=(\S+)", body)
            check("it leads with the link from authResetLinkTemplate", bool(link), body)
            token = link.group(1) if link else ""
            check("the link carries the same token as the message", f"reset token:\n\n  {token}\n" in body.replace("\r\n", "\n"), body)
            reply = call(sock, "io.appd.Auth.ResetPassword", {"resetToken": token, "newPassword": "second password"})
            check("the link's token resets the password", "error" not in reply, str(reply))

            # The server goes away: the next message waits, and is delivered once it is back.
            server.stop()
            call(sock, "io.appd.Auth.SignUp", {"email": "hopper@example.com", "password": "a password"})
            time.sleep(3)
            check("nothing is handed over while the server is down", not [m for m in received if "hopper@example.com" in m["to"]])
            server = smtp_server(cert, key, port)
            late = wait_for(lambda: [m for m in messages("Welcome") if m["to"] == ["hopper@example.com"]], timeout=30)
            check("a message that could not be sent is delivered when the server is back", bool(late), str(received))
        finally:
            call(sock, "io.appd.Daemon.Shutdown")
            proc.communicate(timeout=30)
            server.stop()

        # A user without TLS would send the password in the clear: the mailer refuses to start.
        shutil.rmtree(os.path.join(directory, "data", "plugin-data"), ignore_errors=True)
        os.remove(os.path.join(directory, "appd.sock")) if os.path.exists(os.path.join(directory, "appd.sock")) else None
        proc, sock = start_appd(appd, directory, dict(environment, APPD_MAILER_SMTP_TLS="none"))
        try:
            refused = wait_for(lambda: "in the clear" in (mailer(sock).get("lastError") or ""))
            check("SMTP without TLS but with a password is refused, with the reason", bool(refused), str(mailer(sock)))
        finally:
            call(sock, "io.appd.Daemon.Shutdown")
            proc.communicate(timeout=30)
    finish()


if __name__ == "__main__":
    main()
