"""A grader row, one check of one submission's notebook, as data (:class:`Row`) from the judge
through the grader, a dask worker and the reports, and its two stored forms: the text of
``grades.csv`` (:meth:`Row.cells`, read back by :meth:`Row.from_csv`) and the JSON of a
submission's done file (:meth:`Row.json`, :meth:`Row.from_json`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

# grades.csv's columns, in Row's order
FIELDS = [
    "submission",
    "notebook",
    "check",
    "passed",
    "mistake",
    "reason",
    "note",
    "feedback",
    "hints",  # the hints the submitted notebook shows were used: "2/3" rungs, or "revealed"
    "cost",  # informational, never a grade: what the learner's function cost, beside the solution's
]
# grades.csv's spelling of ``passed``
TRUE, FALSE = "true", "false"


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    """One check's outcome: ``passed``, the ``mistake`` word (``checks.MISTAKES``' or the grader's
    own, :mod:`checks.words`), the ``reason`` for the instructor (with the expected
    value), the ``note`` (``word: text; ...``), the ``feedback`` a learner may read, the
    ``hints`` used and, for a passed answer of a function (a probe), its ``cost``: the tensor
    operations and bytes its call took, beside the solution's (never part of a grade). The judge
    leaves ``submission`` and ``notebook`` empty (:meth:`of`)."""

    submission: str = ""
    notebook: str = ""
    check: str
    passed: bool
    mistake: str = ""
    reason: str = ""
    note: str = ""
    feedback: str = ""
    hints: str = ""
    cost: str = ""

    def of(self, submission: str, notebook: str) -> Row:
        """This row as one of ``submission``'s ``notebook``."""
        return dataclasses.replace(self, submission=submission, notebook=notebook)

    def cells(self) -> list[str]:
        """The row's cells in grades.csv, in ``FIELDS`` order."""
        return [
            (TRUE if self.passed else FALSE) if f == "passed" else getattr(self, f) for f in FIELDS
        ]

    @classmethod
    def from_csv(cls, cells: dict[str, str]) -> Row:
        """A row of grades.csv as :meth:`cells` wrote it (a column missing: empty)."""
        text = {f: cells.get(f) or "" for f in FIELDS}
        return cls(**{**text, "passed": text["passed"] == TRUE})

    def json(self) -> dict[str, str | bool]:
        """The row in a done file."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, str | bool]) -> Row:
        """A row of a done file, as :meth:`json` wrote it."""
        return cls(**data)
