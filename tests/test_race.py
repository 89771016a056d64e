"""checks.races: steps side by side on the same minibatches, a wrong one never timed."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import checks.races
from checks import NotWritten
from checks.races import Lap, Race, race
from tests import makemore
from tests.fast_steps import autograd_step, fused_step

ORDER = ["C", "W1", "b1", "W2", "b2", "bngain", "bnbias"]


@pytest.fixture(scope="module")
def data():
    """Exercise 4's network and a small made-up training set of contexts and targets."""
    return makemore.race_data()


def step_fast(net, Xb, Yb):
    """A learner's fast step: the fused one."""
    return fused_step(net, Xb, Yb)


def step_sign(net, Xb, Yb):
    """A learner's fast step with dW2's sign flipped."""
    loss, grads = fused_step(net, Xb, Yb)
    grads[3] = -grads[3]
    return loss, grads


def step_unwritten(net, Xb, Yb):
    raise NotWritten("step_fast(): `dlogits` is still `...`")


def test_a_right_fast_step_is_timed_against_autograd_and_counted(data):
    net, X, Y = data
    before = [p.clone() for p in net]
    result = race(step_fast, autograd=autograd_step, net=net, X=X, Y=Y, blocks=2, per_block=3)
    assert [lap.name for lap in result.laps] == ["autograd", "step_fast"]
    assert result.ratio("autograd") == 1.0 and result.ratio("step_fast") > 0
    fast, auto = result.lap("step_fast"), result.lap("autograd")
    assert fast.problem is None and fast.cost.count < auto.cost.count
    assert all(torch.equal(a, b) for a, b in zip(before, net, strict=True))  # net left as it was
    text = str(result)
    assert "step_fast" in text and "x" in text.splitlines()[-1]
    assert "<table" in result._repr_html_() and "× autograd" in result._repr_html_()


def test_a_wrong_or_unwritten_step_is_named_and_not_timed(data):
    net, X, Y = data
    result = race(
        step_sign, step_unwritten, autograd=autograd_step, net=net, X=X, Y=Y, blocks=1, per_block=2
    )
    assert result.lap("step_sign").seconds is None
    assert result.note(result.lap("step_sign")) == (
        "not timed: its gradient of net[3] differs from autograd's"
    )
    assert result.lap("step_unwritten").problem.startswith("not timed: it raised NotWritten: ")
    assert result.ratio("step_sign") is None


def step_looped(net, Xb, Yb):
    """The fused step with dC gathered row by row, as the lecture first does."""
    loss, grads = fused_step(net, Xb, Yb)
    demb = grads[1].new_zeros(*Xb.shape, net[0].shape[1])
    dC = torch.zeros_like(net[0])
    for k in range(Xb.shape[0]):
        for j in range(Xb.shape[1]):
            dC[Xb[k, j]] += demb[k, j]
    return loss, [grads[0] + dC, *grads[1:]]


def test_the_slower_step_is_told_its_biggest_saving_against_the_fastest(data):
    net, X, Y = data
    result = race(fused_step, step_looped, autograd=autograd_step, net=net, X=X, Y=Y, blocks=1)
    costs = {lap.name: lap.cost for lap in result.laps}
    # the times set by hand: which step is fastest is not left to the machine
    laps = tuple(
        Lap(name, seconds, costs[name])
        for name, seconds in [("autograd", 4e-4), ("step_fast", 2e-4), ("step_looped", 3e-3)]
    )
    timed = Race(laps, 32)
    assert timed.note(timed.lap("step_looped")).startswith("your `dC` takes ")
    assert timed.note(timed.lap("step_fast")) == "" and timed.note(timed.lap("autograd")) == ""
    assert timed.ratio("step_looped") == pytest.approx(7.5)
    with pytest.raises(KeyError):
        timed.lap("step")


def test_steps_of_one_name_each_get_their_own_row_and_autograd_stays_the_reference(data):
    net, X, Y = data
    right = lambda net, Xb, Yb: fused_step(net, Xb, Yb)  # noqa: E731

    def renamed(net, Xb, Yb):  # a learner's step may be called anything, even "autograd"
        return step_fast(net, Xb, Yb)

    renamed.__name__ = "autograd"
    result = race(right, right, renamed, autograd=autograd_step, net=net, X=X, Y=Y, blocks=1)
    assert [lap.name for lap in result.laps] == ["autograd", "<lambda>", "<lambda> 2", "autograd 2"]
    assert all(lap.problem is None for lap in result.laps)


