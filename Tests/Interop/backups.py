#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Online backups and restore, with the real appd: backups made under a mixed write load each
verify, and the one made after it restores into a fresh data directory with every table's rows
identical (the event log included); appd killed with SIGKILL during a backup never leaves
anything `Verify` accepts but complete backups; a backup from a newer schema, or with a changed
file, is refused by `appd restore`; restore keeps the data it replaces and refuses while appd
serves; scheduled backups keep exactly backupKeep; on PostgreSQL Create says what to use.
Security review 2: a plugin racing backups by swapping its file for a symbolic link to a secret
never gets the secret into a backup (nor does a FIFO hang one, nor a vanished file fail one),
and a backup directory another user controls is refused.

Usage: backups.py APPD_BINARY [POSTGRES_URL]
"""
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

from harness import call, check, finish


def start(appd, sock, data, *extra, env=None):
    proc = subprocess.Popen([appd, "--socket", sock, "--data-dir", data, "--log-level", "warning", *extra],
                            stderr=subprocess.DEVNULL, env=env)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            if "error" not in call(sock, "io.appd.Daemon.Ping", timeout=2):
                return proc
        except OSError:
            pass
        time.sleep(0.05)
    raise SystemExit("appd did not start")


def stop(proc, sock):
    call(sock, "io.appd.Daemon.Shutdown")
    proc.wait(timeout=30)


def user(sock, email):
    call(sock, "io.appd.Auth.SignUp", {"email": email, "password": "correct horse battery"})
    token = call(sock, "io.appd.Auth.SignIn", {"email": email, "password": "correct horse battery"})["parameters"]["session"]["accessToken"]
    call(sock, "io.appd.Auth.CompleteOnboarding", token=token)
    return token


def tables(path):
    """Every table's rows, sorted, read-only."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    dump = {name: sorted(map(repr, db.execute(f'SELECT * FROM "{name}"').fetchall())) for name in names}
    db.close()
    return dump


def create_quietly(sock):
    """A backup the daemon may be killed during: its connection closing is expected."""
    try:
        call(sock, "io.appd.Backup.Create", timeout=30)
    except (OSError, ConnectionError):
        pass


def restore(appd, backup, data, sock):
    return subprocess.run([appd, "restore", backup, "--data-dir", data, "--socket", sock], capture_output=True, text=True, timeout=120)


