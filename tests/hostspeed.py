"""The machine's speed beside the suite's time (``-p tests.hostspeed`` in pytest's ``addopts``).

The CPUs of the 2-core machine the suite is timed on run at different speeds from hour to hour:
within one hour the same commit's suite took 546 s and then 638-663 s, and a child's ``import
torch`` 1.2 s of CPU and then 1.9 s. A run's wall time alone cannot say whether a change made the
suite cheaper. The header gives a probe of the machine's speed (the CPU seconds of ``python -c
"import torch"`` in a child); the summary gives what the whole machine spent busy during the run
(``/proc/stat``), the suite's cost, which compares across hours once divided by the probe.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

STAT = Path("/proc/stat")
_START = pytest.StashKey[tuple]()  # when the session started, and the machine's busy seconds then


def busy_seconds(stat: str, ticks: int) -> float | None:
    """CPU seconds spent busy on all CPUs, from the text of ``/proc/stat`` (its ``cpu`` line:
    user, nice, system, idle, iowait, irq, softirq, steal, ...; idle and iowait are not busy)."""
    for line in stat.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            counts = [int(x) for x in fields[1:9]]
            return (sum(counts) - counts[3] - counts[4]) / ticks
    return None


def machine_busy() -> float | None:
    """This machine's busy CPU seconds since it started; None where there is no ``/proc/stat``."""
    try:
        return busy_seconds(STAT.read_text(), os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, AttributeError):
        return None


def probe(statement: str = "import torch") -> float | None:
    """The CPU seconds (user and system) of ``python -c statement`` in a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-c", statement], capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        return None
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _controller(config) -> bool:
    return not hasattr(config, "workerinput")  # not an xdist worker


def pytest_configure(config) -> None:
    if _controller(config):
        config.stash[_START] = (time.monotonic(), machine_busy())


def pytest_report_header(config) -> str | None:
    seconds = probe() if _controller(config) else None
    return None if seconds is None else f"machine: `import torch` in a child takes {seconds:.2f} s"


def pytest_terminal_summary(terminalreporter, config) -> None:
    if not _controller(config) or _START not in config.stash:
        return
    started, busy = config.stash[_START]
    now = machine_busy()
    if busy is None or now is None:
        return
    wall = time.monotonic() - started
    terminalreporter.write_line(
        f"machine: {now - busy:,.0f} CPU-seconds busy in {wall:,.0f} s "
        f"({os.cpu_count()} CPUs, everything the machine ran during the session)"
    )
