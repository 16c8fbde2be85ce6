#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""StoreKit 2 without a middleman, against the real appd: a fake of the App Store Server API
(GET /inApps/v2/history/{transactionId}, Python's http.server over TLS with a certificate from a
throwaway CA, trusted through --app-store-ca-file) that checks appd's ES256 bearer token with the
.p8's public key, and App Store payloads signed by a throwaway chain shaped like Apple's
(Tests/PaymentsTests/AppStoreChains.swift), its root installed with --app-store-root-certificates.

Checks: a submitted transaction grants pro; Restore asks Apple for that purchase's history with a
valid token (issuer, key id, audience appstoreconnect-v1, bundle id, a short lifetime) and follows
its pages by revision; a renewal in the history extends pro, a later refund revokes it; the same
history again changes nothing; a notification v2 over HTTP at /webhooks/appstore is applied once;
Apple failing is ProviderUnavailable after a bounded number of tries and changes nothing; Apple
refusing the key names the settings to check.

Usage: appstore_restore.py APPD_BINARY REPO_ROOT [POSTGRES_URL]  (with a URL: on PostgreSQL, in a schema of its own)
"""
import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from harness import call, check, database_env, finish, free_port, tls_server

BUNDLE = "com.example.app"
ISSUER = "57246542-96fe-1a63-e053-0824d011072a"
KEY_ID = "2X9R4HXF34"
api_key = ec.generate_private_key(ec.SECP256R1())
seen = []
# originalTransactionId → list of pages, each a list of signed transactions.
histories = {}
failure = {"status": None}


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def fixtures(repo):
    """The good chain (PEMs and the leaf's key) and the trusted root, from the Swift fixtures."""
    text = open(os.path.join(repo, "Tests/PaymentsTests/AppStoreChains.swift")).read()
    root = re.search(r'static let trustedRoot = """\n(.*?)"""', text, re.S).group(1)
    good = re.search(r'static let good = Chain\(\s*leaf: """\n(.*?)""",\s*intermediate: """\n(.*?)""",\s*root: """\n(.*?)""",\s*key: """\n(.*?)"""\)',
                     text, re.S)
    # The literals' lines are indented as swift format lays them out; the PEM text is without it.
    return unindent(root), tuple(unindent(group) for group in good.groups())


def unindent(literal):
    return "".join(line.strip() + "\n" for line in literal.splitlines() if line.strip())


def der(pem):
    return base64.b64decode("".join(line for line in pem.splitlines() if not line.startswith("-----")))


class Signer:
    def __init__(self, chain):
        leaf, intermediate, root, key = chain
        self.x5c = [base64.b64encode(der(p)).decode() for p in (leaf, intermediate, root)]
        self.key = serialization.load_pem_private_key(key.encode(), None)

    def sign(self, claims):
        header = b64url(json.dumps({"alg": "ES256", "x5c": self.x5c}).encode())
        payload = b64url(json.dumps(claims).encode())
        r, s = decode_dss_signature(self.key.sign(f"{header}.{payload}".encode(), ec.ECDSA(hashes.SHA256())))
        return f"{header}.{payload}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


def transaction(signer, tid, original, expires_ms, signed_ms, token=None, revoked_ms=None):
    claims = {"transactionId": tid, "originalTransactionId": original, "bundleId": BUNDLE, "productId": "pro_monthly",
              "purchaseDate": signed_ms - 1000, "originalPurchaseDate": signed_ms - 1000, "expiresDate": expires_ms, "quantity": 1,
              "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "signedDate": signed_ms,
              "environment": "Production", "storefront": "USA"}
    if token:
        claims["appAccountToken"] = token
    if revoked_ms:
        claims["revocationDate"] = revoked_ms
        claims["revocationReason"] = 0
    return signer.sign(claims)


def token_problem(header):
    """Why the bearer token is not one Apple would take (None: it is)."""
    if not header or not header.startswith("Bearer "):
        return "no bearer token"
    parts = header[7:].split(".")
    if len(parts) != 3:
        return "not a JWS"
    head, claims = json.loads(b64url_decode(parts[0])), json.loads(b64url_decode(parts[1]))
    raw = b64url_decode(parts[2])
    try:
        api_key.public_key().verify(encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")),
                                    f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return "bad signature"
    if head.get("alg") != "ES256" or head.get("kid") != KEY_ID or head.get("typ") != "JWT":
        return f"header {head}"
    now = time.time()
    if claims.get("iss") != ISSUER or claims.get("aud") != "appstoreconnect-v1" or claims.get("bid") != BUNDLE:
        return f"claims {claims}"
    if not (claims["iat"] <= now + 5 and now < claims["exp"] <= claims["iat"] + 3600):
        return f"lifetime {claims}"
    return None


class AppStoreServerAPI(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        problem = token_problem(self.headers.get("Authorization"))
        seen.append((self.path, problem))
        path, _, query = self.path.partition("?")
        params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        if failure["status"]:
            status, body = failure["status"], {"errorCode": 5000000, "errorMessage": "An unknown error occurred."}
        elif problem:
            status, body = 401, {"errorMessage": "Unauthenticated"}
        elif path.startswith("/inApps/v2/history/") and path.split("/")[-1] in histories:
            pages = histories[path.split("/")[-1]]
            index = int(params.get("revision", "r0")[1:])
            more = index + 1 < len(pages)
            status, body = 200, {"revision": f"r{index + 1}", "bundleId": BUNDLE, "appAppleId": 1234567890, "environment": "Production",
                                 "hasMore": more, "signedTransactions": pages[index]}
        else:
            status, body = 404, {"errorCode": 4040010, "errorMessage": "Transaction id not found."}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def pro(sock, token):
    status = call(sock, "io.appd.Payments.Status", token=token)["parameters"]
    return next((e for e in status["entitlements"] if e["name"] == "pro"), None)


def main():
    appd, repo = sys.argv[1], sys.argv[2]
    database = sys.argv[3] if len(sys.argv) > 3 else None
    root_pem, chain = fixtures(repo)
    signer = Signer(chain)
    with tempfile.TemporaryDirectory() as directory:
        root_file = os.path.join(directory, "AppleRootCA-test.pem")
        open(root_file, "w").write(root_pem)
        p8 = os.path.join(directory, f"SubscriptionKey_{KEY_ID}.p8")
        with open(os.open(p8, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
            f.write(api_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        server, cert, base = tls_server(AppStoreServerAPI, directory)

        sock = os.path.join(directory, "appd.sock")
        http_port = free_port()
        proc = subprocess.Popen(
            [appd, "--socket", sock, "--data-dir", os.path.join(directory, "data"), "--log-level", "notice",
             "--http-listen", f"127.0.0.1:{http_port}", "--app-store-root-certificates", root_file, "--app-store-bundle-id", BUNDLE,
             "--app-store-issuer-id", ISSUER, "--app-store-key-id", KEY_ID, "--app-store-private-key-file", p8,
             "--app-store-api-url", base, "--app-store-ca-file", cert],
            env=dict(os.environ, **database_env(database, "appstore")), stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 20
        while time.time() < deadline and not os.path.exists(sock):
            time.sleep(0.05)
        try:
            call(sock, "io.appd.Auth.SignUp", {"email": "buyer@example.com", "password": "correct horse battery"})
            session = call(sock, "io.appd.Auth.SignIn", {"email": "buyer@example.com", "password": "correct horse battery"})["parameters"]["session"]
            token = session["accessToken"]
            account_token = call(sock, "io.appd.Payments.AppStoreAccountToken", token=token)["parameters"]["token"]
            check("the account has an appAccountToken (a UUID)", str(uuid.UUID(account_token)) == account_token, account_token)

            now = int(time.time() * 1000)
            month = 30 * 86_400_000
            first = transaction(signer, "1000", "1000", now + month, now, account_token)
            reply = call(sock, "io.appd.Payments.SubmitAppStoreTransaction", {"signedTransaction": first}, token=token)
            check("a submitted StoreKit 2 transaction is taken", "error" not in reply, str(reply))
            entitlement = pro(sock, token)
            check("and grants pro from appstore", entitlement and entitlement["active"] and entitlement["source"] == "appstore", str(entitlement))

            # Apple's history: the purchase, then (second page) its renewal.
            renewal = transaction(signer, "1001", "1000", now + 2 * month, now + 1000, account_token)
            histories["1000"] = [[first], [renewal]]
            reply = call(sock, "io.appd.Payments.Restore", token=token)
            check("Restore answers", "error" not in reply, str(reply))
            asked = [path for path, _ in seen]
            check("it asked Apple for the purchase's history and followed its pages by revision",
                  asked == ["/inApps/v2/history/1000?sort=ASCENDING", "/inApps/v2/history/1000?sort=ASCENDING&revision=r1"], str(asked))
            check("with a token Apple takes (ES256 by the .p8, kid, iss, aud, bid, short-lived)", all(p is None for _, p in seen), str(seen))
            entitlement = pro(sock, token)
            expected = time.strftime("%Y-%m-%dT%H:%M", time.gmtime((now + 2 * month) / 1000))
            check("the renewal in the history extends pro", entitlement["active"] and entitlement["expiresAt"].startswith(expected), str(entitlement))
            before = json.dumps(call(sock, "io.appd.Payments.UserStatus", {"email": "buyer@example.com"}))
            call(sock, "io.appd.Payments.Restore", token=token)
            check("the same history again changes nothing", json.dumps(call(sock, "io.appd.Payments.UserStatus", {"email": "buyer@example.com"})) == before)

            # Apple failing: bounded tries, a typed error, nothing changed.
            failure["status"] = 503
            count = len(seen)
            reply = call(sock, "io.appd.Payments.Restore", token=token, timeout=60)
            check("Apple failing is ProviderUnavailable", reply.get("error") == "io.appd.Payments.ProviderUnavailable", str(reply))
            check("after 3 tries", len(seen) - count == 3, str(len(seen) - count))
            check("and changes nothing", json.dumps(call(sock, "io.appd.Payments.UserStatus", {"email": "buyer@example.com"})) == before)
            failure["status"] = 401
            reply = call(sock, "io.appd.Payments.Restore", token=token)
            check("Apple refusing the key names what to check",
                  reply.get("error") == "io.appd.Payments.ProviderUnavailable" and "appStoreKeyId" in reply["parameters"]["reason"], str(reply))
            failure["status"] = None

            # A notification v2 over HTTP: the refund, signed later, revokes pro; once.
            refund = transaction(signer, "1001", "1000", now + 2 * month, now + 3000, account_token, revoked_ms=now + 2500)
            payload = {"notificationType": "REFUND", "notificationUUID": str(uuid.uuid4()), "version": "2.0", "signedDate": now + 3000,
                       "data": {"bundleId": BUNDLE, "environment": "Production", "appAppleId": 1234567890, "signedTransactionInfo": refund}}
            body = json.dumps({"signedPayload": signer.sign(payload)}).encode()
            for attempt in range(2):
                request = urllib.request.Request(f"http://127.0.0.1:{http_port}/webhooks/appstore", data=body,
                                                 headers={"Content-Type": "application/json"}, method="POST")
                with urllib.request.urlopen(request, timeout=10) as response:
                    answer = json.loads(response.read())
                    check(f"the App Store's notification is taken ({'first' if attempt == 0 else 'again: a duplicate'})",
                          response.status == 200 and answer["duplicate"] == (attempt == 1), str(answer))
            entitlement = pro(sock, token)
            check("the refund revoked pro", not entitlement["active"] and entitlement["history"][-1]["change"] == "revoked", str(entitlement))
            histories["1000"] = [[first, renewal]]
            call(sock, "io.appd.Payments.Restore", token=token)
            check("a restore of an older history does not bring it back", not pro(sock, token)["active"], str(pro(sock, token)))
        finally:
            call(sock, "io.appd.Daemon.Shutdown")
            _, stderr = proc.communicate(timeout=30)
            check("appd exits 0", proc.returncode == 0, stderr[-2000:])
        server.shutdown()
    finish()


if __name__ == "__main__":
    main()
