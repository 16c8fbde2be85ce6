#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The app-facing HTTP API of the real appd, driven by third-party tools and raw HTTP:

- /openapi.json is valid OpenAPI 3.1 (openapi-spec-validator);
- a client generated from it by openapi-python-client signs up, signs in, onboards, adds and
  lists todos;
- schemathesis runs against the live API from the document: no 5xx, every response conforms;
- /metrics passes `promtool check metrics` and counts what was done;
- bearer tokens, status codes, admin methods not routed, SSE (chat token by token, Subscribe
  resumed with Last-Event-ID, own events only, keep-alive comments), a client that leaves
  cancels the chat reply, per-address rate limits with a trusted proxy's X-Forwarded-For, CORS,
  hostile heads, keep-alive, and a graceful stop.

Usage: http_api.py APPD_BINARY
"""
import http.client
import importlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from harness import call, check, finish, free_port

PASSWORD = "http api password"


class Appd:
    def __init__(self, binary, directory, extra=()):
        self.port = free_port()
        self.sock = os.path.join(directory, "appd.sock")
        self.proc = subprocess.Popen(
            [binary, "--socket", self.sock, "--data-dir", os.path.join(directory, "data"), "--log-level", "warning",
             "--http-listen", f"127.0.0.1:{self.port}", "--http-trusted-proxies", "127.0.0.1",
             "--http-allowed-origins", "https://app.example.com", "--http-rate-limit-per-minute", "5", "--chat-echo-delay-ms", "150",
             *extra])
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                call(self.sock, "io.appd.Daemon.Ping")
                return
            except OSError:
                time.sleep(0.05)
        self.proc.kill()
        raise SystemExit("appd did not start")

    def request(self, method, path, body=None, headers=None, raw=None):
        """One request on a fresh connection: (status, headers, parsed JSON or text)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        h = {"Content-Type": "application/json"} if data is not None else {}
        h.update(headers or {})
        conn.request(method, path, body=data, headers=h)
        response = conn.getresponse()
        text = response.read().decode()
        conn.close()
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = text
        return response.status, {k.lower(): v for k, v in response.getheaders()}, parsed

    def call(self, method, body=None, token=None, headers=None):
        h = dict(headers or {})
        if token:
            h["Authorization"] = f"Bearer {token}"
        interface, name = method.rsplit(".", 1)
        return self.request("POST", f"/v1/{interface}/{name}", body if body is not None else {}, h)

    def stream(self, method, body, token, headers=None):
        """Opens an SSE call; returns (socket file, status line, headers)."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=20)
        payload = json.dumps(body).encode()
        interface, name = method.rsplit(".", 1)
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        s.sendall((f"POST /v1/{interface}/{name} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                   f"Accept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n{extra}\r\n").encode() + payload)
        return SSEReader(s)

    def stop(self):
        self.proc.terminate()
        return self.proc.wait(timeout=20)


class SSEReader:
    """Reads a chunked text/event-stream response: the head, then events and comments."""

    def __init__(self, s):
        self.s = s
        self.buffer = b""
        head = self._until(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        self.status = int(lines[0].split(" ")[1])
        self.headers = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
        self.body = b""

    def _until(self, marker):
        while marker not in self.buffer:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk
        index = self.buffer.index(marker)
        out, self.buffer = self.buffer[:index], self.buffer[index + len(marker):]
        return out

    def _chunk(self):
        size = int(self._until(b"\r\n"), 16)
        if size == 0:
            self._until(b"\r\n")
            return None
        while len(self.buffer) < size + 2:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:size], self.buffer[size + 2:]
        return data

    def next(self):
        """The next event as a dict (event, id, data) or a comment as {'comment': text}; None at the end."""
        while b"\n\n" not in self.body:
            data = self._chunk()
            if data is None:
                return None
            self.body += data
        block, self.body = self.body.split(b"\n\n", 1)
        event = {}
        for line in block.decode().split("\n"):
            if line.startswith(":"):
                return {"comment": line[1:].strip()}
            key, _, value = line.partition(": ")
            event[key] = value
        if "data" in event:
            event["data"] = json.loads(event["data"])
        return event

    def close(self):
        self.s.close()


def signed_up(api, email):
    status, _, reply = api.call("io.appd.Auth.SignUp", {"email": email, "password": PASSWORD})
    assert status == 200, reply
    status, _, reply = api.call("io.appd.Auth.SignIn", {"email": email, "password": PASSWORD}, headers={"X-Forwarded-For": f"10.9.{len(email)}.1"})
    assert status == 200, reply
    token = reply["session"]["accessToken"]
    api.call("io.appd.Auth.CompleteOnboarding", {}, token)
    return token, reply["session"]["user"]["id"]


def openapi_checks(api, directory, token):
    status, headers, document = api.request("GET", "/openapi.json")
    check("GET /openapi.json is JSON", status == 200 and headers.get("content-type") == "application/json" and isinstance(document, dict), str(status))
    path = os.path.join(directory, "openapi.json")
    with open(path, "w") as f:
        json.dump(document, f)
    from openapi_spec_validator import validate
    from openapi_spec_validator.readers import read_from_filename
    try:
        spec, _ = read_from_filename(path)
        validate(spec)
        check("openapi-spec-validator: the document is valid OpenAPI 3.1", document.get("openapi", "").startswith("3.1"))
    except Exception as error:  # noqa: BLE001 - the validator's own error types vary by version
        check("openapi-spec-validator: the document is valid OpenAPI 3.1", False, str(error)[:400])
    paths = document.get("paths", {})
    check("every user method is in the document", all(p in paths for p in ["/v1/io.appd.Todos/Add", "/v1/io.appd.Auth/SignIn", "/v1/io.appd.Chat/Send", "/v1/io.appd.Bus/Subscribe"]))
    check("no admin or control method is in the document",
          not any(p.startswith("/v1/io.appd.Daemon/") or p in ["/v1/io.appd.Auth/ListUsers", "/v1/io.appd.Payments/Grant", "/v1/io.appd.Bus/Publish"] for p in paths),
          str([p for p in paths if "Daemon" in p or "ListUsers" in p]))
    send = paths["/v1/io.appd.Chat/Send"]["post"]
    check("streams are documented as text/event-stream with bearer security",
          "text/event-stream" in send["responses"]["200"]["content"] and send.get("security") == [{"bearer": []}])
    schemas = document.get("components", {}).get("schemas", {})

    def errors_at(operation, status):
        alternatives = operation["responses"].get(status, {}).get("content", {}).get("application/json", {}).get("schema", {}).get("anyOf", [])
        return {a["$ref"].rsplit("/", 1)[-1] for a in alternatives if "$ref" in a}

    add = paths["/v1/io.appd.Todos/Add"]["post"]
    check("a session method lists the session gate's errors (401 Unauthenticated, SessionExpired; 403 OnboardingRequired)",
          {"error.io.appd.Auth.Unauthenticated", "error.io.appd.Auth.SessionExpired"} <= errors_at(add, "401")
          and "error.io.appd.Auth.OnboardingRequired" in errors_at(add, "403"), str({k: errors_at(add, k) for k in add["responses"]}))
    check("a metered method lists 402 PaymentRequired with its typed parameters",
          "error.io.appd.Payments.PaymentRequired" in errors_at(send, "402")
          and set(schemas.get("error.io.appd.Payments.PaymentRequired", {}).get("properties", {}).get("parameters", {}).get("properties", {})) >= {"entitlement", "remaining", "resetsAt"},
          str(errors_at(send, "402")))
    check("a keyed write lists 422 IdempotencyKeyReused", "error.io.appd.Bus.IdempotencyKeyReused" in errors_at(add, "422"), str(errors_at(add, "422")))
    event_schema = send["responses"]["200"]["content"]["text/event-stream"].get("x-appd-event-schema", {}).get("$ref", "")
    events = schemas.get(event_schema.rsplit("/", 1)[-1], {})
    check("a stream's events have a typed schema (a reply or an error)",
          [e["properties"]["event"]["const"] for e in events.get("oneOf", [])] == ["reply", "error"], str(events)[:300])

    # A typed client generated by a third-party generator, driving a real flow.
    generated = os.path.join(directory, "generated")
    out = subprocess.run(["openapi-python-client", "generate", "--path", path, "--meta", "none", "--output-path", os.path.join(generated, "appd_client")],
                         capture_output=True, text=True, timeout=300)
    check("openapi-python-client generates a client", out.returncode == 0, out.stderr[-800:] + out.stdout[-400:])
    if out.returncode != 0:
        return
    sys.path.insert(0, generated)
    client_module = importlib.import_module("appd_client")
    Client, AuthenticatedClient = client_module.Client, client_module.AuthenticatedClient
    sign_up = importlib.import_module("appd_client.api.io_appd_auth.io_appd_auth_sign_up")
    sign_in = importlib.import_module("appd_client.api.io_appd_auth.io_appd_auth_sign_in")
    onboard = importlib.import_module("appd_client.api.io_appd_auth.io_appd_auth_complete_onboarding")
    add = importlib.import_module("appd_client.api.io_appd_todos.io_appd_todos_add")
    list_todos = importlib.import_module("appd_client.api.io_appd_todos.io_appd_todos_list")
    models = importlib.import_module("appd_client.models")
    base = f"http://127.0.0.1:{api.port}"
    anonymous = Client(base_url=base, headers={"X-Forwarded-For": "10.77.0.1"})
    created = sign_up.sync(client=anonymous, body=models.IoAppdAuthSignUpBody(email="generated@example.com", password=PASSWORD))
    check("generated client: SignUp returns a typed user", getattr(getattr(created, "user", None), "email", None) == "generated@example.com", repr(created)[:300])
    session = sign_in.sync(client=anonymous, body=models.IoAppdAuthSignInBody(email="generated@example.com", password=PASSWORD))
    access = getattr(getattr(session, "session", None), "access_token", None)
    check("generated client: SignIn returns a session", bool(access), repr(session)[:300])
    if not access:
        return
    authed = AuthenticatedClient(base_url=base, token=access)
    refused = add.sync_detailed(client=authed, body=models.IoAppdTodosAddBody(title="before onboarding"))
    check("generated client: Add before onboarding is 403 OnboardingRequired",
          refused.status_code == 403 and getattr(refused.parsed, "error", "") == "io.appd.Auth.OnboardingRequired", f"{refused.status_code} {refused.content[:200]}")
    onboard.sync(client=authed, body=models.IoAppdAuthCompleteOnboardingBody())
    for title in ["milk", "eggs"]:
        added = add.sync(client=authed, body=models.IoAppdTodosAddBody(title=title))
        check(f"generated client: Add '{title}'", getattr(getattr(added, "todo", None), "title", None) == title, repr(added)[:300])
    listed = list_todos.sync(client=authed, body=models.IoAppdTodosListBody())
    titles = sorted(t.title for t in getattr(listed, "todos", []))
    check("generated client: List returns both todos", titles == ["eggs", "milk"], str(titles))

    # schemathesis against the live API, from the document.
    st = shutil.which("schemathesis") or shutil.which("st")
    out = subprocess.run(
        [st, "run", f"http://127.0.0.1:{api.port}/openapi.json", "--checks",
         "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance",
         "--max-examples", "25", "--header", f"Authorization: Bearer {token}", "--header", "X-Forwarded-For: 10.66.0.1",
         "--request-timeout", "10", "--suppress-health-check", "all", "--generation-deterministic",
         # tus PATCH's body is application/offset+octet-stream, which schemathesis cannot serialise;
         # files_http.py drives it with tuspy and by hand.
         "--exclude-operation-id", "filesTusAppend"],
        capture_output=True, text=True, timeout=900)
    summary = [l for l in out.stdout.splitlines() if "generated" in l or "passed" in l or "failed" in l]
    check("schemathesis: no 5xx, every response conforms to the document", out.returncode == 0, "\n".join(out.stdout.splitlines()[-60:]))
    print("     schemathesis:", " | ".join(summary[-3:]))


def call_checks(api, token, other_token):
    status, headers, reply = api.call("io.appd.Todos.Add", {"title": "x"})
    check("no bearer: 401 with WWW-Authenticate", status == 401 and headers.get("www-authenticate") == "Bearer" and reply["error"] == "io.appd.Auth.Unauthenticated", f"{status} {reply}")
    status, _, reply = api.call("io.appd.Todos.Add", {"title": "x"}, token="not-a-token")
    check("a wrong bearer: 401", status == 401, f"{status} {reply}")
    status, _, reply = api.call("io.appd.Todos.Add", {"title": "x"}, headers={"Authorization": "Basic YTpi"})
    check("another scheme: 401", status == 401, f"{status} {reply}")
    status, _, reply = api.call("io.appd.Todos.Add", {"title": 5}, token)
    check("a wrong type: 400 InvalidParameter naming the field", status == 400 and reply["parameters"].get("parameter") == "title", f"{status} {reply}")
    status, _, reply = api.call("io.appd.Todos.Add", {"title": ""}, token)
    check("an invalid value: 400 ValidationFailed", status == 400 and reply["error"] == "io.appd.Todos.ValidationFailed", f"{status} {reply}")
    status, _, reply = api.call("io.appd.Todos.Get", {"id": "t_nope"}, token)
    check("a todo that does not exist: 404 NotFound", status == 404 and reply["error"] == "io.appd.Todos.NotFound", f"{status} {reply}")
    _, _, added = api.call("io.appd.Todos.Add", {"title": "private"}, token)
    status, _, reply = api.call("io.appd.Todos.Get", {"id": added["todo"]["id"]}, other_token)
    check("another user's todo: 404 (per-user scope)", status == 404, f"{status} {reply}")
    status, _, reply = api.call("io.appd.Auth.SignUp", {"email": "first@example.com", "password": PASSWORD}, headers={"X-Forwarded-For": "10.55.0.1"})
    check("an email taken: answered as a new account (200, a user), no EmailTaken to enumerate with",
          status == 200 and reply.get("user", {}).get("email") == "first@example.com", f"{status} {reply}")
    decoy = (reply.get("session") or {}).get("accessToken", "")
    check("with a session of the same shape as a new account's", bool(decoy) and reply["session"].get("user", {}).get("id") == reply["user"]["id"], f"{reply}")
    status, _, used = api.call("io.appd.Auth.WhoAmI", {}, decoy)
    check("which leads nowhere: 401 at its first use", status == 401, f"{status} {used}")
    for method in ["io.appd.Daemon.Status", "io.appd.Daemon.Shutdown", "io.appd.Auth.ListUsers", "io.appd.Payments.Grant", "io.appd.Bus.Publish",
                   "io.appd.Auth.IssueResetToken", "io.appd.Auth.Authenticate", "org.varlink.service.GetInfo", "io.appd.Nope.Nothing"]:
        status, _, reply = api.call(method, {}, token)
        check(f"{method} is not routed: 404", status == 404 and reply["error"] == "org.varlink.service.MethodNotFound", f"{status} {reply}")
    status, headers, _ = api.request("GET", "/v1/io.appd.Todos/List", headers={"Authorization": f"Bearer {token}"})
    check("GET on a method: 405 Allow: POST", status == 405 and headers.get("allow") == "POST", str(status))
    status, _, reply = api.request("POST", "/v1/io.appd.Todos/List", raw=b"{not json", headers={"Authorization": f"Bearer {token}"})
    check("a body that is not JSON: 400", status == 400 and reply["error"] == "org.varlink.service.InvalidParameter", f"{status} {reply}")
    status, _, reply = api.request("POST", "/v1/io.appd.Todos/List", raw=b"[1]", headers={"Authorization": f"Bearer {token}"})
    check("a body that is not an object: 400", status == 400, f"{status} {reply}")
    status, _, reply = api.request("POST", "/v1/io.appd.Todos/List", raw=b"title=x", headers={"Authorization": f"Bearer {token}", "Content-Type": "application/x-www-form-urlencoded"})
    check("a form body: 415", status == 415, f"{status} {reply}")
    status, _, reply = api.call("io.appd.Chat.Send", {"conversationId": "c_x", "text": "hi"}, token)
    check("a stream without Accept: text/event-stream: 406", status == 406, f"{status} {reply}")
    # Refused from the head alone, before any of the body is read (appd closes then: a client
    # still sending may see a reset instead of the answer, so the test sends only the head).
    s = socket.create_connection(("127.0.0.1", api.port), timeout=10)
    s.sendall(b"POST /v1/io.appd.Todos/List HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1200000\r\n\r\n")
    answer = s.recv(4096)
    s.close()
    check("a Content-Length over httpMaxBodyBytes: 413 before the body is read", answer.startswith(b"HTTP/1.1 413"), answer[:100])
    # And a client that sends the whole oversized body first still reads the 413 (appd lingers).
    try:
        status, _, _ = api.request("POST", "/v1/io.appd.Todos/List", raw=b"{}" * 4_000_000, headers={"Authorization": f"Bearer {token}"})
    except OSError as error:
        status = repr(error)
    check("an oversized body sent whole: the client still reads 413, not a reset", status == 413, str(status))


def sse_checks(api, token, user_id, other_token):
    _, _, conversation = api.call("io.appd.Chat.CreateConversation", {"title": "sse"}, token)
    cid = conversation["conversation"]["id"]
    reader = api.stream("io.appd.Chat.Send", {"conversationId": cid, "text": "one two three four"}, token)
    check("chat Send over SSE: 200 text/event-stream, unbuffered",
          reader.status == 200 and reader.headers.get("content-type") == "text/event-stream" and reader.headers.get("x-accel-buffering") == "no", str(reader.headers))
    events = []
    while True:
        event = reader.next()
        if event is None:
            break
        events.append(event)
    reader.close()
    deltas = [e["data"].get("delta") for e in events if e.get("event") == "reply" and e["data"].get("delta")]
    check("the reply arrives token by token, then the stream ends", len(deltas) >= 4 and events[-1]["data"].get("done") in (True, None), str(events[-2:]))

    # A client that leaves mid-reply cancels it: the message is stored as cancelled.
    reader = api.stream("io.appd.Chat.Send", {"conversationId": cid, "text": " ".join(["word"] * 40)}, token)
    first = reader.next()
    reader.close()
    time.sleep(1.0)
    _, _, history = api.call("io.appd.Chat.History", {"conversationId": cid}, token)
    last = history["messages"][-1] if history and history.get("messages") else {}
    check("a client that disconnects cancels the reply (stored as cancelled)", first is not None and last.get("status") == "cancelled", str(last)[:300])

    # Subscribe: own events only, resumable with Last-Event-ID.
    reader = api.stream("io.appd.Bus.Subscribe", {"topics": ["todos.>"]}, token, headers={"Last-Event-ID": "0"})
    api.call("io.appd.Todos.Add", {"title": "someone else's"}, other_token)
    _, _, mine = api.call("io.appd.Todos.Add", {"title": "mine"}, token)
    seen = []
    deadline = time.time() + 10
    while time.time() < deadline:
        event = reader.next()
        if event and event.get("event") == "reply":
            seen.append(event)
            if event["data"]["payload"].get("todoId") == mine["todo"]["id"] or event["data"]["payload"].get("id") == mine["todo"]["id"]:
                break
    reader.close()
    ids = [int(e["id"]) for e in seen if "id" in e]
    check("Subscribe over SSE replays and streams the caller's own events, each with id = sequence",
          seen and ids == sorted(ids) and all(e["data"]["payload"].get("userId") in (user_id, None) for e in seen), str(seen[-1:])[:300])
    check("another user's events never arrive", all("someone else" not in json.dumps(e) for e in seen))
    if ids:
        reader = api.stream("io.appd.Bus.Subscribe", {"topics": ["todos.>"]}, token, headers={"Last-Event-ID": str(ids[-2] if len(ids) > 1 else 0)})
        event = reader.next()
        reader.close()
        check("Last-Event-ID resumes right after that sequence", event is not None and int(event.get("id", -1)) == ids[-1], f"{event} {ids}")
    status, _, reply = api.call("io.appd.Bus.Subscribe", {"topics": [">"]}, token, headers={"Accept": "text/event-stream", "Last-Event-ID": "x"})
    check("a malformed Last-Event-ID: 400", status == 400, f"{status} {reply}")
    status, _, reply = api.call("io.appd.Bus.Subscribe", {"topics": [">"]}, None, headers={"Accept": "text/event-stream"})
    check("Subscribe without a bearer: 403 before any stream", status in (401, 403) and isinstance(reply, dict), f"{status} {reply}")


def keep_alive_check(api, token):
    # A client address of its own, so no earlier check's streams count against it.
    reader = api.stream("io.appd.Bus.Subscribe", {"topics": ["nothing.here"]}, token, headers={"X-Forwarded-For": "10.77.0.1"})
    if reader.status != 200:
        check("an idle stream gets a keep-alive comment within ~15 s", False, f"the stream was refused: {reader.status} {reader.buffer[:300]}")
        reader.close()
        return
    started = time.time()
    reader.s.settimeout(20)
    try:
        event = reader.next()
    except (ConnectionError, OSError) as error:
        event = f"the connection ended: {error!r}"
    reader.close()
    check("an idle stream gets a keep-alive comment within ~15 s", event == {"comment": "keep-alive"} and 13 < time.time() - started < 19,
          f"{event} after {time.time() - started:.1f} s")


def limit_checks(api):
    # Each attempt names another account, so Auth's own per-account throttle stays out of it.
    statuses = []
    for n in range(7):
        status, headers, reply = api.call("io.appd.Auth.SignIn", {"email": f"nobody{n}@example.com", "password": "wrong password"},
                                          headers={"X-Forwarded-For": "203.0.113.7, 127.0.0.1"})
        statuses.append((status, headers.get("retry-after")))
    check("sign-in from one client address: 429 with Retry-After after the limit (5/min)",
          [s for s, _ in statuses[:5]] == [401] * 5 and statuses[5][0] == 429 and int(statuses[5][1] or 0) >= 1, str(statuses))
    status, _, _ = api.call("io.appd.Auth.SignIn", {"email": "nobody9@example.com", "password": "wrong password"}, headers={"X-Forwarded-For": "203.0.113.8"})
    check("another client behind the trusted proxy has its own budget", status == 401, str(status))
    # Security review finding 12: the addresses of one IPv6 /64 are one client.
    statuses = [api.call("io.appd.Auth.SignIn", {"email": f"v6-{n}@example.com", "password": "wrong password"},
                         headers={"X-Forwarded-For": f"2001:db8:77:1:{n + 1:x}::1"})[0] for n in range(6)]
    check("sign-ins from six addresses of one IPv6 /64: the sixth is 429", statuses[:5] == [401] * 5 and statuses[5] == 429, str(statuses))
    status, _, _ = api.call("io.appd.Auth.SignIn", {"email": "v6-x@example.com", "password": "wrong password"}, headers={"X-Forwarded-For": "2001:db8:77:2::1"})
    check("the next /64 is another client", status == 401, str(status))
    status, _, _ = api.call("io.appd.Payments.Products", {}, headers={"X-Forwarded-For": "203.0.113.7"})
    check("a method outside the limited list is not limited", status == 200, str(status))

    status, headers, _ = api.request("OPTIONS", "/v1/io.appd.Todos/Add", headers={"Origin": "https://app.example.com", "Access-Control-Request-Method": "POST"})
    check("CORS preflight from an allowed origin: 204 with the allowed headers",
          status == 204 and headers.get("access-control-allow-origin") == "https://app.example.com" and "Authorization" in headers.get("access-control-allow-headers", ""), str(headers))
    status, headers, _ = api.request("OPTIONS", "/v1/io.appd.Todos/Add", headers={"Origin": "https://evil.example.com"})
    check("CORS preflight from another origin: 403, no allow header", status == 403 and "access-control-allow-origin" not in headers, str(status))
    status, headers, _ = api.request("GET", "/healthz", headers={"Origin": "https://evil.example.com"})
    check("a response to another origin carries no CORS header", status == 200 and "access-control-allow-origin" not in headers)

    # Hostile heads.
    def raw(data, read_all=True):
        s = socket.create_connection(("127.0.0.1", api.port), timeout=15)
        s.sendall(data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            if not read_all and b"\r\n\r\n" in out:
                break
        s.close()
        return out
    check("a head over the limit: 431", raw(b"GET /healthz HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n", False).startswith(b"HTTP/1.1 431"))
    check("two Content-Lengths (smuggling): 400", raw(b"POST /v1/io.appd.Todos/List HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", False).startswith(b"HTTP/1.1 400"))
    check("a chunked request body: 411", raw(b"POST /v1/io.appd.Todos/List HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", False).startswith(b"HTTP/1.1 411"))
    check("HTTP/2 preface: 400", raw(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", False).startswith(b"HTTP/1.1 400"))
    check("binary garbage: 400", raw(bytes(range(256)) * 4 + b"\r\n\r\n", False).startswith(b"HTTP/1.1 400"))
    pipelined = raw(b"GET /healthz HTTP/1.1\r\n\r\nGET /healthz HTTP/1.1\r\n\r\nGET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n")
    check("three pipelined requests on one keep-alive connection: three answers, then close", pipelined.count(b"HTTP/1.1 200 OK") == 3, pipelined[:200])
    # HEAD, as Python's http.client (a third-party client) reads it: the GET's headers, no body.
    conn = http.client.HTTPConnection("127.0.0.1", api.port, timeout=15)
    conn.request("HEAD", "/readyz")
    response = conn.getresponse()
    body = response.read()
    conn.request("GET", "/healthz")  # the same connection: the HEAD left it in step
    after = conn.getresponse()
    after_body = after.read()
    conn.close()
    check("HEAD /readyz: 200, a Content-Length, no body; the connection serves the next request",
          response.status == 200 and int(response.getheader("Content-Length", "0")) > 0 and body == b"" and after.status == 200
          and json.loads(after_body) == {"status": "ok"}, f"{response.status} {response.getheaders()} {body!r} {after.status}")
    status, _, _ = api.request("GET", "/healthz")
    check("appd still serves after the hostile inputs", status == 200)


def operations_checks(api, directory):
    status, _, reply = api.request("GET", "/readyz")
    check("/readyz: 200 with the database and plugins checked", status == 200 and reply["checks"] == {"database": "ok", "plugins": "ok"}, f"{status} {reply}")
    status, headers, text = api.request("GET", "/metrics")
    check("/metrics is Prometheus text 0.0.4", status == 200 and headers.get("content-type", "").startswith("text/plain; version=0.0.4"), str(headers))
    for name in ['appd_calls_total{method="io.appd.Todos.Add",outcome="ok",transport="http"}', "appd_call_duration_seconds_bucket",
                 'appd_gate_denials_total{gate="onboarding"', "appd_commit_batch_size_bucket", "appd_commit_duration_seconds_count",
                 'appd_connections{transport="http"}', 'appd_connections{transport="varlink"}', "appd_event_log_head", 'appd_consumer_lag{consumer=',
                 'appd_http_responses_total{route="call",status="429"}']:
        check(f"/metrics has {name}", name in text, "")
    heap = [float(line.split()[1]) for line in text.splitlines() if line.startswith("appd_heap_in_use_bytes ")]
    rss = next(int(line.split()[1]) * 1024 for line in open(f"/proc/{api.proc.pid}/status") if line.startswith("VmRSS:"))
    check("/metrics has the heap in use: over 1 MiB, under the process's resident memory", len(heap) == 1 and 1 << 20 < heap[0] < rss, f"{heap} rss {rss}")
    promtool = shutil.which("promtool")
    if promtool:
        path = os.path.join(directory, "metrics.txt")
        with open(path, "w") as f:
            f.write(text)
        out = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
        # promtool also lints names (e.g. counters ending in _total); any problem fails.
        check("promtool check metrics accepts /metrics", out.returncode == 0, (out.stdout + out.stderr)[-800:])
    else:
        check("promtool is installed (Debian's prometheus package)", False, "install prometheus")


def read_until_end(reader, seconds):
    """Events until the stream ends (or `seconds` pass); (events, ended)."""
    reader.s.settimeout(seconds)
    events = []
    try:
        while True:
            event = reader.next()
            if event is None:
                return events, True
            events.append(event)
    except socket.timeout:
        return events, False
    except (ConnectionError, OSError):
        return events, True


def security_checks(binary):
    """Security review findings 2, 3, 8 and 10 through the real binary over HTTP, on an instance
    of its own with small stream limits (and the rate limit off)."""
    with tempfile.TemporaryDirectory() as directory:
        api = Appd(binary, directory, extra=("--streams-per-account", "2", "--http-max-streams-per-client", "3",
                                             "--subscribe-max-topics", "8", "--http-rate-limit-per-minute", "0"))
        try:
            ada, _ = signed_up(api, "ada-sec@example.com")
            # 2: a stream opened with a session ends when the session is revoked elsewhere.
            reader = api.stream("io.appd.Bus.Subscribe", {"topics": ["todos.>"]}, ada)
            _, _, again = api.call("io.appd.Auth.SignIn", {"email": "ada-sec@example.com", "password": PASSWORD})
            started = time.time()
            api.call("io.appd.Auth.SignOutEverywhere", {}, again["session"]["accessToken"])
            events, ended = read_until_end(reader, 10)
            reader.close()
            errors = [e["data"].get("error") for e in events if e.get("event") == "error"]
            check("a Subscribe stream ends with its session's error when the user signs out everywhere",
                  ended and errors and errors[0] in ("io.appd.Auth.Unauthenticated", "io.appd.Auth.SessionExpired") and time.time() - started < 5,
                  f"{events} ended={ended}")
            # 3: bounded topics per subscription, bounded streams per account.
            bob, _ = signed_up(api, "bob-sec@example.com")
            status, _, reply = api.call("io.appd.Bus.Subscribe", {"topics": [f"t{n}.x" for n in range(9)]}, bob, headers={"Accept": "text/event-stream"})
            check("Subscribe with more topics than subscribeMaxTopics: 400 naming 'topics'",
                  status == 400 and reply.get("parameters", {}).get("parameter") == "topics", f"{status} {reply}")
            held = [api.stream("io.appd.Bus.Subscribe", {"topics": ["todos.>"]}, bob, headers={"X-Forwarded-For": f"10.1.0.{n}"}) for n in range(2)]
            status, headers, reply = api.call("io.appd.Bus.Subscribe", {"topics": ["todos.>"]}, bob,
                                              headers={"Accept": "text/event-stream", "X-Forwarded-For": "10.1.0.9"})
            check("a third stream of one account: 429 TooManyStreams with Retry-After",
                  all(r.status == 200 for r in held) and status == 429 and reply.get("error") == "io.appd.Bus.TooManyStreams" and headers.get("retry-after"),
                  f"{status} {reply}")
            for r in held:
                r.close()
            # 8: one address cannot hold every stream (3 per address here; accounts of 2 each).
            carol, _ = signed_up(api, "carol-sec@example.com")
            dave, _ = signed_up(api, "dave-sec@example.com")
            same = {"X-Forwarded-For": "198.51.100.20"}
            held = [api.stream("io.appd.Bus.Subscribe", {"topics": ["todos.>"]}, token, headers=same) for token in (carol, carol, dave)]
            status, _, reply = api.call("io.appd.Bus.Subscribe", {"topics": ["todos.>"]}, dave, headers={"Accept": "text/event-stream", **same})
            other = api.stream("io.appd.Bus.Subscribe", {"topics": ["todos.>"]}, dave, headers={"X-Forwarded-For": "198.51.100.21"})
            check("a fourth stream from one address: 429; another address still gets one",
                  all(r.status == 200 for r in held) and status == 429 and reply.get("error") == "io.appd.Bus.TooManyStreams" and other.status == 200,
                  f"{status} {reply} other={other.status}")
            for r in held + [other]:
                r.close()
            # 10: a taken email costs what a new one costs and is answered alike.
            def timed(email):
                begun = time.time()
                status, _, reply = api.call("io.appd.Auth.SignUp", {"email": email, "password": PASSWORD})
                return time.time() - begun, status, reply
            # Interleaved, so a load that comes and goes on the machine falls on both alike.
            fresh, taken = [], []
            for n in range(3):
                fresh.append(timed(f"fresh{n}@example.com"))
                taken.append(timed("ada-sec@example.com"))
            median = lambda runs: sorted(t for t, _, _ in runs)[1]
            ratio = median(taken) / max(median(fresh), 1e-6)
            check("sign-up of a taken email: 200 with a user, like a new one",
                  all(st == 200 and r.get("user", {}).get("id") for _, st, r in fresh + taken), str(taken[0][1:]))
            check("and it takes as long (median ratio within 0.6-1.6)", 0.6 < ratio < 1.6,
                  f"taken {median(taken) * 1000:.0f} ms, new {median(fresh) * 1000:.0f} ms")
            # 10: a reset request for an account costs what one for an unknown address costs
            # (one transaction either way; before, only the real account's wrote and synced).
            known = [f"reset{n}@example.com" for n in range(7)]
            for email in known:
                api.call("io.appd.Auth.SignUp", {"email": email, "password": PASSWORD})
            def reset_time(email):
                begun = time.perf_counter()
                status, _, _ = api.call("io.appd.Auth.RequestPasswordReset", {"email": email})
                return time.perf_counter() - begun, status
            pairs = [(reset_time(email), reset_time(f"unknown{n}@example.com")) for n, email in enumerate(known)]
            known_median = sorted(k for (k, _), _ in pairs)[3]
            unknown_median = sorted(u for _, (u, _) in pairs)[3]
            check("a reset request: the same answer for a known and an unknown address",
                  all(ks == 200 and us == 200 for (_, ks), (_, us) in pairs), str(pairs))
            check("and about the same time (medians within a factor of 1.8)", known_median < 1.8 * unknown_median and unknown_median < 1.8 * known_median,
                  f"known {known_median * 1000:.2f} ms, unknown {unknown_median * 1000:.2f} ms")
        finally:
            api.proc.kill()
            api.proc.wait()


def main():
    binary = sys.argv[1]
    security_checks(binary)
    with tempfile.TemporaryDirectory() as directory:
        api = Appd(binary, directory)
        stopped = False
        try:
            status, _, reply = api.request("GET", "/healthz")
            check("/healthz: 200", status == 200 and reply == {"status": "ok"}, f"{status} {reply}")
            token, user_id = signed_up(api, "first@example.com")
            other_token, _ = signed_up(api, "second@example.com")
            # The keep-alive stream's own account: schemathesis signs the first one out meanwhile,
            # and a stream ends with its session (security review finding 2).
            idle_token, _ = signed_up(api, "idle@example.com")
            api.call("io.appd.Todos.Add", {"title": "before"}, None)  # counted as a gate denial (no session)
            call_checks(api, token, other_token)
            sse_checks(api, token, user_id, other_token)
            limit_checks(api)
            openapi_checks(api, directory, token)
            # After schemathesis, not beside it: its connections (idle until the keep-alive timeout)
            # could fill appd's connection limit, and a refused stream is not what this checks.
            keep_alive_check(api, idle_token)
            operations_checks(api, directory)
            # A graceful stop with a stream open: the stream ends, appd exits 0.
            reader = api.stream("io.appd.Bus.Subscribe", {"topics": ["todos.>"]}, token)
            code = api.stop()
            stopped = True
            ended = False
            try:
                while reader.next() is not None:
                    pass
                ended = True  # the final chunk came
            except socket.timeout:
                ended = False  # still open: appd did not end the stream
            except (ConnectionError, OSError):
                ended = True  # closed by appd
            reader.close()
            check("SIGTERM with an event stream open: the stream ends and appd exits 0", code == 0 and ended, str(code))
        finally:
            if not stopped:
                api.proc.kill()
    finish()


if __name__ == "__main__":
    main()
