"""Notebook 03 after an unfinished ``step()``: the cells that need a trained network say that
training never ran (as notebook 05's do), instead of evaluating and sampling an untrained one."""

from __future__ import annotations

import os

import nbformat
import pytest
from nbclient import NotebookClient

from checks.authoring.student import ROOT


@pytest.mark.slow
def test_the_cells_after_an_unfinished_step_say_training_never_ran(tmp_path):
    student = nbformat.read(ROOT / "notebooks" / "03-makemore-backprop.ipynb", as_version=4)
    cells = student.cells
    setup = next(i for i, c in enumerate(cells) if "n = batch_size" in c.source)
    exercise_4 = next(i for i, c in enumerate(cells) if "def init_network" in c.source)
    nb = nbformat.v4.new_notebook(
        cells=cells[: setup + 1] + cells[exercise_4:], metadata=student.metadata
    )
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute(env={**os.environ, "WORKBOOK_STEPS": "5"})
    errors = {
        i: o.evalue for i, c in enumerate(nb.cells) for o in c.get("outputs", []) if o.get("ename")
    }
    train = next(i for i, c in enumerate(nb.cells) if "lossi = train(" in c.source)
    assert "step()" in errors.pop(train)  # the training stops in step(): not written yet
    needs = [
        i for i, c in enumerate(nb.cells) if "make_name" in c.source or "calibrate" in c.source
    ]
    needs.append(train + 1)  # the plot of the loss
    for i in needs:
        assert errors.get(i, "").startswith("train the network first"), (i, errors)
    sampled = next(i for i, c in enumerate(nb.cells) if "def make_name" in c.source)
    assert not [o for o in nb.cells[sampled].outputs if o.output_type == "stream"]  # no names
