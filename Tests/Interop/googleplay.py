#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Google Play Billing without a middleman, against the real appd: a fake of Google's side over
TLS (a throwaway CA, trusted through --google-play-ca-file) — the OAuth token endpoint, which
checks appd's RS256 assertion with the service account's public key; the published signing keys
(JWKS) for Pub/Sub push tokens; the Play Developer API (purchases.subscriptionsv2.get,
purchases.products.get, acknowledge), which checks the access token — and Pub/Sub pushes signed
RS256 like Google's, delivered to appd's /webhooks/googleplay.

Checks: a submitted purchase grants pro and is acknowledged; the same state again changes
nothing; another account's purchase is ForeignTransaction; a cancellation push keeps access
until expiry without renewal, once per message id; forged, expired, misaddressed or unsigned
pushes are refused and change nothing; a voided purchase revokes; a one-time product grants the
lifetime entitlement; Google failing is ProviderUnavailable after bounded tries; the access
token is fetched once and reused.

Usage: googleplay.py APPD_BINARY [POSTGRES_URL]  (with a URL: on PostgreSQL, in a schema of its own)
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from harness import call, check, database_env, finish, free_port, tls_server

PACKAGE = "com.example.app"
AUDIENCE = "https://appd.example.com/webhooks/googleplay"
PUSH_ACCOUNT = "play-push@example-project.iam.gserviceaccount.com"
SA_EMAIL = "appd-billing@example-project.iam.gserviceaccount.com"
ACCESS = "ya29.fake-access-token"
sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
push_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
rogue_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
state = {"token_requests": 0, "acks": [], "failing": False, "token_uri": None}
purchases = {}  # token → SubscriptionPurchaseV2 or ProductPurchase


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def rs256(claims, key, kid):
    header = b64url(json.dumps({"alg": "RS256", "kid": kid, "typ": "JWT"}).encode())
    payload = b64url(json.dumps(claims).encode())
    signature = key.sign(f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{header}.{payload}.{b64url(signature)}"


def push_token(aud=AUDIENCE, email=PUSH_ACCOUNT, key=None, kid="push-key-1", expires_in=3600):
    now = int(time.time())
    return rs256({"iss": "https://accounts.google.com", "aud": aud, "email": email, "email_verified": True, "sub": "1234",
                  "iat": now, "exp": now + expires_in}, key or push_key, kid)


def jwk(key, kid):
    numbers = key.public_key().public_numbers()
    return {"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig", "n": b64url(numbers.n.to_bytes(256, "big")),
            "e": b64url(numbers.e.to_bytes(3, "big"))}


class Google(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, status, body, headers=None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/certs":
            return self.answer(200, {"keys": [jwk(push_key, "push-key-1")]}, {"Cache-Control": "public, max-age=3600"})
        if state["failing"]:
            return self.answer(503, {"error": {"code": 503, "message": "backend error"}})
        if self.headers.get("Authorization") != f"Bearer {ACCESS}":
            return self.answer(401, {"error": {"code": 401, "message": "invalid credentials"}})
        prefix = f"/androidpublisher/v3/applications/{PACKAGE}/purchases/"
        if not self.path.startswith(prefix):
            return self.answer(404, {"error": {"code": 404}})
        token = urllib.parse.unquote(self.path.rsplit("/", 1)[-1])
        if token in purchases:
            return self.answer(200, purchases[token])
        return self.answer(404, {"error": {"code": 404, "message": "The purchase token was not found."}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.path == "/token":
            form = urllib.parse.parse_qs(body.decode())
            assertion = form.get("assertion", [""])[0]
            parts = assertion.split(".")
            try:
                sa_key.public_key().verify(b64url_decode(parts[2]), f"{parts[0]}.{parts[1]}".encode(), padding.PKCS1v15(), hashes.SHA256())
                claims = json.loads(b64url_decode(parts[1]))
                good = (form.get("grant_type") == ["urn:ietf:params:oauth:grant-type:jwt-bearer"] and claims["iss"] == SA_EMAIL
                        and claims["aud"] == state["token_uri"] and claims["scope"] == "https://www.googleapis.com/auth/androidpublisher"
                        and claims["exp"] - claims["iat"] <= 3600)
            except (InvalidSignature, IndexError, KeyError, ValueError):
                good = False
            if not good:
                return self.answer(400, {"error": "invalid_grant"})
            state["token_requests"] += 1
            return self.answer(200, {"access_token": ACCESS, "expires_in": 3599, "token_type": "Bearer"})
        if self.headers.get("Authorization") != f"Bearer {ACCESS}":
            return self.answer(401, {"error": {"code": 401}})
        if self.path.endswith(":acknowledge"):
            token = urllib.parse.unquote(self.path[:-len(":acknowledge")].rsplit("/", 1)[-1])
            state["acks"].append(token)
            purchase = purchases.get(token, {})
            if "subscriptionState" in purchase:
                purchase["acknowledgementState"] = "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
            else:
                purchase["acknowledgementState"] = 1
            return self.answer(200, {})
        return self.answer(404, {})

    def log_message(self, *args):
        pass


def subscription(state_name, expires_ms, account, renewing=True, acknowledged=False, product="pro_monthly"):
    return {"kind": "androidpublisher#subscriptionPurchaseV2", "regionCode": "US", "startTime": "2026-12-01T00:00:00Z",
            "subscriptionState": state_name, "latestOrderId": "GPA.1234-5678-9012-34567",
            "acknowledgementState": "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" if acknowledged else "ACKNOWLEDGEMENT_STATE_PENDING",
            "externalAccountIdentifiers": {"obfuscatedExternalAccountId": account},
            "lineItems": [{"productId": product, "expiryTime": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(expires_ms / 1000)),
                           "autoRenewingPlan": {"autoRenewEnabled": renewing}}]}


def pro(sock, token):
    status = call(sock, "io.appd.Payments.Status", token=token)["parameters"]
    return next((e for e in status["entitlements"] if e["name"] == "pro"), None)


def push(port, notification, message_id, authorization):
    data = base64.b64encode(json.dumps(notification).encode()).decode()
    body = json.dumps({"message": {"data": data, "messageId": message_id, "publishTime": "2026-12-06T00:00:00Z"},
                       "subscription": "projects/example-project/subscriptions/play-rtdn"}).encode()
    headers = {"Content-Type": "application/json"}
    if authorization:
        headers["Authorization"] = authorization
    request = urllib.request.Request(f"http://127.0.0.1:{port}/webhooks/googleplay", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def main():
    appd = sys.argv[1]
    database = sys.argv[2] if len(sys.argv) > 2 else None
    with tempfile.TemporaryDirectory() as directory:
        server, cert, base = tls_server(Google, directory)
        state["token_uri"] = base + "/token"
        account_file = os.path.join(directory, "service-account.json")
        with open(os.open(account_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            json.dump({"type": "service_account", "client_email": SA_EMAIL, "token_uri": state["token_uri"], "private_key_id": "abc",
                       "private_key": sa_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                           serialization.NoEncryption()).decode()}, f)

        sock = os.path.join(directory, "appd.sock")
        http_port = free_port()
        proc = subprocess.Popen(
            [appd, "--socket", sock, "--data-dir", os.path.join(directory, "data"), "--log-level", "notice",
             "--http-listen", f"127.0.0.1:{http_port}", "--google-play-package-name", PACKAGE,
             "--google-play-service-account-file", account_file, "--google-play-push-audience", AUDIENCE,
             "--google-play-push-service-account", PUSH_ACCOUNT, "--google-play-api-url", base,
             "--google-play-keys-url", base + "/certs", "--google-play-ca-file", cert],
            env=dict(os.environ, **database_env(database, "googleplay")), stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 20
        while time.time() < deadline and not os.path.exists(sock):
            time.sleep(0.05)
        try:
            sessions = {}
            for email in ["ada@example.com", "bob@example.com"]:
                call(sock, "io.appd.Auth.SignUp", {"email": email, "password": "correct horse battery"})
                sessions[email] = call(sock, "io.appd.Auth.SignIn", {"email": email, "password": "correct horse battery"})["parameters"]["session"]["accessToken"]
            ada, bob = sessions["ada@example.com"], sessions["bob@example.com"]
            ada_account = call(sock, "io.appd.Payments.AppStoreAccountToken", token=ada)["parameters"]["token"]
            now = int(time.time() * 1000)
            month = 30 * 86_400_000
            purchases["tok-sub-1"] = subscription("SUBSCRIPTION_STATE_ACTIVE", now + month, ada_account)

            reply = call(sock, "io.appd.Payments.SubmitGooglePlayPurchase", {"productId": "pro_monthly", "purchaseToken": "tok-sub-1"}, token=ada)
            check("a submitted Google Play purchase is taken", "error" not in reply, str(reply))
            entitlement = pro(sock, ada)
            check("and grants pro from googleplay, renewing", entitlement and entitlement["active"] and entitlement["source"] == "googleplay"
                  and entitlement["willRenew"], str(entitlement))
            check("and is acknowledged", state["acks"] == ["tok-sub-1"], str(state["acks"]))
            history = len(pro(sock, ada)["history"])
            call(sock, "io.appd.Payments.SubmitGooglePlayPurchase", {"productId": "pro_monthly", "purchaseToken": "tok-sub-1"}, token=ada)
            check("the same purchase again changes nothing", len(pro(sock, ada)["history"]) == history and state["acks"] == ["tok-sub-1"],
                  str(pro(sock, ada)))
            reply = call(sock, "io.appd.Payments.SubmitGooglePlayPurchase", {"productId": "pro_monthly", "purchaseToken": "tok-sub-1"}, token=bob)
            check("another account's purchase is ForeignTransaction", reply.get("error") == "io.appd.Payments.ForeignTransaction", str(reply))

            # A renewal pushed by Pub/Sub: the new period from Google's answer.
            purchases["tok-sub-1"] = subscription("SUBSCRIPTION_STATE_ACTIVE", now + 2 * month, ada_account, acknowledged=True)
            renewed = {"version": "1.0", "packageName": PACKAGE, "eventTimeMillis": str(now),
                       "subscriptionNotification": {"version": "1.0", "notificationType": 2, "purchaseToken": "tok-sub-1", "subscriptionId": "pro_monthly"}}
            status, answer = push(http_port, renewed, "msg-renew", "Bearer " + push_token())
            entitlement = pro(sock, ada)
            expected = time.strftime("%Y-%m-%dT%H:%M", time.gmtime((now + 2 * month) / 1000))
            check("a renewal push extends pro to Google's new expiry", status == 200 and entitlement["expiresAt"].startswith(expected),
                  f"{status} {answer} {entitlement}")

            # A cancellation pushed by Pub/Sub: access stays until expiry, without renewal.
            purchases["tok-sub-1"] = subscription("SUBSCRIPTION_STATE_CANCELED", now + month, ada_account, renewing=False, acknowledged=True)
            canceled = {"version": "1.0", "packageName": PACKAGE, "eventTimeMillis": str(now),
                        "subscriptionNotification": {"version": "1.0", "notificationType": 3, "purchaseToken": "tok-sub-1", "subscriptionId": "pro_monthly"}}
            before = json.dumps(pro(sock, ada))
            for label, authorization in [("unsigned", None), ("for another audience", "Bearer " + push_token(aud="https://other.example")),
                                         ("signed by a key Google does not publish", "Bearer " + push_token(key=rogue_key, kid="rogue")),
                                         ("with a published kid but another key", "Bearer " + push_token(key=rogue_key)),
                                         ("expired", "Bearer " + push_token(expires_in=-600)),
                                         ("from another service account", "Bearer " + push_token(email="someone@example.com"))]:
                status, answer = push(http_port, canceled, "msg-forged", authorization)
                check(f"a push {label} is refused", status == 400 and answer.get("error") == "io.appd.Payments.InvalidSignature", f"{status} {answer}")
            check("and changes nothing", json.dumps(pro(sock, ada)) == before)
            status, answer = push(http_port, canceled, "msg-1", "Bearer " + push_token())
            check("Google's cancellation push is taken", status == 200 and not answer["duplicate"], f"{status} {answer}")
            entitlement = pro(sock, ada)
            check("pro stays until expiry, no longer renewing", entitlement["active"] and not entitlement["willRenew"], str(entitlement))
            status, answer = push(http_port, canceled, "msg-1", "Bearer " + push_token())
            check("the same message again is a duplicate", status == 200 and answer["duplicate"], f"{status} {answer}")

            # The user turns renewal back on, and that notification never comes: Restore asks Google.
            purchases["tok-sub-1"] = subscription("SUBSCRIPTION_STATE_ACTIVE", now + 2 * month, ada_account, acknowledged=True)
            reply = call(sock, "io.appd.Payments.Restore", token=ada)
            entitlement = pro(sock, ada)
            check("Restore asks Google and applies what changed (renewing again, as it was before the cancellation)",
                  "error" not in reply and entitlement["active"] and entitlement["willRenew"], f"{reply} {entitlement}")
            history = len(entitlement["history"])
            call(sock, "io.appd.Payments.Restore", token=ada)
            check("a second Restore with nothing new changes nothing", len(pro(sock, ada)["history"]) == history, str(pro(sock, ada)))

            # A refund: Google revokes the subscription, and the voided purchase notification says so.
            purchases["tok-sub-1"] = subscription("SUBSCRIPTION_STATE_EXPIRED", now + 2 * month, ada_account, renewing=False, acknowledged=True)
            voided = {"version": "1.0", "packageName": PACKAGE, "eventTimeMillis": str(now + 1000),
                      "voidedPurchaseNotification": {"purchaseToken": "tok-sub-1", "orderId": "GPA.1234-5678-9012-34567", "productType": 1, "refundType": 1}}
            status, answer = push(http_port, voided, "msg-2", "Bearer " + push_token())
            entitlement = pro(sock, ada)
            check("a voided purchase revokes pro", status == 200 and not entitlement["active"] and entitlement["history"][-1]["change"] == "revoked",
                  f"{status} {answer} {entitlement}")

            # A one-time product (a lifetime entitlement), announced by a push before any submission.
            purchases["tok-life-1"] = {"kind": "androidpublisher#productPurchase", "purchaseTimeMillis": str(now), "purchaseState": 0,
                                       "consumptionState": 0, "acknowledgementState": 0, "obfuscatedExternalAccountId": ada_account,
                                       "orderId": "GPA.9999-0000"}
            bought = {"version": "1.0", "packageName": PACKAGE, "eventTimeMillis": str(now + 2000),
                      "oneTimeProductNotification": {"version": "1.0", "notificationType": 1, "purchaseToken": "tok-life-1", "sku": "pro_lifetime"}}
            status, answer = push(http_port, bought, "msg-3", "Bearer " + push_token())
            entitlement = pro(sock, ada)
            check("a one-time product push grants pro for good, and is acknowledged",
                  status == 200 and entitlement["active"] and entitlement.get("expiresAt") is None and "tok-life-1" in state["acks"],
                  f"{status} {answer} {entitlement} {state['acks']}")
            status, answer = push(http_port, {"version": "1.0", "packageName": PACKAGE, "eventTimeMillis": str(now),
                                              "testNotification": {"version": "1.0"}}, "msg-test", "Bearer " + push_token())
            check("a test notification is taken", status == 200, f"{status} {answer}")
            status, answer = push(http_port, dict(bought, packageName="com.other.app"), "msg-4", "Bearer " + push_token())
            check("a notification for another app is refused", status == 400, f"{status} {answer}")

            check("the access token was fetched once and reused", state["token_requests"] == 1, str(state["token_requests"]))

            # Google failing: bounded tries, a typed error.
            state["failing"] = True
            started = time.time()
            reply = call(sock, "io.appd.Payments.SubmitGooglePlayPurchase", {"productId": "pro_monthly", "purchaseToken": "tok-sub-1"}, token=ada,
                         timeout=60)
            check("Google failing is ProviderUnavailable, soon", reply.get("error") == "io.appd.Payments.ProviderUnavailable"
                  and time.time() - started < 30, str(reply))
            state["failing"] = False
            reply = call(sock, "io.appd.Payments.SubmitGooglePlayPurchase", {"productId": "pro_monthly", "purchaseToken": "tok-unknown"}, token=bob)
            check("a purchase Google does not know is refused", reply.get("error") == "io.appd.Payments.ValidationFailed", str(reply))
            reply = call(sock, "io.appd.Payments.Restore", token=ada)
            entitlement = next(e for e in reply["parameters"]["entitlements"] if e["name"] == "pro")
            check("Restore recomputes the same from what was stored", entitlement["active"] and entitlement.get("expiresAt") is None, str(entitlement))
        finally:
            call(sock, "io.appd.Daemon.Shutdown")
            _, stderr = proc.communicate(timeout=30)
            check("appd exits 0", proc.returncode == 0, stderr[-2000:])
        server.shutdown()
    finish()


if __name__ == "__main__":
    main()
