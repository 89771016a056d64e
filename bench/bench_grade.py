"""Grading throughput: the grader against a baseline commit's, side by side from one run, and
where one submission's time goes.

    python bench/bench_grade.py [--n 6] [--steps 50] [--baseline COMMIT] [--no-dask]

Makes N complete submissions of notebook 03 (copies of the solution notebook: every answer right)
and grades them with this checkout's grader and with the grader of the baseline commit (by default
the one issue 15 was measured against), each with one job and with as many jobs as there are
cores, and with this grader's dask executor. The baseline is ``git archive``d into a temporary
folder and run by a Python that imports its ``checks`` (a venv over this one's packages with a
``.pth`` file); both graders run through ``bench/grade_run.py``, after a reference run of their
own that is not timed. Prints wall time, submissions per minute and per minute per core for each,
with the ratios; then one submission run alone, its time cut by cell kind (from the test runner's
per-cell times) and the rest (Python, pytest and the kernel's start; judging). Nothing is asserted
but that every answer passes. Needs git and a clone with the baseline commit in its history.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from checks.data import DATA_DIR, load_names
from checks.grading.assemble import assemble
from checks.grading.exercise import learner_cells
from checks.grading.grader import Grader
from checks.grading.judge import judge_values
from checks.grading.review import source_reviews
from checks.grading.run import run_notebook
from checks.grading.sandbox import isolation
from checks.grading.settings import Settings
from checks.paths import SOLUTIONS

NOTEBOOK = "03-makemore-backprop.ipynb"


def kind_of(source: str, concern: str, first: bool) -> str:
    """What a cell of a grading notebook does, for the breakdown."""
    if first:
        return "first cell: the kernel's imports (torch)"
    if "__gr.restore" in source:
        return "grader: hand in the reference state"
    if "__gr.record" in source:
        return "grader: record the answers"
    if concern not in ("", "grader"):
        return "the learner's answer cells"
    if "load_names" in source or "split_dataset" in source:
        return "instructor: data"
    return "instructor: other cells" if concern == "" else "grader: other cells"


def breakdown(grader: Grader, sub: Path, settings: Settings, work: Path) -> None:
    ex = grader.exercises[NOTEBOOK]
    learner = learner_cells(ex, sub)
    plan = assemble(ex, learner, grader.reference(ex))
    t0 = time.monotonic()
    run = run_notebook(plan, work, settings, grader.hidden)
    t1 = time.monotonic()
    sources = {c: learner.get(a.index) or "" for a in ex.answers for c in a.checks}
    judge_values(
        ex, grader.reference(ex), run, plan.concerns, settings, sources, source_reviews(ex, learner)
    )
    judged = time.monotonic() - t1
    parts: dict[str, float] = collections.Counter()
    first = min(run.cell_seconds, default=None)
    for k, s in run.cell_seconds.items():
        parts[kind_of(plan.nb.cells[k].source, plan.concerns[k], k == first)] += s
    parts["outside the cells: Python, pytest, nbval, the kernel's start"] = (t1 - t0) - sum(
        run.cell_seconds.values()
    )
    parts["judging (in the grader)"] = judged
    total = (t1 - t0) + judged
    print(f"\none submission alone (sandbox: {isolation(settings.sandbox)}): {total:.2f} s")
    for name, s in sorted(parts.items(), key=lambda x: -x[1]):
        print(f"  {name:<62} {s:6.2f} s  {100 * s / total:5.1f}%")


BASELINE = "4728f04"  # the grader as it was when issue 15 measured "today's" throughput
ROOT = Path(__file__).resolve().parent.parent


def baseline_python(commit: str, folder: Path) -> Path:
    """A Python that imports ``checks`` from ``commit``: the commit's files, and a venv over this
    Python's packages whose ``.pth`` puts them first on its path. Data comes from this checkout."""
    src = folder / "src"
    src.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    (src / "data").mkdir(exist_ok=True)
    load_names()  # fetched and verified, if it is not here yet
    shutil.copyfile(DATA_DIR / "names.txt", src / "data" / "names.txt")
    venv = folder / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True,
    )
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "baseline.pth").write_text(str(src) + "\n")
    where = subprocess.run(
        [str(python), "-c", "import checks; print(checks.__file__)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(src), where
    return python


def timed(
    python: Path, out: Path, cache: Path, subs: list[Path], steps: int, jobs: int, executor: str
) -> dict:
    """One grading run by ``bench/grade_run.py`` under ``python``; its JSON line."""
    env = {k: v for k, v in os.environ.items() if k not in ("WORKBOOK_DATA_DIR", "PYTHONPATH")}
    cmd = [
        str(python),
        str(ROOT / "bench" / "grade_run.py"),
        str(out),
        str(cache),
        *map(str, subs),
        f"--steps={steps}",
        f"--jobs={jobs}",
        f"--executor={executor}",
    ]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, cwd=out.parent)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=6)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument(
        "--baseline", default=BASELINE, help="the commit whose grader is today's method"
    )
    ap.add_argument("--no-dask", action="store_true", help="skip the dask executor")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    head = (
        subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        or "?"
    )
    print(f"date:    {datetime.datetime.now().isoformat(timespec='seconds')}")
    print(f"machine: {platform.platform()} ({platform.machine()}, {cores} CPUs)")
    print(
        f"python {platform.python_version()}, torch {torch.__version__}, notebook {NOTEBOOK}, "
        f"{args.n} submissions, {args.steps} steps; this grader: {head} (and its changes), "
        f"baseline: {args.baseline}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subs = []
        for i in range(args.n):
            d = tmp / "subs" / f"learner-{i:02d}"
            d.mkdir(parents=True)
            shutil.copyfile(SOLUTIONS / NOTEBOOK, d / NOTEBOOK)
            subs.append(d)
        pythons = {
            "baseline": baseline_python(args.baseline, tmp / "baseline"),
            "this": Path(sys.executable),
        }
        configs = [
            ("baseline", "local", 1),
            ("this", "local", 1),
            ("baseline", "local", cores),
            ("this", "local", cores),
        ]
        if not args.no_dask and importlib.util.find_spec("distributed"):
            configs.append(("this", "dask", cores))
        print(
            f"\n{'grader':>8} {'executor':>8} {'jobs':>4}  {'wall s':>7}  "
            f"{'submissions/min':>15}  {'per core':>8}  {'vs baseline, same jobs':>22}"
        )
        per_core = {}
        for who, executor, jobs in configs:
            out = tmp / f"out-{who}-{executor}-{jobs}"
            res = timed(
                pythons[who], out, tmp / f"reference-{who}", subs, args.steps, jobs, executor
            )
            assert res["failed"] == 0 and res["passed"] > 0, (who, executor, jobs, res)
            rate = 60 * args.n / res["wall"]
            per_core[(who, executor, jobs)] = rate / jobs
            base = per_core.get(("baseline", "local", jobs))
            ratio = f"{per_core[(who, executor, jobs)] / base:.2f}x" if base else "-"
            print(
                f"{who:>8} {executor:>8} {jobs:>4}  {res['wall']:>7.1f}  "
                f"{rate:>15.2f}  {rate / jobs:>8.2f}  {ratio:>22}"
            )
        grader = Grader(tmp / "ref", Settings(steps=args.steps), cache=tmp / "reference-this")
        breakdown(
            grader,
            subs[0] / NOTEBOOK,
            Settings(steps=args.steps, jobs=1, sandbox=grader.settings.sandbox),
            tmp / "alone",
        )


if __name__ == "__main__":
    main()
