#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""appd's chat provider over TLS against a local OpenAI-compatible SSE server (Python's ssl +
http.server with a throwaway certificate): the reply streams when the certificate is trusted
through --chat-ca-file, and fails with a certificate error (nothing sent) when it is not, or
when the host name does not match; a stream cut short (the TCP connection closed without TLS
close_notify, as an attacker on the path can do) fails instead of being stored as complete.

Usage: chat_tls.py APPD_BINARY APPCTL_BINARY
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from harness import check, finish

seen = []


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        seen.append((self.path, self.headers.get("Authorization"), json.loads(body)))
        if "cut me short" in json.dumps(json.loads(body)):
            # An EOF-delimited body, then the TCP connection shut without close_notify.
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            event = "data: " + json.dumps({"choices": [{"delta": {"content": "Half a"}}]}) + "\n\n"
            self.wfile.write(event.encode())
            self.wfile.flush()
            self.request.shutdown(socket.SHUT_RDWR)  # SSLSocket.shutdown: TCP only, no TLS alert
            self.close_connection = True
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for word in ["Hello", " over", " TLS"]:
            event = "data: " + json.dumps({"choices": [{"delta": {"content": word}}]}) + "\n\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event.encode()))
            self.wfile.flush()
        done = b"data: [DONE]\n\n"
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))

    def log_message(self, *args):
        pass


def appctl(appctl_binary, sock, config, *args, stdin=None):
    env = dict(os.environ, XDG_CONFIG_HOME=config)
    return subprocess.run([appctl_binary, "--socket", sock, *args], input=stdin, capture_output=True, text=True, env=env, timeout=60)


def run_daemon(appd, directory, base_url, extra):
    sock = os.path.join(directory, "appd.sock")
    env = dict(os.environ, APPD_CHAT_API_KEY="sk-interop-secret")
    proc = subprocess.Popen([appd, "--socket", sock, "--data-dir", os.path.join(directory, "data"), "--log-level", "notice",
                             "--chat-provider", "openai", "--chat-base-url", base_url, "--chat-model", "m", *extra],
                            env=env, stderr=subprocess.PIPE, text=True)
    for _ in range(300):
        if os.path.exists(sock):
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(sock)
                s.close()
                return proc, sock
            except OSError:
                pass
        time.sleep(0.02)
    raise SystemExit("appd did not start")


def main():
    appd, appctl_binary = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as directory:
        cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
                        "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
                       check=True, capture_output=True)
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        port = server.server_address[1]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        config = os.path.join(directory, "config")

        cases = [
            ("trusted through --chat-ca-file", f"https://localhost:{port}/v1", ["--chat-ca-file", cert], "Echo"),
            ("not trusted", f"https://localhost:{port}/v1", [], "certificate"),
            ("the wrong host name", f"https://127.0.0.1:{port}/v1", ["--chat-ca-file", cert], "certificate"),
        ]
        for index, (name, url, extra, _) in enumerate(cases):
            before = len(seen)
            proc, sock = run_daemon(appd, os.path.join(directory, str(index)), url, extra)
            try:
                appctl(appctl_binary, sock, config, "signup", f"u{index}@example.com", "--password-stdin", stdin="a password\n")
                appctl(appctl_binary, sock, config, "onboard")
                result = appctl(appctl_binary, sock, config, "chat", "send", "hi")
                if index == 0:
                    check(f"TLS, {name}: the reply streams", result.returncode == 0 and result.stdout == "Hello over TLS\n", repr(result))
                    path, auth, body = seen[-1]
                    check("the request goes to /v1/chat/completions with the key and stream: true",
                          path == "/v1/chat/completions" and auth == "Bearer sk-interop-secret" and body.get("stream") is True, repr(seen[-1]))
                    cut = appctl(appctl_binary, sock, config, "chat", "send", "cut me short")
                    check("TLS, a stream cut without close_notify fails instead of ending as complete",
                          "[failed:" in cut.stdout and "close_notify" in cut.stdout, repr(cut))
                else:
                    check(f"TLS, {name}: the reply fails with a certificate error",
                          "[failed: cannot connect: TLS handshake failed: certificate" in result.stdout, repr(result))
                    check(f"TLS, {name}: nothing reached the server", len(seen) == before)
            finally:
                appctl(appctl_binary, sock, config, "shutdown")
                _, log = proc.communicate(timeout=15)
            check(f"TLS, {name}: the API key never appears in the log", "sk-interop-secret" not in log)
        server.shutdown()
    finish()


if __name__ == "__main__":
    main()