def test_an_unused_parameter_has_a_zero_gradient_and_a_bare_return_is_named(data):
    net, X, Y = data

    def autograd_with_unused(net, Xb, Yb):
        loss, grads = autograd_step(net[:7], Xb, Yb)
        return loss, [*grads, None]

    def fast_with_unused(net, Xb, Yb):
        loss, grads = fused_step(net[:7], Xb, Yb)
        return loss, [*grads, torch.zeros_like(net[7])]

    def grads_only(net, Xb, Yb):
        return fused_step(net[:7], Xb, Yb)[1]

    extra = [*net, torch.ones(3)]
    result = race(
        fast_with_unused, grads_only, autograd=autograd_with_unused, net=extra, X=X, Y=Y, blocks=1
    )
    assert result.lap("fast_with_unused").problem is None
    assert result.lap("grads_only").problem == (
        "not timed: it must return (loss, grads), grads a list as long as net, of tensors"
    )


def test_a_step_that_changes_its_minibatch_or_parameters_changes_them_for_no_other(data):
    net, X, Y = data

    def step_spoils(net, Xb, Yb):
        out = fused_step(net, Xb, Yb)
        Yb.zero_()  # its own copies: the next step still sees the targets
        net[1].mul_(0)
        return out

    result = race(step_spoils, step_fast, autograd=autograd_step, net=net, X=X, Y=Y, blocks=1)
    assert result.lap("step_fast").problem is None and result.lap("step_spoils").problem is None


def test_an_error_is_told_in_one_line(data):
    net, X, Y = data

    def step_raises(net, Xb, Yb):
        raise ValueError("first line\nsecond line")

    result = race(step_raises, autograd=autograd_step, net=net, X=X, Y=Y, blocks=1)
    assert result.lap("step_raises").problem == "not timed: it raised ValueError: first line"
    assert "second line" not in str(result)


@pytest.mark.parametrize("given", [None, ..., "step_fast"])
def test_what_is_not_a_function_gets_a_sentence(data, given):
    net, X, Y = data
    with pytest.raises(TypeError, match=r"race\(\) takes your step functions themselves"):
        race(given, autograd=autograd_step, net=net, X=X, Y=Y)
    with pytest.raises(TypeError, match=r"race\(\) takes your step functions themselves"):
        race(step_fast, autograd=given, net=net, X=X, Y=Y)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"net": None}, r"net must be your parameter tensors, as step\(\) takes them"),
        ({"net": {"C": [1.0, 2.0]}}, r"net must be your parameter tensors"),
        ({"X": None}, r"X must be a tensor of integers"),
        ({"Y": np.zeros(5, dtype=np.int64)}, r"Y must be a tensor of integers"),
        ({"X": torch.ones(5, 3)}, r"X must be a tensor of integers"),
        (
            {"X": torch.zeros(0, 3, dtype=torch.long), "Y": torch.zeros(0, dtype=torch.long)},
            r"same rows, at least one",
        ),
        ({"batch": 0}, r"batch must be a whole number of rows"),
    ],
)
def test_what_race_cannot_use_gets_a_sentence(data, change, message):
    net, X, Y = data
    given = {"net": net, "X": X, "Y": Y, **change}
    with pytest.raises((TypeError, ValueError), match=message):
        race(step_fast, autograd=autograd_step, **given)


def test_ipythons_plain_text_of_a_race_is_its_table(data):
    """What a notebook's text/plain (a terminal, VS Code's plain view, nbval) shows: the table."""
    from IPython.core.formatters import PlainTextFormatter

    net, X, Y = data
    result = race(step_fast, autograd=autograd_step, net=net, X=X, Y=Y, blocks=1, per_block=2)
    shown = PlainTextFormatter()(result)
    assert shown == str(result) and shown.startswith("steps on minibatches of 32:")


