"""Code run in a fresh interpreter, for what lasts a whole process (the collector's freeze, an
import blocked or made): its standard output, or the test fails with its error's end."""

from __future__ import annotations

import subprocess
import sys


def run_fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
