"""Grade learners' notebooks against the instructor's solutions.

    python -m checks.grade SUBMISSION... --out DIR
        # each SUBMISSION a notebook or a folder of one learner's notebooks
    python -m checks.grade --self notebooks/03-makemore-backprop.ipynb
        # a learner's own score, before submitting

For every notebook the grader first runs the instructor's solution (the reference run) and keeps,
before each answer cell, the notebook's state (its tensors and numbers) and, after it, the expected
values. A learner's run is then a grading notebook of the instructor's cells with the learner's
answer cells in place of the solutions; before each answer cell a grader cell hands in the reference
state (so that every answer is judged given correct upstream values: no cascade), after it a grader
cell sends the answers out as cell output, which the test runner (pytest with nbval,
``--nbval-lax``, and the plugin ``checks.grading.plugin``) keeps outside the kernel. The kernel
never holds solution code, nor an expected value before its answer has been recorded. It runs in a
sandbox (``checks.grading.sandbox``: bubblewrap on Linux) with a seed and batch size drawn for the
run, per-cell and per-notebook timeouts and a memory limit. The recorded values are judged in the
grader's process with ``checks``' own comparison.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from checks.grading.grader import (
    draw_numbers,
    grade,
    is_exercise,
    no_solutions,
    self_check,
    self_check_cache,
)
from checks.grading.rows import Row
from checks.grading.sandbox import isolation
from checks.grading.settings import NOTEBOOK_TIMEOUT, Settings, SetupError
from checks.paths import SOLUTIONS
from checks.words import REVIEW


def main(argv: list[str] | None = None) -> int:
    p = _parser()
    a = p.parse_args(argv)
    if a.out is None and not a.self_check:
        p.error("--out DIR is needed (or --self)")
    refused = _refused(a)
    if refused is not None:
        return refused
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
            a.submissions,
            a.out,
            settings,
            a.solutions,
            executor=a.executor,
            scheduler=a.scheduler,
            handout=a.handout,
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
    _summary(rows, a.out)
    return 0


def _parser() -> argparse.ArgumentParser:
    """The command line: the submissions and what to do with them, then the run's settings."""
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
        "--handout",
        type=Path,
        action="append",
        help="the folder of `backprop-workbook variants`: each learner graded against their own "
        "variant of its notebook (the submission's folder name is the learner's id); once per "
        "notebook handed out",
    )
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
    _add_run_options(p)
    _add_executor_options(p)
    p.add_argument(
        "--strict-shapes",
        action="store_true",
        help="fail an answer that lacks a leading size-1 axis (default: a pass with a note)",
    )
    return p


def _add_run_options(p: argparse.ArgumentParser) -> None:
    """The notebooks' numbers (seed, batch size, steps) and the limits of a run."""
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


def _add_executor_options(p: argparse.ArgumentParser) -> None:
    """Where learner code runs (the sandbox) and where the grading runs (this machine, dask)."""
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


def _refused(a: argparse.Namespace) -> int | None:
    """Exit status 2, said why, for what cannot run (before anything is drawn, run or written):
    dask missing, no solutions, a self-check of no exercise, a sandbox that does not work."""
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
    return None


def _summary(rows: list[Row], out: Path) -> None:
    """The last lines of a grading run: how many checks pass, and how many rows wait for
    review."""
    print(f"{sum(r.passed for r in rows)} / {len(rows)} checks pass; wrote {out / 'grades.csv'}")
    waiting = [r for r in rows if r.mistake == REVIEW]
    if waiting:
        print(
            f"{len(waiting)} rows of {len({r.submission for r in waiting})} learners wait for "
            f"review: see {out / 'report.md'} (For review)"
        )


if __name__ == "__main__":
    sys.exit(main())
