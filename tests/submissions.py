"""Submissions of notebook 03 built from the student copy: filled in with independent answers
(``tests.notebooks.ANSWERS``) or the lecture's own lines, with code put before a cell."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat

from checks.authoring.student import ROOT
from checks.authoring.variants import build
from checks.grading.settings import Settings
from checks.variants import Variant
from tests.lecture_answers import LECTURE
from tests.notebooks import ANSWERS, STUB, fill

STUDENT = ROOT / "notebooks" / "03-makemore-backprop.ipynb"
NAME = STUDENT.name
# the settings of the class fixtures (tests.conftest.grade_class) that grade notebooks 01-03, one
# for all, so that they share one reference run and one calibration per solution. cell_timeout:
# room for the solutions' slowest cell (notebook 01's training) with another test on each CPU
# (pytest -n auto); an infinite loop costs one job slot that long
CLASS = Settings(steps=20, cell_timeout=45, notebook_timeout=300, jobs=2)


def options(s: Settings) -> list[str]:
    """The command line's options for ``s`` (all but ``jobs``: what its reference values and its
    calibrations are kept by)."""
    named = {"seed": s.seed, "batch": s.batch, "steps": s.steps, "cell-timeout": s.cell_timeout}
    named.update({"notebook-timeout": s.notebook_timeout, "memory-mb": s.memory_mb})
    return [x for k, v in named.items() for x in (f"--{k}", str(v))] + ["--sandbox", s.sandbox]


def keep_references(cache: Path, folder: Path, *stems: str) -> None:
    """Copy the reference values and calibrations of the notebooks ``stems``
    (``02-tensor-backprop``) from ``cache`` into ``folder``: a run there with the same settings
    makes neither again."""
    folder.mkdir(parents=True, exist_ok=True)
    for stem in stems:
        for kept in [*cache.glob(f"{stem}-*.pt"), *cache.glob(f"{stem}-*.calibrated")]:
            shutil.copy(kept, folder / kept.name)


def filled(**override) -> nbformat.NotebookNode:
    """The student copy filled in with ``ANSWERS``, some of them replaced (name -> lines)."""
    answers = {k: list(v) for k, v in ANSWERS.items()}
    answers.update(override)
    return fill(nbformat.read(STUDENT, as_version=4), answers)


def cell_with(nb, text):
    return next(c for c in nb.cells if c.cell_type == "code" and text in c.source)


def prepend(nb, check_line, code):
    cell = cell_with(nb, check_line)
    cell.source = code + "\n" + cell.source
    return nb


def student_copy() -> nbformat.NotebookNode:
    """Notebook 03 as handed out."""
    return nbformat.read(STUDENT, as_version=4)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def substitute(nb: nbformat.NotebookNode, lecture: dict[str, list[str]]) -> nbformat.NotebookNode:
    """Replace each cell's block of `X = ...  # TODO` lines by ``lecture[cell id]``, unchanged."""
    used = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        lines = cell.source.split("\n")
        stubs = [i for i, line in enumerate(lines) if STUB.fullmatch(line)]
        if not stubs:
            assert cell.id not in lecture, f"cell {cell.id} has no placeholders"
            continue
        assert cell.id in lecture, f"no lecture lines for cell {cell.id}: {cell.source[:80]!r}"
        first, last = stubs[0], stubs[-1]
        assert stubs == list(range(first, last + 1)), f"cell {cell.id}: placeholders not one block"
        indent = _indent(lines[first])
        answer = lecture[cell.id]
        assert min((_indent(x) for x in answer if x.strip()), key=len) == indent, cell.id
        for name in (STUB.fullmatch(lines[i]).group(2) for i in stubs):
            assigned = any(re.match(rf"\s*{name} = ", x) for x in answer)
            assert assigned, f"cell {cell.id}: the lecture's lines do not assign {name}"
        lines[first : last + 1] = answer
        cell.source = "\n".join(lines)
        used.add(cell.id)
    assert used == set(LECTURE), set(LECTURE) - used
    return nb


# the lines of a solution cell a learner does not write: the solution markers, TODO text, rungs
MARKS = re.compile(r"(?m)^\s*(### (BEGIN|END) SOLUTION|# (hint )?d\w+(\+| full)?:.*)\n")


def answered(v: Variant, seed: int, who: str, lines: dict[str, str] | None = None):
    """``v``'s student copy as handed to ``who``, its answers written: the solution's lines, or
    ``lines`` for the names it gives."""
    student = build.student(v, seed)
    student.metadata["backprop-workbook"]["learner"] = who
    solution = build.solution(v)
    for mine, theirs in zip(student.cells, solution.cells, strict=True):
        if mine.cell_type == "code" and mine.source != theirs.source:
            mine.source = MARKS.sub("", theirs.source)
            for name, line in (lines or {}).items():
                mine.source = re.sub(rf"(?m)^{name} = .*$", line, mine.source)
    return student
