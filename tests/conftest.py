"""Fixtures the test files share: a class graded as an instructor grades it."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from checks.grading.grader import grade
from checks.grading.settings import Settings
from checks.paths import SOLUTIONS


@dataclass
class Graded:
    """One grading run: its out folder, every row of grades.csv, what the grader printed, and the
    folder of its reference values."""

    out: Path
    rows: list[dict]
    log: list[str]
    cache: Path

    def of(self, submission: str) -> dict[str, dict]:
        """``submission``'s rows by check."""
        return {r.check: r for r in self.rows if r.submission == submission}


@pytest.fixture(autouse=True)
def _no_variant_in_the_process() -> Iterator[None]:
    """Each test ends as a fresh kernel starts, with no variant's checks, maths or hint ladders:
    a variant's notebook run in the test's process (``tests.inprocess``) makes them its notebook's,
    and a later test in that process read them as the lecture's (its checks, or the notebook it
    took to be open for ``hint()``)."""
    yield
    session, hints = sys.modules.get("checks.session"), sys.modules.get("checks.hints")
    for kept in (
        session and session._OWN_CHECKS,
        session and session._OTHER_MATHS,
        hints and hints._OWN,
    ):
        if kept:
            kept.clear()


@pytest.fixture(scope="session")
def reference_cache(tmp_path_factory) -> Path:
    """One folder of reference values and calibrations for the whole session, every xdist worker
    included: a solution is run once per settings, whichever test file needs it first (the grader
    makes the others wait for it, ``checks.grading.grader.one_at_a_time``)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "reference"


@pytest.fixture(scope="session")
def grade_class(tmp_path_factory, reference_cache) -> Callable[..., Graded]:
    """``grade_class(learners, settings, notebook=NAME, **options)`` grades a class into a fresh out
    folder, its reference values shared by the session (unless ``cache=`` says otherwise).
    ``learners`` is either submission paths, or {who: notebook} written as ``who/NAME`` and graded
    against that exercise's solution alone; ``options`` go to ``checks.grade.grade``."""

    def graded(
        learners: list[Path] | dict[str, nbformat.NotebookNode],
        settings: Settings,
        notebook: str | None = None,
        **options,
    ) -> Graded:
        if isinstance(learners, dict):
            root = tmp_path_factory.mktemp("submissions")
            for who, nb in learners.items():
                (root / who).mkdir()
                nbformat.write(nb, root / who / notebook)
            learners = sorted(root.iterdir())
            if "solutions" not in options:
                options["solutions"] = tmp_path_factory.mktemp("solutions")
                shutil.copy(SOLUTIONS / notebook, options["solutions"] / notebook)
        log: list[str] = []
        out = tmp_path_factory.mktemp("grades")
        options.setdefault("cache", reference_cache)
        rows = grade(list(learners), out, settings, progress=log.append, **options)
        return Graded(out, rows, log, options["cache"])

    return graded
