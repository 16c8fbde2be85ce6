#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An offline-first todos client for appd's HTTP API, in the Python standard library only.

It keeps a local SQLite copy of the account's todos and works against it; every edit is also
queued (the outbox) with the idempotency key made when the edit was made and the version the
edit was based on. `sync` sends the queue in order while the server answers — a lost reply is
sent again with the same key and has its effect once — takes the server's todo when an edit
conflicts (the server's version wins), then pulls `Todos.Changes` from its cursor until caught
up (tombstones delete local todos; a cursor too old starts again from an empty one).

    offline_todos.py --api http://127.0.0.1:8080/v1 --token TOKEN [--db FILE] COMMAND
      list                    the local copy
      add TITLE               add locally and queue it
      done ID                 complete locally and queue it
      rename ID TITLE         retitle locally and queue it
      delete ID               delete locally and queue it
      sync                    send the queue, then pull
      demo                    two devices, one offline, against the server (exits 1 if they
                              do not end with the server's exact state)
"""
import argparse
import http.client
import json
import os
import sqlite3
import sys
import tempfile
import urllib.error
import urllib.parse
import uuid


class Offline(Exception):
    """The server did not answer: the edit stays queued."""


class Server:
    def __init__(self, api, token):
        self.url = urllib.parse.urlparse(api)
        self.token = token
        self.reachable = True  # the demo turns the network off and on

    def call(self, method, body, key=None, drop_reply=False):
        """(status, reply) of POST <api>/<interface>/<Method>; raises Offline when unreachable.
        `drop_reply` sends the request and loses the reply, as a dropped connection would."""
        if not self.reachable:
            raise Offline()
        interface, name = method.rsplit(".", 1)
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.token}"}
        if key:
            headers["Idempotency-Key"] = key
        try:
            conn = http.client.HTTPConnection(self.url.hostname, self.url.port or 80, timeout=30)
            conn.request("POST", f"{self.url.path}/{interface}/{name}", json.dumps(body), headers)
            response = conn.getresponse()
            data = response.read()
            conn.close()
        except OSError as error:
            raise Offline() from error
        if drop_reply:
            raise Offline()
        return response.status, json.loads(data) if data else {}


class Device:
    """One device's local copy and outbox."""

    def __init__(self, path, server):
        self.server = server
        self.db = sqlite3.connect(path)
        self.db.executescript("""
            CREATE TABLE IF NOT EXISTS todos (id TEXT PRIMARY KEY, todo TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS outbox (n INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, method TEXT NOT NULL, body TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT);
        """)
        self.db.commit()

    # The local copy

    def todos(self):
        return {row[0]: json.loads(row[1]) for row in self.db.execute("SELECT id, todo FROM todos")}

    def put(self, todo):
        self.db.execute("INSERT OR REPLACE INTO todos (id, todo) VALUES (?, ?)", (todo["id"], json.dumps(todo, sort_keys=True)))

    def cursor(self):
        row = self.db.execute("SELECT value FROM meta WHERE name = 'cursor'").fetchone()
        return int(row[0]) if row else None

    # Edits: applied locally at once, queued for the server with their key and base version

    def queue(self, method, body):
        self.db.execute("INSERT INTO outbox (key, method, body) VALUES (?, ?, ?)", (str(uuid.uuid4()), method, json.dumps(body)))
        self.db.commit()

    def add(self, title):
        todo_id = "t_" + str(uuid.uuid4())
        self.put({"id": todo_id, "title": title, "done": False, "version": 0, "pending": True})
        self.queue("io.appd.Todos.Add", {"id": todo_id, "title": title})
        return todo_id

    def change(self, todo_id, method, body, local):
        todo = self.todos()[todo_id]
        # The version the edit is based on; a todo not yet on the server has none to check.
        base = todo.get("version") or None
        self.put({**todo, **local, "pending": True})
        self.queue(method, {"id": todo_id, **body, **({"expectedVersion": base} if base else {})})

    def complete(self, todo_id):
        self.change(todo_id, "io.appd.Todos.Complete", {}, {"done": True})

    def rename(self, todo_id, title):
        self.change(todo_id, "io.appd.Todos.Update", {"title": title}, {"title": title})

    def delete(self, todo_id):
        base = self.todos()[todo_id].get("version") or None
        self.db.execute("DELETE FROM todos WHERE id = ?", (todo_id,))
        self.queue("io.appd.Todos.Delete", {"id": todo_id, **({"expectedVersion": base} if base else {})})

    # Sync

    def push(self, lose_first_reply=False):
        """Sends the queue in order; returns what happened to each edit."""
        log = []
        for n, key, method, body in self.db.execute("SELECT n, key, method, body FROM outbox ORDER BY n").fetchall():
            body = json.loads(body)
            try:
                if lose_first_reply:
                    lose_first_reply = False
                    try:
                        self.server.call(method, body, key, drop_reply=True)
                    except Offline:
                        log.append(f"{method}: reply lost, sending again with the same key")
                status, reply = self.server.call(method, body, key)
            except Offline:
                log.append("offline: the rest stays queued")
                break
            error = reply.get("error", "")
            if status == 200:
                if "todo" in reply:
                    self.put(reply["todo"])
                log.append(f"{method}: done")
            elif error.endswith(".Conflict"):
                # The server's version wins: take its todo, drop the edit.
                self.put(reply["parameters"]["todo"])
                log.append(f"{method}: conflict, took the server's todo (version {reply['parameters']['todo']['version']})")
            elif error.endswith(".NotFound"):
                self.db.execute("DELETE FROM todos WHERE id = ?", (body["id"],))
                log.append(f"{method}: gone on the server")
            elif status in (409, 429, 503, 504):
                log.append(f"{method}: not now ({error}), stays queued")
                break
            else:
                raise SystemExit(f"{method} refused: {status} {reply}")
            self.db.execute("DELETE FROM outbox WHERE n = ?", (n,))
            self.db.commit()
        return log

    def pull(self):
        """Brings the local copy to the server's state; returns the number of changes applied."""
        cursor, applied = self.cursor(), 0
        if cursor is None:
            # A first pull holds every todo: the local copy is rebuilt from it (queued edits stay).
            self.db.execute("DELETE FROM todos WHERE json_extract(todo, '$.pending') IS NOT 1")
        while True:
            status, page = self.server.call("io.appd.Todos.Changes", {"limit": 200, **({"cursor": cursor} if cursor is not None else {})})
            if status == 410:  # ResyncRequired: start again from an empty cursor
                self.db.execute("DELETE FROM todos WHERE json_extract(todo, '$.pending') IS NOT 1")
                cursor = None
                continue
            if status != 200:
                raise SystemExit(f"Changes refused: {status} {page}")
            for change in page["changes"]:
                if change["deleted"]:
                    self.db.execute("DELETE FROM todos WHERE id = ?", (change["id"],))
                else:
                    self.put(change["todo"])
                applied += 1
            cursor = page["nextCursor"]
            if not page["more"]:
                break
        self.db.execute("INSERT OR REPLACE INTO meta (name, value) VALUES ('cursor', ?)", (str(cursor),))
        self.db.commit()
        return applied

    def sync(self, lose_first_reply=False):
        log = self.push(lose_first_reply)
        if self.server.reachable:
            log.append(f"pulled {self.pull()} changes")
        return log


def server_state(server):
    todos, cursor = {}, None
    while True:
        status, page = server.call("io.appd.Todos.List", {"limit": 500, **({"cursor": cursor} if cursor else {})})
        if status != 200:
            raise SystemExit(f"List refused: {status} {page}")
        todos.update({t["id"]: t for t in page["todos"]})
        cursor = page.get("nextCursor")
        if not cursor:
            return todos


def demo(api, token):
    """Two devices of one account; the phone goes offline, edits, and comes back."""
    with tempfile.TemporaryDirectory() as directory:
        phone = Device(os.path.join(directory, "phone.db"), Server(api, token))
        tablet = Device(os.path.join(directory, "tablet.db"), Server(api, token))
        for device in (phone, tablet):
            device.sync()
        shared = phone.add("plan the trip")
        gone = phone.add("book the ferry")
        print("phone:", *phone.sync(), sep="\n  ")
        tablet.sync()

        phone.server.reachable = False
        print("phone goes offline")
        offline = phone.add("written on the train")
        phone.rename(shared, "plan the trip (phone)")
        phone.complete(offline)
        print("tablet (online) edits the same todo and deletes another")
        tablet.rename(shared, "plan the trip (tablet)")
        tablet.delete(gone)
        print("tablet:", *tablet.sync(), sep="\n  ")
        print("phone while offline:", *phone.sync(), sep="\n  ")

        phone.server.reachable = True
        print("phone back online (its first reply is lost on the way):", *phone.sync(lose_first_reply=True), sep="\n  ")
        tablet.sync()

        server = server_state(phone.server)
        strip = lambda todos: {k: {f: v for f, v in t.items() if f != "pending"} for k, t in todos.items()}
        ok = strip(phone.todos()) == server and strip(tablet.todos()) == server
        titles = sorted(t["title"] for t in server.values() if t["id"] in (shared, gone, offline))
        print("server now:", titles)
        ok = ok and titles == ["plan the trip (tablet)", "written on the train"] and server[offline]["done"]
        print("both devices hold the server's exact state" if ok else "the devices differ from the server")
        return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description="An offline-first todos client for appd (see the module's help).")
    parser.add_argument("--api", required=True, help="the HTTP API's base, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--token", required=True, help="an access token (SignIn's session.accessToken)")
    parser.add_argument("--db", default="offline_todos.db", help="the local copy (default: ./offline_todos.db)")
    parser.add_argument("command", choices=["list", "add", "done", "rename", "delete", "sync", "demo"])
    parser.add_argument("args", nargs="*")
    options = parser.parse_args()
    if options.command == "demo":
        sys.exit(demo(options.api, options.token))
    device = Device(options.db, Server(options.api, options.token))
    if options.command == "list":
        for todo in device.todos().values():
            print(("[x] " if todo.get("done") else "[ ] ") + todo["title"], todo["id"], "(queued)" if todo.get("pending") else "")
    elif options.command == "add":
        print(device.add(" ".join(options.args)))
    elif options.command == "done":
        device.complete(options.args[0])
    elif options.command == "rename":
        device.rename(options.args[0], " ".join(options.args[1:]))
    elif options.command == "delete":
        device.delete(options.args[0])
    elif options.command == "sync":
        print(*device.sync(), sep="\n")


if __name__ == "__main__":
    main()
