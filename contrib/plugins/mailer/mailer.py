#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""mailer: an appd external plugin written with the PyPI varlink package.

appd starts it with its varlink socket on fd 3 (LISTEN_FDS=1, LISTEN_PID), so varlink's own
server picks the socket up. It connects back to appd (APPD_SOCKET), presents its credential
(APPD_PLUGIN_TOKEN) and subscribes to auth.userSignedUp, auth.signUpRepeated (someone signed up
with an address that has an account: sign-up does not say so, the owner is told) and
auth.passwordResetRequested and auth.emailVerificationRequested; for each it writes an RFC 5322 message into APPD_PLUGIN_DATA/Maildir (tmp/ then new/, as the
maildir convention asks) and, when APPD_MAILER_SMTP_HOST is set, sends it over SMTP (STARTTLS
by default, then AUTH when a user is set; see "SMTP" below). Outbox() lists what it wrote. Its position in appd's durable event
log is kept in APPD_PLUGIN_DATA/cursor, so sign-ups and reset requests that happen while it is
down are mailed when it is back.

No secret travels on appd's bus: a reset or verification request carries only its id. The
mailer holds the 'auth.resetTokens' and 'auth.verificationTokens' capabilities (plugin.json), so
it may ask appd to mint the one-time token with io.appd.Auth.IssueResetToken(requestId) or
IssueVerificationToken(requestId) just before it writes the message. When appd is configured
with authResetLinkTemplate, the reset token comes with a link into the app, and the message
leads with it.

SMTP (all from the environment appd passes on, listed in plugin.json; the plugin's sandbox
needs "network": true to reach the server):
  APPD_MAILER_SMTP_HOST      the server; unset: maildir only
  APPD_MAILER_SMTP_PORT      587 (465 with tls)
  APPD_MAILER_SMTP_TLS       starttls (default), tls (implicit, port 465), or none (refused
                             with a user: a password never crosses in the clear)
  APPD_MAILER_SMTP_CA        a CA file to trust instead of the system's (a private CA)
  APPD_MAILER_SMTP_USER, APPD_MAILER_SMTP_PASSWORD   AUTH, when the server wants it
A message is handed to the server after it is in the maildir and before the event's position
is saved: if the server is down or refuses it, the event is tried again (the maildir entry and
the Message-ID come from the event's id, so a retry rewrites the same entry; the server may see
a message twice only if appd stops between its accepting it and the position being saved).
"""
import email.message
import email.utils
import json
import os
import smtplib
import socket
import ssl
import sys
import threading
import time

import varlink

DATA = os.environ.get("APPD_PLUGIN_DATA", os.path.join(os.getcwd(), "data"))
MAILDIR = os.path.join(DATA, "Maildir")
CURSOR = os.path.join(DATA, "cursor")
SENDER = os.environ.get("APPD_MAILER_FROM", "appd <no-reply@localhost>")
HERE = os.path.dirname(os.path.abspath(__file__))
ADDRESS = "unix:" + os.environ.get("APPD_SOCKET", "")
TOKEN = os.environ.get("APPD_PLUGIN_TOKEN", "")
SMTP_HOST = os.environ.get("APPD_MAILER_SMTP_HOST", "")
SMTP_TLS = os.environ.get("APPD_MAILER_SMTP_TLS", "starttls")
SMTP_PORT = int(os.environ.get("APPD_MAILER_SMTP_PORT", "465" if SMTP_TLS == "tls" else "587"))
SMTP_CA = os.environ.get("APPD_MAILER_SMTP_CA") or None
SMTP_USER = os.environ.get("APPD_MAILER_SMTP_USER", "")
SMTP_PASSWORD = os.environ.get("APPD_MAILER_SMTP_PASSWORD", "")
TOPICS = ["auth.userSignedUp", "auth.signUpRepeated", "auth.passwordResetRequested", "auth.emailVerificationRequested"]
lock = threading.Lock()


def log(message):
    print(f"mailer: {message}", file=sys.stderr, flush=True)


def smtp_problem():
    """Why the SMTP settings cannot work, or None."""
    if not SMTP_HOST:
        return None
    if SMTP_TLS not in ("starttls", "tls", "none"):
        return f"APPD_MAILER_SMTP_TLS is starttls, tls or none, not {SMTP_TLS!r}"
    if SMTP_TLS == "none" and SMTP_USER:
        return "APPD_MAILER_SMTP_TLS=none with a user would send the password in the clear: use starttls or tls"
    if SMTP_USER and not SMTP_PASSWORD:
        return "APPD_MAILER_SMTP_USER is set but APPD_MAILER_SMTP_PASSWORD is not"
    return None


def send_smtp(msg):
    """Hands one message to the SMTP server; raises when it is not accepted (the event is then
    tried again). The server's certificate is verified (against APPD_MAILER_SMTP_CA if set)."""
    context = ssl.create_default_context(cafile=SMTP_CA)
    if SMTP_TLS == "tls":
        server = smtplib.SMTP_SSL(SMTP_HOST, SMTP_PORT, timeout=30, context=context)
    else:
        server = smtplib.SMTP(SMTP_HOST, SMTP_PORT, timeout=30)
    with server:
        server.ehlo()
        if SMTP_TLS == "starttls":
            server.starttls(context=context)
            server.ehlo()
        if SMTP_USER:
            server.login(SMTP_USER, SMTP_PASSWORD)
        server.send_message(msg)


