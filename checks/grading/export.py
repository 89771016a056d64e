"""Scores out to an LMS: a Canvas gradebook CSV, a Gradescope autograder, a GitHub Classroom
workflow.

    python -m checks.export canvas OUT --roster roster.csv
        [--assignment 03-makemore-backprop="Backprop (1234)"]
    python -m checks.export gradescope-package --to autograder.zip
        [--notebook 03-makemore-backprop] [--solutions DIR] [--overrides OUT/overrides.csv]
    python -m checks.export gradescope-run [--root /autograder]
        # what the package's run_autograder calls
    python -m checks.export github-workflow notebooks/03-makemore-backprop.ipynb --install SOURCE
        [--static]
    python -m checks.export github-selfcheck NOTEBOOK --checks a,b,c
        # what the workflow runs

The Canvas file has the columns Canvas imports (Student, ID, SIS User ID, SIS Login ID, Section,
then one column per notebook with its points, one point per check, the instructor's overrides
applied) and a Points Possible row; one row per learner ID. The Gradescope package holds
``setup.sh``, ``run_autograder``, the workbook's wheel (setup.sh installs it: never the package
index), the solutions, the grading settings and the overrides; ``run_autograder`` grades
``/autograder/submission`` and writes ``/autograder/results/results.json``: one test per check
with its score (overrides applied), max_score and the hint. The GitHub workflow holds no
solutions: it runs the learner's notebook with its own checks and reports one point per check.
"""

from __future__ import annotations

import argparse
import base64
import collections
import importlib.util
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from checks.grading.scores import (
    OVERRIDES,
    Score,
    ScoresError,
    Student,
    class_scores,
    csv_text,
    fmt_points,
    load_overrides,
    overrides_for,
    read_grades,
    totals,
    with_overrides,
)
from checks.paths import CHECKOUT, SOLUTIONS
from checks.words import ERROR, PASS

CANVAS_FIELDS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def canvas_csv(
    scores: list[Score], roster: dict[str, Student], names: dict[str, str] | None = None
) -> tuple[str, list[str]]:
    """The gradebook CSV (one row per learner of the roster) and warnings for what it leaves out
    or merges: several submission folders of one learner ID give one row."""
    if not roster:
        raise ScoresError(
            "a Canvas gradebook needs a roster (--roster FILE): Canvas matches rows by ID"
        )
    sums = totals(scores)
    notebooks = sorted({nb for _, nb in sums if nb != "-"})
    names = names or {}
    columns = [
        names.get(nb, names.get(nb.removesuffix(".ipynb"), nb.removesuffix(".ipynb")))
        for nb in notebooks
    ]
    most = {nb: max(m for (_, n), (_, m) in sums.items() if n == nb) for nb in notebooks}
    rows = [["Points Possible", "", "", "", ""] + [fmt_points(most[nb]) for nb in notebooks]]
    warnings = [
        f"{s}: graded, but not in the roster (left out)"
        for s in sorted({s.submission for s in scores})
        if s not in roster
    ]
    groups, twice = learners(roster)
    warnings += twice
    for subs in groups:
        who = roster[subs[0]]
        row = [who.student, who.id, who.sis_user_id, who.sis_login_id, who.section]
        for nb in notebooks:
            cell, why = _canvas_cell(subs, who, nb, sums)
            row.append(cell)
            warnings += [why] if why else []
        rows.append(row)
    return csv_text(CANVAS_FIELDS + columns, rows, numeric=set(columns)), warnings


def learners(roster: dict[str, Student]) -> tuple[list[list[str]], list[str]]:
    """The roster's submissions grouped by learner (the Canvas ID, else the SIS User ID, else the
    SIS Login ID), in roster order, and a warning for every learner with several folders."""
    groups: dict[str, list[str]] = {}
    for sub, who in roster.items():
        key = next((f"{k} {v}" for k, v in _ids(who) if v), f"submission {sub}")
        groups.setdefault(key, []).append(sub)
    warnings = [
        f"{key}: {len(subs)} submission folders map to one learner "
        f"({', '.join(repr(s) for s in subs)}): one row in canvas.csv, from the folder that has "
        "the notebook graded; where several have it, the cell is left empty (keep one folder per "
        "learner in the roster)"
        for key, subs in groups.items()
        if len(subs) > 1
    ]
    return list(groups.values()), warnings


