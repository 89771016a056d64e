"""Fixtures the test files share: a class graded as an instructor grades it."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from checks.grading.grader import grade
from checks.grading.settings import Settings
from checks.paths import SOLUTIONS


@dataclass
class Graded:
    """One grading run: its out folder, every row of grades.csv, and what the grader printed."""

    out: Path
    rows: list[dict]
    log: list[str]

    def of(self, submission: str) -> dict[str, dict]:
        """``submission``'s rows by check."""
        return {r["check"]: r for r in self.rows if r["submission"] == submission}


@pytest.fixture(scope="session")
def grade_class(tmp_path_factory) -> Callable[..., Graded]:
    """``grade_class(learners, settings, notebook=NAME, **options)`` grades a class into a fresh out
    folder. ``learners`` is either submission paths, or {who: notebook} written as ``who/NAME``
    and graded against that exercise's solution alone; ``options`` go to ``checks.grade.grade``."""

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
        return Graded(
            out, grade(list(learners), out, settings, progress=log.append, **options), log
        )

    return graded
