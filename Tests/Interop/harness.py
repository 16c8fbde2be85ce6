"""Shared by the interop suites: named checks and the closing 'N passed, N failed' line."""
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
