"""The grader's informational cost column: once a probe's answers are recorded, the learner's
function is called again, counted (``checks.grading.probecost``), on copies of what the probe
reads; only two whole numbers are read back, and they show on the passed rows of its checks
beside the solution's. The count never changes an answer, a tensor of the notebook's or the
random state, and a count that fails or runs out of time sends nothing."""

from __future__ import annotations

import random
import signal

import nbformat
import pytest
import torch

import checks.cost
from checks.cost import tally
from checks.grading import probecost, recorder, run
from checks.grading.assemble import record_cell
from checks.grading.exercise import AnswerCell
from checks.grading.judge import _costed
from checks.grading.rows import FIELDS, Row
from checks.grading.settings import COST
from checks.paths import ROOT
from tests import makemore
from tests.fast_steps import fused_step


def backward(x, w):
    """A learner's function as a probe calls it: two gradients of (x @ w).sum()."""
    ones = torch.ones(x.shape[0], w.shape[1])
    return {"dx": ones @ w.T, "dw": x.T @ ones}


def probed_cell(probe: str | None) -> AnswerCell:
    return AnswerCell(3, None, "ex2", ["dx", "dw"], probe, "", "", checks=["ex2/dx", "ex2/dw"])


@pytest.fixture
def sent(monkeypatch):
    """The answers and costs the kernel's grader cells send, kept instead of published (and
    nothing else: a watch on autograd that another test left on reports calls too)."""
    out: list[tuple[str, dict]] = []

    def emit(kind: str, **content) -> None:
        if kind in ("values", "cost"):
            out.append((kind, content))

    monkeypatch.setattr(recorder, "emit", emit)
    return out


def graded_cell(probe: str, **scope) -> dict:
    """Run the grader cell after an answer cell whose probe is ``probe``; its scope after."""
    scope = {"__gr": recorder, **scope}
    exec(record_cell(probed_cell(probe)), scope)
    return scope


def test_the_answers_are_recorded_first_then_the_call_is_counted_again(sent):
    x, w = torch.randn(4, 3), torch.randn(3, 2)
    graded_cell("backward(x, w)", backward=backward, x=x, w=w)
    (kind, values), (cost_kind, cost) = sent
    assert (kind, cost_kind) == ("values", "cost")
    assert torch.equal(recorder.unpack(values["data"])["ex2/dw"], backward(x, w)["dw"])
    counted = tally(backward, x, w)
    assert cost["cost"] == {"ops": counted.count, "nbytes": counted.nbytes}
    assert counted.count >= 3 and counted.nbytes > 0


def test_a_probe_that_raises_records_its_answers_as_raised_and_sends_no_cost(sent):
    def broken(x, w):
        raise ValueError("not yet")

    graded_cell("broken(x, w)", broken=broken, x=torch.ones(2), w=torch.ones(2))
    assert [kind for kind, _ in sent] == ["values"]
    assert recorder.unpack(sent[0][1]["data"])["ex2/dx"].type == "ValueError"


def test_a_count_that_fails_leaves_the_recorded_answers_as_they_are(sent, monkeypatch):
    def no_tally(self):
        raise RuntimeError("another dispatch mode is active")

    monkeypatch.setattr(checks.cost.Tally, "__enter__", no_tally)
    x, w = torch.randn(4, 3), torch.randn(3, 2)
    graded_cell("backward(x, w)", backward=backward, x=x, w=w)
    assert [kind for kind, _ in sent] == ["values"]
    assert torch.equal(recorder.unpack(sent[0][1]["data"])["ex2/dx"], backward(x, w)["dx"])


def test_a_call_that_runs_out_of_time_is_stopped_not_counted_and_leaves_nothing_behind():
    def looped(x):
        total = x.new_zeros(())
        while True:  # a learner's loop of scalar operations, slowed down further by the count
            total = total + x[0]

    handler = signal.getsignal(signal.SIGALRM)
    grad, dtype = torch.is_grad_enabled(), torch.get_default_dtype()
    assert probecost.count("looped(x)", {"looped": looped, "x": torch.ones(3)}, 0.2) is None
    assert signal.getsignal(signal.SIGALRM) is handler
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert not torch._C._len_torch_dispatch_stack() and not probecost._PAUSED["on"]
    assert (torch.is_grad_enabled(), torch.get_default_dtype()) == (grad, dtype)


