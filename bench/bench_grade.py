"""Grading throughput: submissions per minute per configuration, side by side from one run, and
where one submission's time goes.

    python bench/bench_grade.py [--n 6] [--steps 50] [--no-dask]

Makes N complete submissions of notebook 03 (copies of the solution notebook: every answer right),
runs the reference once, then grades the N submissions with the local executor (--jobs 1 and
--jobs = the number of cores) and with the dask executor on a LocalCluster of as many workers.
Prints wall time, submissions per minute and per minute per core for each, with the ratios; then
one submission run alone, its time cut by cell kind (from the test runner's per-cell times) and the
rest (Python, pytest and the kernel's start; judging). Nothing is asserted but that every answer
passes.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import importlib.util
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

import torch

from checks.grade import Grader, Settings, assemble, grade, isolation, judge_values, learner_cells, run_notebook, source_reviews
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
    judge_values(ex, grader.reference(ex), run, plan.concerns, settings, sources, source_reviews(ex, learner))
    judged = time.monotonic() - t1
    parts: dict[str, float] = collections.Counter()
    first = min(run.cell_seconds, default=None)
    for k, s in run.cell_seconds.items():
        parts[kind_of(plan.nb.cells[k].source, plan.concerns[k], k == first)] += s
    parts["outside the cells: Python, pytest, nbval, the kernel's start"] = (t1 - t0) - sum(run.cell_seconds.values())
    parts["judging (in the grader)"] = judged
    total = (t1 - t0) + judged
    print(f"\none submission alone (sandbox: {isolation(settings.sandbox)}): {total:.2f} s")
    for name, s in sorted(parts.items(), key=lambda x: -x[1]):
        print(f"  {name:<62} {s:6.2f} s  {100 * s / total:5.1f}%")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=6)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--no-dask", action="store_true", help="skip the dask executor")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    print(f"date:    {datetime.datetime.now().isoformat(timespec='seconds')}")
    print(f"machine: {platform.platform()} ({platform.machine()}, {cores} CPUs)")
    print(f"python {platform.python_version()}, torch {torch.__version__}, notebook {NOTEBOOK}, {args.n} submissions")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subs = []
        for i in range(args.n):
            d = tmp / "subs" / f"learner-{i:02d}"
            d.mkdir(parents=True)
            shutil.copyfile(SOLUTIONS / NOTEBOOK, d / NOTEBOOK)
            subs.append(d)
        base = Settings(steps=args.steps)
        cache = tmp / "reference"
        started = time.monotonic()
        grader = Grader(tmp / "ref", base, cache=cache)
        grader.reference(grader.exercises[NOTEBOOK])
        print(f"reference run: {time.monotonic() - started:.1f} s (once per class, not counted below)\n")
        configs = [("local", 1), ("local", cores)]
        if not args.no_dask and importlib.util.find_spec("distributed"):
            configs.append(("dask", cores))
        print(f"{'executor':>8} {'jobs':>4}  {'wall s':>7}  {'submissions/min':>15}  {'per core':>8}  {'vs local, 1 job':>15}")
        per_core = {}
        for executor, jobs in configs:
            out = tmp / f"out-{executor}-{jobs}"
            t0 = time.monotonic()
            rows = grade(subs, out, Settings(steps=args.steps, jobs=jobs), progress=lambda s: None, cache=cache,
                         executor=executor)
            wall = time.monotonic() - t0
            assert all(r["passed"] == "true" for r in rows), [r for r in rows if r["passed"] != "true"][:3]
            rate = 60 * args.n / wall
            per_core[(executor, jobs)] = rate / jobs
            ratio = per_core[(executor, jobs)] / per_core[("local", 1)]
            print(f"{executor:>8} {jobs:>4}  {wall:>7.1f}  {rate:>15.2f}  {rate / jobs:>8.2f}  {ratio:>14.2f}x")
        breakdown(grader, subs[0] / NOTEBOOK, Settings(steps=args.steps, jobs=1, sandbox=grader.settings.sandbox),
                  tmp / "alone")


if __name__ == "__main__":
    main()