def step_roundabout(net, Xb, Yb):
    """The fused step, written out, with two intermediates of dC the fused step never makes."""
    C, W1, b1, W2, b2, bngain, bnbias = net
    loss, grads = fused_step(net, Xb, Yb)
    doubled = grads[0] * 2
    dC = doubled / 2
    return loss, [dC, *grads[1:]]


def test_a_race_is_data_that_reads_back_whole(data):
    net, X, Y = data
    result = race(step_fast, step_sign, autograd=autograd_step, net=net, X=X, Y=Y, blocks=1)
    back = Race.from_json(json.loads(json.dumps(result.json())))
    assert back.laps == result.laps and (back.batch, back.net) == (result.batch, result.net)
    assert back.net[3] == ("net[3]", (64, 27), "torch.float32")
    assert back.lap("step_sign").problem.startswith("not timed")


def test_the_solutions_rows_are_those_shipped_for_the_same_network_and_batch(
    data, tmp_path, monkeypatch
):
    net, X, Y = data
    made = race(fused_step, autograd=autograd_step, net=net, X=X, Y=Y, blocks=1, per_block=2)
    (tmp_path / "03-makemore-backprop.json").write_text(json.dumps({"races": [made.json()]}))
    (tmp_path / "broken.json").write_text("{")  # a file that cannot be read gives no race
    monkeypatch.setattr(checks.races, "COSTS", tmp_path)
    mine = race(step_roundabout, autograd=autograd_step, net=net, X=X, Y=Y, blocks=1, per_block=2)
    assert mine.solution is not None and mine.solution.laps == made.laps
    name, cells, note = mine.rows()[-1]
    assert name == "solution's step_fast" and cells[0] == "" and cells[1].endswith("x")
    assert cells[2:] == [str(made.laps[1].cost.count), f"{made.laps[1].cost.nbytes / 1e3:,.1f}"]
    said = mine.note(mine.lap("step_roundabout"))
    assert said.startswith("your step assigns `doubled`") and "the solution's `step_fast`" in said
    assert "torch 2" in str(mine) and "solution&#x27;s step_fast" in mine._repr_html_()
    # another batch, another dtype or another width: none of the solution's
    assert race(fused_step, autograd=autograd_step, net=net, X=X, Y=Y, batch=8).solution is None
    doubles = [p.double() for p in net]
    assert race(fused_step, autograd=autograd_step, net=doubles, X=X, Y=Y).solution is None


def test_exercise_5s_race_on_the_lecture_network_shows_the_solutions_steps():
    """The committed checks/hints/costs/ holds notebook 03's race: exercise 5's network (200
    hidden) at batch 32 gets the solution's rows; the net of these tests (64 hidden) none."""
    p = makemore.init_params(27, 3, 10, 200, 2147483647)
    g = torch.Generator().manual_seed(5)
    X, Y = torch.randint(0, 27, (300, 3), generator=g), torch.randint(0, 27, (300,), generator=g)
    mine = race(
        step_looped,
        autograd=autograd_step,
        net=[p[k].detach() for k in ORDER],
        X=X,
        Y=Y,
        blocks=1,
        per_block=2,
    )
    assert {"solution's step", "solution's step_fast"} <= {name for name, _, _ in mine.rows()}
    assert mine.note(mine.lap("step_looped")).startswith("your `dC` takes ")
    assert "the solution's `step_fast`" in mine.note(mine.lap("step_looped"))


def test_summary_shows_what_the_steps_of_the_last_race_cost(data):
    from checks import session, summary
    from checks.overview import COST

    session.reset()
    assert COST not in str(summary()) and summary().cost() == ""
    net, X, Y = data
    race(step_fast, step_looped, autograd=autograd_step, net=net, X=X, Y=Y, blocks=1, per_block=2)
    last = race(step_fast, autograd=autograd_step, net=net, X=X, Y=Y, blocks=1, per_block=2)
    shown = summary()
    text = str(shown)
    assert text.split(COST + "\n")[1] == str(last)  # the last race, as its own table shows it
    assert "step_looped" not in text and "<table" in shown.cost() and COST in shown._repr_html_()
    session.reset()
    assert COST not in str(summary())
