"""Stage 3, running: a grading notebook under pytest and nbval (with the plugin
:mod:`checks.grading.plugin`) in the sandbox, its records kept outside the kernel.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from checks.grading import recorder, sandbox
from checks.grading.assemble import Plan
from checks.grading.mime import MAX_CELL_BYTES
from checks.grading.sandbox import isolation
from checks.grading.settings import COST, FACTS, LEARNER_CELL_BYTES, NOTEBOOK_TIMEOUT, Settings

_RUNNING: dict[
    int, str | None
] = {}  # the process groups of the grading runs under way -> their task
STOPPING = threading.Event()  # set by Ctrl-C: runs cut short are not recorded as graded
# dask tasks the client gave up: their runs are killed, no more start
_STOPPED_TASKS: set[str] = set()
TASK = threading.local()  # .name: the dask task this thread runs, if any
STOPPED = "grading was stopped (Ctrl-C) before this notebook ran"


def stop_all() -> None:
    """Kill every grading run under way (each is its own process group, kernel included)."""
    STOPPING.set()
    stop_task_runs(None)


def stop_task_runs(tasks: list[str] | None) -> int:
    """Kill the grading runs of ``tasks`` (None: every run of this process), and let those tasks
    start no more; on a dask worker, at the client's Ctrl-C. How many runs were killed."""
    _STOPPED_TASKS.update(tasks or [])
    killed = 0
    for pid, task in list(_RUNNING.items()):
        if tasks is None or task in tasks:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
                killed += 1
    return killed


def _stopped() -> bool:
    return STOPPING.is_set() or getattr(TASK, "name", None) in _STOPPED_TASKS


@dataclass
class Run:
    # check id -> the recorded value (and FACTS + check id -> graph facts, COST + check id -> cost)
    values: dict[str, object]
    cell_errors: dict[int, str]
    fault: str | None  # a problem with the whole run (timeout, crash before anything was recorded)
    seconds: float
    # reference run: answer cell k -> the state before it
    states: dict[int, dict] = field(default_factory=dict)
    # a cell -> the autograd calls made while it ran
    autograd: dict[int, list[str]] = field(default_factory=dict)
    # a cell -> its time as the test runner took it
    cell_seconds: dict[int, float] = field(default_factory=dict)
    reached: set[int] = field(default_factory=set)  # the cells the test runner saw finish
    truncated: dict[int, int] = field(default_factory=dict)  # a cell -> the outputs cut from it


def run_notebook(
    plan: Plan | nbformat.NotebookNode,
    workdir: Path,
    settings: Settings,
    hidden: list[Path] | None = None,
) -> Run:
    """Run a grading notebook under pytest --nbval-lax in a child process with limits, its kernel
    in the sandbox (``settings.sandbox``); keep what the grader's cells sent, cell by cell.

    The notebook, the test runner's files and the records stay in ``workdir``, which the kernel
    does not see; the kernel gets a scratch folder of its own, removed afterwards."""
    if not isinstance(plan, Plan):
        plan = Plan(plan, [""] * len(plan.cells))
    if _stopped():  # Ctrl-C, or the dask client gave this task up: the submission's other notebooks
        return Run({}, {}, STOPPED, 0.0)
    files = _write_grading_files(plan, workdir)
    private = Path(tempfile.mkdtemp(prefix="wb-", dir=_short_temp()))
    scratch, runtime = private / "s", private / "r"
    scratch.mkdir()
    runtime.mkdir()
    kenv = _kernel_env(scratch, settings)
    boxed = isolation(settings.sandbox) == "bwrap"
    _write_kernelspec(files, scratch, runtime, kenv, boxed, hidden or [])
    env = _runner_env(files, runtime)
    cmd = _runner_argv(plan, settings, files, boxed)
    limits = _child_limits(settings.memory_mb * 2**20, os.getpid())
    started, fault = time.monotonic(), None
    try:
        fault = _run_runner(cmd, files, env, limits, started, settings)
        if boxed and not files.records.exists():  # the kernel never ran a cell: ask the sandbox why
            fault = sandbox.kernel_problem(scratch, runtime, kenv, hidden or []) or fault
    finally:
        shutil.rmtree(private, ignore_errors=True)
    run = _collected(files, plan, fault)
    run.seconds = time.monotonic() - started
    return run


