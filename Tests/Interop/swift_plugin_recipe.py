#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Walks docs/plugins.md's Swift plugin recipe from the page's own text: every block marked
`<!-- recipe: PATH -->` is written to PATH in an empty folder beside a link to this clone
(`appd`), the block marked `<!-- recipe: run in FOLDER -->` runs there with bash against a
running appd (PLUGINS its plugin directory, appctl on the PATH), and then the plugin must be
running in its sandbox and answer a signed-in user's call, publishing its event.

Usage: swift_plugin_recipe.py REPO_ROOT
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from harness import check, finish, wait_for

PASSWORD = "correct horse battery"


def recipe(text):
    """[(target, code)] of the marked blocks, in the page's order."""
    found = []
    for match in re.finditer(r"<!-- recipe: (.+?) -->\n```[a-z]*\n(.*?)```", text, re.S):
        found.append((match.group(1).strip(), match.group(2)))
    return found


def main():
    root = os.path.abspath(sys.argv[1])
    blocks = recipe(open(os.path.join(root, "docs", "plugins.md")).read())
    check("docs/plugins.md has the recipe's files and its commands",
          [t for t, _ in blocks] == ["notes/Package.swift", "notes/Sources/notes/Notes.swift", "notes/plugin.json", "run in notes"], str([t for t, _ in blocks]))
    walk = tempfile.mkdtemp(prefix="appd-recipe-")
    os.chmod(walk, 0o755)
    os.symlink(root, os.path.join(walk, "appd"))
    for target, code in blocks:
        if target.startswith("run in "):
            continue
        path = os.path.join(walk, target)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(code)
    data, sock, config = os.path.join(walk, "data"), os.path.join(walk, "appd.sock"), os.path.join(walk, "config")
    env = dict(os.environ, APPD_SOCKET=sock, XDG_CONFIG_HOME=config, PLUGINS=os.path.join(data, "plugins"),
               PATH=os.path.join(root, ".build", "debug") + ":" + os.environ.get("PATH", ""))
    log = open(os.path.join(walk, "appd.log"), "w")
    appd = subprocess.Popen([os.path.join(root, ".build", "debug", "appd"), "--socket", sock, "--data-dir", data, "--log-level", "notice"],
                            stderr=log, env=env)
    ctl = lambda *args, **kw: subprocess.run(["appctl", *args], capture_output=True, text=True, env=env, **kw)
    try:
        check("appd starts", wait_for(lambda: ctl("ping").returncode == 0, 30))
        commands = dict(blocks)["run in notes"]
        started = time.time()
        ran = subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=os.path.join(walk, "notes"), capture_output=True, text=True, env=env, timeout=1500)
        check(f"the recipe's commands run as written ({time.time() - started:.0f} s: the release build, the copy, the rescan)",
              ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-3000:])

        def running():
            listed = json.loads(ctl("--json", "plugins").stdout or "{}").get("plugins", [])
            notes = next((p for p in listed if p.get("name") == "notes"), {})
            return notes if notes.get("state") in ("running", "failed") else None
        status = wait_for(running, 30) or {}
        check("the plugin runs in its sandbox", status.get("state") == "running" and status.get("sandboxed", True), json.dumps(status))
        signup = ctl("signup", "ada@example.com", "--password-stdin", input=PASSWORD + "\n")
        onboard = ctl("onboard")
        added = ctl("--json", "notes", "add", "--text", "hi")
        check("a signed-in user calls it: appctl notes add --text hi", signup.returncode == 0 and onboard.returncode == 0
              and added.returncode == 0 and json.loads(added.stdout or "{}").get("id") == 2, signup.stderr + onboard.stderr + added.stdout + added.stderr)
        # notes.added is published live (not durable): follow the stream, then call until an
        # event arrives (the subscription may start after the first call).
        tail = subprocess.Popen(["appctl", "--json", "events", "tail", "notes.added"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        lines = []
        threading.Thread(target=lambda: lines.extend(tail.stdout), daemon=True).start()
        seen = wait_for(lambda: ctl("notes", "add", "--text", "hi").returncode == 0 and any('"notes.added"' in line and '"hi"' in line for line in lines), 20, every=0.3)
        tail.kill()
        check("it published notes.added through appd with its credential", seen, "".join(lines)[-1000:])
    finally:
        ctl("shutdown")
        try:
            appd.wait(timeout=30)
        except subprocess.TimeoutExpired:
            appd.kill()
        log.close()
        print("appd's log, last lines:\n" + open(os.path.join(walk, "appd.log")).read()[-1500:])
        shutil.rmtree(walk, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
