"""Grade learners' notebooks against the instructor's solutions.

    python -m checks.grade SUBMISSION... --out DIR
        # each SUBMISSION a notebook or a folder of one learner's notebooks
    python -m checks.grade --self notebooks/03-makemore-backprop.ipynb
        # a learner's own score, before submitting

For every notebook the grader first runs the instructor's solution (the reference run) and keeps,
before each answer cell, the notebook's state (its tensors and numbers) and, after it, the expected
values. A learner's run is then a grading notebook of the instructor's cells with the learner's
answer cells in place of the solutions; before each answer cell a grader cell hands in the
reference state (so that every answer is judged given correct upstream values: no cascade), after
it a grader cell sends the answers out as cell output, which the test runner (pytest with nbval,
``--nbval-lax``, and the plugin ``checks.nbrecord``) keeps outside the kernel. The kernel never
holds solution code, nor an expected value before its answer has been recorded. It runs in a
sandbox (``checks.sandbox``: bubblewrap on Linux) with a seed and batch size drawn for the run,
per-cell and per-notebook timeouts and a memory limit. The recorded values are judged in the
grader's process with ``checks``' own comparison.
"""

from __future__ import annotations

import argparse
import ast
import collections
import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import os
import random
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
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import torch

from checks import recorder, sandbox
from checks.allow import disallowed
from checks.compare import answer, guarded, judge, with_source
from checks.diagnose import Context
from checks.facts import CMP, apply, targets
from checks.facts import VERSION as FACTS_VERSION
from checks.hintlog import hint_records
from checks.hints import HINTS
from checks.mime import MAX_CELL_BYTES
from checks.parsing import parse
from checks.paths import SOLUTIONS, cache_dir, class_wheel
from checks.reports import write_reports
from checks.source import autograd_uses, lasting, numbers_written
from checks.student import answer_names, stub_source
from checks.verdict import Note, Result

ROWS = 3  # the rows' version (3: the hints column): done files of another version are graded again
FACTS = "facts::"  # the reference values' keys for what the graph says about a check
MISSING, DELETED = "<...>", "<deleted>"


class SetupError(RuntimeError):
    """The grading set-up is broken (the reference run or the instructor's own solution fails):
    nothing is graded, nothing cached."""


SOLUTION_SUBMISSION = "(the instructor's solution)"
LEARNER_CELL_BYTES = 32 * 2**20  # what a grader cell of a learner's run may send (the answers)
NOTEBOOK_TIMEOUT = 900  # seconds: the most a notebook may run unless the instructor says otherwise
NONE = (None, None)  # no run, no grading notebook: nothing ran


def checks_version() -> str:
    """The installed package's version (``0+unknown`` from a bare checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("backprop-workbook")
    except PackageNotFoundError:
        return "0+unknown"


@dataclass
class Settings:
    seed: int = 1234567
    batch: int = 24
    steps: int = 50
    cell_timeout: int = 120
    # seconds a notebook may run; None: scaled from the solution's own run (``Grader.budget``)
    notebook_timeout: int | None = None
    memory_mb: int = 6144
    jobs: int = max(1, os.cpu_count() or 1)
    # a dropped leading size-1 axis fails instead of passing with a note
    strict_shapes: bool = False
    sandbox: str = "auto"  # "bwrap", "none", or "auto": bwrap where it works here


@dataclass
class AnswerCell:
    """One solution cell that holds answers: where it is, what it asks for, how to read
    the values."""

    index: int
    cell_id: str | None
    exercise: str
    names: list[str]
    probe: str | None
    solution: str
    template: str  # the student copy of the cell
    # one id per name: "ex1/dlogits", "ex1/dlogits#2" when repeated
    checks: list[str] = field(default_factory=list)
    facts: str | None = None  # an expression giving {name: checks.facts} in the reference run


@dataclass
class Exercise:
    """A solution notebook, cut into the instructor's cells and the answer cells."""

    path: Path
    cells: list[nbformat.NotebookNode]
    answers: list[AnswerCell] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def checks(self) -> list[str]:
        return [c for a in self.answers for c in a.checks]


def load_exercise(path: Path) -> Exercise:
    nb = nbformat.read(path, as_version=4)
    ex = Exercise(path, nb.cells)
    section = "ex0"
    seen: collections.Counter = collections.Counter()
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            m = re.match(r"#+\s*(?:Exercise\s*)?(\d+)[.:]", cell.source.lstrip())
            if m:  # "# Exercise 2: ..." or "## 2. ...": the checks that follow are ex2/...
                section = f"ex{m.group(1)}"
            continue
        # a probe: how to read answers that live inside a function or class
        hints = cell.metadata.get("workbook", {})
        names = list(hints.get("checks", [])) or (
            answer_names(cell.source) if cell.cell_type == "code" else []
        )
        if names:
            ids = []
            for n in names:
                seen[f"{section}/{n}"] += 1
                k = seen[f"{section}/{n}"]
                ids.append(f"{section}/{n}" + (f"#{k}" if k > 1 else ""))
            ex.answers.append(
                AnswerCell(
                    i,
                    cell.get("id"),
                    section,
                    names,
                    hints.get("probe"),
                    cell.source,
                    stub_source(cell.source),
                    ids,
                    hints.get("facts"),
                )
            )
    return ex


# ---------------------------------------------------------------- assembling the grading notebook

PRELUDE = """
import checks.recorder as __gr
__grade_try, __grade_op, __grade_draw, __grade_seed = __gr.attempt, __gr.op, __gr.draw, __gr.seed()
__grade_values_of, __grade_fresh, __grade_normed = __gr.values_of, __gr.fresh, __gr.normed
__gr.settle()
import checks.outputs as __go
__go.cap()
del __go
"""
# in a learner's run only: the reference run's calls are the instructor's
WATCH = "__gr.watch_autograd()"


@dataclass
class Plan:
    """A grading notebook and what its code cells are for (by position among the code cells)."""

    nb: nbformat.NotebookNode
    # per cell: the checks of a learner's cell, "grader", or "" (the instructor's)
    concerns: list[str]
    # a grader cell -> the checks it records
    records: dict[int, list[str]] = field(default_factory=dict)
    # reference run: a cell -> the answer cell it precedes
    states: dict[int, int] = field(default_factory=dict)
    # a cell running learner code -> its checks
    learner: dict[int, list[str]] = field(default_factory=dict)


def record_cell(cell: AnswerCell, facts: bool = False) -> str:
    """The grader cell after an answer cell: send the learner's values out of the kernel.

    With ``facts`` (the reference run) it also sends what the graph says about each checked
    tensor (``checks.facts``), so that the grader's diagnosis reads what the notebook's ``cmp``
    reads."""
    if cell.probe:
        grab = (
            f"try:\n    __vals = {cell.probe}\nexcept BaseException as __e:\n"
            f"    __vals = {{n: '<error: ' + type(__e).__name__ + '>' for n in {cell.names!r}}}"
        )
    else:
        grab = f"__vals = __grade_values_of({cell.names!r}, globals())"
    values = f"{{c: __vals.get(n, '<deleted>') for c, n in zip({cell.checks!r}, {cell.names!r})}}"
    by_check = _facts_expression(cell) if facts else None  # {check id: facts}, in the kernel
    if by_check:
        return f"{grab}\nimport checks.facts as __cf\n__gr.record({values}, facts={by_check})"
    return f"{grab}\n__gr.record({values})\n__gr.check_grads(globals())"


