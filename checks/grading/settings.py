"""A grading run's settings and the constants its stages share."""

from __future__ import annotations

import os
from dataclasses import dataclass

# the rows' version (3: the hints column; 4: passed a JSON boolean; 5: the cost column): done files
# of another version are graded again
ROWS = 5
FACTS = "facts::"  # the reference values' keys for what the graph says about a check
COST = "cost::"  # a run's keys for what the probe of a check cost: {"ops": n, "nbytes": n}


class SetupError(RuntimeError):
    """The grading set-up is broken (the reference run or the instructor's own solution fails):
    nothing is graded, nothing cached."""


SOLUTION_SUBMISSION = "(the instructor's solution)"
LEARNER_CELL_BYTES = 32 * 2**20  # what a grader cell of a learner's run may send (the answers)
NOTEBOOK_TIMEOUT = 900  # seconds: the most a notebook may run unless the instructor says otherwise
NONE = (None, None)  # no run, no grading notebook: nothing ran


def checks_version() -> str:
    """The installed package's version (``0+unknown`` from a bare checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("backprop-workbook")
    except PackageNotFoundError:
        return "0+unknown"


@dataclass
class Settings:
    seed: int = 1234567
    batch: int = 24
    steps: int = 50
    cell_timeout: int = 120
    # seconds a notebook may run; None: scaled from the solution's own run (``Grader.budget``)
    notebook_timeout: int | None = None
    memory_mb: int = 6144
    jobs: int = max(1, os.cpu_count() or 1)
    # a dropped leading size-1 axis fails instead of passing with a note
    strict_shapes: bool = False
    sandbox: str = "auto"  # "bwrap", "none", or "auto": bwrap where it works here
