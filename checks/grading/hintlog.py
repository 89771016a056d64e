"""The hints a learner used, read from a saved notebook: ``hints_used(nb)``.

In Jupyter every ``hint()`` output carries ``{"backprop-workbook": {"hint": "dcounts", "check":
"counts", "notebook": "03-makemore-backprop", "rung": 2, "of": 3, "reveal": false}}`` in its
metadata (:meth:`checks.hints.Hint.marker`), so the submitted file says which rungs were shown.

Self-reported: a learner can clear outputs, re-run a cell (its old outputs go), delete a cell, or
ask for a hint in another notebook or a scratch kernel, and the count drops. It counts what the
saved file still shows, never more than was used; read it as a floor, not as proof.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from checks.hints import MARKER


@dataclass(frozen=True)
class HintRecord:
    """One hint output of a notebook: the cell it is in (index among all cells) and its marker."""

    cell: int
    answer: str
    check: str
    notebook: str
    rung: int
    of: int
    reveal: bool


def _record(cell: int, output: Mapping[str, Any]) -> HintRecord | None:
    mark = (output.get("metadata") or {}).get(MARKER)
    if not isinstance(mark, Mapping) or not isinstance(mark.get("hint"), str):
        return None
    try:
        rung, of = int(mark.get("rung") or 0), int(mark.get("of") or 0)
    except (TypeError, ValueError):
        return None
    check, notebook = mark.get("check"), mark.get("notebook")
    return HintRecord(
        cell,
        mark["hint"],
        check if isinstance(check, str) else "",
        notebook if isinstance(notebook, str) else "",
        max(rung, 0),
        max(of, 0),
        mark.get("reveal") is True,
    )


def hint_records(nb: Mapping[str, Any]) -> list[HintRecord]:
    """Every hint output the notebook ``nb`` (an ``nbformat.NotebookNode`` or its JSON as a dict)
    still holds, in cell order; outputs of other kinds and malformed markers are skipped."""
    found = []
    for i, cell in enumerate(nb.get("cells") or []):
        if cell.get("cell_type") != "code":
            continue
        for output in cell.get("outputs") or []:
            if isinstance(output, Mapping) and (rec := _record(i, output)) is not None:
                found.append(rec)
    return found


def hints_used(nb: Mapping[str, Any]) -> dict[str, int]:
    """Answer name (``dcounts``) -> how many rungs of its ladder the notebook shows were used:
    the deepest rung shown (rungs come in order, so rung 2 means two hints), a revealed solution
    counting as every rung. Names with no rung shown (a message such as "reveal is off") are left
    out. Self-reported: see the module's docstring."""
    used: dict[str, int] = {}
    for rec in hint_records(nb):
        depth = rec.of if rec.reveal else rec.rung
        if depth > 0 or rec.reveal:
            used[rec.answer] = max(used.get(rec.answer, 0), depth)
    return used


def reveals_used(nb: Mapping[str, Any]) -> set[str]:
    """The answer names whose solution lines the notebook shows were revealed (``reveal=True``)."""
    return {rec.answer for rec in hint_records(nb) if rec.reveal}
