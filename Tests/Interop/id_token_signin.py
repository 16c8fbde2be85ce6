#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Sign in with Apple and Google through the real appd and its HTTP API, against a test
identity provider over real TLS (identity_provider.py: a throwaway CA, RS256 tokens minted by
Python's `cryptography`). Checks that a valid token signs in (created, then existing); that
each verification rule refuses with its reason (audience, issuer, expiry, future iat, nonce
mismatch and missing, alg none, HS256 keyed with the public key, a key id not published then
rotated in); that the keys' cache works with the provider down (warm: fine; expired: the last
good set); that pre-registering someone's email never links to their Apple account; link and
unlink keep a way in; deletion without a password after a fresh sign-in. With a PostgreSQL URL
as the second argument, appd runs on it (in a schema of its own).

Usage: id_token_signin.py APPD_BINARY [POSTGRES_URL]
"""
import base64
import hmac
import hashlib
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

from harness import call, check, finish, free_port, post
from identity_provider import AppleServer, IdentityProvider, b64

APPLE_AUD = "com.example.app"
GOOGLE_AUD = "123-ios.apps.googleusercontent.com"


def identity_flags(idp):
    """Apple and Google both on, against the test provider, its CA trusted."""
    return ["--apple-audiences", f"{APPLE_AUD},com.example.web", "--apple-keys-url", idp.keys_url("apple"),
            "--google-audiences", GOOGLE_AUD, "--google-keys-url", idp.keys_url("google"), "--google-check-nonce", "false",
            "--identity-ca-file", idp.ca]


class Appd:
    def __init__(self, binary, directory, idp, database=None, extra=(), flags=None):
        """appd with the HTTP API on a free port; `flags` replaces the identity flags."""
        self.sock = os.path.join(directory, "appd.sock")
        self.port = free_port()
        self.data = os.path.join(directory, "data")
        args = [binary, "--socket", self.sock, "--data-dir", self.data, "--log-level", "notice",
                "--http-listen", f"127.0.0.1:{self.port}", "--http-rate-limit-per-minute", "0",
                *(identity_flags(idp) if flags is None else flags), *extra]
        env = dict(os.environ)
        if database:
            env["APPD_DATABASE"] = database
        self.log_path = os.path.join(directory, "appd.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(args, env=env, stderr=self.log)
        for _ in range(500):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.02)
        raise SystemExit("appd did not start: " + open(self.log_path).read()[-2000:])

    def webhook(self, payload):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("POST", "/webhooks/apple", json.dumps({"payload": payload}), {"Content-Type": "application/json"})
        response = conn.getresponse()
        data = response.read()
        conn.close()
        return response.status, json.loads(data) if data else {}

    def post(self, method, body, token=None):
        return post(self.port, method, body, token)

    def sign_in(self, provider, token, nonce=None, **extra):
        body = {"provider": provider, "idToken": token, **extra}
        if nonce is not None:
            body["nonce"] = nonce
        return self.post("io.appd.Auth.SignInWithIdToken", body)

    def stop(self):
        call(self.sock, "io.appd.Daemon.Shutdown")
        self.proc.wait(timeout=30)
        self.log.close()


def refused(reply, reason):
    status, body = reply
    return status == 401 and body.get("error") == "io.appd.Auth.InvalidIdToken" and body.get("parameters", {}).get("reason") == reason


def wait_for(condition, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def apple_server_side(binary, directory, database, run):
    """Apple's token and revoke endpoints and its server-to-server notifications."""
    d = os.path.join(directory, "apple-server")
    os.mkdir(d)
    server = AppleServer(d)
    idp = IdentityProvider(d, apple_server=server)
    apple = idp["apple"]
    key_file = os.path.join(d, "token.key")
    with open(key_file, "w") as f:
        f.write(base64.b64encode(os.urandom(32)).decode() + "\n")
    os.chmod(key_file, 0o600)
    appd = Appd(binary, d, idp, database, extra=[
        "--apple-team-id", server.team, "--apple-key-id", server.key_id, "--apple-private-key-file", server.p8,
        "--apple-token-url", idp.url("/apple/auth/token"), "--apple-revoke-url", idp.url("/apple/auth/revoke"),
        "--token-encryption-key-file", key_file])
    try:
        server.codes["code-1"] = "s.apple.1"
        status, body = appd.sign_in("apple", apple.token("s.apple.1", APPLE_AUD, "s1@privaterelay.appleid.com", nonce="a"), nonce="a",
                                    authorizationCode="code-1")
        check(f"[{run}] Apple: the authorization code is exchanged with a client secret Apple accepts (ES256, checked by another implementation)",
              status == 200 and server.exchanged == ["r.s.apple.1.0"] and not server.bad_secrets, (status, body, server.exchanged, server.bad_secrets))
        if database:
            stored = subprocess.run(["psql", database, "-qAt", "-c", "SELECT refresh_token FROM auth_identities"], capture_output=True, text=True).stdout
        else:
            stored = "".join(open(os.path.join(appd.data, name), "rb").read().decode("latin-1")
                             for name in ("appd.db", "appd.db-wal") if os.path.exists(os.path.join(appd.data, name)))
        check(f"[{run}] Apple: its refresh token is not in the database in the clear", "r.s.apple.1.0" not in stored, stored[:200] if database else "")
        status, body = appd.post("io.appd.Auth.DeleteAccount", {}, body["session"]["accessToken"])
        check(f"[{run}] Apple: deleting the account revokes Apple's refresh token",
              status == 200 and wait_for(lambda: server.revoked == ["r.s.apple.1.0"]), (status, body, server.revoked, server.bad_secrets))

        # Server-to-server: account-delete for an Apple-only account, delivered twice.
        status, body = appd.sign_in("apple", apple.token("s.apple.2", APPLE_AUD, "s2@privaterelay.appleid.com", nonce="b"), nonce="b")
        user = body["session"]["user"]["id"]
        now = int(time.time())
        events = json.dumps({"type": "account-delete", "sub": "s.apple.2", "event_time": now * 1000})
        payload = apple.sign({"iss": "https://appleid.apple.com", "aud": APPLE_AUD, "iat": now, "jti": f"n-{now}", "events": events})
        first, second = appd.webhook(payload), appd.webhook(payload)
        check(f"[{run}] Apple notification account-delete: 200, then 200 as a duplicate",
              first[0] == 200 and first[1].get("duplicate") is False and second[0] == 200 and second[1].get("duplicate") is True, (first, second))
        status, body = appd.sign_in("apple", apple.token("s.apple.2", APPLE_AUD, "s2@privaterelay.appleid.com", nonce="c"), nonce="c")
        check(f"[{run}] Apple notification account-delete: the account is gone (the user starts anew)",
              status == 200 and body.get("created") is True and body["session"]["user"]["id"] != user, (status, body))
        forged = apple.sign({"iss": "https://appleid.apple.com", "aud": APPLE_AUD, "iat": now, "events": events}, kid="k2")
        status, body = appd.webhook(forged)
        check(f"[{run}] Apple notification signed by a key Apple does not publish: 401", status == 401, (status, body))
        status, body = appd.webhook(apple.sign({"iss": "https://appleid.apple.com", "aud": "com.other.app", "iat": now, "events": events}))
        check(f"[{run}] Apple notification for another app: 401", status == 401, (status, body))
    finally:
        appd.stop()
        idp.close()
    log = open(appd.log_path).read()
    p8 = open(server.p8).read().split("\n")[1]
    check(f"[{run}] Apple: neither the .p8 key nor a refresh token appears in the log", p8 not in log and "r.s.apple" not in log, log[-1000:])