def main():
    appd = sys.argv[1]
    postgres = sys.argv[2] if len(sys.argv) > 2 else None
    root = tempfile.mkdtemp(prefix="appd-backups-")
    try:
        sock, data = os.path.join(root, "a.sock"), os.path.join(root, "data")
        proc = start(appd, sock, data)
        tokens = [user(sock, f"u{i}@example.com") for i in range(4)]
        stop_load = threading.Event()

        def load(n):
            i = 0
            while not stop_load.is_set():
                call(sock, "io.appd.Todos.Add", {"title": f"todo {n}.{i}"}, token=tokens[n % len(tokens)])
                if i % 5 == 0:
                    call(sock, "io.appd.Chat.CreateConversation", {"title": f"c {n}.{i}"}, token=tokens[n % len(tokens)])
                i += 1

        workers = [threading.Thread(target=load, args=(n,)) for n in range(4)]
        for w in workers:
            w.start()
        during = []
        for _ in range(3):
            time.sleep(0.3)
            reply = call(sock, "io.appd.Backup.Create", timeout=60)
            during.append(reply.get("parameters", {}).get("backup", {}))
        stop_load.set()
        for w in workers:
            w.join()
        check("three backups made under a mixed write load", all(b.get("path") for b in during), str(during))
        verified = [call(sock, "io.appd.Backup.Verify", {"path": b.get("path", "")}) for b in during]
        check("each verifies", all("error" not in v for v in verified), str(verified)[:500])
        check("and they follow the log forward", [b.get("lastSeq") for b in during] == sorted(b.get("lastSeq") for b in during), str(during))

        final = call(sock, "io.appd.Backup.Create")["parameters"]["backup"]
        status = call(sock, "io.appd.Daemon.Status")["parameters"]
        check("the final backup holds the whole event log", final["lastSeq"] == status["eventLog"]["lastSeq"], f"{final['lastSeq']} {status['eventLog']['lastSeq']}")
        check("appctl status shows the last backup", status.get("backups", {}).get("last") == final["path"], str(status.get("backups")))
        refused = restore(appd, final["path"], os.path.join(root, "restored"), sock)
        check("restore refuses while appd serves", refused.returncode == 69 and "stop it first" in refused.stderr, refused.stderr)
        original = tables(os.path.join(data, "appd.db"))
        stop(proc, sock)
        original_stopped = tables(os.path.join(data, "appd.db"))
        proc = start(appd, sock, data)
        status = call(sock, "io.appd.Daemon.Status")["parameters"]
        check("after a restart appctl status still shows the last backup (the newest found on disk)",
              status.get("backups", {}).get("last") == final["path"] and status["backups"].get("lastAt") == final["createdAt"], str(status.get("backups")))
        said = subprocess.run([os.path.join(os.path.dirname(appd), "appctl"), "--socket", sock, "backup", "verify", "--path", final["path"]],
                              capture_output=True, text=True)
        check("appctl backup verify says what it checked (files, bytes, SHA-256, integrity)",
              said.returncode == 0 and said.stdout.startswith(f"verified {final['path']}: ") and "each matching its SHA-256" in said.stdout
              and "database integrity ok" in said.stdout, said.stdout + said.stderr)
        stop(proc, sock)

        restored_dir = os.path.join(root, "restored")
        out = restore(appd, final["path"], restored_dir, sock)
        check("appd restore puts the backup in a fresh data directory", out.returncode == 0, out.stderr + out.stdout)
        check("every table's rows are identical, the event log's too",
              tables(os.path.join(restored_dir, "appd.db")) == original_stopped and original == original_stopped,
              str({k: (len(v), len(original_stopped.get(k, []))) for k, v in tables(os.path.join(restored_dir, "appd.db")).items()}))
        proc = start(appd, sock, restored_dir)
        check("appd serves the restored data: the same last sequence",
              call(sock, "io.appd.Daemon.Status")["parameters"]["eventLog"]["lastSeq"] == final["lastSeq"])
        listed = call(sock, "io.appd.Todos.List", {"limit": 200}, token=tokens[0])
        check("and a restored session still works", "error" not in listed and len(listed["parameters"]["todos"]) > 0, str(listed)[:300])
        stop(proc, sock)

        # Restoring over existing data keeps it aside.
        out = restore(appd, during[0]["path"], restored_dir, sock)
        aside = [n for n in os.listdir(restored_dir) if n.startswith("pre-restore-")]
        check("restoring over data keeps that data aside, whole",
              out.returncode == 0 and len(aside) == 1 and os.path.exists(os.path.join(restored_dir, aside[0], "appd.db")), out.stderr + str(aside))

        # A newer schema, a changed file: refused before anything is touched.
        newer = os.path.join(root, "newer")
        shutil.copytree(final["path"], newer)
        db = sqlite3.connect(os.path.join(newer, "appd.db"))
        db.execute("UPDATE appd_schema SET version = version + 1 WHERE plugin = 'todos'")
        db.commit()
        db.close()
        with open(os.path.join(newer, "manifest.json")) as f:
            manifest = json.load(f)
        for entry in manifest["files"]:
            if entry["path"] == "appd.db":
                with open(os.path.join(newer, "appd.db"), "rb") as f:
                    blob = f.read()
                entry["sha256"], entry["bytes"] = hashlib.sha256(blob).hexdigest(), len(blob)
        manifest["schemaVersions"]["todos"] += 1
        with open(os.path.join(newer, "manifest.json"), "w") as f:
            json.dump(manifest, f)
        out = restore(appd, newer, os.path.join(root, "never"), sock)
        check("a backup from a newer schema is refused", out.returncode == 65 and "newer than this appd knows" in out.stderr, out.stderr)
        check("and nothing was written", not os.path.exists(os.path.join(root, "never", "appd.db")))
        changed = os.path.join(root, "changed")
        shutil.copytree(final["path"], changed)
        with open(os.path.join(changed, "appd.db"), "r+b") as f:
            f.seek(5000)
            byte = f.read(1)
            f.seek(5000)
            f.write(bytes([byte[0] ^ 0xFF]))
        out = restore(appd, changed, os.path.join(root, "never"), sock)
        check("a backup with a changed file is refused", out.returncode == 65 and "SHA-256" in out.stderr, out.stderr)

        # SIGKILL during a backup: only complete backups verify, whatever the moment.
        killed_data = os.path.join(root, "killed")
        shutil.copytree(restored_dir, killed_data, ignore=shutil.ignore_patterns("backups", "pre-restore-*"))
        for delay in [0.0, 0.005, 0.02, 0.05, 0.1]:
            proc = start(appd, sock, killed_data)
            threading.Thread(target=create_quietly, args=(sock,), daemon=True).start()
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        proc = start(appd, sock, killed_data)
        folder = os.path.join(killed_data, "backups")
        entries = sorted(os.listdir(folder)) if os.path.exists(folder) else []
        complete = call(sock, "io.appd.Backup.List")["parameters"]["backups"]
        results = {e: "error" not in call(sock, "io.appd.Backup.Verify", {"path": os.path.join(folder, e)}) for e in entries}
        check("after SIGKILLs during backups, what verifies is exactly the complete backups",
              {os.path.join(folder, e) for e, ok in results.items() if ok} == set(complete), str(results))
        print(f"     ({len(complete)} complete, {len(entries) - len(complete)} left partial by the kills)")
        # A kill after the last file but before the rename leaves a .partial whose contents check
        # out: still not a backup (the rename is what makes one).
        if complete:
            unfinished = os.path.join(folder, "." + os.path.basename(complete[0]) + "-copy.partial")
            shutil.copytree(complete[0], unfinished)
            refused = call(sock, "io.appd.Backup.Verify", {"path": unfinished})
            check("a .partial backup is refused even when its contents are complete",
                  refused.get("error") == "io.appd.Backup.BackupFailed" and "unfinished" in refused.get("parameters", {}).get("reason", ""), str(refused))
            shutil.rmtree(unfinished)
        stop(proc, sock)

        # Scheduled backups keep exactly backupKeep.
        proc = start(appd, sock, killed_data, "--backup-schedule-seconds", "1", "--backup-keep", "2")
        time.sleep(4.5)
        kept = call(sock, "io.appd.Backup.List")["parameters"]["backups"]
        stale = [e for e in os.listdir(folder) if e.endswith(".partial")]
        check("scheduled backups keep exactly backupKeep (2), and partial ones are cleared", len(kept) == 2 and not stale, f"{kept} {stale}")
        stop(proc, sock)

        racing_plugin(appd, root)
        untrusted_backup_directory(appd, root)

        if postgres:
            proc = start(appd, sock, os.path.join(root, "pg-data"), "--database", postgres)
            reply = call(sock, "io.appd.Backup.Create")
            check("on PostgreSQL, Create says to use the server's own tools",
                  reply.get("error") == "io.appd.Backup.BackupFailed" and "pg_dump" in reply["parameters"]["reason"], str(reply))
            stop(proc, sock)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    finish()