def write_message(key, to, subject, body):
    """Delivers one message: into the maildir (written in tmp/, then renamed into new/), then
    over SMTP when configured. `key` (the event's id and the message's kind) names the maildir
    entry and the Message-ID, so delivering the same event again rewrites the same entry."""
    msg = email.message.EmailMessage()
    msg["From"] = SENDER
    msg["To"] = to
    msg["Subject"] = subject
    msg["Date"] = email.utils.formatdate(localtime=False)
    msg["Message-ID"] = f"<{key}@appd.local>"
    # 8bit, not quoted-printable: a long line (the token) must arrive whole and copyable.
    msg.set_content(body, cte="8bit")
    name = f"{key}.{socket.gethostname()}"
    tmp = os.path.join(MAILDIR, "tmp", name)
    with lock:
        with open(tmp, "wb") as f:
            f.write(msg.as_bytes())
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, os.path.join(MAILDIR, "new", name))
    if SMTP_HOST:
        send_smtp(msg)
        log(f"sent '{subject}' to {to} over SMTP ({SMTP_HOST}:{SMTP_PORT})")
    else:
        log(f"wrote '{subject}' to {to}")


def issue_token(method, request_id, void_error):
    """Asks appd to mint the token of a reset or verification request, on a connection of its
    own that presents the plugin credential (the event stream's connection is busy streaming).
    None when the request is no longer pending (used, expired, or the account is gone)."""
    with varlink.Client(address=ADDRESS) as client:
        connection = client.open_connection()
        try:
            client.open("io.appd.Bus", connection=connection).AuthenticatePlugin(token=TOKEN)
            return getattr(client.open("io.appd.Auth", connection=connection), method)(requestId=request_id)
        except varlink.VarlinkError as error:
            if error.error() == void_error:
                return None
            raise
        finally:
            connection.close()


