"""Where a run of the test suite spends the machine's CPU, by kind of process.

    python bench/suite_profile.py                 # the README's test command: python -m pytest
    python bench/suite_profile.py -- tests/test_grade.py -n 0

Runs ``python -m pytest ARGS`` and, every ``--interval`` seconds while it runs, reads each
process's CPU time and command line from ``/proc`` (Linux). A process is put down by what its
command line says it is (``KINDS``: a grading kernel in the sandbox, a grading test runner, a test
worker, another kernel, pip, Chromium...). What a process spends after its last sample is lost, so
the table falls a little short of the machine's busy time (``/proc/stat``), printed beneath it.
No test asserts any of it: it is for deciding where a cut of the suite's time would pay.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROC = Path("/proc")
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
BUSY = 0.1  # CPU seconds: a process that used less is left out of its kind's median
OTHERS = ("other Python processes", "other programs")  # their costliest commands are listed

# (kind, words of which one must be in the command line): the first kind that matches
KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("grading kernels", ("checks.grading.sandbox --chdir",)),
    ("grading test runners (pytest + nbval)", ("checks.grading.runner",)),
    ("other kernels (nbval, nbclient, JupyterLab)", ("ipykernel_launcher", "ipykernel ")),
    ("test workers (pytest-xdist)", ("exec(eval(sys.stdin.readline()))",)),
    ("dask's processes", ("multiprocessing", "distributed")),
    ("pip", (" -m pip", "/pip ")),
    ("Chromium", ("chromium", "chrome")),
    ("JupyterLab's server", ("jupyter-lab", "jupyterlab", "jupyter_server")),
    ("pytest (the session)", ("-m pytest",)),
    ("other Python processes", ("python",)),
)


def kind_of(command: str) -> str:
    """The kind of process ``command`` (its arguments joined by spaces) is."""
    if Path(command.split(" ", 1)[0]).name == "bwrap":
        return "bubblewrap"  # its arguments name the kernel it starts
    for kind, words in KINDS:
        if any(w in command for w in words):
            if kind == "grading kernels":  # a sandboxed one is given a cap on its processes
                return kind + (", sandboxed" if "--nproc" in command else ", unsandboxed")
            return kind
    return "other programs"


@dataclass
class Seen:
    """The processes met so far, by (pid, start tick): its command line, and its CPU seconds at the
    last look."""

    commands: dict[tuple[int, int], str] = field(default_factory=dict)
    cpu: dict[tuple[int, int], float] = field(default_factory=dict)

    def look(self, since: int) -> None:
        """Read every process that started at or after tick ``since`` once more."""
        for entry in os.scandir(PROC):
            if not entry.name.isdigit():
                continue
            try:
                stat = (PROC / entry.name / "stat").read_text()
            except OSError:
                continue  # gone since the listing
            fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (name) "
            start = int(fields[19])
            if start < since:
                continue
            key = (int(entry.name), start)
            if key not in self.commands:
                self.commands[key] = _command(entry.name)
            self.cpu[key] = (int(fields[11]) + int(fields[12])) / TICKS

    def table(self) -> list[tuple[str, int, float, float]]:
        """Per kind: processes, CPU seconds, the median of those that used more than ``BUSY``
        (a kernel's forks share its command line); the costliest kind first."""
        by: dict[str, list[float]] = {}
        for key, command in self.commands.items():
            by.setdefault(kind_of(command), []).append(self.cpu.get(key, 0.0))
        rows = [
            (k, len(v), sum(v), statistics.median([x for x in v if x > BUSY] or [0.0]))
            for k, v in by.items()
        ]
        return sorted(rows, key=lambda r: -r[2])

    def costliest(self, kind: str, n: int = 5) -> list[tuple[float, int, str]]:
        """The ``n`` costliest command lines of ``kind`` (cut to 100 characters): CPU seconds,
        processes."""
        by: dict[str, list[float]] = {}
        for key, command in self.commands.items():
            if kind_of(command) == kind:
                by.setdefault(command[:100], []).append(self.cpu.get(key, 0.0))
        return sorted(((sum(v), len(v), c) for c, v in by.items()), reverse=True)[:n]


def _command(pid: str) -> str:
    try:
        raw = (PROC / pid / "cmdline").read_bytes()
    except OSError:
        return ""
    # its arguments (NUL-separated) and the lines of a -c program, one space apart
    return " ".join(raw.replace(b"\0", b" ").decode(errors="replace").split())


def machine_busy() -> float:
    """The busy CPU seconds of every CPU since boot (``/proc/stat``: all but idle and iowait)."""
    counts = [int(x) for x in (PROC / "stat").read_text().split("\n")[0].split()[1:9]]
    return (sum(counts) - counts[3] - counts[4]) / TICKS


def uptime_ticks() -> int:
    return int(float((PROC / "uptime").read_text().split()[0]) * TICKS)


def profile(pytest_args: list[str], interval: float) -> tuple[int, Seen, float, float]:
    """Run the suite, looking at the processes every ``interval`` seconds; its exit status, what
    was seen, the wall seconds and the machine's busy CPU seconds meanwhile."""
    seen, since, busy, started = Seen(), uptime_ticks() - 1, machine_busy(), time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *pytest_args], cwd=ROOT)
    while proc.poll() is None:
        seen.look(since)
        time.sleep(interval)
    seen.look(since)
    return proc.returncode, seen, time.monotonic() - started, machine_busy() - busy


def report(seen: Seen, wall: float, busy: float) -> str:
    rows = seen.table()
    width = max(len(r[0]) for r in rows)
    lines = [f"{'process kind':{width}s}  {'count':>5s}  {'CPU-s':>7s}  {'median':>6s}  share"]
    total = sum(r[2] for r in rows)
    for kind, count, cpu, median in rows:
        lines.append(
            f"{kind:{width}s}  {count:5d}  {cpu:7.1f}  {median:6.2f}  {cpu / max(total, 1e-9):5.1%}"
        )
    lines.append(
        f"seen: {total:,.0f} CPU-s; the machine was busy {busy:,.0f} CPU-s in {wall:,.0f} s "
        f"({os.cpu_count()} CPUs)"
    )
    for kind in OTHERS:
        lines += [f"{kind}, the costliest:"] + [
            f"  {cpu:7.1f} CPU-s  {count:4d} x  {command}"
            for cpu, count, command in seen.costliest(kind)
        ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--interval", type=float, default=0.25, help="seconds between looks")
    parser.add_argument("pytest_args", nargs="*", help="after --: what pytest is given")
    args = parser.parse_args()
    if not (PROC / "stat").exists():
        print("suite_profile reads /proc: it runs on Linux only", file=sys.stderr)
        return 2
    rc, seen, wall, busy = profile(args.pytest_args, args.interval)
    print(report(seen, wall, busy))
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
