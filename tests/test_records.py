"""What the test runner keeps of a grading run's messages (``checks.grading.plugin``, #23): the
grader's own cells send the values, within a size cap; any other cell (a learner's) can send only
autograd calls, a few each, so a flood of fake record messages neither grows the records file nor
the grader."""

from __future__ import annotations

import json

import nbformat

from checks.grading.assemble import Plan
from checks.grading.run import run_notebook
from checks.grading.settings import Settings

# 600 messages, well past the plugin's caps (64 messages, 64 KB) yet under the 1,000 a ZeroMQ
# socket queues by default: the test runner reads a cell's output only once the cell has ended, so
# more would have the transport drop some, the cell's end among them, on a busy machine (#24)
FLOOD = """
from IPython.display import display
from checks.grading.mime import MIME
for i in range(300):
    display({MIME: {"kind": "values", "data": "x" * 1000}}, raw=True)
for i in range(300):
    display({MIME: {"kind": "autograd", "call": "loss.backward" + "!" * 5000}}, raw=True)
"""
GRADER = """
from IPython.display import display
from checks.grading.mime import MIME
display({MIME: {"kind": "note", "data": "the grader's own"}}, raw=True)
"""


def test_a_learner_cell_cannot_flood_the_records(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in (FLOOD, GRADER)])
    plan = Plan(nb, ["ex1/dx", "grader"], records={1: ["ex1/dx"]}, learner={0: ["ex1/dx"]})
    work = tmp_path / "run"
    run = run_notebook(plan, work, Settings(cell_timeout=60, notebook_timeout=120, sandbox="none"))
    assert not run.cell_errors, run.cell_errors
    entries = {e["cell"]: e["messages"] for e in map(json.loads, open(work / "records.jsonl"))}
    assert {m["kind"] for m in entries[0]} == {"autograd"} and len(entries[0]) <= 64
    assert all(len(m["call"]) <= 200 for m in entries[0])
    assert entries[1] == [{"kind": "note", "data": "the grader's own"}]
    assert (work / "records.jsonl").stat().st_size < 64 * 1024


CHATTY = """
from IPython.display import display
for i in range(5000):
    display(f"step {i}")
for i in range(20000):
    print("a line of a long loop's log", i)
dx = 1.0
"""


def test_a_chatty_cell_is_cut_in_the_kernel_not_timed_out(tmp_path):
    """5,000 displays and 20,000 printed lines in one cell: the kernel keeps the first few, says
    how many it cut, and the cell ends well within its timeout."""
    from checks.grading.assemble import PRELUDE

    cells = [PRELUDE.strip(), CHATTY, GRADER]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    plan = Plan(
        nb, ["grader", "ex1/dx", "grader"], records={2: ["ex1/dx"]}, learner={1: ["ex1/dx"]}
    )
    run = run_notebook(
        plan, tmp_path / "run", Settings(cell_timeout=20, notebook_timeout=120, sandbox="none")
    )
    assert not run.cell_errors and run.fault is None, (run.cell_errors, run.fault)
    assert run.truncated[1] > 4000, run.truncated