def _ids(who: Student) -> list[tuple[str, str]]:
    return [("ID", who.id), ("SIS User ID", who.sis_user_id), ("SIS Login ID", who.sis_login_id)]


def _canvas_cell(
    subs: list[str], who: Student, nb: str, sums: dict[tuple[str, str], tuple[float, float]]
) -> tuple[str, str]:
    """A learner's cell for notebook ``nb`` and, where it is left empty, why."""
    graded = [s for s in subs if (s, nb) in sums]
    if len(graded) == 1:
        return fmt_points(sums[(graded[0], nb)][0]), ""
    if not graded:
        return "", f"{subs[0]} ({who.student}): no {nb} graded (its cell is left empty)"
    return "", (
        f"{who.student or subs[0]}: {nb} graded in {len(graded)} folders "
        f"({', '.join(repr(s) for s in graded)}) of one learner: its cell is left empty"
    )


# ---------------------------------------------------------------- Gradescope

# the keys Gradescope documents for results.json (gradescope-autograders.readthedocs.io, "Autograder
# Specifications"), at the top and per test
GRADESCOPE_KEYS = {
    "score",
    "execution_time",
    "output",
    "output_format",
    "test_output_format",
    "test_name_format",
    "visibility",
    "stdout_visibility",
    "extra_data",
    "tests",
    "leaderboard",
}
GRADESCOPE_TEST_KEYS = {
    "score",
    "max_score",
    "status",
    "name",
    "name_format",
    "number",
    "output",
    "output_format",
    "tags",
    "visibility",
    "extra_data",
}


def gradescope_results(scores: list[Score], seconds: float | None = None) -> dict:
    """Gradescope's results.json for one submission: a test per check with its points (the
    instructor's override applied, and said), the hint as its output."""
    tests = []
    for s in scores:
        words = s.mistake or (PASS if s.passed else ERROR)
        said = s.feedback if not s.passed else s.note
        output = f"{words}: {said}" if said else words
        if s.overridden:
            given = f"{fmt_points(s.points)} / {fmt_points(s.max_points)}"
            output = (
                f"instructor: {given}" + (f" ({s.comment})" if s.comment else "") + "\n" + output
            )
        tests.append(
            {
                "name": f"{s.notebook.removesuffix('.ipynb')} · {s.check}",
                "score": s.points,
                "max_score": s.max_points,
                "status": "passed" if s.points >= s.max_points else "failed",
                "output": output,
                "visibility": "visible",
            }
        )
    got, most = sum(t["score"] for t in tests), sum(t["max_score"] for t in tests)
    results = {
        "score": got,
        "output": f"{fmt_points(got)} / {fmt_points(most)} points, one per check",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }
    if seconds is not None:
        results["execution_time"] = round(seconds)
    return results


SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image (Ubuntu, as root).
set -euo pipefail
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-pip python3-venv \\
bubblewrap >/dev/null
python3 -m venv /opt/workbook
# the CPU build of torch first: a plain install would pull a CUDA build of several GB
/opt/workbook/bin/pip install -q torch --index-url https://download.pytorch.org/whl/cpu
# the workbook from the wheel in this zip, never from the package index
/opt/workbook/bin/pip install -q "/autograder/source/{wheel}[grade]"
/opt/workbook/bin/python -c "from importlib.metadata import version; \\
assert version('backprop-workbook') == '{version}', version('backprop-workbook')"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for each submission: grade /autograder/submission into results/results.json.
root="${AUTOGRADER_ROOT:-/autograder}"
python="${WORKBOOK_PYTHON:-/opt/workbook/bin/python}"
exec "$python" -m checks.export gradescope-run --root "$root"
"""


def gradescope_package(
    to: Path,
    wheel: Path,
    solutions: Path = SOLUTIONS,
    notebooks: list[str] | None = None,
    seed: int | None = None,
    batch: int | None = None,
    steps: int = 2000,
    overrides: Path | None = None,
) -> Path:
    """Write the autograder zip: setup.sh (which installs the workbook from ``wheel``, put in the
    zip), run_autograder, settings.json, the solutions and, where given, the overrides file."""
    m = re.fullmatch(r"backprop_workbook-([^-]+)-.+\.whl", wheel.name)
    if not m or not wheel.is_file():
        raise ScoresError(f"{wheel}: not a wheel of the workbook (backprop_workbook-*.whl)")
    chosen = sorted(
        p
        for p in solutions.glob("*.ipynb")
        if not notebooks or p.stem in notebooks or p.name in notebooks
    )
    if not chosen:
        raise ScoresError(f"no notebook of {notebooks} in {solutions}")
    if overrides is not None:
        load_overrides(overrides)  # a file that cannot be read stops here, not on Gradescope
    draw = random.SystemRandom()
    settings = {
        "seed": seed or draw.randrange(1, 2**31 - 1),
        "batch": batch or draw.randrange(16, 49),
        "steps": steps,
    }
    setup = SETUP_SH.replace("{wheel}", wheel.name).replace("{version}", m.group(1))
    to.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(to, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in [("setup.sh", setup), ("run_autograder", RUN_AUTOGRADER)]:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = 0o755 << 16
            z.writestr(info, text)
        z.writestr("settings.json", json.dumps(settings, indent=1) + "\n")
        for p in chosen:
            z.write(p, f"solutions/{p.name}")
        z.write(wheel, wheel.name)
        if overrides is not None:
            z.write(overrides, OVERRIDES)
    return to


def submitters(root: Path) -> set[str]:
    """Who handed in the submission, as Gradescope's ``submission_metadata.json`` names them: each
    user's e-mail, student ID (``sid``), Gradescope id and name."""
    try:
        meta = json.loads((root / "submission_metadata.json").read_text())
    except (OSError, ValueError):
        return set()
    names = set()
    for user in meta.get("users") or [] if isinstance(meta, dict) else []:
        if isinstance(user, dict):
            names |= {str(user[k]).strip() for k in ("email", "sid", "id", "name") if user.get(k)}
    return names


def gradescope_scores(out: Path, root: Path) -> list[Score]:
    """The rows the grader wrote into ``out``, with the package's overrides of this submission's
    learner (an override's ``learner`` is their e-mail or student ID) applied."""
    rows = read_grades(out)
    path = root / "source" / OVERRIDES
    try:
        overrides = load_overrides(path)
    except ScoresError as why:  # stdout: the instructor's, not the learner's
        print(f"{why}: no override applied")
        overrides = []
    who = submitters(root)
    mine = [
        o
        for sub in sorted({r.submission for r in rows})
        for o in overrides_for(overrides, who, sub)
    ]
    scores, _ = with_overrides(rows, mine)
    for o in mine:
        print(f"override applied: {o.check} = {fmt_points(o.score)} ({OVERRIDES}, line {o.line})")
    return scores


def gradescope_run(root: Path) -> int:
    """Grade ``root/submission`` as the package's settings say; write
    ``root/results/results.json``."""
    from checks.grading.grader import grade
    from checks.grading.settings import Settings

    source = root / "source"
    kept = json.loads((source / "settings.json").read_text())
    settings = Settings(seed=kept["seed"], batch=kept["batch"], steps=kept["steps"], jobs=1)
    results = root / "results"
    results.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        try:
            grade([root / "submission"], out, settings, source / "solutions", progress=print)
            report = gradescope_results(gradescope_scores(out, root), time.monotonic() - started)
        except Exception as why:  # the learner sees a line, not a traceback; the score is 0
            report = {
                "score": 0,
                "output": f"the grader could not run: {type(why).__name__}: {why}",
                "visibility": "visible",
                "tests": [],
            }
    (results / "results.json").write_text(json.dumps(report, indent=1) + "\n")
    return 0


