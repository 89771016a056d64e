"""Scores out to an LMS: a Canvas gradebook CSV and a Gradescope autograder.

    python -m checks.export canvas OUT --roster roster.csv
        [--assignment 03-makemore-backprop="Backprop (1234)"]
    python -m checks.export gradescope-package --to autograder.zip
        [--notebook 03-makemore-backprop] [--solutions DIR]
    python -m checks.export gradescope-run [--root /autograder]
        # what the package's run_autograder calls

The Canvas file has the columns Canvas imports (Student, ID, SIS User ID, Section, then one column
per notebook with its points, one point per check, the instructor's overrides applied) and a Points
Possible row. The Gradescope package holds ``setup.sh``, ``run_autograder``, the solutions and the
grading settings; ``run_autograder`` grades ``/autograder/submission`` and writes
``/autograder/results/results.json``: one test per check with its score, max_score and the hint.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import io
import json
import random
import subprocess
import sys
import tempfile
import time
import zipfile
from importlib.metadata import version
from pathlib import Path

from checks.paths import CHECKOUT, SOLUTIONS
from checks.scores import Score, ScoresError, Student, class_scores, fmt_points, totals

CANVAS_FIELDS = ["Student", "ID", "SIS User ID", "Section"]


def canvas_csv(
    scores: list[Score], roster: dict[str, Student], names: dict[str, str] | None = None
) -> tuple[str, list[str]]:
    """The gradebook CSV (one row per learner of the roster) and warnings for what it leaves out."""
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
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CANVAS_FIELDS + columns)
    w.writerow(["Points Possible", "", "", ""] + [fmt_points(most[nb]) for nb in notebooks])
    warnings = [
        f"{s}: graded, but not in the roster (left out)"
        for s in sorted({s.submission for s in scores})
        if s not in roster
    ]
    for sub, who in roster.items():
        row = [who.student, who.id, who.sis_user_id, who.section]
        for nb in notebooks:
            got = sums.get((sub, nb))
            row.append("" if got is None else fmt_points(got[0]))
            if got is None:
                warnings.append(f"{sub} ({who.student}): no {nb} graded (its cell is left empty)")
        w.writerow(row)
    return buf.getvalue(), warnings


def gradescope_results(scores: list[Score], seconds: float | None = None) -> dict:
    """Gradescope's results.json for one submission: a test per check, the hint as its output."""
    tests = []
    for s in scores:
        name = f"{s.notebook.removesuffix('.ipynb')} · {s.check}"
        words = s.mistake or ("pass" if s.passed else "error")
        said = s.feedback if not s.passed else s.note
        tests.append(
            {
                "name": name,
                "score": s.points,
                "max_score": s.max_points,
                "status": "passed" if s.points >= s.max_points else "failed",
                "output": f"{words}: {said}" if said else words,
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
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-pip python3-venv \
bubblewrap >/dev/null
python3 -m venv /opt/workbook
# the CPU build of torch first: a plain install would pull a CUDA build of several GB
/opt/workbook/bin/pip install -q torch --index-url https://download.pytorch.org/whl/cpu
/opt/workbook/bin/pip install -q {requirement}
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for each submission: grade /autograder/submission into results/results.json.
root="${AUTOGRADER_ROOT:-/autograder}"
python="${WORKBOOK_PYTHON:-/opt/workbook/bin/python}"
exec "$python" -m checks.export gradescope-run --root "$root"
"""


def gradescope_package(
    to: Path,
    solutions: Path = SOLUTIONS,
    notebooks: list[str] | None = None,
    seed: int | None = None,
    batch: int | None = None,
    steps: int = 2000,
    wheel: Path | None = None,
) -> Path:
    """Write the autograder zip: setup.sh, run_autograder, settings.json, the solutions, and the
    workbook's wheel when one is given (else setup.sh installs this version from the index)."""
    chosen = sorted(
        p
        for p in solutions.glob("*.ipynb")
        if not notebooks or p.stem in notebooks or p.name in notebooks
    )
    if not chosen:
        raise ScoresError(f"no notebook of {notebooks} in {solutions}")
    draw = random.SystemRandom()
    settings = {
        "seed": seed or draw.randrange(1, 2**31 - 1),
        "batch": batch or draw.randrange(16, 49),
        "steps": steps,
    }
    requirement = (
        f"/autograder/source/{wheel.name}[grade]"
        if wheel
        else f"'backprop-workbook[grade]=={version('backprop-workbook')}'"
    )
    to.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(to, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in [
            ("setup.sh", SETUP_SH.format(requirement=requirement)),
            ("run_autograder", RUN_AUTOGRADER),
        ]:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = 0o755 << 16
            z.writestr(info, text)
        z.writestr("settings.json", json.dumps(settings, indent=1) + "\n")
        for p in chosen:
            z.write(p, f"solutions/{p.name}")
        if wheel:
            z.write(wheel, wheel.name)
    return to


def gradescope_run(root: Path) -> int:
    """Grade ``root/submission`` as the package's settings say; write
    ``root/results/results.json``."""
    from checks.grade import Settings, grade

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
            scores, _, _ = class_scores(out)
            report = gradescope_results(scores, time.monotonic() - started)
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
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(into), str(CHECKOUT)],
        check=True,
        capture_output=True,
    )
    return next(into.glob("backprop_workbook-*.whl"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m checks.export", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("canvas", help="a Canvas gradebook CSV from a grader's out folder")
    c.add_argument("out", type=Path)
    c.add_argument(
        "--roster", type=Path, required=True, help="submission, student, id, sis_user_id, section"
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
    g.add_argument(
        "--no-wheel",
        action="store_true",
        help="install from the package index, not a bundled wheel",
    )
    r = sub.add_parser(
        "gradescope-run", help="grade /autograder/submission (run_autograder calls it)"
    )
    r.add_argument("--root", type=Path, default=Path("/autograder"))
    a = p.parse_args(argv)
    try:
        if a.command == "canvas":
            names = dict(x.split("=", 1) for x in a.assignment)
            scores, warnings, roster = class_scores(a.out, a.roster)
            text, left = canvas_csv(scores, roster, names)
            to = a.to or a.out / "canvas.csv"
            to.write_text(text)
            for line in warnings + left:
                print(line, file=sys.stderr)
            print(f"wrote {to}: {len(roster)} learners")
            return 0
        if a.command == "gradescope-package":
            bundle = (
                not a.no_wheel
                and CHECKOUT is not None
                and importlib.util.find_spec("build") is not None
            )
            if not a.no_wheel and not bundle:
                print(
                    "no wheel bundled (it is built from a checkout with the build package): "
                    "setup.sh installs this version from the package index",
                    file=sys.stderr,
                )
            with tempfile.TemporaryDirectory() as tmp:
                wheel = build_wheel(Path(tmp)) if bundle else None
                to = gradescope_package(
                    a.to, a.solutions, a.notebook, a.seed, a.batch, a.steps, wheel
                )
            print(
                f"wrote {to}: upload it as the assignment's autograder "
                "(Gradescope: Configure Autograder)"
            )
            return 0
        return gradescope_run(a.root)
    except ScoresError as why:
        print(why, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
