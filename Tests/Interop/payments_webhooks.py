#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The payments webhooks of the real appd — routes of its app-facing HTTP server
(`--http-listen`, /webhooks/<provider> beside the API) — driven with real HTTP requests (urllib
and raw sockets): signed deliveries are stored (200) and change entitlements, duplicates change
nothing, forgeries (400), oversize bodies (413), wrong methods and paths, a slow client and
concurrent identical deliveries; everything survives a restart.

Usage: payments_webhooks.py APPD_BINARY
"""
import hashlib
import hmac
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from harness import call, check, finish, free_port

SECRET = "whsec_interop_secret"
RC_SECRET = "rc-interop-secret"




LISTEN_FLAG = "--http-listen"  # webhooks are routes of the app-facing HTTP server


def start(binary, directory, port):
    sock_path = os.path.join(directory, "appd.sock")
    env = dict(os.environ, APPD_STRIPE_WEBHOOK_SECRETS=SECRET, APPD_REVENUECAT_WEBHOOK_SECRET=RC_SECRET)
    proc = subprocess.Popen(
        [binary, "--socket", sock_path, "--data-dir", os.path.join(directory, "data"), "--log-level", "error",
         LISTEN_FLAG, f"127.0.0.1:{port}", "--max-webhook-bytes", "65536"], env=env)
    deadline = time.time() + 15
    while time.time() < deadline:
        try:
            call(sock_path, "io.appd.Daemon.Ping")
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, sock_path
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("appd did not start")


def post(port, path, body, headers=None, method="POST"):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def stripe_headers(body, secret=SECRET, timestamp=None):
    t = int(timestamp if timestamp is not None else time.time())
    mac = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return {"Stripe-Signature": f"t={t},v1={mac}", "Content-Type": "application/json"}


def subscription(event_id, user, status="active", kind="customer.subscription.created"):
    return json.dumps({
        "id": event_id, "type": kind, "created": int(time.time()),
        "data": {"object": {"customer": "cus_interop", "metadata": {"userId": user}, "status": status,
                            "current_period_end": int(time.time()) + 86400 * 30,
                            "items": {"data": [{"price": {"id": "price_1", "lookup_key": "pro_monthly"}}]}}},
    }).encode()


def pro_of(sock_path, email):
    reply = call(sock_path, "io.appd.Payments.UserStatus", {"email": email})
    for entitlement in reply["parameters"]["entitlements"]:
        if entitlement["name"] == "pro":
            return entitlement
    return None


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as directory:
        port = free_port()
        proc, sock_path = start(binary, directory, port)
        try:
            user = call(sock_path, "io.appd.Auth.SignUp", {"email": "ada@example.com", "password": "interop password"})
            user_id = user["parameters"]["user"]["id"]

            body = subscription("evt_interop_1", user_id)
            status, reply = post(port, "/webhooks/stripe", body, stripe_headers(body))
            check("a signed Stripe delivery is stored (200)", status == 200 and reply == {"eventId": "evt_interop_1", "duplicate": False}, f"{status} {reply}")
            check("it grants pro", (pro_of(sock_path, "ada@example.com") or {}).get("active") is True)
            status, reply = post(port, "/webhooks/stripe", body, stripe_headers(body))
            check("the same delivery again is a duplicate (200)", status == 200 and reply.get("duplicate") is True, f"{status} {reply}")

            forged = subscription("evt_interop_2", user_id, status="canceled", kind="customer.subscription.deleted")
            status, reply = post(port, "/webhooks/stripe", forged, stripe_headers(forged, secret="whsec_attacker"))
            check("a forged signature is refused (400)", status == 400 and reply.get("error") == "io.appd.Payments.InvalidSignature", f"{status} {reply}")
            tampered_headers = stripe_headers(body)
            status, _ = post(port, "/webhooks/stripe", body.replace(b"active", b"canceled"), tampered_headers)
            check("a changed body is refused (400)", status == 400, str(status))
            status, _ = post(port, "/webhooks/stripe", forged, stripe_headers(forged, timestamp=time.time() - 301))
            check("a delivery 301 s old is refused (400)", status == 400, str(status))
            check("and pro is still active", (pro_of(sock_path, "ada@example.com") or {}).get("active") is True)

            big = b"{" + b" " * 70000 + b"}"
            status, reply = post(port, "/webhooks/stripe", big, stripe_headers(big))
            check("an oversize body is refused (413)", status == 413, f"{status} {reply}")
            status, _ = post(port, "/webhooks/stripe", None, method="GET")
            check("GET is refused (405)", status == 405, str(status))
            status, _ = post(port, "/elsewhere", b"{}", {})
            check("another path is not found (404)", status == 404, str(status))
            status, _ = post(port, "/webhooks/paypal", b"{}", {})
            check("an unknown provider is not found (404)", status == 404, str(status))
            status, _ = post(port, "/webhooks/stripe", b"not json", stripe_headers(b"not json"))
            check("a signed body that is not an event is refused (400)", status == 400, str(status))

            rc = json.dumps({"api_version": "1.0", "event": {
                "id": "rc_interop_1", "type": "INITIAL_PURCHASE", "app_user_id": "ada@example.com", "product_id": "pro_lifetime",
                "event_timestamp_ms": int(time.time() * 1000)}}).encode()
            status, _ = post(port, "/webhooks/revenuecat", rc, {"Authorization": "Bearer wrong"})
            check("RevenueCat with the wrong Authorization is refused (400)", status == 400, str(status))
            status, _ = post(port, "/webhooks/revenuecat", rc, {"Authorization": RC_SECRET})
            check("RevenueCat with the configured Authorization is stored (200)", status == 200, str(status))

            # A client that sends half a request and stalls holds only its own thread.
            slow = socket.create_connection(("127.0.0.1", port))
            slow.sendall(b"POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\n")
            body3 = subscription("evt_interop_3", user_id, kind="customer.subscription.updated")
            status, _ = post(port, "/webhooks/stripe", body3, stripe_headers(body3))
            check("a stalled client does not block other deliveries", status == 200, str(status))
            slow.close()

            # Slowloris (hardening finding 9): 80 clients each trickling a byte every second (each
            # read well inside the per-read timeout) used to take every slot, and real deliveries
            # got 503. They never starve the listener now, and none outlives the request deadline.
            trickling = []
            for _ in range(80):
                c = socket.create_connection(("127.0.0.1", port))
                c.sendall(b"POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\n")
                trickling.append(c)
            stop_trickle = threading.Event()

            def trickle():
                while not stop_trickle.is_set():
                    for c in trickling:
                        try:
                            c.sendall(b"X")
                        except OSError:
                            pass
                    stop_trickle.wait(1.0)

            trickler = threading.Thread(target=trickle, daemon=True)
            trickler.start()
            time.sleep(2.5)
            statuses = []
            for n in range(3):
                body = subscription(f"evt_interop_slow_{n}", user_id, kind="customer.subscription.updated")
                started = time.time()
                status, _ = post(port, "/webhooks/stripe", body, stripe_headers(body))
                statuses.append((status, round(time.time() - started, 2)))
            check("80 trickling clients never keep a real delivery out (200 at once)",
                  all(status == 200 and took < 2 for status, took in statuses), str(statuses))
            time.sleep(11)  # past the 10 s request deadline
            cut = 0
            for c in trickling:
                try:
                    c.settimeout(0.5)
                    data = c.recv(4096)
                    cut += 1 if data == b"" or data.startswith(b"HTTP/1.1 408") else 0
                except OSError:
                    cut += 1
            stop_trickle.set()
            for c in trickling:
                c.close()
            check("no trickling client outlives the whole-request deadline", cut == len(trickling), f"{cut} of {len(trickling)}")

            # Concurrent identical deliveries: exactly one is stored as new.
            body4 = subscription("evt_interop_4", user_id, kind="customer.subscription.updated")
            headers4 = stripe_headers(body4)
            results = []
            threads = [threading.Thread(target=lambda: results.append(post(port, "/webhooks/stripe", body4, headers4))) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            fresh = [r for r in results if r[0] == 200 and r[1].get("duplicate") is False]
            check("8 concurrent identical deliveries: all 200, exactly one new",
                  len(results) == 8 and all(r[0] == 200 for r in results) and len(fresh) == 1, str(results))
        finally:
            proc.terminate()
            proc.wait(timeout=15)
        check("appd exits 0 on SIGTERM with the listener running", proc.returncode == 0, str(proc.returncode))

        proc, sock_path = start(binary, directory, port)
        try:
            pro = pro_of(sock_path, "ada@example.com") or {}
            check("after a restart pro is still active", pro.get("active") is True, str(pro))
            status, reply = post(port, "/webhooks/stripe", body, stripe_headers(body))
            check("after a restart the first delivery is still a duplicate", status == 200 and reply.get("duplicate") is True, f"{status} {reply}")
        finally:
            proc.terminate()
            proc.wait(timeout=15)
    finish()


if __name__ == "__main__":
    main()
