"""A variant's notebooks, made from the lecture's solution notebook: its solution (unexecuted, the
variant in its metadata), its student copy and its hint ladders, the three from one source."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import ModuleType

import nbformat

from checks.authoring.student import notebook_ladders, student_notebook
from checks.authoring.variants import makemore, transformer
from checks.paths import INSTALL_SOURCE, METADATA, SOLUTIONS
from checks.session import shown_checks
from checks.variants import Makemore, Transformer, Variant, kind_of
from checks.variants.common import changes

NOTEBOOK = Makemore.STEM


# the edits that make a variant's notebook, by the notebook's stem
EDITS: dict[str, ModuleType] = {Makemore.STEM: makemore, Transformer.STEM: transformer}


def lecture(solutions: Path = SOLUTIONS, notebook: str = NOTEBOOK) -> nbformat.NotebookNode:
    """The lecture's ``notebook`` (03 unless named), executed, as the folder of solutions holds
    it."""
    return nbformat.read(solutions / f"{notebook}.ipynb", as_version=4)


def sources(v: Variant, solutions: Path = SOLUTIONS) -> list[str | None]:
    """The text of each cell of ``v``'s solution: the lecture's, edited for ``v`` (None: a cell
    ``v`` takes out)."""
    return EDITS[v.STEM].sources(v, [c.source for c in lecture(solutions, v.STEM).cells])


def solution(
    v: Variant, seed: int | None = None, solutions: Path = SOLUTIONS
) -> nbformat.NotebookNode:
    """``v``'s solution notebook: the lecture's when ``v`` is the default (outputs and all),
    otherwise the lecture's edited for ``v``, no outputs, ``v`` and ``seed`` in its metadata."""
    nb = lecture(solutions, v.STEM)
    if v == type(v)():
        return nb
    edits, kept = EDITS[v.STEM], []
    texts = edits.sources(v, [c.source for c in nb.cells])  # the notebook read once
    for cell, source in zip(nb.cells, texts, strict=True):
        if source is None:
            continue  # a cell the variant takes out
        cell.source = source
        if "workbook" in cell.metadata:  # a probe's names
            cell.metadata["workbook"] = edits.renamed_metadata(cell.metadata["workbook"], v)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("execution", None)
        kept.append(cell)
    nb.cells = kept
    nb.metadata[METADATA] = {"variant": {"seed": seed, **v.to_metadata()}}
    return nb


def checks(v: Variant, solutions: Path = SOLUTIONS) -> list[str]:
    """The names of ``v``'s checks in the order its notebook runs them: the lecture's, whose
    executed outputs name them, with each group's answers in ``v``'s order."""
    return kind_of(v.STEM).variant_checks(v, shown_checks(lecture(solutions, v.STEM).cells))


def student(
    v: Variant, seed: int | None = None, solutions: Path = SOLUTIONS, source: str = INSTALL_SOURCE
) -> nbformat.NotebookNode:
    """``v``'s student copy: its solution stubbed, the variant and its checks in the metadata
    (``source``: what its install cell installs)."""
    nb = student_notebook(solution(v, seed, solutions), source=source)
    nb.metadata[METADATA] = {
        **nb.metadata.get(METADATA, {}),
        "checks": checks(v, solutions),
        "variant": {"seed": seed, **v.to_metadata()},
    }
    return nb


def ladders(v: Variant, solutions: Path = SOLUTIONS) -> dict[str, list[dict]]:
    """``v``'s hint ladders, by answer name, as ``checks/hints/`` holds the lecture's."""
    return notebook_ladders(solution(v, solutions=solutions))


def changed_ladders(
    solutions: Path = SOLUTIONS, notebook: str = NOTEBOOK
) -> dict[str, dict[str, dict[str, list[dict]]]]:
    """By axis and choice other than the lecture's, the ladders that choice changes in
    ``notebook`` (03 unless named), by answer name: what :func:`checks.variants.ladders` puts in
    the lecture's place."""
    lecture_ladders = notebook_ladders(lecture(solutions, notebook))
    kind = kind_of(notebook).KIND
    changed: dict[str, dict[str, dict[str, list[dict]]]] = {}
    for axis, choices in kind_of(notebook).AXES.items():
        for choice in choices[1:]:
            smoothing = {"smoothing": 0.1} if choice == "label-smoothing" else {}
            mine = ladders(kind(**{axis: choice}, **smoothing), solutions)
            changed.setdefault(axis, {})[choice] = changes(lecture_ladders, mine)
    return changed


def written(v: Variant, solutions: Path = SOLUTIONS) -> str:
    """``v``'s solution notebook as the file it is written to."""
    return nbformat.writes(solution(v, solutions=solutions))


def digest(text: str) -> str:
    """What names a variant's solution (:func:`written`) by its text: a hand-out keeps it, and the
    grader keeps the solution under it."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]
