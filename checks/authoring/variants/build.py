"""A variant's notebooks, made from the lecture's solution notebook: its solution (unexecuted, the
variant in its metadata), its student copy and its hint ladders, the three from one source."""

from __future__ import annotations

import nbformat

from checks.authoring.student import notebook_ladders, student_notebook
from checks.authoring.variants import makemore
from checks.authoring.variants.edits import apply
from checks.authoring.variants.spec import GROUPS, Makemore
from checks.paths import INSTALL_SOURCE, METADATA, ROOT
from checks.session import shown_checks

NOTEBOOK = "03-makemore-backprop"


def lecture(root=ROOT) -> nbformat.NotebookNode:
    """The lecture's notebook 03, executed, as ``solutions/`` holds it."""
    return nbformat.read(root / "solutions" / f"{NOTEBOOK}.ipynb", as_version=4)


def sources(v: Makemore, root=ROOT) -> list[str]:
    """The text of each cell of ``v``'s solution: the lecture's, edited for ``v``."""
    edited = apply([c.source for c in lecture(root).cells], makemore.edits(v))
    return makemore.resized(makemore.reordered(edited, v.order), v)


def solution(v: Makemore, seed: int | None = None, root=ROOT) -> nbformat.NotebookNode:
    """``v``'s solution notebook: the lecture's when ``v`` is the default (outputs and all),
    otherwise the lecture's edited for ``v``, no outputs, ``v`` and ``seed`` in its metadata."""
    nb = lecture(root)
    if v == Makemore():
        return nb
    for cell, source in zip(nb.cells, sources(v, root), strict=True):
        cell.source = source
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("execution", None)
    nb.metadata[METADATA] = {"variant": {"seed": seed, **v.to_metadata()}}
    return nb


def checks(v: Makemore, root=ROOT) -> list[str]:
    """The names of ``v``'s checks in the order its notebook runs them: the lecture's, whose
    executed outputs name them, with each group's answers in ``v``'s order."""
    names = shown_checks(lecture(root).cells)
    for lecture_order, wanted in zip(GROUPS, v.order, strict=True):
        spots = sorted(names.index(n[1:]) for n in lecture_order)
        for spot, name in zip(spots, wanted, strict=True):
            names[spot] = name[1:]
    return names


def student(
    v: Makemore, seed: int | None = None, root=ROOT, source: str = INSTALL_SOURCE
) -> nbformat.NotebookNode:
    """``v``'s student copy: its solution stubbed, the variant and its checks in the metadata
    (``source``: what its install cell installs)."""
    nb = student_notebook(solution(v, seed, root), source=source)
    nb.metadata[METADATA] = {
        **nb.metadata.get(METADATA, {}),
        "checks": checks(v, root),
        "variant": {"seed": seed, **v.to_metadata()},
    }
    return nb


def ladders(v: Makemore, root=ROOT) -> dict[str, list[dict]]:
    """``v``'s hint ladders, by answer name, as ``checks/hints/`` holds the lecture's."""
    return notebook_ladders(solution(v, root=root))