def build_wheel(into: Path) -> Path:
    """The workbook's wheel, built from the checkout (``python -m build --wheel``)."""
    if CHECKOUT is None or importlib.util.find_spec("build") is None:
        raise ScoresError(
            "the autograder carries the workbook's wheel, built from a checkout of the "
            "repository with the build package (pip install build), or given with --wheel FILE"
        )
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(into), str(CHECKOUT)],
        check=True,
        capture_output=True,
    )
    return next(into.glob("backprop_workbook-*.whl"))


# ---------------------------------------------------------------- GitHub Classroom

# the checks a notebook runs, as its code calls them: cmp("logprobs", ...), check_value("W1", ...)
_CALLS = re.compile(r"\b(?:cmp|check_value|check_numeric)\(\s*(['\"])([^'\"\n]+)\1")

# run first in the learner's kernel: every check's result, in the order they run, written out at
# once (a line each), so a notebook that hangs or kills its kernel later keeps what it earned
_HOOK = """\
import json as _wb_json
import checks.compare as _wb_compare, checks.numeric as _wb_numeric, checks.values as _wb_values
def _wb_record(res, quiet=False, _record=_wb_compare.record, _log={path!r}):
    with open(_log, "a") as f:
        f.write(_wb_json.dumps([str(res.name), bool(res.ok), str(res.mistake or ""),
                                str(res.hint or "")]) + "\\n")
    return _record(res, quiet)
_wb_compare.record = _wb_numeric.record = _wb_values.record = _wb_record
"""


def notebook_checks(path: Path) -> list[str]:
    """The checks a notebook's code runs, in order; a name checked again is ``name#2``, ``#3``."""
    import nbformat

    seen: collections.Counter = collections.Counter()
    names = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        for m in _CALLS.finditer(cell.source):
            seen[m.group(2)] += 1
            k = seen[m.group(2)]
            names.append(m.group(2) + (f"#{k}" if k > 1 else ""))
    return names


def run_checks(notebook: Path, timeout: int = 600) -> list[list]:
    """Run ``notebook`` top to bottom in a fresh kernel, in its folder, through cells that raise;
    every check it ran: ``[name, ok, mistake, hint]`` (up to where it stopped, if it did)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(notebook, as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "checks.jsonl"
        nb.cells.insert(0, nbformat.v4.new_code_cell(_HOOK.format(path=str(log))))
        client = NotebookClient(
            nb,
            timeout=timeout,
            allow_errors=True,
            kernel_name="python3",
            resources={"metadata": {"path": str(notebook.resolve().parent)}},
        )
        try:
            client.execute()
        except Exception as why:  # a cell out of time, a dead kernel: the checks so far count
            print(f"the notebook stopped: {type(why).__name__}: {str(why)[:300]}")
        lines = log.read_text().splitlines() if log.exists() else []
        return [json.loads(line) for line in lines if line.strip()]


def classroom_result(calls: list[list], expected: list[str], notebook: str) -> dict:
    """The autograding reporter's result of one runner (the format the command grader writes):
    one test per expected check, one point each, passed when its latest run passed."""
    last = {
        key: (bool(ok), f"{mistake}: {hint}" if mistake else "passed")
        for key, (_, ok, mistake, hint) in zip(check_keys(calls), calls, strict=True)
    }
    tests = []
    for key in expected:
        ok, message = last.get(key, (False, "not reached: the notebook stopped before this check"))
        tests.append(
            {
                "name": key,
                "status": "pass" if ok else "fail",
                "score": 1 if ok else 0,
                "message": message,
                "test_code": "",
                "filename": notebook,
                "line_no": 0,
                "duration": 0,
            }
        )
    passed = all(t["status"] == "pass" for t in tests)
    return {
        "version": 1,
        "status": "pass" if passed else "fail",
        "max_score": len(tests),
        "tests": tests,
    }


def github_selfcheck(notebook: Path, expected: list[str], timeout: int = 600) -> dict:
    """Run the learner's notebook and give the reporter its result: written, base64-encoded, as
    the step output ``result`` (``$GITHUB_OUTPUT``), and printed as a table."""
    result = classroom_result(run_checks(notebook, timeout), expected, notebook.name)
    encoded = base64.b64encode(json.dumps(result).encode()).decode()
    target = os.environ.get("GITHUB_OUTPUT")
    if target:
        with open(target, "a") as f:
            f.write(f"result={encoded}\n")
    for t in result["tests"]:
        print(f"{'✓' if t['status'] == 'pass' else '✗'} {t['name']:24s} {t['message']}")
    got = sum(t["score"] for t in result["tests"])
    print(f"{got} / {result['max_score']} checks pass (the notebook's own checks)")
    return result


WORKFLOW = """\
# Written by `python -m checks.export github-workflow`: the learner's notebook checked by its own
# checks (against autograd, in the learner's kernel), one point per check. No solutions here: the
# learner can edit this file, so it is a self-check, not a sealed grade.
name: Autograding Tests
"on":
  - push
  - workflow_dispatch
  - repository_dispatch
