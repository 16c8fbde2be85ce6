# SPDX-License-Identifier: Apache-2.0
"""Shared by the interop suites: named checks, the closing 'N passed, N failed' line, and
one-shot varlink calls and free ports."""
import json
import socket
import sys

_counts = {"passed": 0, "failed": 0}


def check(name, condition, detail="", quiet=False):
    if condition:
        _counts["passed"] += 1
        if not quiet:
            print(f"ok   {name}")
    else:
        _counts["failed"] += 1
        print(f"FAIL {name} {detail}")


def finish():
    """Prints the summary line and exits non-zero when anything failed."""
    print(f"{_counts['passed']} passed, {_counts['failed']} failed")
    sys.exit(1 if _counts["failed"] else 0)


def exchange(s, method, parameters=None, key=None):
    """One call on an open connection, and its one reply; `key`: its idempotency key."""
    message = {"method": method, "parameters": parameters or {}}
    if key is not None:
        message["idempotencyKey"] = key
    s.sendall(json.dumps(message).encode() + b"\0")
    data = b""
    while not data.endswith(b"\0"):
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return json.loads(data[:-1])


def call(sock_path, method, parameters=None, token=None, timeout=10):
    """One varlink call on a fresh connection (after Authenticate(token) when given); the reply."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(sock_path)
    try:
        if token:
            exchange(s, "io.appd.Auth.Authenticate", {"accessToken": token})
        return exchange(s, method, parameters)
    finally:
        s.close()


def replay(s, topics, count, since=0):
    """Subscribe(since:) on an open connection; the replies until `count` arrived (or the
    connection closed), and the bytes of any reply begun after them."""
    s.sendall(json.dumps({"method": "io.appd.Bus.Subscribe", "parameters": {"topics": topics, "since": since}, "more": True}).encode() + b"\0")
    replies, data = [], b""
    while len(replies) < count:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        data += chunk
        *frames, data = data.split(b"\0")
        replies += [json.loads(f) for f in frames]
    return replies, data


def free_port():
    """A TCP port on loopback that nothing listens on now."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


def post(port, method, body, token=None, headers=None, timeout=30):
    """(status, reply) of one POST /v1/<interface>/<Method> on appd's HTTP API at `port`."""
    import http.client
    interface, name = method.rsplit(".", 1)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    sent = {"Content-Type": "application/json", **(headers or {})}
    if token:
        sent["Authorization"] = f"Bearer {token}"
    conn.request("POST", f"/v1/{interface}/{name}", json.dumps(body), sent)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, json.loads(data) if data else {}


def http_request(port, method, path, body=None, headers=None, timeout=60):
    """(status, headers, body) of one request to 127.0.0.1:`port`, whatever the path."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request(method, path, body, headers or {})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, dict(response.getheaders()), data


def wait_for(condition, timeout=20, every=0.05):
    """Checks `condition` until it gives something truthy (returned) or `timeout` seconds pass
    (then its last value): the one way the suites wait for what another process makes true."""
    import time
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    return condition()


def certificates(directory):
    """A throwaway CA and a server certificate for 127.0.0.1 it signs (openssl), readable by a
    sandboxed plugin: (ca, cert, key) paths."""
    import os
    import subprocess
    ca_key, ca, key, csr, cert = (os.path.join(directory, n) for n in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem"))
    ext = os.path.join(directory, "ext.cnf")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run = lambda *args: subprocess.run(["openssl", *args], check=True, capture_output=True)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=appd test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1")
    run("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", ext)
    for path in (ca, cert, key):
        os.chmod(path, 0o644)
    return ca, cert, key


def install_plugin(root, name, directory, venv, read_only):
    """Copies contrib/plugins/NAME into DIRECTORY/data/plugins with its sandbox opened to the
    network and to `venv` and `read_only` (read-only), as an operator would install it."""
    import os
    import shutil
    plugins = os.path.join(directory, "data", "plugins")
    os.makedirs(plugins, exist_ok=True)
    shutil.copytree(os.path.join(root, "contrib", "plugins", name), os.path.join(plugins, name))
    manifest_path = os.path.join(plugins, name, "plugin.json")
    with open(manifest_path) as f:
        manifest = json.load(f)
    manifest["sandbox"] = {"network": True, "readOnlyPaths": [venv, *read_only]}
    with open(manifest_path, "w") as f:
        json.dump(manifest, f)


def plugin_venv(directory, *packages):
    """A virtualenv of the system's Python with `packages` (pip arguments) installed; its path."""
    import os
    import subprocess
    venv = os.path.join(directory, "venv")
    subprocess.run(["/usr/bin/python3", "-m", "venv", venv], check=True)
    subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--quiet", *packages], check=True)
    return venv


def tls_server(handler, directory):
    """An http.server over TLS on loopback with a throwaway certificate for `localhost`, serving
    `handler` on a thread: (server, the certificate file to trust, its https base URL)."""
    import os
    import ssl
    import subprocess
    import threading
    from http.server import ThreadingHTTPServer

    cert, key = os.path.join(directory, "tls-cert.pem"), os.path.join(directory, "tls-key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
                   check=True, capture_output=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, cert, f"https://localhost:{server.server_address[1]}"


def database_env(url, name):
    """APPD_DATABASE for a fresh schema `appd_<name>_<pid>` on the PostgreSQL at `url` (None:
    appd's own SQLite, nothing to set)."""
    import os
    import subprocess

    if not url:
        return {}
    schema = f"appd_{name}_{os.getpid()}"
    subprocess.run(["psql", url, "-qAt", "-v", "ON_ERROR_STOP=1", "-c", f"CREATE SCHEMA {schema}"], check=True, capture_output=True)
    return {"APPD_DATABASE": url + ("&" if "?" in url else "?") + f"options=-csearch_path%3D{schema}%2Cpublic"}
