#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Debian package: contrib/debian/build makes appd_<version>_<arch>.deb; Debian's lintian
finds nothing in it (no error, no warning); apt installs it on this machine; the installed
files, conffile, state directory, system user and group are what the package promises; the
installed units pass systemd-analyze verify; the installed appd, started as the appd user
with the installed configuration, answers the installed appctl (ping, status, plugins, a
sign-up and a todo) and keeps its data in /var/lib/appd; apt purge removes the package, its
configuration and its state.

This machine's systemd is not PID 1, so the units are verified, not started: the daemon is
started with the unit's own ExecStart line, as the unit's user, and reloaded with its ExecReload.

Usage: debian_package.py REPO_ROOT
"""
import json
import os
import pwd
import grp
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from harness import check, finish

PASSWORD = "correct horse battery"


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, **kwargs)


def main():
    root = os.path.abspath(sys.argv[1])
    out = tempfile.mkdtemp(prefix="appd-deb-")
    built = run([os.path.join(root, "contrib/debian/build"), out], cwd=root)
    deb = built.stdout.strip().splitlines()[-1] if built.stdout.strip() else ""
    check("contrib/debian/build makes appd_<version>_<arch>.deb", built.returncode == 0 and deb.endswith(".deb") and os.path.exists(deb),
          built.stderr[-3000:])
    if not os.path.exists(deb):
        return finish()

    info = run(["dpkg-deb", "--info", deb]).stdout
    contents = run(["dpkg-deb", "--contents", deb]).stdout
    check("its control file depends on the libraries it links, adduser and bubblewrap",
          all(word in info for word in ("libc6", "libsqlite3-0", "libpq5", "libssl3", "adduser", "bubblewrap")), info)
    for path in ("./usr/bin/appd", "./usr/bin/appctl", "./lib/systemd/system/appd.service", "./lib/systemd/system/appd.socket",
                 "./etc/appd/appd.json", "./var/lib/appd/", "./usr/lib/appd/plugins/", "./usr/share/doc/appd/copyright",
                 "./usr/share/doc/appd/examples/plugins/mailer/mailer.py", "./usr/share/man/man1/appctl.1.gz"):
        check(f"the package holds {path}", any(line.split()[-1:] == [path] for line in contents.splitlines()), contents[-1500:])

    lintian = run(["lintian", "--fail-on", "error,warning", "--display-level", ">=warning", deb])
    check("lintian finds no error and no warning", lintian.returncode == 0, lintian.stdout[-3000:] + lintian.stderr[-2000:])

    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run(["apt-get", "purge", "-y", "-q", "appd"], env=env)  # a leftover of an earlier run
    installed = run(["apt-get", "install", "-y", "-q", deb], env=env)
    check("apt installs it", installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:])
    if installed.returncode != 0:
        return finish()
    try:
        check_installed()
        run_installed()
    finally:
        purged = run(["apt-get", "purge", "-y", "-q", "appd"], env=env)
        check("apt purge removes it", purged.returncode == 0, purged.stdout[-2000:] + purged.stderr[-2000:])
        for path in ("/usr/bin/appd", "/usr/bin/appctl", "/lib/systemd/system/appd.service", "/etc/appd/appd.json", "/var/lib/appd"):
            check(f"after the purge {path} is gone", not os.path.exists(path))
        status = run(["dpkg-query", "-W", "-f=${Status}", "appd"])
        check("dpkg no longer knows the package", status.returncode != 0 or "not-installed" in status.stdout, status.stdout)
        shutil.rmtree(out, ignore_errors=True)
    finish()


def check_installed():
    try:
        user, group = pwd.getpwnam("appd"), grp.getgrnam("appd")
    except KeyError:
        check("the install made the system user and group appd", False)
        return
    check("the install made the system user and group appd (a system uid, no login shell)",
          user.pw_uid < 1000 and user.pw_gid == group.gr_gid and user.pw_shell.endswith("nologin"), str(user))
    state = os.stat("/var/lib/appd")
    check("/var/lib/appd belongs to appd, mode 0700", state.st_uid == user.pw_uid and (state.st_mode & 0o777) == 0o700, oct(state.st_mode))
    config = os.stat("/etc/appd/appd.json")
    check("/etc/appd/appd.json is root's, readable by the group appd only (0640)",
          config.st_uid == 0 and config.st_gid == group.gr_gid and (config.st_mode & 0o777) == 0o640, oct(config.st_mode))
    conffiles = run(["dpkg-query", "-W", "-f=${Conffiles}", "appd"]).stdout
    check("/etc/appd/appd.json is a conffile", "/etc/appd/appd.json" in conffiles, conffiles)
    linked = run(["ldd", "/usr/bin/appd"]).stdout
    check("the installed appd carries the Swift runtime (no libswiftCore.so needed)", "libswiftCore" not in linked and "not found" not in linked, linked)
    verify = run(["systemd-analyze", "verify", "/lib/systemd/system/appd.service", "/lib/systemd/system/appd.socket"])
    # systemd-analyze also reports on units of this machine it loads on the way; only appd's count.
    own = [line for line in (verify.stdout + verify.stderr).splitlines() if "appd." in line]
    check("systemd-analyze verify passes the installed units", verify.returncode == 0 and not own, verify.stdout + verify.stderr)
    unit = open("/lib/systemd/system/appd.service").read()
    check("the installed unit starts /usr/bin/appd as the user appd", "ExecStart=/usr/bin/appd " in unit and "User=appd" in unit, unit[:600])


def run_installed():
    """The installed appd as the unit runs it: the unit's ExecStart, word for word, as the unit's
    user, so what it reads is what systemd would make it read — /etc/appd/appd.json, whose
    socket, data directory and admin group it takes. A setting added to the conffile (an HTTP
    listener) takes effect at start, and one changed and reloaded with the unit's ExecReload
    signal (logLevel) takes effect without a restart. /run/appd is made as appd.socket would."""
    unit = open("/lib/systemd/system/appd.service").read()
    exec_start = shlex.split(next(line for line in unit.splitlines() if line.startswith("ExecStart="))[len("ExecStart="):])
    unit_user = next(line for line in unit.splitlines() if line.startswith("User=")).split("=", 1)[1]
    check("the unit names its config file (appd reads no default file as a non-root user)",
          exec_start[1:] == ["--config", "/etc/appd/appd.json"], " ".join(exec_start))
    user = pwd.getpwnam(unit_user)
    os.makedirs("/run/appd", exist_ok=True)
    os.chown("/run/appd", user.pw_uid, user.pw_gid)
    conffile = "/etc/appd/appd.json"
    original = open(conffile).read()
    settings = json.loads(original)
    port = free_port()
    settings["httpListen"] = f"127.0.0.1:{port}"
    write_keeping_mode(conffile, json.dumps(settings, indent=2))
    log_path = tempfile.mktemp(prefix="appd-deb-log-")
    log = open(log_path, "w")
    daemon = subprocess.Popen(["setpriv", f"--reuid={unit_user}", f"--regid={unit_user}", "--init-groups", "--", *exec_start],
                              stdout=subprocess.DEVNULL, stderr=log, text=True)
    try:
        # appctl talks only to a daemon it trusts: one running as appd is named (--expect-uid), as
        # an operator outside the group would.
        expect = ["--socket", "/run/appd/appd.sock", "--expect-uid", str(user.pw_uid)]
        ctl = lambda *args: run(["/usr/bin/appctl", *expect, *args])
        deadline = time.time() + 20
        while time.time() < deadline and ctl("ping").returncode != 0:
            time.sleep(0.1)
        pong = ctl("ping")
        if pong.returncode != 0 and daemon.poll() is not None:
            print(f"appd exited {daemon.returncode}: {open(log_path).read()[-2000:]}")
        check("the installed appctl reaches the installed appd (the unit's ExecStart, as appd) on the conffile's socket",
              pong.returncode == 0 and "pong" in pong.stdout, pong.stderr)
        status = ctl("--json", "status")
        try:
            report = json.loads(status.stdout)
        except ValueError:
            report = {}
        check("appd keeps its data in /var/lib/appd (from /etc/appd/appd.json)",
              report.get("paths", {}).get("dataDirectory") == "/var/lib/appd" and os.path.exists("/var/lib/appd/appd.db"), status.stdout[-1500:])
        try:
            answered = urllib.request.urlopen(f"http://127.0.0.1:{port}/openapi.json", timeout=10).status
        except OSError as error:
            answered = str(error)
        check("a setting added to the conffile takes effect (its httpListen answers)", answered == 200, f"{answered}; log: {open(log_path).read()[-1500:]}")
        settings["logLevel"] = "debug"
        write_keeping_mode(conffile, json.dumps(settings, indent=2))
        reload_command = next(line for line in unit.splitlines() if line.startswith("ExecReload=")).split("=", 1)[1]
        reloaded = run(["bash", "-c", reload_command.replace("$MAINPID", str(daemon.pid))])
        deadline = time.time() + 10
        while time.time() < deadline and "logLevel info -> debug" not in open(log_path).read():
            time.sleep(0.1)
        check("a conffile change and the unit's reload take effect (logLevel info -> debug)",
              reloaded.returncode == 0 and "logLevel info -> debug" in open(log_path).read(), open(log_path).read()[-1500:])
        plugins = ctl("--json", "plugins").stdout
        check("its seven plugins run", all(f'"{name}"' in plugins for name in ("auth", "todos", "payments", "chat", "rating", "settings", "files"))
              and plugins.count('"running"') >= 5, plugins[-1500:])
        home = tempfile.mkdtemp(prefix="appd-deb-home-")
        env_home = dict(os.environ, HOME=home, XDG_CONFIG_HOME=home)
        signup = run(["/usr/bin/appctl", *expect, "signup", "deb@example.com", "--password-stdin"], input=PASSWORD + "\n", env=env_home)
        onboard = run(["/usr/bin/appctl", *expect, "onboard"], env=env_home)
        added = run(["/usr/bin/appctl", *expect, "todos", "add", "from the package"], env=env_home)
        listed = run(["/usr/bin/appctl", *expect, "todos", "ls"], env=env_home)
        check("a user signs up and keeps a todo with the installed binaries",
              signup.returncode == 0 and onboard.returncode == 0 and added.returncode == 0 and "from the package" in listed.stdout,
              signup.stderr + onboard.stderr + added.stderr + listed.stdout)
        down = ctl("shutdown")
        check("appctl shutdown stops it; it exits 0", down.returncode == 0 and daemon.wait(timeout=30) == 0, down.stderr)
        shutil.rmtree(home, ignore_errors=True)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        write_keeping_mode(conffile, original)
        log.close()
        os.unlink(log_path)


def write_keeping_mode(path, text):
    """Rewrites a file in place: its owner, group and mode (0640 root:appd) stay."""
    with open(path, "w") as f:
        f.write(text)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    main()