def handle(event):
    topic, payload = event["topic"], event.get("payload", {})
    if event.get("redacted"):
        return  # the account was deleted: nothing to write, nobody to write to
    key = event.get("id") or f"{time.time():.6f}"
    if topic == "auth.userSignedUp":
        write_message(key, payload["email"], "Welcome", "Your account is ready. Sign in with: appctl login " + payload["email"] + "\n")
    elif topic == "auth.signUpRepeated":
        # Sign-up answered the caller as if the account were new; the owner learns of it here.
        write_message(
            key, payload["email"], "You already have an account",
            "Someone tried to create an account with this address, which already has one. If it was you, sign in:\n\n"
            "  appctl login " + payload["email"] + "\n\n"
            "or reset the password if you forgot it. If it was not you, nothing changed and you can ignore this message.\n")
    elif topic == "auth.passwordResetRequested":
        issued = issue_token("IssueResetToken", payload["requestId"], "io.appd.Auth.InvalidResetToken")
        if issued is None:
            log(f"reset request {payload['requestId']} is no longer pending; nothing to send")
            return
        token = issued["resetToken"]
        link = issued.get("resetLink")
        opening = f"If it was you, open this link to choose a new password:\n\n  {link}\n\nOr use this reset token:\n\n" if link else "If it was you, this is your reset token:\n\n"
        write_message(
            key, issued["email"], "Reset your password",
            "Someone asked to reset the password of this account. " + opening +
            f"  {token}\n\n"
            "Set a new password with it (appctl asks for it without echo):\n\n"
            f"  appctl auth reset-password --reset-token {token}\n\n"
            f"The token works once, until {issued['expiresAt']}. If it was not you, ignore this message.\n")
    elif topic == "auth.emailVerificationRequested":
        issued = issue_token("IssueVerificationToken", payload["requestId"], "io.appd.Auth.InvalidVerificationToken")
        if issued is None:
            log(f"verification request {payload['requestId']} is no longer pending; nothing to send")
            return
        token = issued["verificationToken"]
        write_message(
            key, issued["email"], "Verify your email",
            "Confirm that this address is yours with this verification token:\n\n"
            f"  {token}\n\n"
            "An app passes it to io.appd.Auth.VerifyEmail; from a terminal:\n\n"
            f"  appctl auth verify-email --verification-token {token}\n\n"
            f"The token works once, until {issued['expiresAt']}. If you did not sign up, ignore this message.\n")


def save_cursor(seq):
    with open(CURSOR + ".tmp", "w") as f:
        f.write(str(seq))
    os.rename(CURSOR + ".tmp", CURSOR)


def follow_events():
    """Subscribes through appd's socket with the plugin credential; reconnects when appd restarts.
    The cursor moves only after an event was handled, so a failure retries it."""
    while True:
        try:
            with varlink.Client(address=ADDRESS) as client, client.open("io.appd.Bus") as bus:
                bus.AuthenticatePlugin(token=TOKEN)
                if os.path.exists(CURSOR):
                    since = int(open(CURSOR).read())
                else:
                    # First run: start from now, not with a welcome for every existing account.
                    with client.open("io.appd.Daemon") as daemon:
                        since = daemon.Status()["eventLog"]["lastSeq"]
                    save_cursor(since)
                log(f"following events since {since}")
                for event in bus.Subscribe(topics=TOPICS, since=since, _more=True):
                    handle(event)
                    if event.get("seq") is not None:
                        save_cursor(event["seq"])
        except Exception as error:  # appd restarting, or not listening yet
            log(f"event stream ended ({error!r}); reconnecting")
            time.sleep(1)


service = varlink.Service(
    vendor="appd examples", product="mailer", version="1.0.0", url="https://github.com/appd/appd", interface_dir=HERE)


@service.interface("io.appd.examples.Mailer")
class Mailer:
    def Outbox(self):
        messages = []
        for name in sorted(os.listdir(os.path.join(MAILDIR, "new"))):
            path = os.path.join(MAILDIR, "new", name)
            with open(path, "rb") as f:
                msg = email.message_from_bytes(f.read())
            messages.append({"id": msg["Message-ID"], "to": msg["To"], "subject": msg["Subject"], "date": msg["Date"], "file": path})
        return {"messages": messages}


class Handler(varlink.RequestHandler):
    service = service


def main():
    problem = smtp_problem()
    if problem:
        sys.exit(f"mailer: {problem}")
    for sub in ("tmp", "new", "cur"):
        os.makedirs(os.path.join(MAILDIR, sub), mode=0o700, exist_ok=True)
    if varlink.server.get_listen_fd() is None:
        sys.exit("mailer: no socket on fd 3; appd starts this plugin (see docs/plugins.md)")
    threading.Thread(target=follow_events, daemon=True).start()
    server = varlink.ThreadingServer("unix:@unused", Handler)
    log("serving io.appd.examples.Mailer")
    server.serve_forever()


if __name__ == "__main__":
    main()
