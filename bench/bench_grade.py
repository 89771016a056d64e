"""Grading throughput: submissions per minute with one worker and with every core, from one run.

    python bench/bench_grade.py [--n 4] [--steps 50]

Makes N complete submissions of the makemore notebook (the student copy filled in with the test answers), runs the
reference once, then grades the N submissions with --jobs 1 and with --jobs = the number of cores. Prints the
wall time per configuration and the ratio. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402
import torch  # noqa: E402

from checks.grade import Grader, Settings, grade  # noqa: E402
from tests.test_notebooks import ANSWERS, fill  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--steps", type=int, default=50)
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    print(f"date:    {datetime.datetime.now().isoformat(timespec='seconds')}")
    print(f"machine: {platform.platform()} ({platform.machine()}, {cores} CPUs)")
    print(f"python {platform.python_version()}, torch {torch.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        nb = fill(nbformat.read(ROOT / "notebooks" / "03-makemore-backprop.ipynb", as_version=4), ANSWERS)
        subs = []
        for i in range(args.n):
            d = tmp / "subs" / f"learner-{i:02d}"
            d.mkdir(parents=True)
            nbformat.write(nb, d / "03-makemore-backprop.ipynb")
            subs.append(d)
        ref_out = tmp / "ref"
        started = time.monotonic()
        grader = Grader(ref_out, Settings(steps=args.steps))
        for ex in grader.exercises.values():
            grader.reference(ex)
        ref_s = time.monotonic() - started
        print(f"reference runs of {len(grader.exercises)} notebooks: {ref_s:.1f} s (once per grading run, not counted below)")
        print()
        print(f"{'jobs':>4}  {'submissions':>11}  {'wall s':>7}  {'s/submission':>12}  {'submissions/min':>15}")
        results = {}
        for jobs in sorted({1, cores}):
            out = tmp / f"out-{jobs}"
            shutil.copytree(ref_out / ".reference", out / ".reference")
            t0 = time.monotonic()
            rows = grade(subs, out, Settings(steps=args.steps, jobs=jobs), progress=lambda s: None)
            wall = time.monotonic() - t0
            assert all(r["passed"] == "true" for r in rows), "a complete submission must pass"
            results[jobs] = wall
            print(f"{jobs:>4}  {args.n:>11}  {wall:>7.1f}  {wall / args.n:>12.1f}  {60 * args.n / wall:>15.2f}")
        if len(results) > 1:
            print(f"\nspeed-up with {cores} jobs: {results[1] / results[cores]:.2f}x")


if __name__ == "__main__":
    main()
