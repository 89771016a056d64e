"""One timed grading run, with whichever ``checks`` package this Python imports.

    python bench/grade_run.py OUT CACHE SUBMISSION... [--steps 50] [--jobs 1] [--executor local]

``bench_grade.py`` runs it with this checkout's Python and with a Python whose ``checks`` is an
earlier commit's (the baseline), so that the two graders meet the same submissions on the same
machine in one benchmark. It first fills the reference cache (a grading run of the first
submission into a scratch folder, not timed), then grades every submission into OUT and prints
one line of JSON: the wall time of ``grade(...)``, the number of submissions, and how many rows
passed and failed. It only uses what both graders have: ``grade``, ``Settings``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from checks.grading.grader import grade
from checks.grading.settings import Settings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("cache", type=Path)
    ap.add_argument("submissions", type=Path, nargs="+")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--executor", default="local")
    a = ap.parse_args()
    settings = Settings(steps=a.steps, jobs=a.jobs)
    # the baseline knows no executors
    extra = {} if a.executor == "local" else {"executor": a.executor}
    with tempfile.TemporaryDirectory() as warm:
        grade(a.submissions[:1], Path(warm), settings, progress=lambda s: None, cache=a.cache)
    started = time.monotonic()
    rows = grade(a.submissions, a.out, settings, progress=lambda s: None, cache=a.cache, **extra)
    wall = time.monotonic() - started
    passed = sum(_passed(r) for r in rows)
    print(
        json.dumps(
            {
                "wall": wall,
                "submissions": len(a.submissions),
                "passed": passed,
                "failed": len(rows) - passed,
            }
        )
    )


def _passed(row: object) -> bool:
    """Whether a row passed: a ``Row``'s ``passed``, or an earlier grader's string column."""
    return row["passed"] == "true" if isinstance(row, dict) else bool(row.passed)


if __name__ == "__main__":
    main()
