#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""push: an appd external plugin that sends push notifications over APNs and FCM.

Apps register their device tokens (io.appd.Push.RegisterDevice, over the HTTP API); the plugin
follows appd's durable event log and turns events into pushes, without either side knowing the
other:
  chat.replyCompleted            "Your reply is ready", when the user has no live connection
                                 (no open io.appd.Bus.Subscribe stream: the app is closed)
  payments.entitlementChanged    "Your <entitlement> subscription has ended", when it expired
  todos.created / todos.updated  remembered due times; at the due time, "Due now: <title>"
  (todos.completed sets one aside and todos.reopened brings it back — due at once when its time
  passed meanwhile; todos.deleted and auth.accountDeleted forget it)

Nothing is sent twice and nothing is missed: handling an event writes its pushes into an outbox
(one row per event and device, so a redelivered event adds nothing) and moves the cursor, in one
SQLite transaction; a sender thread works the outbox, retrying 429, 5xx and an unreachable provider
with backoff and jitter (honouring Retry-After, at most 5 minutes apart) for APPD_PUSH_RETRY_HOURS
after the push was queued (an outage shorter than that loses nothing), and records each outcome.
A title or body too long for the provider's payload limit (APNs 4 KB, FCM 4,000 bytes) is cut,
between characters, with an ellipsis. When appd stops the plugin
(SIGTERM), a push in flight is finished and its outcome recorded before the process exits (up to
STOP_GRACE seconds, within appd's stop timeout), so a restart does not send it again. A token the provider calls
invalid (APNs 410 Unregistered or 400 BadDeviceToken, FCM UNREGISTERED) is dropped. The outbox is
bounded (APPD_PUSH_MAX_PENDING), and so is each account's share of it (APPD_PUSH_MAX_PENDING_PER_USER,
100): past either, new pushes are dropped and counted, so one account whose devices' provider is
down never crowds out another's. A token another account registered moves only with the
installationId it was registered with (the app's own, kept in its Keychain): knowing a token
is not owning the phone.

APNs: HTTP/2 with token auth, an ES256 JWT from the team id, key id and .p8 key, reused for
APPD_PUSH_APNS_TOKEN_MINUTES (50; 20 to 60: Apple refuses one renewed more often than every 20), renewed on ExpiredProviderToken;
apns-topic (the bundle id), apns-push-type alert, apns-priority 10, apns-expiration (an hour),
apns-collapse-id. FCM: HTTP v1 with an OAuth access token from the service account (a JWT bearer
grant at its token_uri), reused until a minute before it expires.

Configuration (the environment appd passes on, listed in plugin.json). Key files: put them in
appd's credentials folder for the plugin (/etc/appd/credentials/push/apns.p8 and fcm.json, 0600,
appd's user's): appd shows them to the plugin at $CREDENTIALS_DIRECTORY, which the two key file
settings default to.
  APPD_PUSH_APNS_TEAM_ID, APPD_PUSH_APNS_KEY_ID, APPD_PUSH_APNS_KEY_FILE ($CREDENTIALS_DIRECTORY/apns.p8),
  APPD_PUSH_APNS_TOPIC (the app's bundle id)
  APPD_PUSH_APNS_URL (https://api.push.apple.com), APPD_PUSH_APNS_SANDBOX_URL
  (https://api.sandbox.push.apple.com)
  APPD_PUSH_FCM_SERVICE_ACCOUNT (the service account's JSON key file; $CREDENTIALS_DIRECTORY/fcm.json), APPD_PUSH_FCM_URL
  (https://fcm.googleapis.com)
  APPD_PUSH_CA (a CA file to trust instead of the system's store, /etc/ssl/certs), APPD_PUSH_MAX_PENDING (10000),
  APPD_PUSH_MAX_PENDING_PER_USER (100), APPD_PUSH_RETRY_HOURS (1), APPD_PUSH_MAX_ATTEMPTS (0: no cap but the hours),
  APPD_PUSH_APNS_TOKEN_MINUTES (50)
Without APNs (or FCM) settings, pushes to iOS (or Android) devices fail and are counted.
"""
import json
import os
import random
import re
import signal
import sqlite3
import ssl
import sys
import threading
import time
import urllib.parse
from datetime import datetime, timezone

import httpx
import jwt
import varlink

DATA = os.environ.get("APPD_PLUGIN_DATA", os.path.join(os.getcwd(), "data"))
HERE = os.path.dirname(os.path.abspath(__file__))
ADDRESS = "unix:" + os.environ.get("APPD_SOCKET", "")
TOKEN = os.environ.get("APPD_PLUGIN_TOKEN", "")
APNS_URL = os.environ.get("APPD_PUSH_APNS_URL", "https://api.push.apple.com").rstrip("/")
APNS_SANDBOX_URL = os.environ.get("APPD_PUSH_APNS_SANDBOX_URL", "https://api.sandbox.push.apple.com").rstrip("/")
APNS_TEAM = os.environ.get("APPD_PUSH_APNS_TEAM_ID", "")
APNS_KEY_ID = os.environ.get("APPD_PUSH_APNS_KEY_ID", "")
CREDENTIALS = os.environ.get("CREDENTIALS_DIRECTORY", "")
APNS_KEY_FILE = os.environ.get("APPD_PUSH_APNS_KEY_FILE") or (os.path.join(CREDENTIALS, "apns.p8") if CREDENTIALS else "")
APNS_TOPIC = os.environ.get("APPD_PUSH_APNS_TOPIC", "")
FCM_URL = os.environ.get("APPD_PUSH_FCM_URL", "https://fcm.googleapis.com").rstrip("/")
FCM_ACCOUNT_FILE = os.environ.get("APPD_PUSH_FCM_SERVICE_ACCOUNT") or (os.path.join(CREDENTIALS, "fcm.json") if CREDENTIALS else "")
CA = os.environ.get("APPD_PUSH_CA") or None
MAX_PENDING = int(os.environ.get("APPD_PUSH_MAX_PENDING", "10000"))
# One account's pushes waiting (say, its devices' provider is down) never fill the outbox for others.
MAX_PENDING_PER_USER = int(os.environ.get("APPD_PUSH_MAX_PENDING_PER_USER", "100"))
# A push the provider cannot take now (429, 5xx, unreachable) is retried with backoff (at most
# RETRY_CAP_SECONDS apart) for RETRY_HOURS after it was queued, then fails; MAX_ATTEMPTS (0: no
# cap) ends it sooner.
RETRY_HOURS = float(os.environ.get("APPD_PUSH_RETRY_HOURS", "1"))
RETRY_CAP_SECONDS = 300.0
MAX_ATTEMPTS = int(os.environ.get("APPD_PUSH_MAX_ATTEMPTS", "0"))
MAX_DEVICES = 20
STOP_GRACE = 4.0  # appd sends SIGKILL 5 s after SIGTERM (ExternalPlugin.Settings.stopTimeout)
TOPICS = ["chat.replyCompleted", "payments.entitlementChanged", "todos.created", "todos.updated", "todos.completed", "todos.reopened",
          "todos.deleted", "auth.accountDeleted"]
# Apple wants the provider token renewed between 20 and 60 minutes after it was made.
APNS_TOKEN_LIFETIME = min(60, max(20, int(os.environ.get("APPD_PUSH_APNS_TOKEN_MINUTES", "50")))) * 60
# The providers' payload limits, in bytes: APNs 4 KB for a notification, FCM 4,000 for a message.
APNS_PAYLOAD_LIMIT = 4096
FCM_PAYLOAD_LIMIT = 4000
APNS_TOKEN = re.compile(r"^[0-9a-fA-F]{64,200}$")


def log(message):
    print(f"push: {message}", file=sys.stderr, flush=True)


def now_text():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def parse_time(text):
    """RFC 3339 → seconds since the epoch (None when it is not one)."""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (AttributeError, ValueError):
        return None


class Store:
    """The plugin's SQLite file: devices, mutes, remembered due times, the outbox, the cursor and
    the counters. One connection behind a lock; every change is one transaction."""

    def __init__(self, path):
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        with self.lock:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript("""
                CREATE TABLE IF NOT EXISTS devices (token TEXT PRIMARY KEY, user_id TEXT NOT NULL, platform TEXT NOT NULL,
                  environment TEXT NOT NULL, app_version TEXT, registered_at TEXT NOT NULL, seq INTEGER NOT NULL);
                CREATE INDEX IF NOT EXISTS devices_user ON devices(user_id);
                CREATE TABLE IF NOT EXISTS mutes (user_id TEXT PRIMARY KEY);
                CREATE TABLE IF NOT EXISTS due (todo_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, title TEXT NOT NULL, due_at REAL NOT NULL);
                -- A completed todo's due time, kept for the day it is reopened.
                CREATE TABLE IF NOT EXISTS paused_due (todo_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, title TEXT NOT NULL, due_at REAL NOT NULL);
                CREATE TABLE IF NOT EXISTS outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL, token TEXT NOT NULL,
                  user_id TEXT NOT NULL, payload TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0,
                  not_before REAL NOT NULL DEFAULT 0, done_at REAL, UNIQUE (event_id, token));
                CREATE INDEX IF NOT EXISTS outbox_pending ON outbox(state, not_before);
                CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE INDEX IF NOT EXISTS outbox_user ON outbox(user_id, state);
                """)
            # The app's installation id, which a token may move between accounts only with.
            if "installation" not in [row[1] for row in self.db.execute("PRAGMA table_info(devices)")]:
                self.db.execute("ALTER TABLE devices ADD COLUMN installation TEXT")
            # When a push was queued: how long it has been retried.
            if "created_at" not in [row[1] for row in self.db.execute("PRAGMA table_info(outbox)")]:
                self.db.execute("ALTER TABLE outbox ADD COLUMN created_at REAL")

    def transaction(self, work):
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                result = work(self.db)
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.changed.notify_all()
            return result

    def read(self, sql, parameters=()):
        with self.lock:
            return self.db.execute(sql, parameters).fetchall()

    def get(self, key, default=None):
        rows = self.read("SELECT value FROM state WHERE key = ?", (key,))
        return rows[0][0] if rows else default

    @staticmethod
    def put(db, key, value):
        db.execute("INSERT INTO state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, str(value)))

    @staticmethod
    def count(db, counter, by=1):
        db.execute("INSERT INTO state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + ?",
                   (counter, str(by), by))

    @staticmethod
    def enqueue(db, event_id, user_id, title, body, data, collapse=None):
        """One outbox row per device of the user (none when muted); a row for the same event and
        device that exists already is kept as it is. Returns how many rows were added."""
        if db.execute("SELECT 1 FROM mutes WHERE user_id = ?", (user_id,)).fetchone():
            return 0
        added = 0
        pending = db.execute("SELECT COUNT(*) FROM outbox WHERE state = 'pending'").fetchone()[0]
        theirs = db.execute("SELECT COUNT(*) FROM outbox WHERE user_id = ? AND state = 'pending'", (user_id,)).fetchone()[0]
        for token, in db.execute("SELECT token FROM devices WHERE user_id = ? ORDER BY seq", (user_id,)).fetchall():
            if db.execute("SELECT 1 FROM outbox WHERE event_id = ? AND token = ?", (event_id, token)).fetchone():
                continue
            if theirs >= MAX_PENDING_PER_USER:
                Store.count(db, "dropped")
                log(f"{MAX_PENDING_PER_USER} pushes for {user_id} are waiting already: one more is dropped")
                continue
            if pending >= MAX_PENDING:
                Store.count(db, "dropped")
                log(f"outbox full ({MAX_PENDING} pending): a push for {user_id} is dropped")
                continue
            payload = json.dumps({"title": title, "body": body, "data": data or {}, "collapse": collapse})
            db.execute("INSERT INTO outbox (event_id, token, user_id, payload, created_at) VALUES (?, ?, ?, ?, ?)",
                       (event_id, token, user_id, payload, time.time()))
            pending += 1
            theirs += 1
            added += 1
        return added


store = None


# MARK: Rules: events → pushes


def live_streams(user_id):
    """How many event streams the user has open (appd's io.appd.Daemon.Presence)."""
    with varlink.Client(address=ADDRESS) as client:
        connection = client.open_connection()
        try:
            client.open("io.appd.Bus", connection=connection).AuthenticatePlugin(token=TOKEN)
            return client.open("io.appd.Daemon", connection=connection).Presence(userId=user_id)["streams"]
        finally:
            connection.close()


def handle(event):
    """Decides what the event means for pushes and records it, with the cursor, in one transaction."""
    topic, payload, seq = event["topic"], event.get("payload") or {}, event.get("seq")
    event_id = event.get("id") or f"seq:{seq}"
    user = payload.get("userId")
    # Presence is asked before the transaction (a call to appd must not hold the database).
    # Only for a user with a device: most users have none, and appd need not be asked.
    away = None
    if topic == "chat.replyCompleted" and payload.get("status") == "complete" and not event.get("redacted"):
        if store.read("SELECT 1 FROM devices WHERE user_id = ? LIMIT 1", (user,)):
            away = live_streams(user) == 0

    def work(db):
        if event.get("redacted"):
            pass  # an erased account's event: nothing to send, nobody to send to
        elif topic == "chat.replyCompleted" and away:
            Store.enqueue(db, event_id, user, "Your reply is ready", "Open the app to read it.",
                          {"conversationId": payload.get("conversationId", ""), "messageId": payload.get("messageId", "")},
                          collapse=payload.get("conversationId"))
        elif topic == "payments.entitlementChanged" and payload.get("change") == "expired" and not payload.get("active"):
            name = payload.get("entitlement", "")
            Store.enqueue(db, event_id, user, f"Your {name} subscription has ended", "Renew it in the app to keep its features.",
                          {"entitlement": name})
        elif topic in ("todos.created", "todos.updated"):
            due = parse_time(payload.get("dueAt"))
            if due is None:
                db.execute("DELETE FROM due WHERE todo_id = ?", (payload["todoId"],))
            else:
                title = payload.get("title") or (db.execute("SELECT title FROM due WHERE todo_id = ?", (payload["todoId"],)).fetchone() or ["A todo"])[0]
                db.execute("INSERT INTO due (todo_id, user_id, title, due_at) VALUES (?, ?, ?, ?) ON CONFLICT(todo_id) DO UPDATE SET "
                           "title = excluded.title, due_at = excluded.due_at", (payload["todoId"], user, title, due))
        elif topic == "todos.completed":
            # Not due while done; kept for a reopen.
            db.execute("INSERT OR REPLACE INTO paused_due SELECT * FROM due WHERE todo_id = ?", (payload["todoId"],))
            db.execute("DELETE FROM due WHERE todo_id = ?", (payload["todoId"],))
        elif topic == "todos.reopened":
            # Due again at its due time (at once when that has passed while it was done).
            db.execute("INSERT OR REPLACE INTO due SELECT * FROM paused_due WHERE todo_id = ?", (payload["todoId"],))
            db.execute("DELETE FROM paused_due WHERE todo_id = ?", (payload["todoId"],))
        elif topic == "todos.deleted":
            db.execute("DELETE FROM due WHERE todo_id = ?", (payload["todoId"],))
            db.execute("DELETE FROM paused_due WHERE todo_id = ?", (payload["todoId"],))
        elif topic == "auth.accountDeleted":
            for table in ("devices", "mutes", "due", "paused_due", "outbox"):
                db.execute(f"DELETE FROM {table} WHERE user_id = ?", (user,))
        if seq is not None:
            Store.put(db, "cursor", seq)

    store.transaction(work)


def follow_events():
    """Subscribes with the plugin credential from the saved cursor; reconnects when appd restarts.
    The cursor moves with what an event led to, so a failure retries it."""
    while True:
        try:
            with varlink.Client(address=ADDRESS) as client, client.open("io.appd.Bus") as bus:
                bus.AuthenticatePlugin(token=TOKEN)
                since = store.get("cursor")
                if since is None:
                    # First run: from now, not a push for everything that ever happened.
                    with client.open("io.appd.Daemon") as daemon:
                        since = daemon.Status()["eventLog"]["lastSeq"]
                    store.transaction(lambda db: Store.put(db, "cursor", since))
                log(f"following events since {since}")
                for event in bus.Subscribe(topics=TOPICS, since=int(since), _more=True):
                    handle(event)
        except Exception as error:  # appd restarting, or not listening yet
            log(f"event stream ended ({error!r}); reconnecting")
            time.sleep(1)


OUTBOX_KEEP = 7 * 86400


def watch_due():
    """At a todo's due time, its push goes into the outbox (once: the row is then forgotten).
    Once a minute, outcomes older than a week are pruned: the outbox stays bounded, and an event
    that old is behind the cursor, never delivered again."""
    pruned = 0.0
    while True:
        def work(db):
            nonlocal pruned
            for todo_id, user_id, title, due_at in db.execute("SELECT todo_id, user_id, title, due_at FROM due WHERE due_at <= ?", (time.time(),)).fetchall():
                Store.enqueue(db, f"due:{todo_id}:{due_at}", user_id, f"Due now: {title}", "", {"todoId": todo_id}, collapse=todo_id)
                db.execute("DELETE FROM due WHERE todo_id = ?", (todo_id,))
            if time.time() - pruned > 60:
                pruned = time.time()
                db.execute("DELETE FROM outbox WHERE state != 'pending' AND done_at < ?", (time.time() - OUTBOX_KEEP,))
        try:
            store.transaction(work)
        except Exception as error:
            log(f"due times could not be checked ({error!r})")
        time.sleep(0.5)


# MARK: Providers


class Rejected(Exception):
    """The provider refused the push for good; `invalid`: the token is no longer valid."""
    def __init__(self, reason, invalid=False):
        super().__init__(reason)
        self.invalid = invalid


class TryLater(Exception):
    def __init__(self, reason, after=None):
        super().__init__(reason)
        self.after = after


def retry_after(response):
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def shorten(text, over):
    """`text` less at least `over` bytes of UTF-8 and an ellipsis, cut between characters."""
    raw = text.encode()
    kept = raw[:max(0, len(raw) - over - len("…".encode()))].decode("utf-8", "ignore")
    return kept + "…" if kept != text else text


def fitted(push, build, limit):
    """The JSON bytes `build(title, body)` makes, with the body (then the title) shortened until
    they fit `limit` bytes: a long title or body is cut, never refused by the provider."""
    title, body = push["title"], push["body"]
    while True:
        encoded = json.dumps(build(title, body), ensure_ascii=False, separators=(",", ":")).encode()
        over = len(encoded) - limit
        if over <= 0:
            return encoded
        if body:
            body = shorten(body, over) if len(body.encode()) > over + 3 else ""
        elif title:
            title = shorten(title, over) if len(title.encode()) > over + 3 else ""
        else:
            return encoded  # the data alone is too big: the provider says so


class APNs:
    def __init__(self, client):
        self.client = client
        self.key = open(APNS_KEY_FILE).read() if APNS_KEY_FILE else None
        self.jwt, self.minted = None, 0.0

    def token(self, renew=False):
        if renew or self.jwt is None or time.time() - self.minted > APNS_TOKEN_LIFETIME:
            self.minted = time.time()
            self.jwt = jwt.encode({"iss": APNS_TEAM, "iat": int(self.minted)}, self.key, algorithm="ES256", headers={"kid": APNS_KEY_ID})
        return self.jwt

    def send(self, device, push):
        if not (self.key and APNS_TEAM and APNS_KEY_ID and APNS_TOPIC):
            raise Rejected("APNs is not configured (APPD_PUSH_APNS_TEAM_ID, _KEY_ID, _KEY_FILE, _TOPIC)")
        base = APNS_SANDBOX_URL if device["environment"] == "sandbox" else APNS_URL
        body = fitted(push, lambda title, text: {"aps": {"alert": {"title": title, "body": text}, "sound": "default"}, **push["data"]}, APNS_PAYLOAD_LIMIT)
        for renew in (False, True):
            headers = {"authorization": f"bearer {self.token(renew)}", "apns-topic": APNS_TOPIC, "apns-push-type": "alert",
                       "apns-priority": "10", "apns-expiration": str(int(time.time()) + 3600), "content-type": "application/json"}
            if push.get("collapse"):
                headers["apns-collapse-id"] = str(push["collapse"])[:64]
            response = self.client.post(f"{base}/3/device/{device['token']}", content=body, headers=headers)
            reason = ""
            try:
                reason = response.json().get("reason", "")
            except ValueError:
                pass
            if response.status_code == 200:
                return
            if response.status_code == 403 and reason == "ExpiredProviderToken" and not renew:
                continue
            if response.status_code == 410 or reason in ("BadDeviceToken", "Unregistered", "DeviceTokenNotForTopic"):
                raise Rejected(f"APNs {response.status_code} {reason}", invalid=True)
            if response.status_code == 429 or response.status_code >= 500:
                raise TryLater(f"APNs {response.status_code} {reason}", retry_after(response))
            raise Rejected(f"APNs {response.status_code} {reason}")


class FCM:
    def __init__(self, client):
        self.client = client
        self.account = json.load(open(FCM_ACCOUNT_FILE)) if FCM_ACCOUNT_FILE else None
        self.access, self.expires = None, 0.0

    def token(self):
        if self.access is None or time.time() > self.expires - 60:
            issued = int(time.time())
            assertion = jwt.encode({"iss": self.account["client_email"], "scope": "https://www.googleapis.com/auth/firebase.messaging",
                                    "aud": self.account["token_uri"], "iat": issued, "exp": issued + 3600},
                                   self.account["private_key"], algorithm="RS256", headers={"kid": self.account.get("private_key_id")})
            response = self.client.post(self.account["token_uri"], data={"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": assertion})
            if response.status_code != 200:
                raise TryLater(f"FCM OAuth token: HTTP {response.status_code}", retry_after(response))
            answer = response.json()
            self.access, self.expires = answer["access_token"], time.time() + float(answer.get("expires_in", 3600))
        return self.access

    def send(self, device, push):
        if not self.account:
            raise Rejected("FCM is not configured (APPD_PUSH_FCM_SERVICE_ACCOUNT)")
        def message(title, text):
            built = {"token": device["token"], "notification": {"title": title, "body": text}, "data": {k: str(v) for k, v in push["data"].items()}}
            if push.get("collapse"):
                built["android"] = {"collapse_key": str(push["collapse"])}
            return {"message": built}
        response = self.client.post(f"{FCM_URL}/v1/projects/{urllib.parse.quote(self.account['project_id'])}/messages:send",
                                    content=fitted(push, message, FCM_PAYLOAD_LIMIT),
                                    headers={"authorization": f"Bearer {self.token()}", "content-type": "application/json"})
        if response.status_code == 200:
            return
        codes = []
        try:
            error = response.json().get("error", {})
            codes = [d.get("errorCode") for d in error.get("details", [])] + [error.get("status")]
        except ValueError:
            pass
        if "UNREGISTERED" in codes or (response.status_code == 404 and "NOT_FOUND" in codes):
            raise Rejected(f"FCM {response.status_code} UNREGISTERED", invalid=True)
        if response.status_code == 401:
            self.access = None
        if response.status_code in (401, 429) or response.status_code >= 500:
            raise TryLater(f"FCM {response.status_code} {' '.join(c for c in codes if c)}", retry_after(response))
        raise Rejected(f"FCM {response.status_code} {' '.join(c for c in codes if c)}")


sending = threading.Lock()  # held from sending a push until its outcome is recorded


def stop_gracefully(signum, frame):
    """SIGTERM: waits (up to STOP_GRACE) for the push in flight to be sent and recorded, then exits
    holding the lock, so no other push starts. Without this a push the provider accepted could stay
    pending in the outbox and be sent again after the restart."""
    finished = sending.acquire(timeout=STOP_GRACE)
    log("stopping" if finished else f"stopping with a push still in flight after {STOP_GRACE:.0f} s")
    os._exit(0)


def deliver():
    """Works the outbox, oldest first: each row sent once, retried with backoff, its outcome kept."""
    # The system's CA store (OpenSSL's default paths), or APPD_PUSH_CA instead: never a bundle of
    # the virtualenv's own (certifi) that the operator does not manage.
    client = httpx.Client(http2=True, verify=ssl.create_default_context(cafile=CA), timeout=httpx.Timeout(10.0, connect=5.0))
    apns, fcm = APNs(client), FCM(client)
    while True:
        with store.lock:
            row = store.db.execute("SELECT id, token, user_id, payload, attempts, not_before, created_at FROM outbox WHERE state = 'pending' "
                                   "ORDER BY not_before, id LIMIT 1").fetchone()
            if row is None or row[5] > time.time():
                store.changed.wait(timeout=0.5 if row is None else min(0.5, row[5] - time.time()))
                continue
        with sending:
            deliver_one(row, apns, fcm)


def deliver_one(row, apns, fcm):
    """Sends one outbox row and records its outcome (under `sending`: a stop waits for both)."""
    row_id, token, user_id, payload, attempts, _, created = row
    device = store.read("SELECT token, platform, environment FROM devices WHERE token = ? AND user_id = ?", (token, user_id))
    if not device:
        store.transaction(lambda db: db.execute("UPDATE outbox SET state = 'dropped', done_at = ? WHERE id = ?", (time.time(), row_id)))
        return
    device = {"token": device[0][0], "platform": device[0][1], "environment": device[0][2]}
    push = json.loads(payload)
    try:
        (apns if device["platform"] == "ios" else fcm).send(device, push)
        outcome = ("sent", None, None)
    except Rejected as error:
        outcome = ("invalid" if error.invalid else "failed", str(error), None)
    except TryLater as error:
        outcome = ("retry", str(error), error.after)
    except (httpx.HTTPError, OSError, KeyError, ValueError) as error:
        outcome = ("retry", repr(error), None)

    def record(db, state=outcome[0], reason=outcome[1], after=outcome[2]):
        if state == "sent":
            db.execute("UPDATE outbox SET state = 'sent', attempts = attempts + 1, done_at = ? WHERE id = ?", (time.time(), row_id))
            Store.count(db, "sent")
        elif state == "invalid":
            db.execute("UPDATE outbox SET state = 'failed', attempts = attempts + 1, done_at = ? WHERE id = ?", (time.time(), row_id))
            db.execute("DELETE FROM devices WHERE token = ?", (token,))
            Store.count(db, "removedTokens")
            Store.count(db, "failed")
        elif state == "retry" and (MAX_ATTEMPTS <= 0 or attempts + 1 < MAX_ATTEMPTS) and \
                time.time() + (delay := retry_delay(attempts, after)) < (created or time.time()) + RETRY_HOURS * 3600:
            db.execute("UPDATE outbox SET attempts = attempts + 1, not_before = ? WHERE id = ?", (time.time() + delay, row_id))
            Store.count(db, "retried")
        else:
            db.execute("UPDATE outbox SET state = 'failed', attempts = attempts + 1, done_at = ? WHERE id = ?", (time.time(), row_id))
            Store.count(db, "failed")
        if reason:
            Store.put(db, "lastError", reason)
    store.transaction(record)
    if outcome[1]:
        log(f"push to a {device['platform']} device of {user_id}: {outcome[0]} ({outcome[1]})")


def retry_delay(attempts, after):
    """The wait before the next attempt: the provider's Retry-After, or backoff from half a second
    doubling to RETRY_CAP_SECONDS, with jitter so pushes that failed together spread out."""
    if after is not None:
        return min(after, 3600.0)
    backoff = min(RETRY_CAP_SECONDS, 0.5 * 2 ** attempts)
    return backoff / 2 + random.random() * backoff / 2


# MARK: The interface


service = varlink.Service(vendor="appd examples", product="push", version="1.0.0", url="https://github.com/appd/appd", interface_dir=HERE)


def signed_in(caller):
    user = (caller or {}).get("userId")
    if not user:
        raise varlink.VarlinkError({"error": "io.appd.Push.NotSignedIn", "parameters": {}})
    return user


def invalid(field, reason):
    return varlink.VarlinkError({"error": "io.appd.Push.InvalidDevice", "parameters": {"field": field, "reason": reason}})


def device_reply(row):
    token, platform, environment, app_version, registered_at = row
    device = {"token": token, "platform": platform, "environment": environment, "registeredAt": registered_at}
    if app_version is not None:
        device["appVersion"] = app_version
    return device


def devices_of(db, user):
    return [device_reply(r) for r in db.execute(
        "SELECT token, platform, environment, app_version, registered_at FROM devices WHERE user_id = ? ORDER BY seq", (user,)).fetchall()]


@service.interface("io.appd.Push")
class Push:
    def RegisterDevice(self, token, platform, environment=None, appVersion=None, installationId=None, caller=None):
        user = signed_in(caller)
        environment = environment or "production"
        if platform not in ("ios", "android"):
            raise invalid("platform", "is ios or android")
        if environment not in ("sandbox", "production"):
            raise invalid("environment", "is sandbox or production")
        if platform == "ios" and not APNS_TOKEN.match(token or ""):
            raise invalid("token", "an APNs device token is 64 or more hexadecimal digits")
        if not token or len(token) > 4096 or any(c.isspace() or not c.isprintable() for c in token):
            raise invalid("token", "is 1 to 4096 printable characters without spaces")
        if appVersion is not None and (len(appVersion.encode()) > 64 or not appVersion.isprintable()):
            raise invalid("appVersion", "is at most 64 bytes of printable characters (no control characters such as ESC or a line break)")
        if installationId is not None and not re.fullmatch(r"[A-Za-z0-9._-]{8,128}", installationId):
            raise invalid("installationId", "is 8 to 128 letters, digits, '.', '_' or '-' (a UUID the app keeps in its Keychain)")

        def work(db):
            # A token another account registered moves only from the same installation (the
            # phone changed hands: the app sends the id it keeps); anyone else knowing a token
            # cannot take the victim's pushes nor send them their own.
            held = db.execute("SELECT user_id, installation FROM devices WHERE token = ?", (token,)).fetchone()
            if held and held[0] != user and (installationId is None or held[1] != installationId):
                raise varlink.VarlinkError({"error": "io.appd.Push.DeviceInUse", "parameters": {}})
            seq = (db.execute("SELECT COALESCE(MAX(seq), 0) FROM devices").fetchone()[0] or 0) + 1
            db.execute("INSERT INTO devices (token, user_id, platform, environment, app_version, registered_at, seq, installation) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                       "ON CONFLICT(token) DO UPDATE SET user_id = excluded.user_id, platform = excluded.platform, environment = excluded.environment, "
                       "app_version = excluded.app_version, registered_at = excluded.registered_at, seq = excluded.seq, "
                       "installation = COALESCE(excluded.installation, devices.installation)",
                       (token, user, platform, environment, appVersion, now_text(), seq, installationId))
            extra = db.execute("SELECT token FROM devices WHERE user_id = ? ORDER BY seq DESC LIMIT -1 OFFSET ?", (user, MAX_DEVICES)).fetchall()
            for old, in extra:
                db.execute("DELETE FROM devices WHERE token = ?", (old,))
            return device_reply(db.execute("SELECT token, platform, environment, app_version, registered_at FROM devices WHERE token = ?", (token,)).fetchone())
        return {"device": store.transaction(work)}

    def UnregisterDevice(self, token, caller=None):
        user = signed_in(caller)
        store.transaction(lambda db: db.execute("DELETE FROM devices WHERE token = ? AND user_id = ?", (token, user)))
        return {}

    def ListDevices(self, caller=None):
        user = signed_in(caller)
        with store.lock:
            return {"devices": devices_of(store.db, user), "muted": bool(store.db.execute("SELECT 1 FROM mutes WHERE user_id = ?", (user,)).fetchone())}

    def SetMute(self, muted, caller=None):
        user = signed_in(caller)

        def work(db):
            if muted:
                db.execute("INSERT OR IGNORE INTO mutes (user_id) VALUES (?)", (user,))
                dropped = db.execute("UPDATE outbox SET state = 'dropped', done_at = ? WHERE user_id = ? AND state = 'pending'", (time.time(), user)).rowcount
                if dropped:
                    Store.count(db, "dropped", dropped)
            else:
                db.execute("DELETE FROM mutes WHERE user_id = ?", (user,))
        store.transaction(work)
        return {"muted": bool(muted)}

    def Send(self, userId, title, body, data=None):
        if not title or len(title) > 200 or len(body) > 2000:
            raise invalid("title", "a title of 1 to 200 characters and a body of at most 2000")
        event_id = f"admin:{time.time_ns()}"
        return {"queued": store.transaction(lambda db: Store.enqueue(db, event_id, userId, title, body, data or {}))}

    def Status(self):
        with store.lock:
            pending = store.db.execute("SELECT COUNT(*) FROM outbox WHERE state = 'pending'").fetchone()[0]
            devices = store.db.execute("SELECT COUNT(*) FROM devices").fetchone()[0]
        reply = {name: int(store.get(name, "0")) for name in ("sent", "failed", "dropped", "retried", "removedTokens")}
        reply.update(pending=pending, devices=devices)
        if store.get("lastError"):
            reply["lastError"] = store.get("lastError")
        return reply

    def ExportUserData(self, userId):
        with store.lock:
            return {"devices": devices_of(store.db, userId), "muted": bool(store.db.execute("SELECT 1 FROM mutes WHERE user_id = ?", (userId,)).fetchone())}


def supervised(work):
    """Runs one of the plugin's loops; if it ever fails, the process exits so that appd restarts
    it (plugin.json: restart always) rather than serving calls with a loop gone."""
    try:
        work()
    except BaseException as error:
        log(f"{work.__name__} failed ({error!r}); exiting for appd to restart the plugin")
    os._exit(1)


class Handler(varlink.RequestHandler):
    service = service


def main():
    global store
    os.makedirs(DATA, mode=0o700, exist_ok=True)
    if varlink.server.get_listen_fd() is None:
        sys.exit("push: no socket on fd 3; appd starts this plugin (see docs/plugins.md)")
    for name, path in (("APPD_PUSH_APNS_KEY_FILE", APNS_KEY_FILE), ("APPD_PUSH_FCM_SERVICE_ACCOUNT", FCM_ACCOUNT_FILE), ("APPD_PUSH_CA", CA)):
        if path and not os.access(path, os.R_OK):
            sys.exit(f"push: {name}: cannot read {path} (inside the sandbox: list its folder under \"readOnlyPaths\")")
    store = Store(os.path.join(DATA, "push.db"))
    signal.signal(signal.SIGTERM, stop_gracefully)
    for work in (follow_events, watch_due, deliver):
        threading.Thread(target=supervised, args=(work,), daemon=True, name=work.__name__).start()
    server = varlink.ThreadingServer("unix:@unused", Handler)
    log("serving io.appd.Push")
    server.serve_forever()


if __name__ == "__main__":
    main()