permissions:
  checks: write
  actions: read
  contents: read
jobs:
  run-autograding-tests:
    runs-on: ubuntu-24.04
    if: github.actor != 'github-classroom[bot]'
    timeout-minutes: {minutes}
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - name: Install the workbook
        run: |
          python -m pip install --upgrade pip
          python -m pip install torch --index-url https://download.pytorch.org/whl/cpu
          python -m pip install "{install}[grade]" nbclient
      - name: Check the notebook
        id: selfcheck
        run: python -m checks.export github-selfcheck "{notebook}" --checks "{checks}"
      - name: Autograding Reporter
        uses: classroom-resources/autograding-grading-reporter@v1
        env:
          SELFCHECK_RESULTS: "${{{{steps.selfcheck.outputs.result}}}}"
        with:
          runners: selfcheck
"""


def check_keys(calls: list[list]) -> list[str]:
    """The names of the checks a run made (``run_checks``), a name run again as ``name#2``..."""
    seen: collections.Counter = collections.Counter()
    keys = []
    for name, *_ in calls:
        seen[name] += 1
        keys.append(name + (f"#{seen[name]}" if seen[name] > 1 else ""))
    return keys


def github_workflow(
    notebook: Path, install: str, checks: list[str] | None = None, minutes: int = 30
) -> str:
    """The Classroom workflow of one notebook (a student copy): its checks (as its code names
    them, or as given), one point each, from one run of the notebook on ubuntu-24.04 with Python
    from actions/setup-python."""
    checks = notebook_checks(notebook) if checks is None else checks
    if not checks:
        raise ScoresError(f"{notebook}: no check (cmp, check_value, check_numeric) found")
    bad = [c for c in checks if "," in c or '"' in c or "$" in c]
    if bad or any(c in install for c in '"$\n'):
        raise ScoresError(f"a check name or install source that cannot go on a command line: {bad}")
    return WORKFLOW.format(
        minutes=minutes, install=install, notebook=notebook.name, checks=",".join(checks)
    )


