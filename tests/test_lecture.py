"""Notebook 03 filled in with the lecture's own answers (tests/lecture_answers.py) passes.

The lecture's answers are right, so a check that rejects one of them is too strict for a learner who
follows the lecture.
"""

from __future__ import annotations

import nbformat
import pytest

from tests.lecture_answers import LECTURE
from tests.notebooks import LINE, STUB, errors_of, run, text_of
from tests.submissions import student_copy, substitute


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
    nb = substitute(student_copy(), LECTURE)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.id in LECTURE:
            assert not STUB.search(cell.source)
            compile(cell.source, cell.id, "exec")  # valid Python, the indentation included


@pytest.mark.slow
def test_lecture_answers_pass_every_check():
    nb = run(substitute(student_copy(), LECTURE), steps=300)
    assert errors_of(nb) == []
    lines = [m for cell in nb.cells for m in LINE.findall(text_of(cell))]
    assert len(lines) == 28 + 7  # the 28 checks and exercise 4's final comparison of 7 parameters
    failing = failing_checks(nb)
    assert not failing, "\n" + "\n".join(f"{line}\n{why}" for line, why in failing)