def guests(binary, directory, database, run):
    """Guest accounts over HTTP: made, used, upgraded in place; limited per client address."""
    d = os.path.join(directory, "guests")
    os.mkdir(d)
    idp = IdentityProvider(d)
    appd = Appd(binary, d, idp, database, extra=["--guest-accounts", "true"])
    try:
        status, body = appd.post("io.appd.Auth.SignInAnonymously", {})
        check(f"[{run}] a guest signs in over HTTP", status == 200 and body["session"]["user"]["guest"] is True and body["session"]["user"]["email"] == "",
              (status, body))
        token, user = body["session"]["accessToken"], body["session"]["user"]["id"]
        appd.post("io.appd.Auth.CompleteOnboarding", {}, token)
        status, body = appd.post("io.appd.Todos.Add", {"title": "from a guest"}, token)
        check(f"[{run}] a guest adds a todo", status == 200, (status, body))
        status, body = appd.sign_in("apple", idp["apple"].token("guest.apple", APPLE_AUD, "g@privaterelay.appleid.com", nonce="g"), nonce="g")
        assert status == 200  # another account, for the next check
        status, body = appd.post("io.appd.Auth.UpgradeGuest", {"email": "g@privaterelay.appleid.com", "password": "correct horse"}, token)
        check(f"[{run}] upgrading a guest to a taken email is answered like a free one (no enumeration)",
              status == 200 and body["user"]["guest"] is False and body["user"]["id"] == user, (status, body))
        status, body = appd.post("io.appd.Auth.WhoAmI", {}, token)
        check(f"[{run}] and the guest stays a guest", status == 200 and body["user"]["guest"] is True, (status, body))
        status, body = appd.post("io.appd.Auth.UpgradeGuest", {"email": "guest@example.com", "password": "correct horse"}, token)
        check(f"[{run}] a guest upgrades in place (same id)", status == 200 and body["user"]["id"] == user and body["user"]["guest"] is False, (status, body))
        status, body = appd.post("io.appd.Auth.SignIn", {"email": "guest@example.com", "password": "correct horse"})
        new_token = body.get("session", {}).get("accessToken")
        status, body = appd.post("io.appd.Todos.List", {}, new_token)
        check(f"[{run}] and keeps its todos", status == 200 and [t["title"] for t in body["todos"]] == ["from a guest"], (status, body))
    finally:
        appd.stop()
    os.mkdir(os.path.join(d, "limited"))
    # The later flag wins: the limit is 3 a minute here.
    limited = Appd(binary, os.path.join(d, "limited"), idp, database, extra=["--guest-accounts", "true", "--http-rate-limit-per-minute", "3"])
    try:
        statuses = [limited.post("io.appd.Auth.SignInAnonymously", {})[0] for _ in range(4)]
        check(f"[{run}] guest sign-ins are limited per client address (429 past the limit)", statuses == [200, 200, 200, 429], statuses)
    finally:
        limited.stop()
        idp.close()