@dataclass(frozen=True)
class _Files:
    """A grading run's files in its working folder: the notebook, the test runner's and the
    records."""

    workdir: Path
    notebook: Path
    records: Path
    junit: Path
    ini: Path

    @classmethod
    def of(cls, workdir: Path) -> _Files:
        names = ("grading.ipynb", "records.jsonl", "junit.xml", "pytest.ini")
        return cls(workdir, *(workdir / n for n in names))


def _write_grading_files(plan: Plan, workdir: Path) -> _Files:
    """The grading notebook and the test runner's configuration written in ``workdir``, a former
    run's records and report removed."""
    workdir.mkdir(parents=True, exist_ok=True)
    files = _Files.of(workdir)
    for p in (files.records, files.junit):
        p.unlink(missing_ok=True)
    nbformat.write(plan.nb, files.notebook)
    files.ini.write_text("[pytest]\n")
    return files


def _kernel_env(scratch: Path, settings: Settings) -> dict[str, str]:
    """The kernel's environment: the sandbox's, with the run's seed, batch size and steps, and no
    progress file (a graded run is no learner's practice: ``checks.practice``)."""
    return sandbox.kernel_env(
        scratch,
        {
            "WORKBOOK_SEED": str(settings.seed),
            "WORKBOOK_BATCH": str(settings.batch),
            "WORKBOOK_STEPS": str(settings.steps),
            "WORKBOOK_PROGRESS": "off",
        },
    )


def _write_kernelspec(
    files: _Files,
    scratch: Path,
    runtime: Path,
    kenv: dict[str, str],
    boxed: bool,
    hidden: list[Path],
) -> None:
    """The kernel the test runner starts: in bubblewrap where ``boxed`` (``hidden`` out of its
    sight), else a plain process with ``kenv``."""
    if boxed:
        sandbox.write_kernelspec(files.workdir, sandbox.argv(scratch, runtime, kenv, hidden))
    else:
        sandbox.give_fonts(scratch)
        sandbox.write_kernelspec(files.workdir, sandbox.plain_argv(scratch), kenv)


def _runner_env(files: _Files, runtime: Path) -> dict[str, str]:
    """The test runner's environment: this process's, without the settings of other test runs,
    Jupyter's folders in the working folder, and only the plugins asked for."""
    workdir = files.workdir
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST", "GRADE_", "JUPYTER", "WORKBOOK"))
    }
    # the two plugins below, not every installed one (0.6 s)
    env.update(
        JUPYTER_PATH=str(workdir),
        JUPYTER_RUNTIME_DIR=str(runtime),
        JUPYTER_DATA_DIR=str(workdir / "data"),
        JUPYTER_CONFIG_DIR=str(workdir / "config"),
        PYTHONDONTWRITEBYTECODE="1",
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
    )
    return env


# pytest's own plugins a grading run has no use for: its cache, and the report of exceptions raised
# in threads or while collected (which ends each run with five garbage collections, 0.1 s)
UNUSED_PLUGINS = ("cacheprovider", "unraisableexception", "threadexception")


def _runner_argv(plan: Plan, settings: Settings, files: _Files, boxed: bool) -> list[str]:
    """The test runner's command line: pytest (:mod:`checks.grading.runner`) with nbval and the
    grader's plugin, on the grading notebook."""
    return [
        sys.executable,
        "-m",
        "checks.grading.runner",
        "-p",
        "checks.grading.plugin",
        "-p",
        "nbval.plugin",
        f"--grade-records={files.records}",
        *(["--grade-ipc"] if boxed else []),
        f"--grade-cells={','.join(map(str, sorted({*plan.records, *plan.states})))}",
        f"--grade-cell-bytes={(LEARNER_CELL_BYTES if plan.learner else MAX_CELL_BYTES)}",
        "--nbval-lax",
        f"--nbval-kernel-name={sandbox.KERNEL_NAME}",
        f"--nbval-cell-timeout={settings.cell_timeout}",
        *(x for p in UNUSED_PLUGINS for x in ("-p", f"no:{p}")),
        "-q",
        "--tb=no",
        f"--junitxml={files.junit}",
        "-c",
        str(files.ini),
        "--rootdir",
        str(files.workdir),
        str(files.notebook),
    ]