def _facts_expression(cell: AnswerCell) -> str | None:
    """Kernel code for the graph facts of the cell's checks, by check id: the instructor's own
    expression (``{name: facts}``, for answers inside a class), or else one ``checks.facts.collect``
    of the tensors the cell's ``cmp`` calls name."""
    if cell.facts:
        ids = dict(zip(cell.names, cell.checks, strict=True))
        return f"{{{ids!r}[n]: f for n, f in ({cell.facts}).items()}}"
    found = targets(cell.solution)
    wanted = {c: found[n] for c, n in zip(cell.checks, cell.names, strict=True) if n in found}
    return f"__cf.collect({wanted!r}, globals())" if wanted and not cell.probe else None


def _wipes_after(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and ".backward(" in cell.source


# the reference values' keys for the state before an answer cell
STATE, NAMES = "state::", "names::"


def hand_ins(ex: Exercise, ref: dict) -> list[str]:
    """For each answer cell of a learner's run, the grader cell before it: the instructor's state
    at that point, less the names the answer cell must assign, and of the earlier answers only
    those the instructor's cell reads (exercise 1's answers are not handed in before exercise 2's
    fused ones). Each cell carries only what the kernel has not been given before (the kernel
    keeps the rest, ``checks.recorder``)."""
    answers = sorted({n for a in ex.answers for n in a.names})
    given: dict[str, object] = {}
    cells = []
    for k, ans in enumerate(ex.answers):
        now = ref.get(STATE + str(k), {})
        solution, template = names_read(ans.solution), names_read(ans.template)
        reads = None if solution is None or template is None else solution | template
        names = [
            n
            for n in ref.get(NAMES + str(k), [])
            if n not in ans.names and (n not in answers or reads is None or n in reads)
        ]
        delta = {n: now[n] for n in names if not _same(given.get(n, _UNSET), now[n])}
        given.update(delta)
        # an answer left over from an earlier cell earns nothing here
        drop = [] if ans.probe else ans.names
        cells.append(
            f"__gr.restore(globals(), {recorder.pack(delta)!r},\n"
            f"            {names!r}, {answers!r}, {drop!r})"
        )
    return cells


_UNSET = object()


def names_read(source: str) -> set[str] | None:
    """The names a cell reads (loaded anywhere in it); None where it cannot be parsed."""
    code = "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in source.split("\n"))
    try:
        tree = parse(code)
    except SyntaxError:
        return None
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _same(a: object, b: object) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return (
            a.shape == b.shape
            and a.dtype == b.dtype
            and a.requires_grad == b.requires_grad
            and torch.equal(a, b)
        )
    return type(a) is type(b) and a == b


def assemble(ex: Exercise, learner: dict[int, str | None] | None, ref: dict | None = None) -> Plan:
    """The grading notebook: with ``learner`` None the reference run of the instructor's notebook
    (which also sends its state before each answer cell); else a learner's run, whose answer cells
    come from ``learner`` and get the reference's state (``ref``) handed in before them. A learner's
    run holds no solution code, and no expected value before its answer has been recorded."""
    by_index = {a.index: k for k, a in enumerate(ex.answers)}
    given = hand_ins(ex, ref or {}) if learner is not None else []
    plan = Plan(nbformat.v4.new_notebook(), [])

    def add(source: str, concern: str = "grader") -> int:
        plan.nb.cells.append(nbformat.v4.new_code_cell(source))
        plan.concerns.append(concern)
        return len(plan.nb.cells) - 1

    add(PRELUDE.strip() + ("\n" + WATCH if learner is not None else ""))
    for i, cell in enumerate(ex.cells):
        if cell.cell_type != "code":
            continue
        k = by_index.get(i)
        if k is None:
            add(cell.source, "")
            if _wipes_after(cell) and learner is not None:  # the reference run keeps its graph
                add("__gr.wipe()")
            continue
        ans = ex.answers[k]
        checks = ans.checks
        if learner is None:
            plan.states[add("__gr.emit_state(globals())")] = k
            add(cell.source, ",".join(checks))
            plan.records[add(record_cell(ans, facts=True))] = checks
            continue
        source = learner.get(i)
        add(given[k])
        if source is None:
            plan.records[add(f"__gr.record({ {c: DELETED for c in checks}!r})")] = checks
            continue
        plan.learner[add(source, ",".join(checks))] = checks
        at = add(record_cell(ans))
        plan.records[at] = checks
        plan.learner[at] = checks  # a probe runs the learner's functions here
    plan.nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return plan


# ---------------------------------------------------------------- reading a submission


class Unreadable(Exception):
    pass


def learner_cells(ex: Exercise, path: Path) -> dict[int, str | None]:
    """For each answer cell of the exercise, the learner's cell source (None when it is gone)."""
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as exc:  # invalid JSON, not a notebook, unreadable file
        raise Unreadable(
            f"not a readable notebook ({type(exc).__name__}: {str(exc)[:200]})"
        ) from None
    code = [c for c in nb.cells if c.get("cell_type") == "code"]
    by_id = {c.get("id"): c for c in code if c.get("id")}
    found: dict[int, str | None] = {}
    for ans in ex.answers:
        cell = by_id.get(ans.cell_id) if ans.cell_id else None
        if cell is None:
            cell = _match_by_content(ans, code)
        found[ans.index] = cell.source if cell is not None else None
    for index, extra in _added_cells(ex, code, found).items():
        found[index] = "\n\n".join(extra)
    matched = sum(v is not None for v in found.values())
    if ex.answers and matched < max(1, len(ex.answers) // 3):
        raise Unreadable(
            f"does not look like {ex.name}: only {matched} of its {len(ex.answers)} answer cells "
            "are there"
        )
    return found


def hints_shown(ex: Exercise, path: Path) -> dict[str, str]:
    """Check id -> the hints the submitted notebook shows were used for it (``checks.hintlog``:
    self-reported, a floor), for the rows' ``hints`` column: "2/3" (rungs shown of the ladder's)
    or "revealed" (the solution lines shown)."""
    try:
        records = hint_records(nbformat.read(path, as_version=4))
    except Exception:  # unreadable: the rows say so already
        return {}
    said = {}
    for a in ex.answers:
        cmp_name = {m.group(3): m.group(2) for m in CMP.finditer(a.template)}
        for check, var in zip(a.checks, a.names, strict=False):
            mine = [
                r
                for r in records
                if r.answer == var and r.check in ("", cmp_name.get(var, r.check))
            ]
            if any(r.reveal for r in mine):
                said[check] = "revealed"
            elif rungs := [r for r in mine if r.rung]:
                top = max(rungs, key=lambda r: r.rung)
                said[check] = f"{top.rung}/{top.of}"
    return said


def _added_cells(ex: Exercise, code: list, found: dict[int, str | None]) -> dict[int, list[str]]:
    """The answer cells with the code cells the learner added around them (an answer split over
    several cells, a scratch cell), in notebook order: each added cell joins the answer whose names
    it assigns, else the answer before it (else the one after). A cell of the instructor's, edited
    or not (known by its id or its text), joins none."""
    ids = {c.get("id") for c in ex.cells if c.get("id")}
    texts = {c.source.strip() for c in ex.cells if c.cell_type == "code"}
    texts |= {a.template.strip() for a in ex.answers}
    by_source = {src: i for i, src in found.items() if src is not None}
    owners: dict[int, list[int]] = {}  # answer cell -> the learner's code cells that make it up
    before, pending = None, []  # the answer cell last seen; added cells before any
    for k, cell in enumerate(code):
        if cell.source in by_source:
            before = by_source[cell.source]
            owners.setdefault(before, []).extend([*pending, k])
            pending = []
        elif cell.get("id") not in ids and cell.source.strip() not in texts | {""}:
            owner = _owner(cell.source, ex, found)
            owner = before if owner is None else owner
            if owner is None:
                pending.append(k)
            else:
                owners.setdefault(owner, []).append(k)
    return {i: [code[k].source for k in sorted(ks)] for i, ks in owners.items() if len(ks) > 1}


def _owner(source: str, ex: Exercise, found: dict[int, str | None]) -> int | None:
    """The answer cell (found in the learner's notebook) whose names ``source`` assigns."""
    try:
        tree = parse(source)
    except SyntaxError:
        return None
    stored = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    hits = [a.index for a in ex.answers if found.get(a.index) is not None and stored & set(a.names)]
    return hits[0] if len(hits) == 1 else None


def _match_by_content(ans: AnswerCell, code: list) -> nbformat.NotebookNode | None:
    """The learner cell that keeps the template's fixed lines (its checks), best overlap first."""
    fixed = {
        ln.strip() for ln in ans.template.split("\n") if ln.strip() and "= ...  # TODO" not in ln
    }
    if not fixed:
        return None
    best, score = None, 0.0
    for cell in code:
        lines = {ln.strip() for ln in cell.source.split("\n") if ln.strip()}
        s = len(fixed & lines) / len(fixed)
        if s > score:
            best, score = cell, s
    return best if score >= 0.5 else None


def find_notebooks(submission: Path) -> list[Path]:
    if submission.is_dir():
        return sorted(p for p in submission.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    return [submission]


def link_problem(nb: Path, root: Path) -> str | None:
    """Why a submission's notebook is refused unread, if it is: it is a symbolic link, lies below
    one inside the submission folder ``root``, or resolves outside ``root`` (the grader would read
    what the link points at: a solution, another learner's work)."""
    top = root.parent if root == nb else root
    here = nb
    while here != top and here.parent != here:  # the folder given is the instructor's: trusted
        if here.is_symlink():
            what = "is" if here == nb else f"lies in {here.name}, which is"
            return f"not graded: the notebook {what} a symbolic link; hand in the file itself"
        here = here.parent
    try:
        nb.resolve().relative_to(top.resolve())
    except (ValueError, OSError):
        return "not graded: the notebook resolves outside its submission folder"
    return None


def refused_rows(sub: str, nb: Path, why: str, exercises: dict[str, Exercise]) -> list[dict]:
    """A notebook refused unread: a row per check of the exercise it is named like, else one."""
    ex = exercises.get(nb.name)
    base = {"submission": sub, "notebook": nb.name}
    return [{**base, **_row(c, False, "", why)} for c in (ex.checks if ex else ["-"])]


def exercise_for(path: Path, exercises: dict[str, Exercise]) -> Exercise | None:
    """The exercise a notebook is a copy of: by its name, by its number ("03-..."), or else by the
    ids of its cells (a renamed or duplicated copy keeps them)."""
    if path.name in exercises:
        return exercises[path.name]
    stem = path.stem.split("-")[0]
    hits = [e for n, e in exercises.items() if n.split("-")[0] == stem]
    if len(hits) == 1:
        return hits[0]
    try:
        ids = {c.get("id") for c in json.loads(path.read_text()).get("cells", [])} - {None}
    except (OSError, ValueError, AttributeError):
        return None
    shared = {n: len(ids & {a.cell_id for a in e.answers}) for n, e in exercises.items()}
    best = max(shared, key=shared.get, default=None)
    if best is None or shared[best] < max(1, len(exercises[best].answers) // 3):
        return None
    return exercises[best]


# ---------------------------------------------------------------- running


_RUNNING: dict[
    int, str | None
] = {}  # the process groups of the grading runs under way -> their task
_STOPPING = threading.Event()  # set by Ctrl-C: runs cut short are not recorded as graded
# dask tasks the client gave up: their runs are killed, no more start
_STOPPED_TASKS: set[str] = set()
_TASK = threading.local()  # .name: the dask task this thread runs, if any
STOPPED = "grading was stopped (Ctrl-C) before this notebook ran"


def _stop_all() -> None:
    """Kill every grading run under way (each is its own process group, kernel included)."""
    _STOPPING.set()
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
    return _STOPPING.is_set() or getattr(_TASK, "name", None) in _STOPPED_TASKS


@dataclass
class Run:
    # check id -> the recorded value (and FACTS + check id -> graph facts)
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
    workdir.mkdir(parents=True, exist_ok=True)
    nb_path, records, junit = (
        workdir / "grading.ipynb",
        workdir / "records.jsonl",
        workdir / "junit.xml",
    )
    for p in (records, junit):
        p.unlink(missing_ok=True)
    nbformat.write(plan.nb, nb_path)
    (workdir / "pytest.ini").write_text("[pytest]\n")
    private = Path(tempfile.mkdtemp(prefix="wb-", dir=_short_temp()))
    scratch, runtime = private / "s", private / "r"
    scratch.mkdir()
    runtime.mkdir()
    kenv = sandbox.kernel_env(
        scratch,
        {
            "WORKBOOK_SEED": str(settings.seed),
            "WORKBOOK_BATCH": str(settings.batch),
            "WORKBOOK_STEPS": str(settings.steps),
        },
    )
    boxed = isolation(settings.sandbox) == "bwrap"
    if boxed:
        sandbox.write_kernelspec(workdir, sandbox.argv(scratch, runtime, kenv, hidden or []))
    else:
        sandbox.write_kernelspec(workdir, sandbox.plain_argv(scratch), kenv)
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
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "checks.nbrecord",
        "-p",
        "nbval.plugin",
        f"--grade-records={records}",
        *(["--grade-ipc"] if boxed else []),
        f"--grade-cells={','.join(map(str, sorted({*plan.records, *plan.states})))}",
        f"--grade-cell-bytes={(LEARNER_CELL_BYTES if plan.learner else MAX_CELL_BYTES)}",
        "--nbval-lax",
        f"--nbval-kernel-name={sandbox.KERNEL_NAME}",
        f"--nbval-cell-timeout={settings.cell_timeout}",
        "-p",
        "no:cacheprovider",
        "-q",
        "--tb=no",
        f"--junitxml={junit}",
        "-c",
        str(workdir / "pytest.ini"),
        "--rootdir",
        str(workdir),
        str(nb_path),
    ]
    limit = settings.memory_mb * 2**20

    parent = os.getpid()

    # in the child: its own process group, and a cap on memory for it and the kernel
    def limits() -> None:
        os.setsid()
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        _die_with(parent)

    started, fault = time.monotonic(), None
    try:
        with open(workdir / "pytest.log", "wb") as log:
            proc = subprocess.Popen(
                cmd, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=limits
            )
            _RUNNING[proc.pid] = getattr(_TASK, "name", None)
            try:
                limit_s = settings.notebook_timeout or NOTEBOOK_TIMEOUT
                fault = _watch(proc, started + limit_s, limit_s)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                _RUNNING.pop(proc.pid, None)
        if boxed and not records.exists():  # the kernel never ran a cell: ask the sandbox why
            fault = sandbox.kernel_problem(scratch, runtime, kenv, hidden or []) or fault
    finally:
        shutil.rmtree(private, ignore_errors=True)
    errors, seconds = _cells(junit)
    run = Run({}, errors, fault, 0.0, cell_seconds=seconds)
    try:
        _read_records(records, plan, run)
    except Exception as exc:  # a record the grader cannot read: nothing of it is kept
        run.fault = run.fault or f"the recorded answers could not be read ({type(exc).__name__})"
    if run.fault is None and not junit.exists():
        run.fault = "the notebook did not run to the end (the kernel or the test runner died)"

    run.seconds = time.monotonic() - started
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
            elif kind == "state" and cell in plan.states and plan.states[cell] not in run.states:
                run.states[plan.states[cell]] = recorder.unpack(msg["data"])


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


# ---------------------------------------------------------------- judging


def _stopped_in(run: Run, concerns: list[str]) -> str:
    """Where a run that ended early stopped: the first cell it did not see finish."""
    left = [k for k in range(len(concerns)) if k not in run.reached]
    if not left or not run.reached:
        return ""
    k = left[0]
    if concerns[k] == "grader":
        return f", in a grader cell (cell {k})"
    if concerns[k]:
        return f", in your cell of {', '.join(concerns[k].split(','))}"
    return f", in the notebook's cell {k}"


def judge_values(
    ex: Exercise,
    ref: dict,
    run: Run,
    concerns: list[str],
    settings: Settings,
    sources: dict[str, str] | None = None,
    reviews: dict[str, str] | None = None,
) -> list[dict]:
    """One row per check of ``ex``: the learner's recorded value judged against the reference,
    with the learner's cell source (``sources``, by check) for what only the code can tell."""
    rows = []
    cell_of = {}
    for i, c in enumerate(concerns):
        for check in filter(None, c.split(",")):
            cell_of.setdefault(check, i)
    fatal = min(
        (i for i, err in run.cell_errors.items() if err.startswith("the kernel")), default=None
    )
    answers = {n for a in ex.answers for n in a.names}
    point = {c: k for k, a in enumerate(ex.answers) for c in a.checks}
    for check in ex.checks:
        var = check.split("/", 1)[1].split("#")[0]
        e, y = ref.get(check), run.values.get(check)
        at = cell_of.get(check, -1)
        cell_error = run.cell_errors.get(at)
        usable = isinstance(y, torch.Tensor) or y == MISSING
        if not isinstance(e, torch.Tensor):
            rows.append(
                _row(
                    check,
                    False,
                    "",
                    "the reference run recorded no value (an instructor-side problem)",
                )
            )
        elif not usable and cell_error:
            rows.append(_row(check, False, "", cell_error))
        elif isinstance(y, str) and y == DELETED:
            rows.append(
                _row(
                    check,
                    False,
                    "missing",
                    f"{var} is not defined: its answer cell is missing or no longer assigns it",
                )
            )
        elif y is None:
            if fatal is not None and at > fatal:
                reason = (
                    "not reached: the kernel stopped in an earlier cell "
                    f"({concerns[fatal] or 'cell ' + str(fatal)})"
                )
            elif run.fault:
                reason = run.fault + _stopped_in(run, concerns)
            else:
                reason = (
                    "the answer was not recorded (the notebook stopped, or interfered with the "
                    "grader)"
                )
            rows.append(_row(check, False, "", reason))
        elif isinstance(y, str) and y.startswith("<error: "):
            what = y[len("<error: ") : -1]
            word = "missing" if what == "NotWritten" else "wrong"
            rows.append(
                _row(
                    check,
                    False,
                    word,
                    f"computing {var} raised {what}"
                    + (" (not written yet)" if word == "missing" else ""),
                )
            )
        elif isinstance(y, str) and y != MISSING:
            rows.append(_row(check, False, "wrong", f"{var} is not a tensor ({y.strip('<>')})"))
        else:
            why = (reviews or {}).get(check) or handed_back(y, e, ref, point[check], answers)
            res = judge_one(
                check,
                var,
                ... if isinstance(y, str) else y,
                e,
                settings,
                (sources or {}).get(check),
                cell_error,
                ref.get(FACTS + check),
                answers,
                why,
                *_sizes(ex.answers[point[check]], ref.get(STATE + str(point[check]), {})),
                tensors=_forward(ref.get(STATE + str(point[check]), {}), answers),
            )
            rows.append(
                _review_row(check, why, res) if why and res.ok else {"check": check, **res.row()}
            )
    return [_held(r, (reviews or {}).get(r["check"])) for r in rows]


def _held(row: dict, why: str | None) -> dict:
    """A row whose cell needs a look (``source_reviews``) is ``review`` whatever its value did: a
    copy of ``.grad`` refused, a cell error; the note says what the value did, never the expected
    value."""
    if not why or row["mistake"] == "review":
        return row
    said = f"the value does not match ({row['mistake']})" if row["mistake"] else row["feedback"]
    held = _row(
        row["check"], False, "review", f"{why}: not credited until an instructor has looked"
    )
    return {**row, **held, "note": said}


def _forward(state: dict, answers: set[str]) -> dict[str, torch.Tensor]:
    """The instructor's forward tensors before an answer cell (no answers), as ``cmp`` sees the
    notebook's: for a factor of the formula missing or one too many."""
    return {
        k: v
        for k, v in state.items()
        if isinstance(v, torch.Tensor) and k not in answers and v.is_floating_point()
    }


def _sizes(ans: AnswerCell, state: dict) -> tuple[list[int], list[int]]:
    """What the notebook's ``cmp`` reads besides the tensors, from the instructor's state before
    an answer cell: the attention head sizes (``head_size``, ``hs``) and the sizes the cell's
    ``cmp`` calls pass as ``n=NAME`` (notebook 05's ``n=C``, the numbers a layer norm's mean is
    over)."""
    names = re.findall(r"\bcmp\(.*?\bn\s*=\s*([A-Za-z_]\w*)", ans.template)

    def sizes(values: Iterable[object]) -> list[int]:
        return sorted({v for v in values if type(v) is int and v > 1})

    return sizes(state.get(k) for k in ("head_size", "hs")), sizes(state.get(n) for n in names)


def handed_back(y: object, e: torch.Tensor, ref: dict, k: int, answers: set[str]) -> str | None:
    """Why an answer is the very tensor the grader handed the notebook before answer cell ``k`` as
    an earlier answer (kept from an earlier cell, where the expected value differs from it bit for
    bit); else None. The notebook's own forward tensors do not count: an answer that recomputes
    one (notebook 05's probabilities, inside ``attention_backward``) may match it bit for bit."""
    if not isinstance(y, torch.Tensor) or y.numel() < 16:
        return None
    for j in range(k + 1):
        for name, t in ref.get(STATE + str(j), {}).items():
            if (
                name in answers
                and isinstance(t, torch.Tensor)
                and t.shape == y.shape
                and t.dtype == y.dtype
                and torch.equal(t.detach(), y)
                and not (t.shape == e.shape and torch.equal(t.detach(), e))
            ):
                return (
                    f"the answer is, bit for bit, the `{name}` the grader handed the notebook "
                    "before this cell: compute it in this cell"
                )
    return None


def _review_row(check: str, why: str, res: Result) -> dict:
    """A row not credited until an instructor has looked: why, and what the comparison said."""
    said = "the value matches" if res.ok else f"the value does not match ({res.mistake or 'wrong'})"
    return {
        **_row(check, False, "review", f"{why}: not credited until an instructor has looked at it"),
        "note": said,
    }


def judge_one(
    check: str,
    var: str,
    y: object,
    e: torch.Tensor,
    settings: Settings,
    code: str | None = None,
    cell_error: str | None = None,
    facts: dict | None = None,
    answers: set[str] | None = None,
    review: str | None = None,
    head_sizes: list[int] | None = None,
    sizes: list[int] | None = None,
    *,
    tensors: dict[str, torch.Tensor] | None = None,
) -> Result:
    """The learner's value judged as the notebook's ``cmp`` judges it: the same comparison, words
    and hints, with the graph's facts from the reference run (``facts``) in place of the graph,
    and the notebook's attention head sizes (``head_sizes``) where ``cmp`` reads its globals, and
    the sizes its ``cmp`` calls pass as ``n=`` (``sizes``: layer norm's C, for a Bessel slip)."""
    name = var[1:] if var.startswith("d") and len(var) > 1 else var  # dC is the gradient of C
    value = name == var  # not a dX: a value (AdamW's p_new, a Value's grad), judged as such
    source = "the instructor's solution" if value else "autograd"
    ctx = Context(
        name,
        batch_sizes=[settings.batch, *(s for s in sizes or [] if s != settings.batch)],
        head_sizes=list(head_sizes or []),
        tensors=(lambda: tensors) if tensors else None,
        value=value,
        source=source,
        strict_shapes=settings.strict_shapes,
        answer_label=var,
    )

    def check() -> Result:
        nonlocal ctx
        expected = torch.as_tensor(e)
        try:
            ctx = apply(ctx, facts if isinstance(facts, dict) else None)
        except Exception:  # facts of another version of the grader: judge without them
            ctx.paths = ctx.terms = ctx.index_uses = ctx.scale = ctx.swaps = None
            ctx.local = ctx.transposed = ctx.slips = ctx.broadcast = ctx.elementwise = None
            ctx.instead = ctx.misplaced = None
        ctx = with_source(ctx, code, var, answers) if not value else ctx
        yt, notes = answer(name, y, expected, label=var)
        ctx.notes = notes + ctx.notes
        if review:  # a pass becomes a row for review (``_review_row``); a fail says it in the note
            ctx.fail_notes.append(Note("review", review))
        if cell_error:
            ctx.fail_notes.append(Note("cell-error", f"the cell also raised: {cell_error}"))
        return judge(name, yt, expected, ctx)

    return guarded(name, var, check)


PASTED = 16  # numbers written out in a cell beyond its template's: an answer pasted as numbers


def source_reviews(ex: Exercise, learner: dict[int, str | None]) -> dict[str, str]:
    """Why the checks of learner cells need a look, by check, read from the cells' source: a
    cell that uses what an answer may not (``checks.allow``: autograd under any name, ``.grad``,
    dynamic access by strings, imports...; a learner's function from an earlier cell read where
    it is called), or that writes out an answer as numbers; where what it can change lasts (the
    grader's module, the builtins, a thread, code run from a string), every later check is
    looked at too."""
    reviews: dict[str, str] = {}
    earlier, before = None, []
    for a in ex.answers:
        code = learner.get(a.index) or ""
        found = disallowed(code, a.template, before)
        before.append((code, a.template))
        pasted = numbers_written(code) - numbers_written(a.template)
        why = earlier
        if found:
            why = f"the cell uses what an answer may not ({_listed(found)}): look at it by hand"
        elif pasted >= PASTED:
            why = f"the cell writes out {pasted} numbers (an answer pasted as numbers?)"
        if why:
            reviews.update({c: why for c in a.checks})
        if lasting(found) and earlier is None:  # what it changed in the kernel lasts
            earlier = (
                "an earlier cell reaches around what the grader can read "
                f"({_listed(lasting(found))})"
            )
    return reviews


def _listed(items: list[str]) -> str:
    return ", ".join(f"`{u}`" for u in items[:3])


def _row(check: str, passed: bool, mistake: str, reason: str) -> dict:
    """A row that no comparison made: the grader's own reason, which states no expected value, is
    the learner's feedback too."""
    return {
        "check": check,
        "passed": "true" if passed else "false",
        "mistake": mistake,
        "reason": reason,
        "note": "",
        "feedback": reason,
        "hints": "",
    }


# ---------------------------------------------------------------- the whole run


def replace_whole(path: Path, write: Callable[[Path], object]) -> None:
    """``write`` a file beside ``path``, then put it in ``path``'s place in one step: a grader
    reading the cache at the same moment (another run, a self-check) sees the old file or the
    new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        write(tmp)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


class Grader:
    def __init__(
        self, out: Path, settings: Settings, solutions: Path = SOLUTIONS, cache: Path | None = None
    ) -> None:
        self.out, self.settings = out, settings
        self.cache = cache or out / ".reference"  # reference values, kept between runs
        self.exercises = {p.name: load_exercise(p) for p in sorted(solutions.glob("*.ipynb"))}
        self.exercises = {k: v for k, v in self.exercises.items() if v.answers}
        self._refs: dict[str, dict] = {}
        self._environment: str | None = None
        self.refused: dict[Path, str] = {}  # notebooks refused unread (links): why
        # kept out of a sandbox even inside what it may read (the hint ladders hold the solution
        # lines)
        self.hidden = [solutions, out, self.cache, HINTS]

    def cache_of(self, ex: Exercise) -> Path:
        """The file that keeps ``ex``'s reference values for these settings."""
        s = self.settings
        key = hashlib.sha256(
            (ex.path.read_text() + f"{s.seed}/{s.batch}/{s.steps}/sealed/{FACTS_VERSION}").encode()
        ).hexdigest()[:16]
        return self.cache / f"{ex.path.stem}-{key}.pt"

    def reference(self, ex: Exercise) -> dict:
        if ex.name not in self._refs:
            cache = self.cache_of(ex)
            if cache.exists():
                self._refs[ex.name] = torch.load(cache, weights_only=True)
            else:
                # the instructor's own notebook: it needs no sandbox
                work = self.out / ".work" / f"reference-{ex.path.stem}"
                run = run_notebook(
                    assemble(ex, None), work, dataclasses.replace(self.settings, sandbox="none")
                )
                # a sentinel (``<deleted>``, ``<error: X>``) is no value: never cached
                missing = [c for c in ex.checks if isinstance(run.values.get(c, MISSING), str)]
                if missing or run.fault or run.cell_errors or len(run.states) < len(ex.answers):
                    lacks = f"recorded no value for {_listed(missing)}" if missing else "failed"
                    raise SetupError(
                        f"the reference run of {ex.name} (the instructor's solution) {lacks}: "
                        f"{first_error(run, assemble(ex, None))}. Nothing was graded or cached."
                    )
                values, last = dict(run.values), {}
                # a tensor unchanged since the last point is kept once
                for k, st in sorted(run.states.items()):
                    st = {n: last[n] if _same(last.get(n, _UNSET), v) else v for n, v in st.items()}
                    values[STATE + str(k)], values[NAMES + str(k)] = st, list(st)
                    last.update(st)
                replace_whole(cache, lambda tmp: torch.save(values, tmp))
                shutil.rmtree(work, ignore_errors=True)  # its notebook holds the solutions
                self._refs[ex.name] = values
        return self._refs[ex.name]

    def grade_notebook(self, submission: str, path: Path) -> list[dict]:
        return self._graded(submission, path)[0]

    def _graded(self, submission: str, path: Path) -> tuple[list[dict], Run | None, Plan | None]:
        """A notebook's rows, with the run and the grading notebook they came from (None where
        nothing ran: a notebook of no exercise, one that cannot be read)."""
        ex = exercise_for(path, self.exercises)
        base = {"submission": submission, "notebook": path.name}
        if ex is None:
            known = ", ".join(self.exercises)
            return [{**base, **_row("-", False, "", f"not one of the exercises ({known})")}], *NONE
        base["notebook"] = ex.name
        try:
            learner = learner_cells(ex, path)
        except Unreadable as why:
            return [{**base, **_row(c, False, "", str(why))} for c in ex.checks], *NONE
        ref = self.reference(ex)
        plan = assemble(ex, learner, ref)
        work = self.out / ".work" / hashlib.sha256(f"{submission}/{path}".encode()).hexdigest()[:16]
        run = run_notebook(plan, work, self.budget(ex), self.hidden)
        sources = {c: learner.get(a.index) or "" for a in ex.answers for c in a.checks}
        reviews = source_reviews(ex, learner)
        for cell, calls in run.autograd.items():  # seen at run time: the handed-out cell runs none
            for a in ex.answers:
                if set(plan.learner[cell]) & set(a.checks) and not autograd_uses(a.template):
                    why = f"the cell ran autograd ({', '.join(dict.fromkeys(calls))})"
                    reviews.update({c: reviews.get(c, why) for c in a.checks})
        rows = [
            {**base, **r}
            for r in judge_values(ex, ref, run, plan.concerns, self.settings, sources, reviews)
        ]
        said: dict[str, str] = {}
        hints = hints_shown(ex, path)
        for cell, dropped in run.truncated.items():
            for check in plan.learner.get(cell, []):
                cut = f"the grader cut {dropped} outputs of the cell (too many to send)"
                said[check] = "; ".join(x for x in (said.get(check), cut) if x)
        for r in rows:
            r["hints"] = hints.get(r["check"], "")
            if cut := said.get(r["check"]):
                r["note"] = "; ".join(x for x in (r["note"], cut) if x)
        shutil.rmtree(work, ignore_errors=True)
        return rows, run, plan

    def unlinked(
        self, sub: str, nbs: list[Path], progress: Callable[[str], object] = print
    ) -> tuple[list[Path], list[dict]]:
        """The notebooks of ``nbs`` to grade, and the rows of those refused unread (links)."""
        rows = []
        for nb in nbs:
            if nb in self.refused:
                progress(f"{sub}: {nb.name}: {self.refused[nb]}")
                rows += refused_rows(sub, nb, self.refused[nb], self.exercises)
        return [nb for nb in nbs if nb not in self.refused], rows

    def calibrate(self, ex: Exercise, progress: Callable[[str], object] = print) -> None:
        """Grade the instructor's own solution through the very pipeline a learner's notebook
        takes (sandbox, kernel, hand-ins, records): anything short of full marks is a broken
        set-up, raised as ``SetupError`` with the kernel's first error before any learner runs.
        A pass is remembered for exactly this solution, package, Python and settings."""
        mark = self.calibration_mark(ex)
        if mark.exists():
            return
        progress(f"grading the solution {ex.name} as a submission (it must score full marks)")
        rows, run, plan = self._graded(SOLUTION_SUBMISSION, ex.path)
        bad = [r for r in rows if r["passed"] != "true"]
        if bad:
            cause = first_error(run, plan) if run is not None and plan is not None else ""
            raise SetupError(
                f"the instructor's solution {ex.name}, graded as a learner's notebook is, scores "
                f"{len(rows) - len(bad)} / {len(rows)}: {cause or bad[0]['check'] + ': '}"
                f"{'' if cause else bad[0]['reason']}. Nothing was graded: fix the set-up "
                "(the data, the package inside the sandbox) and run again."
            )
        kept = {"solution": ex.name, "checks": len(rows), "seconds": round(run.seconds, 1)}
        replace_whole(mark, lambda tmp: tmp.write_text(json.dumps(kept) + "\n"))

    def calibration_mark(self, ex: Exercise) -> Path:
        """The file that says ``ex``'s solution passed through this very set-up, and how long."""
        return self.cache / f"{ex.path.stem}-{self.environment(ex)}.calibrated"

    def budget(self, ex: Exercise) -> Settings:
        """The settings a learner's run of ``ex`` takes: the instructor's notebook timeout, else
        one scaled from the solution's own run through the same pipeline (5 times it, plus 120 s,
        at most ``NOTEBOOK_TIMEOUT``), so that a notebook that sleeps costs minutes, not a quarter
        of an hour."""
        if self.settings.notebook_timeout is not None:
            return self.settings
        mark = self.calibration_mark(ex)
        try:
            seconds = float(json.loads(mark.read_text())["seconds"])
        except (OSError, ValueError, KeyError, TypeError):
            return self.settings  # not calibrated yet (the calibration run itself)
        limit = int(min(NOTEBOOK_TIMEOUT, 5 * seconds + 120))
        return dataclasses.replace(self.settings, notebook_timeout=limit)

    def environment(self, ex: Exercise | None = None) -> str:
        """What a run's results depend on besides a submission: the solutions (or ``ex``'s), the
        package's code and version, the Python, the sandbox and the settings (not ``jobs``)."""
        if self._environment is None:
            h = hashlib.sha256(f"{sys.executable}\n{checks_version()}\n".encode())
            for p in sorted(Path(__file__).parent.rglob("*.py")):
                h.update(p.name.encode() + p.read_bytes())
            s = dataclasses.asdict(self.settings)
            s.pop("jobs")
            h.update(json.dumps(s, sort_keys=True).encode())
            self._environment = h.hexdigest()
        h = hashlib.sha256(self._environment.encode())
        for e in [ex] if ex is not None else self.exercises.values():
            h.update(e.name.encode() + e.path.read_bytes())
        return h.hexdigest()[:16]


def isolation(wanted: str) -> str:
    """The sandbox a run uses: ``bwrap`` where asked for or, with ``auto``, where it works here."""
    if wanted == "none":
        return "none"
    if sandbox.bwrap():
        return "bwrap"
    if wanted == "bwrap":
        raise RuntimeError(
            "--sandbox bwrap: bubblewrap is not installed or cannot make a sandbox here "
            "(Debian/Ubuntu: apt-get install bubblewrap)"
        )
    return "none"


def submissions_of(paths: list[Path]) -> tuple[list[tuple[str, list[Path]]], dict[Path, str]]:
    """Each submission's name and notebooks, and the notebooks refused unread (links: why)."""
    subs, refused = [], {}
    for p in paths:
        name = p.name if p.is_dir() else p.stem
        nbs = find_notebooks(p)
        subs.append((name, nbs))
        refused.update({nb: why for nb in nbs if (why := link_problem(nb, p))})
    return subs, refused


def grade(
    paths: list[Path],
    out: Path,
    settings: Settings,
    solutions: Path = SOLUTIONS,
    progress=print,
    cache: Path | None = None,
    executor: str = "local",
    scheduler: str | None = None,
) -> list[dict]:
    """Grade every submission into ``out`` (resumable) and return all rows. Only the exercises that
    the submissions hold get a reference run; ``cache`` keeps reference values between runs.
    ``executor`` "dask" grades on a dask cluster (``scheduler``'s address, else a local one)."""
    out = out.resolve()  # the grading runs in other working folders: relative paths would break
    paths = [Path(os.path.abspath(p)) for p in paths]  # links kept: each is judged, not followed
    out.mkdir(parents=True, exist_ok=True)
    requested = settings  # a dask worker decides on its own sandbox
    settings = dataclasses.replace(settings, sandbox=isolation(settings.sandbox))
    if settings.sandbox == "none":
        progress(
            "no sandbox: learner code runs as you and can read what you can "
            "(see docs/grading.md, Isolation)"
        )
    grader = Grader(out, settings, solutions.resolve(), cache)
    done_dir = out / ".done"
    done_dir.mkdir(exist_ok=True)
    subs, grader.refused = submissions_of(paths)
    needed = {
        ex.name
        for _, nbs in subs
        for nb in nbs
        if nb not in grader.refused and (ex := exercise_for(nb, grader.exercises))
    }
    salt = grader.environment()
    todo = [(s, nbs) for s, nbs in subs if not (done_dir / _key(s, nbs, salt)).exists()]
    started, finished = time.monotonic(), len(subs) - len(todo)

    def record(sub: str, nbs: list[Path], rows: list[dict], ignored: list[str]) -> None:
        """Keep a submission's rows whole, in the out folder only (atomic: all or nothing)."""
        tmp = done_dir / (_key(sub, nbs, salt) + ".tmp")
        tmp.write_text(json.dumps({"rows": rows, "ignored": ignored}))
        tmp.replace(done_dir / _key(sub, nbs, salt))

    def one(sub: str, nbs: list[Path]) -> tuple[str, list[dict]]:
        rows, ignored = grade_submission(grader, sub, nbs, progress)
        if _STOPPING.is_set():
            return sub, []  # cut short by Ctrl-C: graded again next time
        record(sub, nbs, rows, ignored)
        return sub, rows

    def shown(sub: str, rows: list[dict]) -> None:
        nonlocal finished
        finished += 1
        passed = sum(r["passed"] == "true" for r in rows)
        rate = (finished - (len(subs) - len(todo))) / max(1e-9, (time.monotonic() - started) / 60)
        progress(
            f"[{finished}/{len(subs)}] {sub}: {passed}/{len(rows)} checks pass "
            f"({rate:.1f} submissions/min)"
        )

    _STOPPING.clear()
    try:
        prepare(grader, [ex for ex in grader.exercises.values() if ex.name in needed], progress)
        if len(todo) < len(subs):
            progress(f"resuming: {len(subs) - len(todo)} of {len(subs)} submissions already graded")
        if executor == "dask":
            from checks.cluster import grade_on_dask

            grade_on_dask(todo, grader, requested, scheduler, record, shown, progress)
        else:
            with ThreadPoolExecutor(max_workers=settings.jobs) as pool:
                try:
                    for fut in as_completed([pool.submit(one, s, nbs) for s, nbs in todo]):
                        shown(*fut.result())
                except KeyboardInterrupt:
                    _stop_all()
                    pool.shutdown(wait=True, cancel_futures=True)
                    raise
    except KeyboardInterrupt:
        rows, ignored = _recorded(subs, done_dir, salt)
        write_reports(rows, out, ignored, settings)
        done = sum((done_dir / _key(s, nbs, salt)).exists() for s, nbs in subs)
        progress(f"stopped: {done} of {len(subs)} submissions graded; reports written for those")
        raise
    rows, ignored = _recorded(subs, done_dir, salt)
    write_reports(rows, out, ignored, settings)
    return rows


def prepare(grader: Grader, exercises: list[Exercise], progress: Callable[[str], object]) -> None:
    """Before any learner: each exercise's reference run (or its cached values), then the
    instructor's solution graded as a submission (``Grader.calibrate``)."""
    s = grader.settings
    for ex in exercises:
        if grader.cache_of(ex).exists():
            progress(f"reference of {ex.name}: from the cache ({grader.cache_of(ex).parent})")
        else:
            progress(
                f"reference run of {ex.name} (seed {s.seed}, batch {s.batch}, {s.steps} steps)"
            )
        grader.reference(ex)
        grader.calibrate(ex, progress)


def grade_submission(
    grader: Grader, sub: str, nbs: list[Path], progress=print
) -> tuple[list[dict], list[str]]:
    """One submission's rows, and its copies not graded ("file (graded: file)")."""
    rows = []
    if not nbs:
        rows.append(
            {
                "submission": sub,
                "notebook": "-",
                **_row("-", False, "", "no notebook in this submission"),
            }
        )
    nbs, refused = grader.unlinked(sub, nbs, progress)
    rows += refused
    chosen, ignored = one_copy_each(nbs, grader.exercises)
    for other, kept in ignored:
        progress(
            f"{sub}: {other.name} is another copy of {kept.name}'s exercise: "
            f"only {kept.name} is graded"
        )
    for nb in chosen:
        rows += grader.grade_notebook(sub, nb)
    return rows, [f"{o.name} (graded: {k.name})" for o, k in ignored]


def one_copy_each(
    nbs: list[Path], exercises: dict[str, Exercise]
) -> tuple[list[Path], list[tuple[Path, Path]]]:
    """The notebooks to grade, one per exercise, and the (ignored, graded) other copies.

    Of several copies of one exercise in a submission, the one named exactly like the exercise is
    graded; without one, the first by name. Notebooks of no exercise are kept (they get a row)."""
    by_ex: dict[str, list[Path]] = {}
    chosen: list[Path] = []
    for nb in nbs:
        ex = exercise_for(nb, exercises)
        if ex is None:
            chosen.append(nb)
        else:
            by_ex.setdefault(ex.name, []).append(nb)
    ignored = []
    for name, copies in by_ex.items():
        keep = next((c for c in copies if c.name == name), sorted(copies, key=lambda p: p.name)[0])
        chosen.append(keep)
        ignored += [(c, keep) for c in copies if c is not keep]
    return sorted(chosen, key=lambda p: p.name), ignored


def _recorded(
    subs: list[tuple[str, list[Path]]], done_dir: Path, salt: str
) -> tuple[list[dict], list[str]]:
    """The rows of every graded submission, and its ignored copies ("sub: file (graded: file)")."""
    rows, ignored = [], []
    for s, nbs in subs:
        path = done_dir / _key(s, nbs, salt)
        if not path.exists():
            continue
        record = json.loads(path.read_text())
        if isinstance(record, list):  # written by an earlier version
            record = {"rows": record, "ignored": []}
        rows += record["rows"]
        ignored += [f"{s}: {x}" for x in record["ignored"]]
    return rows, ignored


def _key(sub: str, nbs: list[Path], salt: str = "") -> str:
    """The name of a submission's done file: its notebooks' paths and bytes, and ``salt`` (what
    else the rows depend on: the solutions, the package, the settings: ``Grader.environment``)."""
    h = hashlib.sha256()
    h.update(f"rows {ROWS}\n{sub}\n{salt}".encode())
    for p in nbs:
        h.update(str(p).encode())
        with contextlib.suppress(OSError):
            h.update(p.read_bytes())
    return h.hexdigest()[:24] + ".json"


def self_check(
    path: Path,
    settings: Settings,
    only: str = "",
    fail_under: float = 0.0,
    solutions: Path = SOLUTIONS,
) -> int:
    """A learner's own score, as the grader would give it; exit 1 when the share of passed checks
    (those whose name starts with ``only``) is below ``fail_under``, and 2, before any run, when the
    notebook is not a copy of one of the exercises. Only that exercise's reference is run, and it
    is kept (``self_check_cache()``) for the next self-check."""
    if not is_exercise(path, solutions):
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        rows = grade(
            [path],
            Path(tmp),
            settings,
            solutions,
            progress=lambda s: print(s, file=sys.stderr),
            cache=self_check_cache(),
        )
    if only and not any(r["check"].startswith(only) for r in rows):
        prefixes = sorted({r["check"].split("/")[0] + "/" for r in rows})
        print(
            f"no check's name starts with {only!r}: this notebook's start with "
            f"{', '.join(prefixes)}",
            file=sys.stderr,
        )
        return 2
    rows = [r for r in rows if r["check"].startswith(only)]
    width = max(len(r["check"]) for r in rows)
    for r in rows:
        mark = "✓" if r["passed"] == "true" else "✗"
        text = r["reason"] or r.get("note", "")
        print(f"{mark} {r['check']:{width}s}  {r['mistake']:12s} {text}".rstrip())
    passed = sum(r["passed"] == "true" for r in rows)
    print(f"{passed} / {len(rows)} checks pass")
    return 0 if passed >= fail_under * len(rows) else 1


def no_solutions(solutions: Path) -> str:
    """Why nothing can be graded against ``solutions``, and what to do."""
    if class_wheel() and solutions == SOLUTIONS:
        return (
            "this is a class wheel: it carries no solutions, so it cannot grade (the self-check "
            "included). Run the notebook top to bottom: its checks and summary() say where you "
            "stand; the instructor grades with the full workbook."
        )
    return f"no solution notebooks in {solutions}: pass --solutions DIR (the executed solutions)"


def is_exercise(path: Path, solutions: Path) -> bool:
    """Whether ``path`` is a copy of one of the exercises; says so when it is not."""
    exercises = {
        p.name: ex for p in sorted(solutions.glob("*.ipynb")) if (ex := load_exercise(p)).answers
    }
    if path.is_file() and exercise_for(path, exercises) is not None:
        return True
    print(
        f"{path}: not a copy of one of the exercises ({', '.join(exercises)}): nothing graded",
        file=sys.stderr,
    )
    return False


def draw_numbers(folder: Path, seed: int | None, batch: int | None) -> tuple[int, int]:
    """The seed and batch size of a grading run: the instructor's where given, else those kept in
    ``folder/settings.json`` (a resumed run grades with the same numbers), else drawn fresh (not
    from a seeded generator: they must not be guessable) and kept there."""
    path = folder / "settings.json"
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        kept = {}
    draw = random.SystemRandom()
    seed = seed if seed is not None else kept.get("seed") or draw.randrange(1, 2**31 - 1)
    batch = batch if batch is not None else kept.get("batch") or draw.randrange(16, 49)
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"seed": seed, "batch": batch}) + "\n")
    return int(seed), int(batch)


