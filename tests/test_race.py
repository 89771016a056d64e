"""checks.race: steps side by side on the same minibatches, a wrong one never timed."""

from __future__ import annotations

import pytest
import torch

from checks import NotWritten
from checks.race import race
from tests import makemore
from tests.fast_steps import autograd_step, fused_step

ORDER = ["C", "W1", "b1", "W2", "b2", "bngain", "bnbias"]


@pytest.fixture(scope="module")
def data():
    """Exercise 4's network and a small made-up training set of contexts and targets."""
    p = makemore.init_params(27, 3, 10, 64, 2147483647)
    g = torch.Generator().manual_seed(3)
    X, Y = torch.randint(0, 27, (500, 3), generator=g), torch.randint(0, 27, (500,), generator=g)
    return [p[k].detach() for k in ORDER], X, Y


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
    result = race(step_fast, net=net, X=X, Y=Y, autograd=autograd_step, blocks=2, per_block=3)
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
        step_sign, step_unwritten, net=net, X=X, Y=Y, autograd=autograd_step, blocks=1, per_block=2
    )
    assert result.lap("step_sign").seconds is None
    assert result.note(result.lap("step_sign")) == (
        "not timed: its gradient of net[3] differs from autograd's"
    )
    assert result.lap("step_unwritten").problem.startswith("not timed: it raised NotWritten: ")
    assert result.ratio("step_sign") is None


def test_the_slower_step_is_told_its_biggest_saving_against_the_fastest(data):
    net, X, Y = data

    def step_looped(net, Xb, Yb):
        """The fused step with dC gathered row by row, as the lecture first does."""
        loss, grads = fused_step(net, Xb, Yb)
        demb = (grads[1] @ torch.zeros(grads[1].shape[1], 1)).new_zeros(*Xb.shape, net[0].shape[1])
        dC = torch.zeros_like(net[0])
        for k in range(Xb.shape[0]):
            for j in range(Xb.shape[1]):
                dC[Xb[k, j]] += demb[k, j]
        return loss, [grads[0] + dC, *grads[1:]]

    # (the loop's 1,000 operators run some twenty times longer than the fused step's 48)
    result = race(fused_step, step_looped, net=net, X=X, Y=Y, autograd=autograd_step, blocks=2)
    assert result.note(result.lap("step_looped")).startswith("your `dC` takes ")
    assert result.note(result.lap("fused_step")) == ""


@pytest.mark.parametrize("given", [None, ..., "step_fast"])
def test_what_is_not_a_function_gets_a_sentence(data, given):
    net, X, Y = data
    with pytest.raises(TypeError, match=r"race\(\) takes your step functions themselves"):
        race(given, net=net, X=X, Y=Y)
