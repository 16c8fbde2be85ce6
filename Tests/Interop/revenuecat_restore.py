#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""'Restore purchases' asking RevenueCat: the real appd against a fake of RevenueCat's REST API
(GET /v1/subscribers/{app_user_id}, Python's http.server over TLS with a certificate from a
throwaway CA, trusted through --revenuecat-ca-file). Checks: Restore asks with the secret key
for the signed-in user and applies the answer (pro from revenuecat, its expiry, renewal); the
same answer again changes nothing; a webhook newer than a snapshot wins over it, as webhooks
order among themselves; RevenueCat failing or refusing the key is ProviderUnavailable (503 over
HTTP) and changes nothing; without the key Restore only recomputes.

Usage: revenuecat_restore.py APPD_BINARY
"""
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from harness import call, check, finish, free_port

KEY = "sk_interop_secret_key"
WEBHOOK = "rc-webhook-secret"
seen = []
answer = {"status": 200, "body": {}}


class RevenueCat(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        seen.append((self.path, self.headers.get("Authorization")))
        status, body = answer["status"], json.dumps(answer["body"]).encode()
        if self.headers.get("Authorization") != f"Bearer {KEY}":
            status, body = 401, b'{"code": 7225, "message": "Invalid API key."}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def subscriber(request_ms, expires, unsubscribed=None):
    return {"request_date_ms": request_ms, "subscriber": {
        "original_app_user_id": "$RCAnonymousID:abc",
        "entitlements": {"pro": {"expires_date": expires, "product_identifier": "pro_monthly", "purchase_date": "2026-11-01T00:00:00Z"}},
        "subscriptions": {"pro_monthly": {"expires_date": expires, "unsubscribe_detected_at": unsubscribed, "store": "app_store"}}}}


def start(appd, directory, name, extra):
    sock = os.path.join(directory, name + ".sock")
    http_port = free_port()
    proc = subprocess.Popen(
        [appd, "--socket", sock, "--data-dir", os.path.join(directory, name), "--log-level", "notice",
         "--http-listen", f"127.0.0.1:{http_port}", *extra],
        env=dict(os.environ, APPD_REVENUECAT_WEBHOOK_SECRET=WEBHOOK), stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(sock)
            s.close()
            break
        except OSError:
            time.sleep(0.05)
    return proc, sock, http_port


def sign_up(sock, email):
    call(sock, "io.appd.Auth.SignUp", {"email": email, "password": "correct horse battery"})
    session = call(sock, "io.appd.Auth.SignIn", {"email": email, "password": "correct horse battery"})["parameters"]["session"]
    call(sock, "io.appd.Auth.CompleteOnboarding", token=session["accessToken"])
    return session["user"]["id"], session["accessToken"]


def pro(sock, token):
    status = call(sock, "io.appd.Payments.Status", token=token)["parameters"]
    return next((e for e in status["entitlements"] if e["name"] == "pro"), None)


def main():
    appd = sys.argv[1]
    with tempfile.TemporaryDirectory() as directory:
        cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
                        "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"], check=True, capture_output=True)
        server = ThreadingHTTPServer(("127.0.0.1", 0), RevenueCat)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        api = f"https://localhost:{server.server_address[1]}/v1"

        proc, sock, http_port = start(appd, directory, "with-key", [
            "--revenuecat-api-url", api, "--revenuecat-ca-file", cert, "--revenuecat-api-key", KEY])
        try:
            user, token = sign_up(sock, "buyer@example.com")
            now_ms = int(time.time() * 1000)
            answer.update(status=200, body=subscriber(now_ms, "2099-01-01T00:00:00Z"))
            reply = call(sock, "io.appd.Payments.Restore", token=token)
            check("Restore answers", "error" not in reply, str(reply))
            check("it asked RevenueCat for the signed-in user, with the secret key",
                  seen[-1:] == [(f"/v1/subscribers/{user}", f"Bearer {KEY}")], str(seen))
            entitlement = pro(sock, token)
            check("and applied the answer: pro, from revenuecat, until its expiry, renewing",
                  entitlement and entitlement["active"] and entitlement["source"] == "revenuecat"
                  and entitlement["expiresAt"].startswith("2099-01-01") and entitlement["willRenew"], str(entitlement))
            events = call(sock, "io.appd.Payments.UserStatus", {"email": "buyer@example.com"})
            before = json.dumps(events)
            call(sock, "io.appd.Payments.Restore", token=token)
            check("the same answer again changes nothing", json.dumps(call(sock, "io.appd.Payments.UserStatus", {"email": "buyer@example.com"})) == before)

            # A webhook newer than the snapshot wins; an older snapshot cannot bring pro back.
            webhook = {"api_version": "1.0", "event": {"id": "evt-expire-1", "type": "EXPIRATION", "app_user_id": user,
                       "event_timestamp_ms": now_ms + 1000, "product_id": "pro_monthly", "entitlement_ids": ["pro"]}}
            request = urllib.request.Request(f"http://127.0.0.1:{http_port}/webhooks/revenuecat", data=json.dumps(webhook).encode(),
                                             headers={"Authorization": WEBHOOK, "Content-Type": "application/json"}, method="POST")
            with urllib.request.urlopen(request, timeout=10) as response:
                check("RevenueCat's EXPIRATION webhook is taken", response.status == 200)
            check("pro has expired", not (pro(sock, token) or {}).get("active"), str(pro(sock, token)))
            answer.update(body=subscriber(now_ms + 500, "2099-01-01T00:00:00Z"))
            call(sock, "io.appd.Payments.Restore", token=token)
            check("a snapshot older than the webhook does not bring pro back", not (pro(sock, token) or {}).get("active"), str(pro(sock, token)))
            answer.update(body=subscriber(now_ms + 5000, "2099-01-01T00:00:00Z", unsubscribed="2026-12-01T00:00:00Z"))
            call(sock, "io.appd.Payments.Restore", token=token)
            entitlement = pro(sock, token)
            check("a newer snapshot (a repurchase) does, and says it will not renew",
                  entitlement and entitlement["active"] and not entitlement["willRenew"], str(entitlement))

            # RevenueCat failing: a typed error, nothing changed.
            before = json.dumps(pro(sock, token))
            answer.update(status=500, body={"message": "down"})
            reply = call(sock, "io.appd.Payments.Restore", token=token)
            check("RevenueCat failing is ProviderUnavailable", reply.get("error") == "io.appd.Payments.ProviderUnavailable", str(reply))
            check("and changes nothing", json.dumps(pro(sock, token)) == before)
            request = urllib.request.Request(f"http://127.0.0.1:{http_port}/v1/io.appd.Payments/Restore", data=b"{}",
                                             headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"}, method="POST")
            try:
                urllib.request.urlopen(request, timeout=10)
                status = 200
            except urllib.error.HTTPError as error:
                status = error.code
            check("over HTTP: 503", status == 503, str(status))
        finally:
            call(sock, "io.appd.Daemon.Shutdown")
            proc.communicate(timeout=30)

        # The wrong key: RevenueCat refuses, and the error says what to check.
        proc, sock, _ = start(appd, directory, "wrong-key", [
            "--revenuecat-api-url", api, "--revenuecat-ca-file", cert, "--revenuecat-api-key", "sk_not_the_right_key"])
        try:
            user, token = sign_up(sock, "other@example.com")
            answer.update(status=200, body=subscriber(int(time.time() * 1000), "2099-01-01T00:00:00Z"))
            reply = call(sock, "io.appd.Payments.Restore", token=token)
            check("a refused key is ProviderUnavailable naming revenuecatApiKey",
                  reply.get("error") == "io.appd.Payments.ProviderUnavailable" and "revenuecatApiKey" in reply["parameters"]["reason"], str(reply))
        finally:
            call(sock, "io.appd.Daemon.Shutdown")
            proc.communicate(timeout=30)

        # Without the key, Restore only recomputes (RevenueCat is not asked).
        asked = len(seen)
        proc, sock, _ = start(appd, directory, "no-key", [])
        try:
            user, token = sign_up(sock, "local@example.com")
            reply = call(sock, "io.appd.Payments.Restore", token=token)
            check("without the key Restore answers from what is stored", "error" not in reply and len(seen) == asked, str(reply))
        finally:
            call(sock, "io.appd.Daemon.Shutdown")
            proc.communicate(timeout=30)
        server.shutdown()
    finish()


if __name__ == "__main__":
    main()
