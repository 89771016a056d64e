"""Unit tests of checks.cmp: the printed line, the verdict, every word of the mistake vocabulary."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import checks
from checks import MISTAKES, cmp


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def leaf_with_grad(shape, seed=0, dtype=torch.float32):
    """A leaf tensor whose .grad is a known random tensor."""
    t = torch.randn(shape, generator=gen(seed), dtype=dtype).requires_grad_(True)
    t.grad = torch.randn(shape, generator=gen(seed + 1), dtype=dtype)
    return t


@pytest.fixture(autouse=True)
def fresh():
    checks.reset()
    yield
    checks.reset()


# ---------------------------------------------------------------- the line and the verdict


def test_prints_the_lectures_line(capsys):
    t = leaf_with_grad((4, 5))
    res = cmp("logprobs", t.grad.clone(), t)
    out = capsys.readouterr().out.splitlines()
    assert out == ["logprobs        | exact: True  | approximate: True  | maxdiff: 0.0"]
    assert res.ok and res.exact and res.maxdiff == 0.0 and res.mistake is None and res.hint is None
    assert bool(res) is True


def test_float_rounding_is_a_pass_and_is_said(capsys):
    t = leaf_with_grad((8, 8))
    res = cmp("x", t.grad * (1 + 1e-7), t)
    out = capsys.readouterr().out
    assert res.ok and not res.exact and 0 < res.maxdiff < 1e-5
    assert "approximate: True" in out and "exact: False" in out and "float rounding" in out


def test_tolerance_is_allclose_default_and_not_looser():
    t = leaf_with_grad((10,))
    e = t.grad
    assert cmp("x", e + 5e-9, t, quiet=True).ok  # within atol=1e-8
    bumped = e.clone()
    bumped[3] += 1e-3
    assert not cmp("x", bumped, t, quiet=True).ok
    assert not cmp("x", e * (1 + 1e-4), t, quiet=True).ok  # beyond rtol=1e-5


def test_broadcastable_shape_fails_although_the_lecture_would_pass(capsys):
    t = leaf_with_grad((1, 64))
    res = cmp("bngain", t.grad.view(64).clone(), t)
    out = capsys.readouterr().out
    assert not res.ok and res.mistake == "shape" and "keepdim" in res.hint
    assert "approximate: False" in out and res.maxdiff is None


# ---------------------------------------------------------------- one test per mistake word


def test_missing():
    t = leaf_with_grad((3, 4))
    for answer in (None, ...):
        res = cmp("x", answer, t, quiet=True)
        assert (res.ok, res.mistake) == (False, "missing")
        assert "not written yet" in res.hint and "(3, 4)" in res.hint


def test_nan_points_at_the_first_bad_value():
    t = leaf_with_grad((3, 4))
    y = t.grad.clone()
    y[1, 2] = float("nan")
    res = cmp("x", y, t, quiet=True)
    assert res.mistake == "nan" and "(1, 2)" in res.hint
    y[1, 2] = float("inf")
    assert cmp("x", y, t, quiet=True).mistake == "nan"


@pytest.mark.parametrize(
    ("shape", "answer", "needle"),
    [
        ((32, 1), lambda e: e.clone().view(32), "keepdim"),
        ((1, 64), lambda e: e.clone().expand(32, 64) / 32, "sum your gradient over axis 0"),
        ((64,), lambda e: e.clone().view(1, 64), "extra size-1"),
        ((32, 1), lambda e: torch.ones(1, 27), "summed over axis 0"),
        ((32, 1), lambda e: torch.ones(27), "summed over axis 0, but x was broadcast along axis 1"),
        ((27,), lambda e: torch.ones(32), "summed over axis 1, but x was broadcast along axis 0"),
        ((32, 3, 10), lambda e: e.clone().view(32, 30), ".view(32, 3, 10)"),
        ((32, 64), lambda e: torch.ones(32, 27), "27 vs 64"),
        ((5, 5), lambda e: torch.tensor(1.0), "one number per element"),
    ],
)
def test_shape(shape, answer, needle):
    t = leaf_with_grad(shape)
    res = cmp("x", answer(t.grad), t, quiet=True)
    assert res.mistake == "shape" and needle in res.hint, res.hint


def test_transpose_before_shape_and_for_square():
    t = leaf_with_grad((30, 64))
    res = cmp("W1", t.grad.T.clone(), t, quiet=True)
    assert res.mistake == "transpose"
    sq = leaf_with_grad((6, 6))
    assert cmp("W", sq.grad.T.clone(), sq, quiet=True).mistake == "transpose"


def test_sign():
    t = leaf_with_grad((4, 7))
    res = cmp("x", -t.grad, t, quiet=True)
    assert res.mistake == "sign" and "negative" in res.hint


def test_scale_names_factor_and_batch_size():
    x = leaf_with_grad((32, 27))
    t = x * 1.0  # a non-leaf: its first dim is taken as the batch size
    t.retain_grad()
    t.grad = x.grad
    res = cmp("logits", t.grad * 32, t, quiet=True)
    assert res.mistake == "scale" and "32 times" in res.hint and "batch size" in res.hint
    res = cmp("logits", t.grad / 32, t, quiet=True)
    assert res.mistake == "scale" and "1/32" in res.hint and "batch size" in res.hint
    res = cmp("logits", t.grad * 2, t, quiet=True)
    assert res.mistake == "scale" and "2 times" in res.hint and "batch size" not in res.hint
    w = leaf_with_grad((64, 27))  # a parameter: the batch size comes from n=
    res = cmp("W2", w.grad / 32, w, n=32, quiet=True)
    assert res.mistake == "scale" and "batch size" in res.hint


def test_bessel():
    t = leaf_with_grad((32, 64))
    assert cmp("bndiff2", t.grad * 31 / 32, t, n=32, quiet=True).mistake == "bessel"
    res = cmp("bndiff2", t.grad * 32 / 31, t, n=32, quiet=True)
    assert res.mistake == "bessel" and "n=32" in res.hint


def _counts_graph(retain: bool):
    """counts feeds probs (mul) and counts_sum (sum), as in the lecture."""
    x = torch.randn(5, 6, generator=gen(3), requires_grad=True)
    counts = x.exp()
    counts_sum = counts.sum(1, keepdim=True)
    counts_sum_inv = counts_sum**-1
    probs = counts * counts_sum_inv
    for v in (counts, counts_sum, counts_sum_inv, probs):
        v.retain_grad()
    loss = -probs.log()[range(5), torch.tensor([0, 1, 2, 3, 4])].mean()
    loss.backward(retain_graph=retain)
    return x, counts, counts_sum, counts_sum_inv, probs, loss


@pytest.mark.parametrize("retain", [False, True])
def test_missing_path_names_the_missing_use(retain):
    x, counts, counts_sum, counts_sum_inv, probs, loss = _counts_graph(retain)
    only_probs = counts_sum_inv.detach() * probs.grad
    res = cmp("counts", only_probs, counts, quiet=True)
    assert res.mistake == "missing-path"
    assert "`counts_sum`" in res.hint.split("add the one through")[1]
    full = only_probs + counts_sum.grad.expand(5, 6)
    assert cmp("counts", full, counts, quiet=True).ok


def test_missing_path_leaves_grads_untouched():
    x, counts, counts_sum, counts_sum_inv, probs, loss = _counts_graph(retain=True)
    before = {k: v.grad.clone() for k, v in dict(counts=counts, counts_sum=counts_sum, probs=probs, x=x).items()}
    cmp("counts", counts_sum_inv.detach() * probs.grad, counts, quiet=True)
    for k, v in dict(counts=counts, counts_sum=counts_sum, probs=probs, x=x).items():
        assert torch.equal(v.grad, before[k]), k


def test_missing_path_with_explicit_loss_inside_a_function():
    def run():
        x, counts, counts_sum, counts_sum_inv, probs, loss = _counts_graph(retain=True)
        return cmp("c", counts_sum.grad.expand(5, 6).clone(), counts, loss=loss, quiet=True)

    res = run()
    assert res.mistake == "missing-path" and "mul" in res.hint


@pytest.mark.parametrize("retain", [False, True])
def test_accumulate(retain):
    C = torch.randn(27, 10, generator=gen(5), requires_grad=True)
    Xb = torch.randint(0, 27, (32, 3), generator=gen(6))
    emb = C[Xb]
    emb.retain_grad()
    loss = (emb.tanh() * torch.randn(32, 3, 10, generator=gen(7))).sum()
    loss.backward(retain_graph=retain)
    dC = torch.zeros_like(C)
    dC[Xb.view(-1)] = emb.grad.view(-1, 10)  # overwrites repeated rows
    res = cmp("C", dC, C, quiet=True)
    assert res.mistake == "accumulate" and "index_add_" in res.hint
    good = torch.zeros_like(C).index_add_(0, Xb.view(-1), emb.grad.view(-1, 10))
    assert cmp("C", good, C, quiet=True).ok


def test_autograd_grad_and_views_of_it():
    t = leaf_with_grad((4, 4))
    assert cmp("x", t.grad, t, quiet=True).mistake == "autograd-grad"
    assert cmp("x", t.grad[:, :], t, quiet=True).mistake == "autograd-grad"
    assert cmp("x", t.grad.clone(), t, quiet=True).ok


def test_wrong():
    t = leaf_with_grad((4, 5))
    res = cmp("x", torch.randn(4, 5, generator=gen(99)), t, quiet=True)
    assert res.mistake == "wrong" and not res.ok
    assert cmp("x", torch.zeros(4, 5), t, quiet=True).hint.startswith("your dx is all zeros")


def test_worst_element_is_pointed_at(capsys):
    t = leaf_with_grad((8, 9))
    y = t.grad.clone()
    y[4, 7] += 3.0
    y[1, 1] += 0.5
    res = cmp("x", y, t)
    out = capsys.readouterr().out
    assert res.index == (4, 7) and res.mismatched == 2 and res.total == 72
    assert res.yours == pytest.approx(float(y[4, 7])) and res.expected == pytest.approx(float(t.grad[4, 7]))
    assert "Mismatched elements: 2 / 72 (2.8%)" in out and "at index (4, 7)" in out


# ---------------------------------------------------------------- what is passed as t


def test_no_grad_messages_say_what_to_call():
    x = torch.randn(3, requires_grad=True)
    y = x * 2  # not retained
    (y.sum()).backward()
    res = cmp("y", torch.ones(3), y, quiet=True)
    assert res.mistake == "no-grad" and "y.retain_grad()" in res.hint
    z = torch.randn(3, requires_grad=True)
    assert "loss.backward()" in cmp("z", torch.ones(3), z, quiet=True).hint
    assert "does not require grad" in cmp("z", torch.ones(3), torch.ones(3), quiet=True).hint
    assert cmp("w", torch.ones(3), None, quiet=True).mistake == "no-grad"
    assert cmp("w", torch.ones(3), np.ones(3), quiet=True).mistake == "no-grad"


def test_passing_the_grad_instead_of_the_tensor():
    x = torch.randn(3, requires_grad=True)
    x.sum().backward()
    res = cmp("x", torch.ones(3), x.grad, quiet=True)
    assert res.mistake == "no-grad" and "not x.grad" in res.hint


# ---------------------------------------------------------------- learner input never raises


@pytest.mark.parametrize(
    "answer",
    [
        0, 1.5, float("nan"), True, "dx", b"x", {"a": 1}, [1, 2], [[1, 2], [3]], [], (1,),
        np.ones((3, 4)), np.ones((4, 3)), np.array(["a", "b"]), np.float64(2.0), object(), print,
        torch.ones(3, 4, dtype=torch.int64), torch.ones(3, 4, dtype=torch.bool), torch.empty(0),
        torch.ones(3, 4, dtype=torch.complex64), torch.ones(3, 4).to_sparse(), torch.full((3, 4), float("inf")),
    ],
)
def test_never_raises(answer):
    t = leaf_with_grad((3, 4))
    res = cmp("x", answer, t, quiet=True)
    assert not res.ok and res.mistake in MISTAKES and res.hint


@pytest.mark.parametrize(
    "convert",
    [
        lambda e: e.numpy().copy(),
        lambda e: e.tolist(),
        lambda e: e.double(),
        lambda e: e.clone().requires_grad_(True),
        lambda e: e.T.contiguous().T,  # non-contiguous view of the same values
        lambda e: [row for row in e],  # a list of tensors
    ],
)
def test_right_values_in_other_forms_pass(convert):
    t = leaf_with_grad((3, 4))
    res = cmp("x", convert(t.grad.clone()), t, quiet=True)
    assert res.ok, res.hint


def test_zero_dim_and_empty_tensors():
    s = torch.tensor(2.0, requires_grad=True)
    (s * 3).backward()
    assert cmp("s", torch.tensor(3.0), s, quiet=True).ok
    assert cmp("s", 3.0, s, quiet=True).ok
    assert cmp("s", torch.tensor([3.0]), s, quiet=True).mistake == "shape"
    e = torch.empty(0, 4, requires_grad=True)
    e.sum().backward()
    assert cmp("e", torch.empty(0, 4), e, quiet=True).ok


def test_float64_tensor_checked_in_float64():
    t = leaf_with_grad((5, 5), dtype=torch.float64)
    assert cmp("x", t.grad.clone(), t, quiet=True).ok
    assert not cmp("x", t.grad.float(), t, quiet=True, rtol=1e-12, atol=0).ok


# ---------------------------------------------------------------- the summary


def test_summary_lists_latest_status_and_tries(capsys):
    t = leaf_with_grad((2, 2))
    cmp("a", None, t, quiet=True)
    cmp("b", -t.grad, t, quiet=True)
    cmp("a", t.grad.clone(), t, quiet=True)
    table = checks.summary()
    out = capsys.readouterr().out
    assert [r.name for r in checks.results()] == ["a", "b"]
    assert table.passed == 1
    assert "a " in out and "pass" in out and "sign" in out and "1 / 2 checks pass" in out
    html = table._repr_html_()
    assert "<table>" in html and "sign" in html


def test_result_is_not_echoed_twice_in_the_same_cell(monkeypatch, capsys):
    from checks import compare

    monkeypatch.setattr(compare, "_execution_count", lambda: 7)
    t = leaf_with_grad((2, 2))
    res = cmp("a", t.grad.clone(), t)
    capsys.readouterr()
    res._ipython_display_()
    assert capsys.readouterr().out == ""
    monkeypatch.setattr(compare, "_execution_count", lambda: 8)
    res._ipython_display_()
    assert "| approximate: True" in capsys.readouterr().out


def test_nan_where_autograd_has_nan_too_is_a_pass():
    t = leaf_with_grad((3, 3))
    t.grad[0, 1] = float("nan")
    assert cmp("x", t.grad.clone(), t, quiet=True).ok
    y = t.grad.clone()
    y[0, 1] = 0.0
    assert not cmp("x", y, t, quiet=True).ok


def test_a_tiny_factor_is_not_called_bessel():
    t = leaf_with_grad((5,))
    res = cmp("x", t.grad * 1.001, t, quiet=True)
    assert res.mistake == "scale" and "1001/1000" in res.hint


def test_a_sum_over_an_axis_that_was_not_broadcast():
    t = leaf_with_grad((32, 64))
    res = cmp("h", t.grad.sum(0), t, quiet=True)
    assert res.mistake == "shape" and "needs no sum" in res.hint
