#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A user's data export (io.appd.Export) with the real appd: two users with data in every
plugin (account, session, todos, a conversation with a streamed reply, an admin grant and a
metered use, rating), then each user's export holds their rows from every plugin and the
user's own events, and nothing of the other user and no secret (no password hash, token or
token digest); the admin's export by email is the same document; over HTTP too.

Usage: export.py APPD_BINARY
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from harness import call, check, finish, free_port

PASSWORD = "correct horse battery"


def stream(sock, method, parameters, token):
    """A call with more: every reply until the last."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(20)
    s.connect(sock)
    try:
        s.sendall(json.dumps({"method": "io.appd.Auth.Authenticate", "parameters": {"accessToken": token}}).encode() + b"\0")
        data = b""
        while not data.endswith(b"\0"):
            data += s.recv(65536)
        s.sendall(json.dumps({"method": method, "parameters": parameters, "more": True}).encode() + b"\0")
        replies, data = [], b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            *frames, data = data.split(b"\0")
            replies += [json.loads(f) for f in frames]
            if replies and not replies[-1].get("continues"):
                break
        return replies
    finally:
        s.close()


def populate(sock, email, title):
    call(sock, "io.appd.Auth.SignUp", {"email": email, "password": PASSWORD})
    session = call(sock, "io.appd.Auth.SignIn", {"email": email, "password": PASSWORD})["parameters"]["session"]
    token = session["accessToken"]
    call(sock, "io.appd.Auth.CompleteOnboarding", token=token)
    call(sock, "io.appd.Todos.Add", {"title": title}, token=token)
    conversation = call(sock, "io.appd.Chat.CreateConversation", {"title": f"chat of {email}"}, token=token)["parameters"]["conversation"]["id"]
    stream(sock, "io.appd.Chat.Send", {"conversationId": conversation, "text": f"hello from {email}"}, token)
    call(sock, "io.appd.Payments.Grant", {"email": email, "entitlement": "pro", "reason": f"support for {email}"})
    call(sock, "io.appd.Rating.RecordOutcome", {"appVersion": "1.0", "outcome": "shown"}, token=token)
    return session


def main():
    appd = sys.argv[1]
    root = tempfile.mkdtemp(prefix="appd-export-")
    sock, port = os.path.join(root, "appd.sock"), free_port()
    proc = subprocess.Popen([appd, "--socket", sock, "--data-dir", os.path.join(root, "data"), "--http-listen", f"127.0.0.1:{port}", "--log-level", "warning"],
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(400):
            if os.path.exists(sock):
                try:
                    if "error" not in call(sock, "io.appd.Daemon.Ping", timeout=2):
                        break
                except OSError:
                    pass
            time.sleep(0.05)
        ada = populate(sock, "ada@example.com", "ada's secret plan")
        bob = populate(sock, "bob@example.com", "bob's surprise party")
        reply = call(sock, "io.appd.Export.Mine", token=ada["accessToken"])
        export = reply.get("parameters", {}).get("export", {})
        text = json.dumps(export)
        plugins = export.get("plugins", {})
        check("the export names the user", export.get("userId") == ada["user"]["id"], str(reply)[:300])
        check("every plugin contributes its rows of the user",
              plugins.get("auth", {}).get("account", [{}])[0].get("email") == "ada@example.com"
              and len(plugins.get("auth", {}).get("sessions", [])) >= 1
              and [t["title"] for t in plugins.get("todos", {}).get("todos", [])] == ["ada's secret plan"]
              and len(plugins.get("chat", {}).get("conversations", [])) == 1 and len(plugins.get("chat", {}).get("messages", [])) >= 2
              and any(e["entitlement"] == "pro" for e in plugins.get("payments", {}).get("entitlements", []))
              and len(plugins.get("payments", {}).get("grants", [])) == 1 and len(plugins.get("payments", {}).get("meters", [])) >= 1
              and len(plugins.get("rating", {}).get("prompts", [])) == 1, json.dumps(plugins)[:1500])
        check("and the user's events", any(e["topic"] == "todos.created" for e in export.get("events", [])), str(export.get("events"))[:500])
        check("times are RFC 3339", plugins.get("todos", {}).get("todos", [{}])[0].get("created_at", "").endswith("Z"))
        others = ["bob@example.com", "bob's surprise party", bob["user"]["id"], "hello from bob"]
        check("nothing of the other user", not any(o in text for o in others), [o for o in others if o in text])
        secrets = [ada["accessToken"], ada["refreshToken"], "password_hash", "access_digest", "refresh_digest", "refresh_token", "scrypt"]
        check("no secret: no token, digest or password hash", not any(s in text for s in secrets), [s for s in secrets if s in text])
        admin = call(sock, "io.appd.Export.User", {"email": "ada@example.com"})["parameters"]["export"]
        same = lambda e: {k: v for k, v in e.items() if k != "exportedAt"}
        check("the admin's export by email is the same document", same(admin) == same(export))
        unknown = call(sock, "io.appd.Export.User", {"email": "nobody@example.com"})
        check("an unknown email is UnknownAccount", unknown.get("error") == "io.appd.Export.UnknownAccount", str(unknown))
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/io.appd.Export/Mine", data=b"{}", method="POST",
                                         headers={"Authorization": f"Bearer {bob['accessToken']}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=20) as response:
            over_http = json.load(response)["export"]
        check("over HTTP, the signed-in user's own export", over_http.get("userId") == bob["user"]["id"] and "ada@example.com" not in json.dumps(over_http))
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/io.appd.Export/User", data=b'{"email": "ada@example.com"}', method="POST",
                                         headers={"Authorization": f"Bearer {bob['accessToken']}", "Content-Type": "application/json"})
        try:
            urllib.request.urlopen(request, timeout=20)
            status = 200
        except urllib.error.HTTPError as error:
            status = error.code
        check("the admin export is not routed over HTTP", status == 404, str(status))
    finally:
        call(sock, "io.appd.Daemon.Shutdown")
        proc.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
