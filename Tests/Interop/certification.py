#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The varlink certification, both ways, with the reference implementation's own test
(PyPI varlink: varlink/tests/test_certification.py):
1. the reference certification client walks our server (the Bus library's VarlinkServer,
   Tests/Certification) through every step and must end with End reporting all_ok;
2. our certification client (the Bus library's VarlinkClient) walks the reference server.

Usage: certification.py VARLINK_CERTIFICATION_BINARY
"""
import os
import subprocess
import sys
import tempfile
import time

import varlink.tests

from harness import check, finish

REFERENCE = os.path.join(os.path.dirname(varlink.tests.__file__), "test_certification.py")


def wait_for_socket(path, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline and not os.path.exists(path):
        time.sleep(0.05)
    return os.path.exists(path)


def main():
    ours = sys.argv[1]
    check("the reference certification test is installed", os.path.exists(REFERENCE), REFERENCE)
    with tempfile.TemporaryDirectory() as directory:
        # 1. The reference client against our server.
        path = os.path.join(directory, "ours.sock")
        server = subprocess.Popen([ours, "serve", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            check("our certification server listens", wait_for_socket(path))
            run = subprocess.run([sys.executable, REFERENCE, "--client", "--varlink=unix:" + path],
                                 capture_output=True, text=True, timeout=60)
            output = run.stdout + run.stderr
            check("the reference client passes every step against our server",
                  run.returncode == 0 and "End: {'all_ok': True}" in output and "Certification passed" in output, output[-3000:])
        finally:
            server.terminate()
            server.wait(timeout=10)

        # 2. Our client against the reference server.
        path = os.path.join(directory, "reference.sock")
        server = subprocess.Popen([sys.executable, REFERENCE, "--varlink=unix:" + path],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            check("the reference server listens", wait_for_socket(path))
            run = subprocess.run([ours, "client", path], capture_output=True, text=True, timeout=60)
            output = run.stdout + run.stderr
            check("our client passes every step against the reference server",
                  run.returncode == 0 and 'End: {"all_ok":true}' in output and "Certification passed" in output, output[-3000:])
        finally:
            server.terminate()
            server.wait(timeout=10)
    finish()


if __name__ == "__main__":
    main()