def _child_limits(limit: int, parent: int) -> Callable[[], None]:
    """What the test runner does first, in the child: its own process group, a cap of ``limit``
    bytes on memory for it and the kernel, and death with the grader's process ``parent``."""

    def limits() -> None:
        os.setsid()
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        _die_with(parent)

    return limits


def _run_runner(
    cmd: list[str],
    files: _Files,
    env: dict[str, str],
    limits: Callable[[], None],
    started: float,
    settings: Settings,
) -> str | None:
    """The test runner run to its end (its output in ``pytest.log``), killed with its process
    group at the notebook's time limit or its kernel's death; the run's fault, if any."""
    with open(files.workdir / "pytest.log", "wb") as log:
        proc = subprocess.Popen(
            cmd, cwd=files.workdir, env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=limits
        )
        _RUNNING[proc.pid] = getattr(TASK, "name", None)
        try:
            limit_s = settings.notebook_timeout or NOTEBOOK_TIMEOUT
            return _watch(proc, started + limit_s, limit_s)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            _RUNNING.pop(proc.pid, None)


def _collected(files: _Files, plan: Plan, fault: str | None) -> Run:
    """The run as the test runner's report and the records tell it (its time not set yet)."""
    errors, seconds = _cells(files.junit)
    run = Run({}, errors, fault, 0.0, cell_seconds=seconds)
    try:
        _read_records(files.records, plan, run)
    except Exception as exc:  # a record the grader cannot read: nothing of it is kept
        run.fault = run.fault or f"the recorded answers could not be read ({type(exc).__name__})"
    if run.fault is None and not files.junit.exists():
        run.fault = "the notebook did not run to the end (the kernel or the test runner died)"
    return run


# characters of folder name that leave room for a kernel's Unix socket paths (~107 at most)
SOCKET_ROOM = 40


def _short_temp() -> str:
    """A temporary folder whose name is short enough for the kernel's Unix sockets: the usual one
    (``$TMPDIR``), or ``/tmp`` when that is too long (a test's folder, macOS's /var/folders/...)."""
    usual = tempfile.gettempdir()
    if len(usual) <= SOCKET_ROOM or not os.access("/tmp", os.W_OK):
        return usual
    return "/tmp"


def _die_with(parent: int) -> None:
    """In a test runner about to start (Linux): be killed when the grader's process ends, however
    it ends (a dask worker closed or killed, the grader killed); the sandboxed kernel dies with the
    test runner (bwrap --die-with-parent), an unsandboxed one within a second (ipykernel watches
    its parent). Elsewhere the runs are killed by process group on Ctrl-C only."""
    if sys.platform != "linux":
        return
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it ended before the line above
        os._exit(1)


def _read_records(path: Path, plan: Plan, run: Run) -> None:
    """What the grader's cells sent, kept by the grader's rule: a cell's values count only for the
    checks that cell records, once; autograd calls count for the learner's cells."""
    if not path.exists():
        return
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        cell = entry["cell"]
        run.reached.add(cell)
        for msg in entry["messages"]:
            kind = msg.get("kind")
            if kind == "autograd" and cell in plan.learner:
                run.autograd.setdefault(cell, []).append(str(msg.get("call"))[:200])
            elif kind == "truncated" and isinstance(msg.get("dropped"), int):
                run.truncated[cell] = msg["dropped"]
            elif kind == "values" and cell in plan.records:
                values = recorder.unpack(msg["data"])
                facts = recorder.unpack(msg["facts"]) if msg.get("facts") else {}
                for check in plan.records[cell]:
                    if check in values and check not in run.values:
                        run.values[check] = values[check]
                    if isinstance(facts, dict) and check in facts:
                        run.values[FACTS + check] = facts[check]
            elif kind == "cost" and cell in plan.records and (cost := _cost(msg.get("cost"))):
                for check in plan.records[cell]:
                    if check in run.values:
                        run.values.setdefault(COST + check, cost)
            elif kind == "state" and cell in plan.states and plan.states[cell] not in run.states:
                run.states[plan.states[cell]] = recorder.unpack(msg["data"])