def racing_plugin(appd, root):
    """Finding 3: backups open plugin files by name as root while the plugin runs. A plugin that
    swaps its file for a symbolic link to a root-only secret (here the test does the swapping,
    as the plugin's own process would) must never get the secret into a backup; a permanent
    link, a FIFO and files that vanish are skipped and listed, never fatal."""
    sock, data = os.path.join(root, "race.sock"), os.path.join(root, "race-data")
    secret = os.path.join(root, "shadow")
    with open(secret, "w") as f:
        f.write("TOP-SECRET-" + "x" * 64)
    os.chmod(secret, 0o600)
    folder = os.path.join(data, "plugin-data", "racer")
    os.makedirs(folder)
    os.symlink(secret, os.path.join(folder, "always-a-link"))
    os.mkfifo(os.path.join(folder, "pipe"))
    proc = start(appd, sock, data)
    stop_race = threading.Event()

    def race():
        target, staged = os.path.join(folder, "state"), os.path.join(folder, ".staged")
        i = 0
        while not stop_race.is_set():
            if i % 2:
                try:
                    os.unlink(staged)
                except FileNotFoundError:
                    pass
                os.symlink(secret, staged)
            else:
                with open(staged, "w") as f:
                    f.write("plugin state %d" % i)
            os.replace(staged, target)
            # Files that come and go.
            churn = os.path.join(folder, "churn-%d" % (i % 50))
            if os.path.exists(churn):
                os.unlink(churn)
            else:
                open(churn, "w").close()
            i += 1

    racer = threading.Thread(target=race)
    racer.start()
    made, errors = [], []
    try:
        for _ in range(15):
            reply = call(sock, "io.appd.Backup.Create", timeout=60)
            if "error" in reply:
                errors.append(reply)
            else:
                made.append(reply["parameters"]["backup"]["path"])
    finally:
        stop_race.set()
        racer.join()
    check("15 backups under a racing plugin all succeed", len(made) == 15 and not errors, str(errors)[:500])
    leaked = []
    skipped = []
    for backup in made:
        for dirpath, _, files in os.walk(backup):
            for name in files:
                path = os.path.join(dirpath, name)
                check_path = os.path.islink(path)
                with open(path, "rb") as f:
                    if b"TOP-SECRET" in f.read():
                        leaked.append(path)
                if check_path:
                    leaked.append(path + " (a link)")
        with open(os.path.join(backup, "manifest.json")) as f:
            skipped.append(json.load(f).get("skipped", []))
    check("no backup holds the secret or a link", not leaked, str(leaked)[:500])
    check("the permanent link and the FIFO are listed as skipped in every manifest",
          all(any(s.startswith("racer/always-a-link: a symbolic link") for s in k) and any(s.startswith("racer/pipe: not a regular file") for s in k) for k in skipped),
          str(skipped[:2])[:500])
    stop(proc, sock)


def untrusted_backup_directory(appd, root):
    """Finding 8: a backup directory whose parent another user owns (who can remove backups or
    plant one that verifies) is refused at start, with the reason."""
    if os.getuid() != 0:
        return
    theirs = os.path.join(root, "theirs")
    os.makedirs(theirs)
    os.chown(theirs, 4242, 4242)
    os.chmod(theirs, 0o755)
    out = subprocess.run([appd, "--socket", os.path.join(root, "u.sock"), "--data-dir", os.path.join(root, "u-data"),
                          "--backup-directory", os.path.join(theirs, "backups")], capture_output=True, text=True, timeout=30)
    check("a backup directory under another user's folder is refused at start",
          out.returncode != 0 and "refusing to keep backups" in out.stderr and "another user" in out.stderr, out.stderr[-500:])


if __name__ == "__main__":
    main()
