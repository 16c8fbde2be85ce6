# SPDX-License-Identifier: Apache-2.0
"""A test identity provider: the one fake, at the seam of Apple's and Google's network. It
serves each provider's JWK set over real TLS (a throwaway CA that appd is told to trust with
--identity-ca-file, and a leaf certificate for localhost signed by it), with the caching
headers the real ones send, and mints ID tokens as Apple and Google do: RS256 with its own
RSA keys, through Python's `cryptography` (another implementation than appd's OpenSSL calls).

Its keys can be rotated, and its key URL made unreachable (503) or slow, to test appd's cache.
As Apple it also serves the token endpoint (a code for Apple's tokens, the client secret
checked as Apple checks it: an ES256 JWT under the team's .p8 key), the revoke endpoint (which
records what it revoked, and can be made to fail), and signs server-to-server notifications.
"""
import base64
import hashlib
import json
import os
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from urllib.parse import parse_qs

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def uint(n):
    return n.to_bytes((n.bit_length() + 7) // 8, "big")


def nonce_hash(raw):
    return hashlib.sha256(raw.encode()).hexdigest()


ISSUERS = {"apple": "https://appleid.apple.com", "google": "https://accounts.google.com"}


class Provider:
    def __init__(self, name):
        self.name = name
        self.keys = {}  # kid -> private key
        self.published = []
        self.max_age = 3600
        self.reachable = True
        self.fetches = 0
        self.add_key("k1", publish=True)
        self.add_key("k2", publish=False)

    def add_key(self, kid, publish):
        self.keys[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if publish:
            self.published.append(kid)

    def jwks(self):
        keys = []
        for kid in self.published:
            numbers = self.keys[kid].public_key().public_numbers()
            keys.append({"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": b64(uint(numbers.n)), "e": b64(uint(numbers.e))})
        return {"keys": keys}

    def sign(self, claims, kid="k1"):
        head = {"alg": "RS256", "kid": kid}
        signing_input = b64(json.dumps(head).encode()) + "." + b64(json.dumps(claims).encode())
        return signing_input + "." + b64(self.keys[kid].sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256()))

    def token(self, subject, audience, email=None, nonce=None, kid="k1", header=None, **changes):
        now = int(time.time())
        claims = {"iss": ISSUERS[self.name], "aud": audience, "sub": subject, "iat": now, "exp": now + 600}
        if email is not None:
            claims["email"] = email
            # Apple sends the flags as strings, Google as booleans.
            claims["email_verified"] = "true" if self.name == "apple" else True
        if nonce is not None:
            claims["nonce"] = nonce_hash(nonce)
        claims.update(changes)
        claims = {k: v for k, v in claims.items() if v is not None}
        head = header or {"alg": "RS256", "kid": kid, "typ": "JWT"}
        signing_input = b64(json.dumps(head).encode()) + "." + b64(json.dumps(claims).encode())
        signature = self.keys[kid].sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return signing_input + "." + b64(signature)


def unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class AppleServer:
    """Apple's token and revoke endpoints for one team: the .p8 key is made here (as Apple's
    developer portal makes it) and written where appd reads it."""

    def __init__(self, directory, team="TEAM123456", key_id="KEY1234567", client_id="com.example.app"):
        self.team, self.key_id, self.client_id = team, key_id, client_id
        self.private_key = ec.generate_private_key(ec.SECP256R1())
        self.p8 = os.path.join(directory, f"AuthKey_{key_id}.p8")
        with open(self.p8, "wb") as f:
            f.write(self.private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        os.chmod(self.p8, 0o600)
        self.codes = {}  # code -> subject
        self.exchanged = []  # refresh tokens issued
        self.revoked = []
        self.revoke_status = 200
        self.bad_secrets = []

    def check_secret(self, secret):
        """The client secret as Apple checks it: ES256 (r || s) under the team's key."""
        try:
            head, claims, signature = secret.split(".")
            header = json.loads(unb64(head))
            body = json.loads(unb64(claims))
            raw = unb64(signature)
            der = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
            self.private_key.public_key().verify(der, f"{head}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))
        except (ValueError, InvalidSignature) as error:
            self.bad_secrets.append(repr(error))
            return False
        now = time.time()
        good = (header.get("alg") == "ES256" and header.get("kid") == self.key_id and body.get("iss") == self.team
                and body.get("sub") == self.client_id and body.get("aud") == "https://appleid.apple.com"
                and body.get("iat", 0) <= now + 5 and body.get("exp", 0) > now and len(raw) == 64)
        if not good:
            self.bad_secrets.append(json.dumps([header, body]))
        return good

    def token(self, form, provider):
        if form.get("client_id") != self.client_id or not self.check_secret(form.get("client_secret", "")):
            return 400, {"error": "invalid_client"}
        subject = self.codes.pop(form.get("code", ""), None)
        if form.get("grant_type") != "authorization_code" or subject is None:
            return 400, {"error": "invalid_grant"}
        refresh = f"r.{subject}.{len(self.exchanged)}"
        self.exchanged.append(refresh)
        now = int(time.time())
        id_token = provider.sign({"iss": ISSUERS["apple"], "aud": self.client_id, "sub": subject, "iat": now, "exp": now + 600})
        return 200, {"access_token": "a." + refresh, "token_type": "Bearer", "expires_in": 3600, "refresh_token": refresh, "id_token": id_token}

    def revoke(self, form):
        if form.get("client_id") != self.client_id or not self.check_secret(form.get("client_secret", "")):
            return 400, {"error": "invalid_client"}
        if self.revoke_status != 200:
            return self.revoke_status, {"error": "server_error"}
        self.revoked.append(form.get("token"))
        return 200, None


class IdentityProvider:
    """Apple and Google on one TLS server: /apple/keys and /google/keys; Apple's token and
    revoke endpoints at /apple/auth/token and /apple/auth/revoke when `apple_server` is given."""

    def __init__(self, directory, apple_server=None):
        self.providers = {"apple": Provider("apple"), "google": Provider("google")}
        self.apple_server = apple_server
        self.ca, cert, key = make_certificates(directory)
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()).items()}
                server = provider.apple_server
                if server is None or self.headers.get("Content-Type") != "application/x-www-form-urlencoded":
                    return self.reply(404, b"{}")
                if self.path == "/apple/auth/token":
                    status, body = server.token(form, provider.providers["apple"])
                elif self.path == "/apple/auth/revoke":
                    status, body = server.revoke(form)
                else:
                    status, body = 404, {}
                self.reply(status, b"" if body is None else json.dumps(body).encode())

            def do_GET(self):
                name = self.path.strip("/").split("/")[0]
                p = provider.providers.get(name)
                if p is None or not self.path.endswith("/keys"):
                    return self.reply(404, b"{}")
                p.fetches += 1
                if not p.reachable:
                    return self.reply(503, b"unavailable")
                self.reply(200, json.dumps(p.jwks()).encode(), {"Cache-Control": f"public, max-age={p.max_age}", "Age": "0"})

            def reply(self, status, body, headers=None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path, host="localhost"):
        return f"https://{host}:{self.port}{path}"

    def keys_url(self, name, host="localhost"):
        return f"https://{host}:{self.port}/{name}/keys"

    def __getitem__(self, name):
        return self.providers[name]

    def close(self):
        self.server.shutdown()


def make_certificates(directory):
    """A throwaway CA and a localhost leaf it signed (the CA's key is deleted afterwards)."""
    ca_key, ca = os.path.join(directory, "ca.key"), os.path.join(directory, "ca.pem")
    key, csr, cert = os.path.join(directory, "leaf.key"), os.path.join(directory, "leaf.csr"), os.path.join(directory, "leaf.pem")
    ext = os.path.join(directory, "leaf.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    run = lambda *args: subprocess.run(["openssl", *args], check=True, capture_output=True)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=appd test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=localhost")
    run("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", ext)
    os.remove(ca_key)
    return ca, cert, key
