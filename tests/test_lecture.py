"""Notebook 03 filled in with the lecture's own answers (tests/lecture_answers.py) passes.

The lecture's answers are right, so a check that rejects one of them is too strict for a learner who
follows the lecture.
"""

from __future__ import annotations

import re

import nbformat
import pytest

from checks.student import ROOT
from tests.lecture_answers import LECTURE
from tests.test_notebooks import LINE, STUB, errors_of, run, text_of

NOTEBOOK = ROOT / "notebooks" / "03-makemore-backprop.ipynb"


def _student() -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOK, as_version=4)


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


def failing_checks(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """(check line, the line after it) for every check line that is not `approximate: True`."""
    failing = []
    for cell in nb.cells:
        shown = text_of(cell).splitlines()
        for i, line in enumerate(shown):
            m = LINE.match(line)
            if m and m.group(3).strip() != "True":
                failing.append((line, shown[i + 1] if i + 1 < len(shown) else ""))
    return failing


def test_lecture_answers_cover_every_placeholder_cell():
    nb = substitute(_student(), LECTURE)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.id in LECTURE:
            assert not STUB.search(cell.source)
            compile(cell.source, cell.id, "exec")  # valid Python, the indentation included


@pytest.mark.slow
def test_lecture_answers_pass_every_check():
    nb = run(substitute(_student(), LECTURE), steps=300)
    assert errors_of(nb) == []
    lines = [m for cell in nb.cells for m in LINE.findall(text_of(cell))]
    assert len(lines) == 28 + 7  # the 28 checks and exercise 4's final comparison of 7 parameters
    failing = failing_checks(nb)
    assert not failing, "\n" + "\n".join(f"{line}\n{why}" for line, why in failing)