def _cost(sent: object) -> dict[str, int] | None:
    """What a probe's call cost as a grader cell sent it (``checks.grading.probecost``):
    operators and bytes, whole numbers below 2**53; None for anything else (the learner's code
    can send what it likes)."""
    if not isinstance(sent, dict) or set(sent) != {"ops", "nbytes"}:
        return None
    if not all(type(n) is int and 0 <= n < 2**53 for n in sent.values()):
        return None
    return {"ops": sent["ops"], "nbytes": sent["nbytes"]}


KERNEL_GONE_GRACE = 10.0  # seconds the test runner may outlive its kernel when a run ends normally
KERNEL_DIED = "the kernel died (a crash, or more memory than allowed); the grader noticed at once"


def _watch(proc: subprocess.Popen, deadline: float, limit: int) -> str | None:
    """Wait for a grading run; its fault, if any. A kernel that dies is noticed within seconds
    (Linux: its process is gone while the test runner still waits on it), not at the
    cell timeout."""
    seen, gone = False, None
    while True:
        try:
            proc.wait(timeout=0.5)
            return None
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if now > deadline:
            return f"the notebook ran out of time ({limit} s)"
        alive = _kernel_alive(proc.pid)
        if alive:
            seen, gone = True, None
        elif alive is False and seen:
            gone = gone or now
            if now - gone > KERNEL_GONE_GRACE:
                return KERNEL_DIED


def _kernel_alive(parent: int) -> bool | None:
    """Whether a Jupyter kernel started by process ``parent`` runs (jupyter_client starts it in a
    session of its own, so it is found by its parent); None where /proc is missing."""
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        return None
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            # the kernel is started with -f CONNECTION_FILE.json
            if ppid == parent and b".json" in (entry / "cmdline").read_bytes():
                return True
        except (OSError, ValueError, IndexError):
            continue
    return False


def _cells(junit: Path) -> tuple[dict[int, str], dict[int, float]]:
    """From the test runner's report: each failing cell's error in one line, and each
    cell's time."""
    errors: dict[int, str] = {}
    seconds: dict[int, float] = {}
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError):
        return errors, seconds
    for case in root.iter("testcase"):
        name = case.get("name", "")
        if not name.startswith("Cell "):
            continue
        seconds[int(name.split()[1])] = float(case.get("time") or 0.0)
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        if bad is not None:
            errors[int(name.split()[1])] = _one_line_error(
                (bad.get("message") or "") + "\n" + (bad.text or "")
            )
    return errors, seconds


def first_error(run: Run, plan: Plan) -> str:
    """The first thing that went wrong in a run, and where: its fault, else the earliest failing
    cell's error with that cell's first line (the data missing, a package the kernel cannot
    import...)."""
    if run.fault:
        return run.fault
    if not run.cell_errors:
        return ""
    k = min(run.cell_errors)
    code = plan.nb.cells[k].source.strip().splitlines() if k < len(plan.nb.cells) else []
    line = next((c for c in code if c.strip() and not c.lstrip().startswith("#")), "")
    concern = plan.concerns[k] if k < len(plan.concerns) else ""
    where = "a grader cell" if concern == "grader" else f"the cell `{line[:60]}`"
    return f"{run.cell_errors[k]} (in {where})"


def _one_line_error(text: str) -> str:
    text = re.sub(r"(\x1b|#x1B)\[[0-9;]*m", "", text)  # colours, raw or as junit XML writes them
    if "Failed to interrupt kernel" in text:
        return (
            "the kernel stopped responding (it crashed, or ran out of time and could not be "
            "interrupted)"
        )
    if "Timeout" in text or "timed out" in text:
        return "the cell ran out of time"
    if "Kernel died" in text or "DeadKernel" in text or "kernel died" in text.lower():
        return "the kernel died (a crash, or more memory than allowed)"
    for line in reversed(text.strip().split("\n")):
        line = line.strip()
        if re.match(r"^[A-Za-z_.]*(Error|Exception|NotWritten|Interrupt)\b", line):
            return line[:200]
    return (text.strip().split("\n")[-1] if text.strip() else "the cell failed")[:200]