def test_a_stop_caught_by_the_learners_code_still_stops_the_count():
    def swallowing(x):
        torch.set_grad_enabled(False)  # changed, then left so by the stop
        total = x.new_zeros(())
        for _ in range(3):
            try:
                while True:
                    total = total + x[0]
            except BaseException:  # noqa: BLE001  (a learner's catch-all)
                pass
        return total

    scope = {"swallowing": swallowing, "x": torch.ones(3), "__gr": recorder}
    grad = torch.is_grad_enabled()
    assert probecost.count("swallowing(x)", scope, 0.1) is None  # three stops, all caught
    assert probecost.count("__gr.attempt(lambda: swallowing(x))", scope, 0.1) is None
    assert torch.is_grad_enabled() == grad and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_the_probe_of_notebook_03_is_counted_on_copies_of_its_network():
    """Notebook 03's own probe string, as its solution's metadata holds it."""
    nb = nbformat.read(ROOT / "solutions" / "03-makemore-backprop.ipynb", as_version=4)
    (probe,) = [c.metadata["workbook"]["probe"] for c in nb.cells if "step(" in str(c.metadata)]
    p = makemore.init_params(27, 3, 10, 200, 2147483647)
    net = [p[k].detach() for k in ["C", "W1", "b1", "W2", "b2", "bngain", "bnbias"]]
    g = torch.Generator().manual_seed(1)
    X, Y = torch.randint(0, 27, (100, 3), generator=g), torch.randint(0, 27, (100,), generator=g)

    def step(net, Xb, Yb):  # a learner's step that moves its network in place as it goes
        loss, grads = fused_step(net, Xb, Yb)
        net[0].sub_(grads[0])
        return loss, grads

    before = [t.clone() for t in net]
    scope = {"step": step, "net": net, "Xtr": X, "Ytr": Y, "batch_size": 32}
    counted = probecost.count(probe, scope)
    assert counted["ops"] == tally(fused_step, net, X[:32], Y[:32]).count + 1 + 2  # sub_, slices
    assert all(torch.equal(a, b) for a, b in zip(before, net, strict=True))


def test_the_count_changes_no_tensor_of_the_notebooks_and_no_random_state():
    def careless(x, net):
        x.mul_(2)  # changes its input in place
        net[0].add_(1)
        return torch.randn(3) + random.random()

    x, net = torch.ones(3), [torch.zeros(2)]
    torch.manual_seed(5)
    random.seed(5)
    counted = probecost.count("careless(x, net)", {"careless": careless, "x": x, "net": net})
    after = (torch.randn(1), random.random())
    torch.manual_seed(5)
    random.seed(5)
    assert after == (torch.randn(1), random.random())
    assert (
        counted["ops"] >= 4
        and torch.equal(x, torch.ones(3))
        and torch.equal(net[0], torch.zeros(2))
    )


def test_the_graders_own_inputs_and_packing_count_nothing():
    x = torch.randn(4, 5)
    scope = {"__gr": recorder, "x": x}
    assert probecost.count("__gr.fresh(x, 1).sum()", scope)["ops"] == 1  # the sum only
    assert probecost.count("__gr.normed(x)", scope)["ops"] == 0

    class Value:  # notebook 01's answers: a class of plain numbers, no tensor operation
        def __init__(self, data):
            self.data, self.grad, self._backward = data, 0.0, lambda: None

        def __mul__(self, other):
            out = Value(self.data * other.data)

            def _backward():
                self.grad += other.data * out.grad
                other.grad += self.data * out.grad

            out._backward = _backward
            return out

    scope.update(Value=Value)
    assert probecost.count("__gr.op(Value, lambda a, b: a * b, (2.0, 3.0))", scope)["ops"] == 0


def test_the_count_comes_after_every_check_of_the_answer_cell():
    """A count that a learner's code makes fail can skip nothing the grader checks."""
    code = record_cell(probed_cell("backward(x, w)"))
    assert code.index("__gr.record(") < code.index("__gr.check_grads(") < code.index("__pc.send(")


def test_an_answer_cell_without_a_probe_counts_nothing():
    code = record_cell(probed_cell(None))
    assert "probecost" not in code and "send(" not in code


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
        ({"ops": 5, "nbytes": 10**400}, None),  # would overflow a float where it is written
        ({"ops": 2**53, "nbytes": 5}, None),
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


def test_reference_values_kept_before_the_cost_column_are_made_again(tmp_path, monkeypatch):
    """A reference run cached by a grader whose rows had no cost has no solution's costs: the
    cache is keyed by the rows' version too, so it is run again."""
    from checks.grading import grader as module
    from checks.grading.settings import Settings

    grader = module.Grader(tmp_path / "out", Settings())
    ex = next(iter(grader.exercises.values()))
    now = grader.cache_of(ex)
    monkeypatch.setattr(module, "ROWS", module.ROWS - 1)
    assert grader.cache_of(ex) != now and grader.cache_of(ex).parent == now.parent