def self_check_cache() -> Path:
    """Where a learner's self-checks keep the reference values between calls."""
    return cache_dir() / "reference"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="backprop-workbook grade", description=__doc__.split("\n")[0])
    p.add_argument(
        "submissions", nargs="+", type=Path, help="notebooks, or folders of one learner's notebooks"
    )
    p.add_argument("--out", type=Path, help="folder for grades.csv, totals.csv and report.md")
    p.add_argument(
        "--self",
        dest="self_check",
        action="store_true",
        help="grade your own notebook and print the score",
    )
    p.add_argument("--solutions", type=Path, default=SOLUTIONS)
    p.add_argument(
        "--only",
        default="",
        help="with --self: count only checks whose name starts with this (e.g. ex1/)",
    )
    p.add_argument(
        "--fail-under",
        type=float,
        default=0.0,
        help="with --self: exit 1 below this share of passed checks",
    )
    d = Settings()
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help=(
            "the notebooks' random seed (default: drawn fresh, kept in the out folder for a "
            "resumed run)"
        ),
    )
    p.add_argument(
        "--batch",
        type=int,
        default=None,
        help="the minibatch size (default: drawn fresh, 16 to 48)",
    )
    p.add_argument(
        "--steps", type=int, default=d.steps, help="training steps of exercise 4 (WORKBOOK_STEPS)"
    )
    p.add_argument("--cell-timeout", type=int, default=d.cell_timeout)
    p.add_argument(
        "--notebook-timeout",
        type=int,
        default=None,
        help=f"seconds per notebook (default: 5 times the solution's own run + 120 s, at most "
        f"{NOTEBOOK_TIMEOUT})",
    )
    p.add_argument("--memory-mb", type=int, default=d.memory_mb)
    p.add_argument("--jobs", type=int, default=d.jobs)
    p.add_argument(
        "--sandbox",
        choices=["auto", "bwrap", "none"],
        default="auto",
        help=(
            "where learner code runs: bubblewrap (Linux), none, or auto: bwrap where it works "
            "(default)"
        ),
    )
    p.add_argument(
        "--executor",
        choices=["local", "dask"],
        default="local",
        help=(
            "local: a thread per job on this machine; dask: tasks on a dask cluster "
            "(the [dask] extra)"
        ),
    )
    p.add_argument(
        "--scheduler",
        help="with --executor dask: the scheduler's address (default: a local cluster "
        "of --jobs workers)",
    )
    p.add_argument(
        "--strict-shapes",
        action="store_true",
        help="fail an answer that lacks a leading size-1 axis (default: a pass with a note)",
    )
    a = p.parse_args(argv)
    if a.out is None and not a.self_check:
        p.error("--out DIR is needed (or --self)")
    if a.executor == "dask" and importlib.util.find_spec("distributed") is None:
        print(
            "--executor dask needs dask's distributed: pip install 'backprop-workbook[dask]'",
            file=sys.stderr,
        )
        return 2
    if not any(a.solutions.glob("*.ipynb")):
        print(no_solutions(a.solutions), file=sys.stderr)
        return 2
    if a.self_check and not is_exercise(a.submissions[0], a.solutions):
        return 2  # before anything is drawn, run or written
    try:
        isolation(a.sandbox)
    except RuntimeError as why:
        print(why, file=sys.stderr)
        return 2
    # numbers that ship with the code could be answered with literals: draw them (or take the
    # instructor's)
    seed, batch = draw_numbers(
        self_check_cache().parent if a.self_check else a.out, a.seed, a.batch
    )
    settings = Settings(
        seed,
        batch,
        a.steps,
        a.cell_timeout,
        a.notebook_timeout,
        a.memory_mb,
        a.jobs,
        a.strict_shapes,
        a.sandbox,
    )
    try:
        if a.self_check:
            return self_check(a.submissions[0], settings, a.only, a.fail_under, a.solutions)
        rows = grade(
            a.submissions, a.out, settings, a.solutions, executor=a.executor, scheduler=a.scheduler
        )
    except SetupError as why:
        print(f"stopped before grading: {why}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print(
            "interrupted: the submissions graded so far are in the reports; run again to grade "
            "the rest",
            file=sys.stderr,
        )
        return 130
    print(
        f"{sum(r['passed'] == 'true' for r in rows)} / {len(rows)} checks pass; "
        f"wrote {a.out / 'grades.csv'}"
    )
    waiting = [r for r in rows if r["mistake"] == "review"]
    if waiting:
        print(
            f"{len(waiting)} rows of {len({r['submission'] for r in waiting})} learners wait for "
            f"review: see {a.out / 'report.md'} (For review)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
