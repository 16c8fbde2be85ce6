#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Walks the README's examples and those of the docs pages its sections moved to (PAGES), in
order, as a newcomer would, against the binaries `swift build`
made, from a fresh home and data directory: each command of each example block runs in one
bash session (so variables carry from block to block, as in a terminal) and must succeed.

Every example block of the README is accounted for: it is run, or skipped with the reason in
WALK below (it installs system packages, needs another machine's services, or is a benchmark).
A block the table does not know fails the walk: a new example must be added to it.

A few commands cannot run as written without a terminal; their scripted form is given in
INSTEAD, each one the way the README itself says to script it (appd in the background instead
of "in one terminal", a password on standard input instead of the prompt, Ctrl-C as a timeout).
The data directory and socket come from APPD_DATA_DIRECTORY and APPD_SOCKET (README, "Configuration"),
so the walk touches nothing of the machine's own appd.

Usage: readme_walk.py REPO_ROOT
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from harness import check, finish

PW = "a good password"
# The README's examples, then the pages its sections moved to, in the order they stood in it: the
# state one section leaves (appd running, its flags, a signed-in user) is the next one's.
PAGES = [
    ("README.md", None),
    ("docs/operators.md", ["The control socket", "Configuration"]),
    ("docs/features.md", ["Chat and LLM providers", "Rating prompts", "External plugins", "Payments: entitlements, webhooks and the paywall"]),
    ("docs/http-api.md", ["For apps: the HTTP API"]),
    ("docs/ios.md", ["From a Swift app: AppdClient"]),
    ("docs/http-api.md", ["Offline clients: safe retries, conflicts, catching up", "Sign in with Apple and Google"]),
    ("docs/security.md", ["Security model"]),
    ("docs/operators.md", ["Running under systemd", "Storage and the event log", "Backups, restore and data export", "Console"]),
    ("docs/postgres.md", ["Running several instances"]),
    ("docs/operators.md", ["appctl", "Benchmarks"]),
    ("docs/architecture.md", ["Layout", "Bus semantics in brief"]),
]
# Pages walked whole: each of their sections must be in PAGES (a new one must be added there).
WHOLE = ["docs/operators.md", "docs/features.md", "docs/http-api.md", "docs/security.md"]
# The first line of every README example block, and what the walk does with it.
WALK = [
    ("swift run appd", "skip: the first of the two commands; CI builds with swift build and runs appd below"),
    ("swift test", "skip: CI runs it as its own step"),
    ("// Package.swift of the app", "skip: Swift package manifest lines for an app's package"),
    ("sudo apt-get install", "skip: CI installs the packages itself"),
    ("VENV=$(", "run"),
    ("swift build", "run"),
    ("appd", "run"),
    ("appctl ping", "run"),
    ("pip install varlink && swift build", "skip: the varlink certification is a CI step of its own"),
    ("python3 -m varlink.cli info unix:/run/appd/appd.sock", "skip: the socket of appd running as root"),
    ("varlinkctl info", "skip: systemd's varlinkctl is not on this machine"),
    ("# llama.cpp's server", "skip: needs a running LLM server"),
    ("appctl chat send Remember that", "run"),
    ("appctl rating status", "run"),
    ("# the plugin folder is <data dir>/plugins", "run"),
    ("appctl payments products", "run"),
    ("# appd learns the secrets at start", "run"),
    ("ms=$(date +%s)000", "run"),
    ("# one appd per socket", "run"),
    ("# 1. A write that is safe to retry", "run"),
    ("appctl backup create", "run"),
    ("appctl export mine", "run"),
    ("appctl shutdown                                   # appd again, now with the console on loopback", "run"),
    ("appd restore /var/lib/appd/backups/", "skip: a placeholder path; Tests/Interop/backups.py restores real backups"),
    ("python3 contrib/clients/offline_todos.py", "run"),
    ("swift build -c release --product appd", "skip: installs a system service"),
    ("contrib/debian/build", "skip: installs a system package; Tests/Interop/debian_package.py builds, installs, runs and purges it in CI"),
    ("APPD_DATABASE='postgres://", "skip: needs a PostgreSQL server of the reader's"),
    ("appctl [--socket PATH]", "skip: a synopsis, not a command"),
    ("contrib/bench/report", "skip: CI runs the benchmark report as its own step"),
    ("loadgen --proto varlink", "skip: a benchmark"),
    ("swift run -c release appd-bench", "skip: a benchmark"),
    ("contrib/bench/todos-vs-redis", "skip: a benchmark"),
    ("contrib/bench/percall", "skip: a benchmark (uprobes, root)"),
    (".build/release/appd --socket /tmp/b.sock", "skip: a benchmark"),
]
# Commands that need a terminal, and their scripted form (the README's own where it gives one).
INSTEAD = {
    "appd": 'appd >> "$WALK/appd.log" 2>&1 & APPD_PID=$!; wait_for_socket',
    "appctl events tail               # follow every event (Ctrl-C to stop)": "timeout 2 appctl events tail; test $? = 124",
    "appctl signup ada@example.com    # prompts for a password (no echo), then signs you in":
        f'echo "{PW}" | appctl signup ada@example.com --password-stdin',
    "appctl todos done xwMXHL         # (use an id from ls)":
        'appctl todos done "$(appctl --json todos ls | head -1 | python3 -c \'import json,sys; print(json.load(sys.stdin)["id"])\')"',
    "appctl chat                      # interactive: Ctrl-C cancels a reply or the line; Ctrl-D ends": "printf 'hi again\\n' | appctl chat",
    "appctl events tail --since 0     # every event so far, then live (Ctrl-C)": "timeout 2 appctl events tail --since 0; test $? = 124",
    "appctl login ada@example.com     # scripts: echo \"$PW\" | appctl login ada@example.com --password-stdin":
        f'echo "{PW}" | appctl login ada@example.com --password-stdin',
    "appctl shutdown                  # graceful stop; appd exits 0": 'appctl shutdown && wait $APPD_PID',
    'APPD_STRIPE_WEBHOOK_SECRETS="$STRIPE_SECRET" APPD_REVENUECAT_WEBHOOK_SECRET=rc_test_secret appd':
        'APPD_STRIPE_WEBHOOK_SECRETS="$STRIPE_SECRET" APPD_REVENUECAT_WEBHOOK_SECRET=rc_test_secret appd >> "$WALK/appd.log" 2>&1 & APPD_PID=$!; wait_for_socket',
    # appd again with the mailer's virtualenv: in the background, from the binaries swift build made.
    'PATH="$VENV/bin:$PATH" VIRTUAL_ENV="$VENV" swift run appd --plugin-read-only-paths "$VENV"':
        'PATH="$VENV/bin:$PATH" VIRTUAL_ENV="$VENV" appd --plugin-read-only-paths "$VENV" >> "$WALK/appd.log" 2>&1 & APPD_PID=$!; wait_for_socket',
    # The walk's data directory is its own (APPD_DATA_DIRECTORY), not the default the page names.
    "mkdir -p ~/.local/share/appd/plugins && cp -r contrib/plugins/mailer ~/.local/share/appd/plugins/":
        'mkdir -p "$APPD_DATA_DIRECTORY/plugins" && cp -r contrib/plugins/mailer "$APPD_DATA_DIRECTORY/plugins/"',
    # The mail is written by the plugin after the call returns: wait for it (at most 20 s).
    "appctl mailer outbox             # (admin) the messages it wrote":
        'for i in $(seq 1 200); do appctl mailer outbox | grep -q "Reset your password" && break; sleep 0.1; done; appctl mailer outbox | grep "Reset your password"',
    "appd --http-listen 127.0.0.1:8080 &": 'appd --http-listen 127.0.0.1:8080 >> "$WALK/appd.log" 2>&1 & APPD_PID=$!; wait_for_socket',
    "appctl shutdown                                   # appd again, now with the console on loopback": 'appctl shutdown && wait $APPD_PID',
    "appd --http-listen 127.0.0.1:8080 --console-listen 127.0.0.1:8090 &":
        'appd --http-listen 127.0.0.1:8080 --console-listen 127.0.0.1:8090 >> "$WALK/appd.log" 2>&1 & APPD_PID=$!; wait_for_socket',
    "appctl console                                    # (admin) a one-time link: open it in a browser":
        'appctl console | grep -q "^http://127.0.0.1:8090/console/login?token="',
}
# Between blocks, what the README's prose asks of the reader (start appd again, stop it).
BEFORE = {
    "appctl chat send Remember that": ['appd >> "$WALK/appd.log" 2>&1 & APPD_PID=$!; wait_for_socket',
                                       f'echo "{PW}" | appctl login ada@example.com --password-stdin'],
    "# appd learns the secrets at start": ['appctl shutdown && wait $APPD_PID'],
    "VENV=$(": ['appctl shutdown && wait $APPD_PID'],
    "# one appd per socket": ['appctl shutdown && wait $APPD_PID'],
}


def sections(text):
    """{heading: (first line number, text)} of a page's level-2 sections (subsections inside)."""
    found, lines, name, start = {}, text.split("\n"), None, 0
    for number, line in enumerate(lines + ["## "], 1):
        if line.startswith("## "):
            if name is not None:
                found[name] = (start, "\n".join(lines[start - 1:number - 1]))
            name, start = line[3:].strip(), number
    return found


def pages(root):
    """(page, first line, text) of what the walk runs, in order."""
    walked = []
    for page, names in PAGES:
        text = open(os.path.join(root, page)).read()
        if names is None:
            walked.append((page, 1, text))
            continue
        found = sections(text)
        for name in names:
            if name not in found:
                check(f"{page} has the section '{name}' the walk expects", False, f"its sections: {list(found)}")
                continue
            walked.append((page, *found[name]))
    for page in WHOLE:
        listed = {n for p, names in PAGES if p == page for n in names or []}
        for name in sections(open(os.path.join(root, page)).read()):
            if name not in listed:
                check(f"{page}: the section '{name}' is walked", False, f"add it to PAGES in {__file__}")
    return walked


def blocks(readme):
    """The README's indented example blocks: (line number, [commands]); a command continued with
    a backslash or an open quote spans lines."""
    lines, found, current, start, fenced = readme.split("\n"), [], [], None, False
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced and line.startswith("    "):
            if not current:
                start = number
            current.append(line[4:])
        elif current and not line.strip() and number < len(lines) and lines[number].startswith("    "):
            current.append("")
        elif current:
            found.append((start, current))
            current = []
    commands_of = []
    for start, body in found:
        commands, pending = [], ""
        for line in body:
            pending = pending + "\n" + line if pending else line
            if pending.endswith("\\"):
                continue
            commands.append(pending)
            pending = ""
        commands_of.append((start, [c for c in commands if c.strip() and not c.lstrip().startswith("#")], body[0]))
    return commands_of


def main():
    root = os.path.abspath(sys.argv[1])
    walk = tempfile.mkdtemp(prefix="appd-readme-")
    os.chmod(walk, 0o755)
    home = os.path.join(walk, "home")
    os.makedirs(home)
    env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"), WALK=walk,
               APPD_DATA_DIRECTORY=os.path.join(walk, "data"), APPD_SOCKET=os.path.join(walk, "appd.sock"),
               PATH=os.path.join(root, ".build", "debug") + ":" + os.environ.get("PATH", ""))
    env.pop("APPD_CONFIG", None)
    prelude = 'wait_for_socket() { for i in $(seq 1 200); do appctl ping >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }\n'
    bash = subprocess.Popen(["bash"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=root, env=env)
    bash.stdin.write(prelude)

    def run(command):
        """One command in the session; its exit status and output."""
        marker = "__walk_done__"
        bash.stdin.write(f"{{\n{command}\n}} < /dev/null\necho \"{marker} $?\"\n")
        bash.stdin.flush()
        output = []
        for line in bash.stdout:
            if line.startswith(marker):
                return int(line.split()[1]), "".join(output)
            output.append(line)
        return -1, "".join(output)

    try:
        for page, offset, text in pages(root):
          for start, commands, first in blocks(text):
            start = f"{page}:{start + offset - 1}"
            matches = [(prefix, what) for prefix, what in WALK if first.startswith(prefix)]
            prefix, rule = max(matches, key=lambda m: len(m[0])) if matches else (None, None)
            if rule is None:
                check(f"{start}: an example the walk knows", False, f"add '{first}' to WALK in {__file__}")
                continue
            if rule.startswith("skip"):
                print(f"skip {start} ({first[:50]}): {rule[6:]}")
                continue
            for step in BEFORE.get(prefix, []):
                status, output = run(step)
                check(f"(between examples) {step[:60]}", status == 0, output[-2000:], quiet=True)
            for command in commands:
                status, output = run(INSTEAD.get(command, command))
                check(f"{start}: {command.splitlines()[0][:90]}", status == 0, f"exit {status}\n{output[-3000:]}")
                # A comment that shows output (# → "pong" "…"): the command printed each quoted part.
                shown = re.search(r'#\s*→(.*)$', command.splitlines()[-1])
                for expected in re.findall(r'"([^"]+)"', shown.group(1)) if shown else []:
                    check(f"{start}: prints {expected!r}", expected in output, output[-1500:])
        run("appctl shutdown >/dev/null 2>&1; wait")
        # The walk ran on its own data directory, not the machine's (/var/lib/appd as root).
        check("the walk's appd kept its data in the walk's data directory", os.path.exists(os.path.join(walk, "data", "appd.db")),
              f"no {walk}/data/appd.db: is APPD_DATA_DIRECTORY still the variable of dataDirectory?")
    finally:
        bash.stdin.close()
        bash.wait(timeout=60)
        log = os.path.join(walk, "appd.log")
        if os.path.exists(log):
            with open(log) as f:
                tail = f.read()[-3000:]
            print("appd's log, last lines:\n" + tail)
        shutil.rmtree(walk, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
