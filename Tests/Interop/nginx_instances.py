#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The documented deployment, for real: two appd instances on one PostgreSQL database behind
Debian's nginx with contrib/nginx/appd.conf (TLS at nginx with a throwaway certificate, nginx
as a non-root user on a high port). Through nginx: sign up, sign in, onboard, add todos on
both instances, stream a chat reply event by event, and an SSE subscriber reached through
nginx receives the events written directly through each instance.

Usage: nginx_instances.py APPD_BINARY POSTGRES_URL REPO_ROOT
"""
import http.client
import json
import os
import pwd
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

from harness import call, check, finish, free_port

PASSWORD = "nginx instances password"


class Instance:
    def __init__(self, binary, directory, name, url):
        self.dir = os.path.join(directory, name)
        os.makedirs(self.dir)
        self.sock = os.path.join(self.dir, "appd.sock")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "--socket", self.sock, "--data-dir", os.path.join(self.dir, "data"), "--log-level", "warning",
             "--http-listen", f"127.0.0.1:{self.port}", "--http-trusted-proxies", "127.0.0.1", "--chat-echo-delay-ms", "150",
             "--stream-session-recheck-seconds", "1", "--http-max-streams-per-client", "3", "--streams-per-account", "2"],
            env=dict(os.environ, APPD_DATABASE=url))
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                call(self.sock, "io.appd.Daemon.Ping")
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        self.proc.kill()
        raise SystemExit(f"appd {name} did not start")

    def stop(self):
        self.proc.terminate()
        return self.proc.wait(timeout=30)


def start_nginx(repo, directory, upstreams):
    """nginx with the contrib site config (ports, certificate paths and upstreams filled in), as nobody."""
    prefix = os.path.join(directory, "nginx")
    os.makedirs(os.path.join(prefix, "logs"))
    cert, key = os.path.join(prefix, "cert.pem"), os.path.join(prefix, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", cert],
                   check=True, capture_output=True, timeout=60)
    site = open(os.path.join(repo, "contrib/nginx/appd.conf")).read()
    port = free_port()
    servers = "".join(f"    server 127.0.0.1:{p};\n" for p in upstreams)
    site = re.sub(r"    server 127\.0\.0\.1:8080;\n(    # server 127\.0\.0\.1:8081;.*\n)?", servers, site)
    site = site.replace("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;")
    site = site.replace("/etc/ssl/appd/fullchain.pem", cert).replace("/etc/ssl/appd/privkey.pem", key)
    assert servers in site and str(port) in site, "contrib/nginx/appd.conf changed shape; update the test's substitutions"
    with open(os.path.join(prefix, "site.conf"), "w") as f:
        f.write(site)
    with open(os.path.join(prefix, "nginx.conf"), "w") as f:
        f.write(f"""daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log {prefix}/logs/access.log;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    include {prefix}/site.conf;
}}
""")
    nobody = pwd.getpwnam("nobody")
    command = [shutil.which("nginx") or "/usr/sbin/nginx", "-p", prefix, "-c", os.path.join(prefix, "nginx.conf")]
    if os.getuid() == 0:
        for root, dirs, files in os.walk(directory):
            os.chown(root, nobody.pw_uid, nobody.pw_gid)
            for name in files:
                os.chown(os.path.join(root, name), nobody.pw_uid, nobody.pw_gid)
        os.chmod(directory, 0o755)
        command = ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups", *command]
    proc = subprocess.Popen(command, stderr=subprocess.PIPE)
    deadline = time.time() + 15
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port, cert
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"nginx did not start: {proc.stderr.read().decode()[-800:]}")
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("nginx did not start")


class Client:
    """HTTPS through nginx, or plain HTTP straight to an instance."""

    def __init__(self, port, cert=None):
        self.port, self.cert = port, cert

    def connect(self):
        if self.cert:
            context = ssl.create_default_context(cafile=self.cert)
            return http.client.HTTPSConnection("localhost", self.port, context=context, timeout=20)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)

    def call(self, method, body=None, token=None, headers=None):
        conn = self.connect()
        interface, name = method.rsplit(".", 1)
        headers = {"Content-Type": "application/json", **(headers or {})}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        conn.request("POST", f"/v1/{interface}/{name}", body=json.dumps(body or {}), headers=headers)
        response = conn.getresponse()
        data = json.loads(response.read() or b"null")
        conn.close()
        return response.status, data

    def stream(self, method, body, token, headers=None):
        """Yields (seconds since the request, event dict) for each SSE event."""
        conn = self.connect()
        interface, name = method.rsplit(".", 1)
        h = {"Content-Type": "application/json", "Accept": "text/event-stream", "Authorization": f"Bearer {token}"}
        h.update(headers or {})
        started = time.time()
        conn.request("POST", f"/v1/{interface}/{name}", body=json.dumps(body), headers=h)
        response = conn.getresponse()
        if response.status != 200:
            raise AssertionError(f"stream refused: {response.status} {response.read()[:300]}")
        block = []
        while True:
            line = response.readline()
            if not line:
                break
            line = line.decode().rstrip("\n")
            if line == "":
                event = dict(l.split(": ", 1) for l in block if not l.startswith(":") and ": " in l)
                block = []
                if "data" in event:
                    event["data"] = json.loads(event["data"])
                    yield time.time() - started, event
                continue
            block.append(line)
        conn.close()


def edge_security_checks(edge, email):
    """Security review findings 3, 8, 10, 11 and 12 through nginx (X-Forwarded-For as nginx
    appends it; the test client is on loopback, which appd trusts as the proxy's address, so the
    address it sends stands for the client's)."""
    # 10: a taken email is answered as a new one.
    status, reply = edge.call("io.appd.Auth.SignUp", {"email": email, "password": "someone else's password"})
    check("through nginx: sign-up with a taken email answers 200 with a user (no EmailTaken)",
          status == 200 and reply.get("user", {}).get("id"), f"{status} {reply}")
    # 11: wrong passwords from one address do not lock the owner out elsewhere (throttle in the
    # shared database, so both instances count them).
    owner = f"owner{int(time.time() * 1000)}@example.com"
    edge.call("io.appd.Auth.SignUp", {"email": owner, "password": PASSWORD}, headers={"X-Forwarded-For": "192.0.2.200"})
    statuses = [edge.call("io.appd.Auth.SignIn", {"email": owner, "password": "wrong password"}, headers={"X-Forwarded-For": "203.0.113.5"})[0]
                for _ in range(5)]
    attacker, _ = edge.call("io.appd.Auth.SignIn", {"email": owner, "password": PASSWORD}, headers={"X-Forwarded-For": "203.0.113.5"})
    status, reply = edge.call("io.appd.Auth.SignIn", {"email": owner, "password": PASSWORD}, headers={"X-Forwarded-For": "198.51.100.7"})
    check("through nginx: five wrong passwords slow that address down (429), the owner elsewhere signs in",
          statuses == [401] * 5 and attacker == 429 and status == 200, f"{statuses} {attacker} {status}")
    token = reply.get("session", {}).get("accessToken") if status == 200 else None
    # 12: one IPv6 /64 is one client for the rate limit (30 a minute per instance; Refresh is
    # limited like sign-in and cheap, so the minute's budget is spent before it refills).
    v6 = [edge.call("io.appd.Auth.Refresh", {"refreshToken": f"not-a-token-{n}"},
                    headers={"X-Forwarded-For": f"2001:db8:99:1:{n:x}::1"})[0] for n in range(70)]
    other, _ = edge.call("io.appd.Auth.Refresh", {"refreshToken": "not-a-token"}, headers={"X-Forwarded-For": "2001:db8:99:2::1"})
    check("through nginx: 70 refreshes from one IPv6 /64 meet the rate limit; the next /64 does not",
          429 in v6 and v6[:20] == [401] * 20 and other == 401, f"{v6.count(429)} refused, next /64 {other}")
    if not token:
        return
    edge.call("io.appd.Auth.CompleteOnboarding", {}, token)
    # 3: a subscription's topics are bounded.
    status, reply = edge.call("io.appd.Bus.Subscribe", {"topics": [f"t{n}.x" for n in range(65)]}, token, headers={"Accept": "text/event-stream"})
    check("through nginx: Subscribe with 65 topics is 400 naming 'topics'",
          status == 400 and reply.get("parameters", {}).get("parameter") == "topics", f"{status} {reply}")
    # 8: one address cannot hold every stream (3 per address and instance here).
    tokens = []
    for n in range(4):
        member = f"streams{n}-{int(time.time() * 1000)}@example.com"
        edge.call("io.appd.Auth.SignUp", {"email": member, "password": PASSWORD}, headers={"X-Forwarded-For": f"192.0.2.{10 + n}"})
        _, signed = edge.call("io.appd.Auth.SignIn", {"email": member, "password": PASSWORD}, headers={"X-Forwarded-For": f"192.0.2.{10 + n}"})
        tokens.append(signed["session"]["accessToken"])
    held, refused = [], None
    for n in range(8):
        conn = edge.connect()
        conn.request("POST", "/v1/io.appd.Bus/Subscribe", body=json.dumps({"topics": ["todos.>"]}),
                     headers={"Content-Type": "application/json", "Accept": "text/event-stream", "Authorization": f"Bearer {tokens[n // 2]}",
                              "X-Forwarded-For": "198.51.100.30"})
        response = conn.getresponse()
        if response.status != 200:
            refused = (n, response.status, json.loads(response.read() or b"null"))
            conn.close()
            break
        held.append(conn)
    conn = edge.connect()
    conn.request("POST", "/v1/io.appd.Bus/Subscribe", body=json.dumps({"topics": ["todos.>"]}),
                 headers={"Content-Type": "application/json", "Accept": "text/event-stream", "Authorization": f"Bearer {tokens[3]}",
                          "X-Forwarded-For": "198.51.100.31"})
    elsewhere = conn.getresponse().status
    conn.close()
    for c in held:
        c.close()
    check("through nginx: one address's streams meet the per-address cap (429 TooManyStreams); another address still gets one",
          refused is not None and refused[0] <= 6 and refused[1] == 429 and refused[2].get("error") == "io.appd.Bus.TooManyStreams" and elsewhere == 200,
          f"{len(held)} held, refused {refused}, elsewhere {elsewhere}")


def main():
    binary, url, repo = sys.argv[1], sys.argv[2], sys.argv[3]
    with tempfile.TemporaryDirectory() as directory:
        a = Instance(binary, directory, "a", url)
        b = Instance(binary, directory, "b", url)
        nginx, port, cert = start_nginx(repo, directory, [a.port, b.port])
        try:
            edge = Client(port, cert)
            direct = [Client(a.port), Client(b.port)]
            email = f"edge{int(time.time() * 1000)}@example.com"
            status, reply = edge.call("io.appd.Auth.SignUp", {"email": email, "password": PASSWORD})
            check("sign up through nginx (TLS)", status == 200, f"{status} {reply}")
            status, reply = edge.call("io.appd.Auth.SignIn", {"email": email, "password": PASSWORD})
            check("sign in through nginx", status == 200, f"{status} {reply}")
            token = reply["session"]["accessToken"]
            user_id = reply["session"]["user"]["id"]
            statuses = [edge.call("io.appd.Auth.WhoAmI", {}, token)[0] for _ in range(6)]
            check("the session is good on whichever instance nginx picks", statuses == [200] * 6, str(statuses))
            edge.call("io.appd.Auth.CompleteOnboarding", {}, token)

            # A chat reply streamed through nginx arrives event by event, not at the end.
            _, conversation = edge.call("io.appd.Chat.CreateConversation", {"title": "through nginx"}, token)
            arrivals = [(t, e) for t, e in edge.stream("io.appd.Chat.Send", {"conversationId": conversation["conversation"]["id"], "text": "one two three four five six"}, token)]
            deltas = [t for t, e in arrivals if e["data"].get("delta")]
            check("a chat reply streams through nginx token by token (proxy_buffering off)",
                  len(deltas) >= 5 and deltas[-1] - deltas[0] > 0.5, f"{len(deltas)} deltas over {deltas[-1] - deltas[0] if deltas else 0:.2f} s")

            # A subscriber reached through nginx receives what each instance commits.
            stream = edge.stream("io.appd.Bus.Subscribe", {"topics": ["todos.>"]}, token, headers={"Last-Event-ID": "0"})
            titles = [f"via {name} {n}" for n in range(3) for name in ("a", "b")]
            for n, title in enumerate(titles):
                status, _ = direct[n % 2].call("io.appd.Todos.Add", {"title": title}, token)
                check(f"add '{title}' directly on instance {'ab'[n % 2]}", status == 200, str(status), quiet=True)
            seen = []
            for _, event in stream:
                payload = event["data"].get("payload", {})
                if event["data"].get("topic") == "todos.created":
                    seen.append(payload.get("title"))
                if all(t in seen for t in titles):
                    break
            check("an SSE subscriber through nginx gets the events written through both instances, in order",
                  [t for t in seen if t in titles] == titles, str(seen))
            conn = edge.connect()
            conn.request("GET", "/metrics")
            metrics_status = conn.getresponse().status
            conn.close()
            check("/metrics is not served through nginx (403), only to a local scraper", metrics_status == 403, str(metrics_status))
            status, todos = edge.call("io.appd.Todos.List", {}, token)
            check("List through nginx sees the todos of both instances", status == 200 and len(todos["todos"]) == 6, str(status))
            # Security review finding 2, through nginx and across instances: a stream opened with
            # a session ends once that session is revoked, even on the other instance (noticed by
            # the stream's periodic session check, every second here).
            _, again = edge.call("io.appd.Auth.SignIn", {"email": email, "password": PASSWORD})
            victim = again["session"]["accessToken"]
            ended = {}

            def follow():
                for t, event in edge.stream("io.appd.Bus.Subscribe", {"topics": ["todos.>"]}, victim):
                    if event.get("event") == "error":
                        ended["error"], ended["after"] = event["data"].get("error"), t
            follower = threading.Thread(target=follow, daemon=True)
            follower.start()
            time.sleep(1.0)
            revoked_at = time.time()
            for client in direct:
                status, _ = client.call("io.appd.Auth.SignOutEverywhere", {}, token)
                if status == 200:
                    break
            follower.join(timeout=15)
            check("a stream through nginx ends with its session's error when it is revoked on either instance",
                  not follower.is_alive() and ended.get("error") in ("io.appd.Auth.Unauthenticated", "io.appd.Auth.SessionExpired"),
                  f"{ended} alive={follower.is_alive()} after {time.time() - revoked_at:.1f} s")
            edge_security_checks(edge, email)
            uid = next(int(l.split()[1]) for l in open(f"/proc/{nginx.pid}/status") if l.startswith("Uid:"))
            check("nginx runs as a non-root user", uid != 0, f"uid {uid}")
        finally:
            nginx.terminate()
            nginx.wait(timeout=10)
            codes = [a.stop(), b.stop()]
        check("both instances exit 0 on SIGTERM", codes == [0, 0], str(codes))
    finish()


if __name__ == "__main__":
    main()
