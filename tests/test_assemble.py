"""The grading notebook: what a run executes of the instructor's notebook, and where it stops."""

from __future__ import annotations

import pytest

from checks.grading.assemble import assemble
from checks.grading.exercise import course, learner_cells, load_exercise
from checks.paths import NOTEBOOKS, SOLUTIONS

# the exercises: every solution with answers to grade (06-drills is practice, with none)
NAMES = sorted(course(SOLUTIONS)[0])


@pytest.mark.parametrize("name", NAMES)
def test_every_run_stops_at_its_last_record(name):
    """The training sections and the summary after the last check record nothing: no run executes
    them (a wipe of the graph after them included), a learner's run no more than the reference."""
    ex = load_exercise(SOLUTIONS / name)
    plans = {
        "the reference run": assemble(ex, None),
        "the solution graded as a learner's": assemble(ex, learner_cells(ex, SOLUTIONS / name), {}),
        "the student copy's run": assemble(ex, learner_cells(ex, NOTEBOOKS / name), {}),
    }
    checks = [c for answer in ex.answers for c in answer.checks]
    for who, plan in plans.items():
        last = max(plan.records)
        after = [c.source.split("\n")[0] for c in plan.nb.cells[last + 1 :]]
        assert not after, f"{name}: {who} runs {len(after)} cells after its last record: {after}"
        recorded = [c for k in sorted(plan.records) for c in plan.records[k]]
        assert recorded == checks, f"{name}: {who} records {recorded}, expected {checks}"
