"""The grader's informational cost column: a probe's call of the learner's function counted in the
kernel (``recorder.costing``), read back only as two whole numbers, and shown on the passed rows
of its checks beside the solution's; never part of a grade."""

from __future__ import annotations

import pytest
import torch

import checks.cost
from checks.cost import tally
from checks.grading import recorder, run
from checks.grading.assemble import record_cell
from checks.grading.exercise import AnswerCell
from checks.grading.judge import _costed
from checks.grading.rows import FIELDS, Row
from checks.grading.settings import COST


def backward(x, w):
    """A learner's function as a probe calls it: two gradients of (x @ w).sum()."""
    ones = torch.ones(x.shape[0], w.shape[1])
    return {"dx": ones @ w.T, "dw": x.T @ ones}


def probed_cell(probe: str | None) -> AnswerCell:
    return AnswerCell(3, None, "ex2", ["dx", "dw"], probe, "", "", checks=["ex2/dx", "ex2/dw"])


@pytest.fixture
def sent(monkeypatch):
    """The messages the kernel's grader cells send, kept instead of published."""
    out: list[dict] = []
    monkeypatch.setattr(recorder, "emit", lambda kind, **content: out.append(content))
    return out


def test_a_probe_records_what_the_learners_call_cost(sent):
    x, w = torch.randn(4, 3), torch.randn(3, 2)
    code = record_cell(probed_cell("backward(x, w)"))
    scope = {"__gr": recorder, "backward": backward, "x": x, "w": w}
    exec(code, scope)
    cost = sent[0]["cost"]
    assert cost == {"ops": tally(backward, x, w).count, "nbytes": tally(backward, x, w).nbytes}
    assert cost["ops"] >= 3 and cost["nbytes"] > 0
    assert recorder.unpack(sent[0]["data"])["ex2/dw"].shape == (3, 2)


def test_a_probe_that_raises_still_records_its_answers_as_raised(sent):
    def broken(x, w):
        raise ValueError("not yet")

    exec(record_cell(probed_cell("broken(x, w)")), {"__gr": recorder, "broken": broken, "x": 1})
    assert recorder.unpack(sent[0]["data"])["ex2/dx"].kind == "error"


def test_a_count_that_cannot_start_leaves_the_answers_as_they_are(sent, monkeypatch):
    def no_tally():
        raise RuntimeError("another dispatch mode is active")

    monkeypatch.setattr(checks.cost, "Tally", no_tally)
    x, w = torch.randn(4, 3), torch.randn(3, 2)
    exec(
        record_cell(probed_cell("backward(x, w)")),
        {"__gr": recorder, "backward": backward, "x": x, "w": w},
    )
    assert sent[0]["cost"] is None
    assert torch.equal(recorder.unpack(sent[0]["data"])["ex2/dx"], backward(x, w)["dx"])


def test_an_answer_cell_without_a_probe_counts_nothing():
    code = record_cell(probed_cell(None))
    assert "costing" not in code and "cost=" not in code


@pytest.mark.parametrize(
    "message, read",
    [
        ({"ops": 56, "nbytes": 563_600}, {"ops": 56, "nbytes": 563_600}),
        ({"ops": 0, "nbytes": 0}, {"ops": 0, "nbytes": 0}),
        (None, None),
        ({}, None),
        ({"ops": -1, "nbytes": 5}, None),
        ({"ops": 1.5, "nbytes": 5}, None),
        ({"ops": True, "nbytes": 5}, None),
        ({"ops": "56", "nbytes": 5}, None),
        ({"ops": 5, "nbytes": 5, "extra": "<script>"}, None),
        ([56, 5], None),
    ],
)
def test_only_two_whole_numbers_are_read_back_from_the_kernel(message, read):
    assert run._cost(message) == read


def row(passed: bool = True) -> Row:
    return Row(check="ex4/dC", passed=passed)


def test_a_passed_row_shows_its_cost_beside_the_solutions():
    mine = {COST + "ex4/dC": {"ops": 320, "nbytes": 25_600}}
    ref = {COST + "ex4/dC": {"ops": 56, "nbytes": 563_600}}
    assert _costed(row(), mine, ref).cost == "320 ops, 25.6 kB (the solution's: 56 ops, 563.6 kB)"
    assert _costed(row(), mine, {}).cost == "320 ops, 25.6 kB"  # a reference without costs
    assert _costed(row(passed=False), mine, ref).cost == ""  # shown only once it passes
    assert _costed(row(), {}, ref).cost == ""  # no probe counted it
    nothing = {COST + "ex4/dC": {"ops": 0, "nbytes": 0}}  # a Value class's: no tensor operation
    assert _costed(row(), nothing, ref).cost == ""
    assert FIELDS[-1] == "cost" and row().cells()[-1] == ""