def main():
    binary = sys.argv[1]
    database = sys.argv[2] if len(sys.argv) > 2 else None
    run = "pg" if database else "sqlite"
    if database:
        schema = f"appd_idtoken_{os.getpid()}"
        subprocess.run(["psql", database, "-qAt", "-v", "ON_ERROR_STOP=1", "-c", f"CREATE SCHEMA {schema}"], check=True, capture_output=True)
        database = database + ("&" if "?" in database else "?") + f"options=-csearch_path%3D{schema}%2Cpublic"
    with tempfile.TemporaryDirectory() as directory:
        idp = IdentityProvider(directory)
        apple, google = idp["apple"], idp["google"]
        appd = Appd(binary, directory, idp, database)
        try:
            # A valid Apple token: an account is made (no password), then found.
            status, first = appd.sign_in("apple", apple.token("001.apple", APPLE_AUD, "ada@privaterelay.appleid.com", nonce="raw-1"),
                                         nonce="raw-1", fullName="Ada Lovelace")
            check(f"[{run}] a valid Apple token signs in and makes an account",
                  status == 200 and first.get("created") is True and first["session"]["user"]["emailVerified"] is True
                  and first["session"]["user"]["displayName"] == "Ada Lovelace", (status, first))
            status, again = appd.sign_in("apple", apple.token("001.apple", APPLE_AUD, nonce="raw-2"), nonce="raw-2")
            check(f"[{run}] the same Apple user signs in to the same account (the email may be absent later)",
                  status == 200 and again.get("created") is False and again["session"]["user"]["id"] == first["session"]["user"]["id"], (status, again))
            fetches = apple.fetches
            for i in range(5):
                appd.sign_in("apple", apple.token("001.apple", APPLE_AUD, nonce=f"w{i}"), nonce=f"w{i}")
            check(f"[{run}] with warm keys a sign-in makes no network call", apple.fetches == fetches == 1, apple.fetches)

            # Each rule refuses with its reason.
            t = lambda **kw: apple.token("002.apple", kw.pop("aud", APPLE_AUD), "bo@example.com", nonce="n", **kw)
            check(f"[{run}] wrong audience", refused(appd.sign_in("apple", t(aud="com.other.app"), nonce="n"), "audience"))
            check(f"[{run}] wrong issuer", refused(appd.sign_in("apple", t(iss="https://evil.example"), nonce="n"), "issuer"))
            check(f"[{run}] expired", refused(appd.sign_in("apple", t(exp=int(time.time()) - 120), nonce="n"), "expired"))
            check(f"[{run}] issued in the future", refused(appd.sign_in("apple", t(iat=int(time.time()) + 600), nonce="n"), "issuedInFuture"))
            check(f"[{run}] nonce mismatch", refused(appd.sign_in("apple", t(), nonce="other"), "nonceMismatch"))
            check(f"[{run}] nonce missing from the call", refused(appd.sign_in("apple", t()), "nonceMissing"))
            parts = t().split(".")
            none = b64(json.dumps({"alg": "none", "kid": "k1"}).encode())
            check(f"[{run}] alg none", refused(appd.sign_in("apple", f"{none}.{parts[1]}.", nonce="n"), "algorithm"))
            hs = b64(json.dumps({"alg": "HS256", "kid": "k1"}).encode())
            public_jwk = json.dumps(apple.jwks()["keys"][0]).encode()
            mac = hmac.new(public_jwk, f"{hs}.{parts[1]}".encode(), hashlib.sha256).digest()
            check(f"[{run}] HS256 signed with the public key", refused(appd.sign_in("apple", f"{hs}.{parts[1]}.{b64(mac)}", nonce="n"), "algorithm"))
            forged = b64(json.dumps({**json.loads(base64.urlsafe_b64decode(parts[1] + "==")), "sub": "victim"}).encode())
            check(f"[{run}] a changed payload", refused(appd.sign_in("apple", f"{parts[0]}.{forged}.{parts[2]}", nonce="n"), "signature"))
            check(f"[{run}] a Google token's audience on Apple", refused(appd.sign_in("apple", t(aud=GOOGLE_AUD), nonce="n"), "audience"))
            status, body = appd.sign_in("apple", "x" * 20000, nonce="n")
            check(f"[{run}] an oversized token is refused before any work", status in (401, 413) and "reason" in json.dumps(body) or status == 413, (status, body))

            # An unknown key id: refused, then accepted once the provider publishes it.
            check(f"[{run}] a key id the provider does not publish", refused(appd.sign_in("apple", t(kid="k2"), nonce="n"), "unknownKey"))
            apple.published.append("k2")
            time.sleep(5.2)  # the least time between fetches
            status, body = appd.sign_in("apple", t(kid="k2"), nonce="n")
            check(f"[{run}] after rotation the new key is fetched and accepted", status == 200 and body.get("created") is True, (status, body))

            # Google: booleans, no nonce check (its iOS SDK's own), the same verified email links.
            status, g = appd.sign_in("google", google.token("g-001", GOOGLE_AUD, "ada@privaterelay.appleid.com", nonce="sdk-own"))
            check(f"[{run}] a Google token with the same verified email links to the Apple account",
                  status == 200 and g.get("created") is False and g["session"]["user"]["id"] == first["session"]["user"]["id"], (status, g))
            token = g["session"]["accessToken"]
            status, ids = appd.post("io.appd.Auth.ListIdentities", {}, token)
            check(f"[{run}] ListIdentities shows both", status == 200 and [i["provider"] for i in ids["identities"]] == ["apple", "google"], ids)

            # Pre-registration: an attacker's password account with the victim's email.
            appd.post("io.appd.Auth.SignUp", {"email": "victim@example.com", "password": "attacker password"})
            status, body = appd.sign_in("apple", apple.token("victim.apple", APPLE_AUD, "victim@example.com", nonce="v"), nonce="v")
            check(f"[{run}] pre-registering the victim's email never links their Apple sign-in",
                  status == 409 and body.get("error") == "io.appd.Auth.AccountExistsForEmail", (status, body))

            # Unlink keeps a way in; deletion without a password after a fresh sign-in.
            status, body = appd.post("io.appd.Auth.UnlinkIdentity", {"provider": "google"}, token)
            check(f"[{run}] unlinking Google leaves Apple", status == 200, (status, body))
            status, body = appd.post("io.appd.Auth.UnlinkIdentity", {"provider": "apple"}, token)
            check(f"[{run}] unlinking the last way in is refused", status == 409 and body.get("error") == "io.appd.Auth.LastSignInMethod", (status, body))
            status, body = appd.post("io.appd.Auth.DeleteAccount", {}, token)
            check(f"[{run}] a recent sign-in deletes the account without a password", status == 200, (status, body))
            status, body = appd.sign_in("apple", apple.token("001.apple", APPLE_AUD, "ada@privaterelay.appleid.com", nonce="z"), nonce="z")
            check(f"[{run}] after deletion the Apple user starts a new account", status == 200 and body.get("created") is True, (status, body))

            # The provider goes down: warm keys still verify; expired keys: the last good set serves.
            google.max_age = 1
            google.published.append("k2")
            time.sleep(5.2)
            appd.sign_in("google", google.token("g-002", GOOGLE_AUD, "g2@example.com", kid="k2"))  # refetch: max-age 1 from now on
            google.reachable = False
            fetches = google.fetches
            time.sleep(5.2)  # expired (max-age 1), and past the least time between fetches
            status, body = appd.sign_in("google", google.token("g-003", GOOGLE_AUD, "g3@example.com"))
            check(f"[{run}] keys expired and the provider down (503): the last good set still verifies",
                  status == 200 and google.fetches == fetches + 1, (status, body, google.fetches, fetches))
            status, body = appd.post("io.appd.Auth.SignInWithIdToken", {"provider": "facebook", "idToken": "x"})
            check(f"[{run}] an unknown provider is a validation error", status == 400 and body.get("error") == "io.appd.Auth.ValidationFailed", (status, body))
        finally:
            appd.stop()
            idp.close()
        log = open(appd.log_path).read()
        check(f"[{run}] the provider's unavailability is logged, tokens never are",
              "cannot fetch the provider's keys" in log and "eyJ" not in log, log[-1500:])

        # Cold cache and the provider unreachable: fail closed with 503.
        cold_dir = os.path.join(directory, "cold")
        os.mkdir(cold_dir)
        idp2 = IdentityProvider(cold_dir)
        idp2["apple"].reachable = False
        appd2 = Appd(binary, cold_dir, idp2, database)
        try:
            status, body = appd2.sign_in("apple", idp2["apple"].token("c.1", APPLE_AUD, "c@example.com", nonce="c"), nonce="c")
            check(f"[{run}] no keys ever fetched and the provider down: 503 IdentityProviderUnavailable",
                  status == 503 and body.get("error") == "io.appd.Auth.IdentityProviderUnavailable", (status, body))
        finally:
            appd2.stop()
            idp2.close()

        apple_server_side(binary, directory, database, run)
        guests(binary, directory, database, run)

        # The certificate is checked: without the CA, or on the wrong host name, keys never load.
        for name, url_host, ca in [("an untrusted certificate", "localhost", None), ("the wrong host name", "127.0.0.1", "ca")]:
            d = os.path.join(directory, name.replace(" ", "_"))
            os.mkdir(d)
            idp3 = IdentityProvider(d)
            appd3 = Appd(binary, d, idp3, database, flags=["--apple-audiences", APPLE_AUD, "--apple-keys-url", idp3.keys_url("apple", url_host)]
                         + (["--identity-ca-file", idp3.ca] if ca else []))
            try:
                status, body = appd3.sign_in("apple", idp3["apple"].token("t.1", APPLE_AUD, "t@example.com", nonce="t"), nonce="t")
                check(f"[{run}] {name}: the keys are not loaded (503) and the provider saw no request",
                      status == 503 and idp3["apple"].fetches == 0, (status, body, idp3["apple"].fetches))
            finally:
                appd3.stop()
                idp3.close()
    finish()


if __name__ == "__main__":
    main()
