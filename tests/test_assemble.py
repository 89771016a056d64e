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


@pytest.mark.parametrize(
    ("name", "stub"),
    [
        ("03-makemore-backprop.ipynb", "def step_fast("),
        ("05-transformer-backprop.ipynb", "def gpt_backward_fast("),
    ],
)
def test_the_learners_own_cells_in_the_optional_exercise_join_no_answer(name, stub, tmp_path):
    """A cell of the learner's own in the optional, never graded fast exercise (an unfinished
    attempt that raises, a copy of a step renamed or not) is run with no graded answer: before, it
    joined the last answer above it and failed its checks. A cell of their own beside an answer
    still joins it."""
    import nbformat

    ex = load_exercise(SOLUTIONS / name)
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if c.source.startswith(stub))
    attempt = "def step(net, Xb, Yb):\n    raise RuntimeError('unfinished')\nprint(undefined_name)"
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(attempt))
    last = ex.answers[-1]
    beside = next(i for i, c in enumerate(nb.cells) if c.get("id") == last.cell_id)
    nb.cells.insert(beside + 1, nbformat.v4.new_code_cell("scratch_of_mine = 1"))
    nbformat.write(nb, tmp_path / name)
    found = learner_cells(ex, tmp_path / name)
    assert "scratch_of_mine = 1" in found[last.index]
    assert not any(source and "undefined_name" in source for source in found.values())
