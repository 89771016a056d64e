"""Central differences: independent of autograd, in float64, reported like cmp."""

from __future__ import annotations

import pytest
import torch

import checks
from checks import check_numeric, numgrad


def gen(seed):
    return torch.Generator().manual_seed(seed)


def test_numgrad_matches_closed_form_without_autograd():
    x = torch.randn(4, 3, generator=gen(0))
    g = numgrad(lambda x: (x**3).sum(), x)
    assert g.dtype == torch.float64 and not g.requires_grad
    assert torch.allclose(g, 3 * x.double() ** 2, rtol=1e-6, atol=1e-8)


def test_numgrad_several_inputs_and_untouched_originals():
    a = torch.randn(3, 5, generator=gen(1))
    w = torch.randn(5, 2, generator=gen(2))
    a0, w0 = a.clone(), w.clone()
    da, dw = numgrad(lambda a, w: torch.tanh(a @ w).sum(), a, w)
    assert torch.equal(a, a0) and torch.equal(w, w0)
    dn = 1 - torch.tanh(a.double() @ w.double()) ** 2
    assert torch.allclose(da, dn @ w.double().T, atol=1e-8)
    assert torch.allclose(dw, a.double().T @ dn, atol=1e-8)


def test_check_numeric_pass_and_minitorch_style_failure(capsys):
    checks.reset()
    x = torch.randn(6, generator=gen(3), dtype=torch.float64)
    f = lambda x: (x.exp() * x).sum()  # noqa: E731
    right = x.exp() * (1 + x)
    assert check_numeric("x", right, f, x).ok
    wrong = right.clone()
    wrong[4] += 1.0
    res = check_numeric("x", wrong, f, x)
    out = capsys.readouterr().out
    assert not res.ok and res.index == (4,)
    assert "received derivative" in res.where and "for argument 0 at index (4,)" in res.where
    assert "from central difference" in out
    assert check_numeric("x", -right, f, x, quiet=True).mistake == "sign"
    assert check_numeric("x", right[:3], f, x, quiet=True).mistake == "shape"


def test_check_numeric_wrt_second_argument():
    a = torch.randn(2, 3, generator=gen(4), dtype=torch.float64)
    w = torch.randn(3, 4, generator=gen(5), dtype=torch.float64)
    f = lambda a, w: (a @ w).pow(2).sum()  # noqa: E731
    dw = a.T @ (2 * (a @ w))
    assert check_numeric("w", dw, f, a, w, wrt=1, quiet=True).ok
    assert check_numeric("w", dw.T.contiguous(), f, a, w, wrt=1, quiet=True).mistake == "transpose"


@pytest.mark.parametrize("bad", [None, ..., "x", [1, 2, [3]]])
def test_check_numeric_never_raises(bad):
    x = torch.randn(3, generator=gen(6))
    res = check_numeric("x", bad, lambda x: x.sum(), x, quiet=True)
    assert not res.ok and res.mistake in checks.MISTAKES


def test_check_numeric_reports_a_failing_function():
    res = check_numeric("x", torch.ones(2), lambda x: 1 / 0, torch.ones(2), quiet=True)
    assert not res.ok and "ZeroDivisionError" in res.hint


def test_numeric_agrees_with_autograd_on_the_makemore_loss():
    """A second, independent confirmation of a gradient: the makemore loss in b2 by
    central differences."""
    from tests import makemore as mm

    try:
        p, f, Xb, Yb = mm.setup(dtype=torch.float64)
    except Exception as exc:
        pytest.skip(f"names.txt unavailable: {exc}")
    names = ["C", "W1", "b1", "W2", "b2", "bngain", "bnbias"]

    def loss_in_b2(b2):
        q = {k: p[k].detach() for k in names}
        q["b2"] = b2
        return mm.forward_loss(q, Xb, Yb)

    res = check_numeric("b2", p["b2"].grad, loss_in_b2, p["b2"].detach(), quiet=True)
    assert res.ok, res.hint


def test_check_numeric_on_a_single_number_gives_both_numbers_once():
    x = torch.tensor(0.5, dtype=torch.float64)
    f = lambda x: x**2  # noqa: E731
    res = check_numeric("x", 0.3, f, x, quiet=True)
    assert res.mistake == "wrong" and res.hint.startswith(
        "your dx is not the gradient (from central difference)"
    ), res.hint
    assert (
        res.where
        == "received derivative 0.3 for argument 0, but expected 1 from central difference."
    )
    assert "index" not in res.report() and res.feedback == res.hint
    res = check_numeric("x", 2.0, f, x, quiet=True)
    assert (
        res.mistake == "scale"
        and res.where
        == "received derivative 2 for argument 0, but expected 1 from central difference."
    )