# ---------------------------------------------------------------- the command line


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="backprop-workbook export", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("canvas", help="a Canvas gradebook CSV from a grader's out folder")
    c.add_argument("out", type=Path)
    c.add_argument(
        "--roster",
        type=Path,
        required=True,
        help="submission, student, id, sis_user_id, section (and sis_login_id)",
    )
    c.add_argument(
        "--assignment",
        action="append",
        default=[],
        metavar="NOTEBOOK=TITLE",
        help='the Canvas column of a notebook, e.g. 03-makemore-backprop="Backprop (1234)"',
    )
    c.add_argument("--to", type=Path, help="default OUT/canvas.csv")
    g = sub.add_parser("gradescope-package", help="the autograder zip to upload to Gradescope")
    g.add_argument("--to", type=Path, default=Path("autograder.zip"))
    g.add_argument("--solutions", type=Path, default=SOLUTIONS)
    g.add_argument(
        "--notebook", action="append", default=[], help="the notebooks it grades (default all)"
    )
    g.add_argument("--seed", type=int)
    g.add_argument("--batch", type=int)
    g.add_argument("--steps", type=int, default=2000)
    g.add_argument("--wheel", type=Path, help="the workbook's wheel (default: built from here)")
    g.add_argument(
        "--overrides", type=Path, help="an overrides.csv whose learner is an e-mail or student ID"
    )
    r = sub.add_parser(
        "gradescope-run", help="grade /autograder/submission (run_autograder calls it)"
    )
    r.add_argument("--root", type=Path, default=Path("/autograder"))
    w = sub.add_parser("github-workflow", help="a GitHub Classroom workflow for one notebook")
    w.add_argument("notebook", type=Path, help="the student copy the assignment repository holds")
    w.add_argument(
        "--install", required=True, help="what pip installs there: a wheel's URL or path, git+URL"
    )
    w.add_argument("--to", type=Path, help="default: print it")
    w.add_argument(
        "--static",
        action="store_true",
        help="list the checks as the notebook's code names them, without running the solution "
        "(misses the checks made in loops)",
    )
    w.add_argument("--solutions", type=Path, default=SOLUTIONS, help="whose run lists the checks")
    s = sub.add_parser("github-selfcheck", help="run a notebook's own checks (the workflow's step)")
    s.add_argument("notebook", type=Path)
    s.add_argument("--checks", required=True, help="the checks, comma-separated, one point each")
    s.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    return p


def _canvas(a: argparse.Namespace) -> int:
    names = dict(x.split("=", 1) for x in a.assignment)
    scores, warnings, roster = class_scores(a.out, a.roster)
    text, left = canvas_csv(scores, roster, names)
    to = a.to or a.out / "canvas.csv"
    to.write_text(text, encoding="utf-8")
    for line in warnings + left:
        print(f"warning: {line}", file=sys.stderr)
    print(f"wrote {to}: {len(learners(roster)[0])} learners")
    return 0


def _gradescope(a: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        wheel = a.wheel or build_wheel(Path(tmp))
        to = gradescope_package(
            a.to, wheel, a.solutions, a.notebook, a.seed, a.batch, a.steps, a.overrides
        )
    print(
        f"wrote {to} (with {wheel.name}): upload it as the assignment's autograder "
        "(Gradescope: Configure Autograder)"
    )
    return 0


def _workflow(a: argparse.Namespace) -> int:
    checks = None  # as the code names them
    if not a.static:  # as a run of the solution makes them: loops included
        solution = a.solutions / a.notebook.name
        if not solution.is_file():
            raise ScoresError(f"no solution {solution} to list the checks by (or --static)")
        checks = check_keys(run_checks(solution))
    text = github_workflow(a.notebook, a.install, checks)
    if a.to:
        a.to.parent.mkdir(parents=True, exist_ok=True)
        a.to.write_text(text)
        print(f"wrote {a.to}")
    else:
        print(text, end="")
    return 0


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    try:
        if a.command == "canvas":
            return _canvas(a)
        if a.command == "gradescope-package":
            return _gradescope(a)
        if a.command == "github-workflow":
            return _workflow(a)
        if a.command == "github-selfcheck":
            github_selfcheck(a.notebook, [c for c in a.checks.split(",") if c], a.timeout)
            return 0
        return gradescope_run(a.root)
    except ScoresError as why:
        print(why, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
