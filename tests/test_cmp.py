"""Unit tests of checks.cmp: the printed line, the verdict, every word of the mistake vocabulary."""

from __future__ import annotations

import warnings

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


def test_float_rounding_is_a_quiet_pass(capsys):
    t = leaf_with_grad((8, 8))
    res = cmp("x", t.grad * (1 + 1e-7), t)
    out = capsys.readouterr().out
    assert res.ok and not res.exact and 0 < res.maxdiff < 1e-5 and not res.notes
    assert out.splitlines() == [res.line()] and "exact: False" in out  # the line says it all


def test_tolerance_is_allclose_default_and_not_looser():
    t = leaf_with_grad((10,))
    e = t.grad
    assert cmp("x", e + 5e-9, t, quiet=True).ok  # within atol=1e-8
    bumped = e.clone()
    bumped[3] += 1e-3
    assert not cmp("x", bumped, t, quiet=True).ok
    assert not cmp("x", e * (1 + 1e-4), t, quiet=True).ok  # beyond rtol=1e-5


def test_a_dropped_leading_axis_passes_with_a_note_as_in_the_lecture(capsys):
    t = leaf_with_grad((1, 64))
    res = cmp("bngain", t.grad.view(64).clone(), t)
    out = capsys.readouterr().out
    assert res.ok and res.state == "note" and [n.word for n in res.notes] == ["keepdim"]
    assert "approximate: True" in out and "axis 0" in res.note and "keepdim=True" in res.note
    assert "! keepdim:" in out and "broadcast the wrong way" in out


def test_a_dropped_leading_axis_fails_with_strict_shapes():
    t = leaf_with_grad((1, 64))
    res = cmp("bngain", t.grad.view(64).clone(), t, strict_shapes=True, quiet=True)
    assert not res.ok and res.mistake == "shape" and "keepdim" in res.hint and res.maxdiff is None


@pytest.mark.parametrize(
    "answer_shape, shape", [((32,), (32, 1)), ((1, 27), (27,)), ((64, 1), (1, 64))]
)
def test_other_shape_differences_still_fail(answer_shape, shape):
    t = leaf_with_grad(shape)
    res = cmp("x", t.grad.reshape(answer_shape).clone(), t, quiet=True)
    assert not res.ok and res.mistake in ("shape", "transpose"), res


def test_a_dropped_leading_axis_with_wrong_values_fails_and_keeps_the_note():
    t = leaf_with_grad((1, 64))
    res = cmp("bngain", -t.grad.view(64), t, quiet=True)
    assert not res.ok and res.mistake == "sign" and [n.word for n in res.notes] == ["keepdim"]


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
        ((1, 64), lambda e: e.clone().expand(32, 64) / 32, "over axis 0 (`.sum(0"),
        ((64,), lambda e: e.clone().view(1, 64), "extra size-1"),
        ((32, 1), lambda e: torch.ones(1, 27), "summed over axis 0"),
        ((32, 1), lambda e: torch.ones(27), "summed over axis 0, but x was broadcast along axis 1"),
        ((27,), lambda e: torch.ones(32), "summed over axis 1, but x was broadcast along axis 0"),
        ((32, 3, 10), lambda e: e.clone().view(32, 30), ".view(x.shape)"),
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
    before = {
        k: v.grad.clone()
        for k, v in dict(counts=counts, counts_sum=counts_sum, probs=probs, x=x).items()
    }
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
    assert res.yours == pytest.approx(float(y[4, 7])) and res.expected == pytest.approx(
        float(t.grad[4, 7])
    )
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
    assert res.mistake == "no-grad" and "not `x.grad`" in res.hint


# ---------------------------------------------------------------- learner input never raises


@pytest.mark.parametrize(
    "answer",
    [
        0,
        1.5,
        float("nan"),
        True,
        "dx",
        b"x",
        {"a": 1},
        [1, 2],
        [[1, 2], [3]],
        [],
        (1,),
        np.ones((3, 4)),
        np.ones((4, 3)),
        np.array(["a", "b"]),
        np.float64(2.0),
        object(),
        print,
        torch.ones(3, 4, dtype=torch.int64),
        torch.ones(3, 4, dtype=torch.bool),
        torch.empty(0),
        torch.ones(3, 4, dtype=torch.complex64),
        torch.ones(3, 4).to_sparse(),
        torch.full((3, 4), float("inf")),
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
    assert "<table " in html and "sign" in html


def test_an_answer_not_written_yet_is_no_try():
    """Run All over the student copy runs every check on its `...`: that counts no try."""
    t = leaf_with_grad((2, 2))
    for _ in range(3):
        cmp("a", ..., t, quiet=True)
    assert checks.summary().rows[0][1] == 0
    cmp("a", -t.grad, t, quiet=True)
    cmp("a", t.grad.clone(), t, quiet=True)
    assert checks.summary().rows[0][1] == 2


def test_result_is_not_echoed_twice_in_the_same_cell(monkeypatch, capsys):
    from checks import kernel

    monkeypatch.setattr(kernel, "execution_count", lambda: 7)
    t = leaf_with_grad((2, 2))
    res = cmp("a", t.grad.clone(), t)
    capsys.readouterr()
    res._ipython_display_()
    assert capsys.readouterr().out == ""
    monkeypatch.setattr(kernel, "execution_count", lambda: 8)
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


# ---------------------------------------------------------------- single numbers (notebook 01)


def scalar(x):
    return torch.tensor(x, dtype=torch.float64, requires_grad=True)


def _chain():
    """Notebook 01, section 2: u = 1.5x, y = tanh(u), L = y**2 at x = 0.5; returns
    (tu, its gradient)."""
    tx = scalar(0.5)
    tu = 1.5 * tx
    tL = torch.tanh(tu) ** 2
    tu.retain_grad()
    tL.backward()
    return tu, float(tu.grad)


@pytest.mark.parametrize("k", [751 / 954, 191 / 856, 797 / 604, 5.0, -7.0, 1 / 5, 1.001])
def test_a_single_number_off_by_a_meaningless_factor_is_wrong_and_says_both_numbers(k):
    tu, g = _chain()
    res = cmp("u", g * k, tu, quiet=True)
    assert res.mistake == "wrong", res
    assert res.hint.startswith("your du is not the gradient (from autograd): re-derive it"), (
        res.hint
    )
    assert res.where == f"yours {g * k:.6g}, expected {g:.6g} from autograd."  # the numbers, once
    assert res.feedback == res.hint  # a graded learner reads no expected value
    assert "times" not in res.hint and "Mismatched" not in res.report()


@pytest.mark.parametrize(
    ("k", "words"),
    [
        (2.0, "2 times the gradient"),
        (3.0, "3 times"),
        (4.0, "4 times"),
        (0.5, "1/2 of the gradient"),
        (1 / 3, "1/3 of"),
        (0.25, "1/4 of"),
        (-2.0, "-2 times"),
        (-0.5, "-1/2 of"),
        (0.75, "3/4 times"),
        (-4 / 3, "-4/3 times"),
        (32.0, "32 is the batch size"),
        (1 / 32, "1/32 of the gradient, and 32 is the batch size"),
        (31.0, "31 is n-1"),
    ],
)
def test_a_single_number_off_by_a_simple_factor_is_scale(k, words):
    tu, g = _chain()
    res = cmp("u", g * k, tu, n=32, quiet=True)
    assert res.mistake == "scale" and words in res.hint, res.hint
    assert res.where == f"yours {g * k:.6g}, expected {g:.6g} from autograd."


def test_a_single_number_batch_factors_need_a_known_batch_size():
    tu, g = _chain()
    assert cmp("u", g * 32, tu, quiet=True).mistake == "wrong"
    assert cmp("u", g * 32 / 31, tu, n=32, quiet=True).mistake == "bessel"
    assert cmp("u", g * 32 / 31, tu, quiet=True).mistake == "wrong"


def test_a_one_element_tensor_is_a_single_number_too():
    t = leaf_with_grad((1,))
    g = float(t.grad[0])
    res = cmp("x", t.grad * 0.7123, t, quiet=True)
    assert res.mistake == "wrong" and res.hint.startswith("your dx is not the gradient")
    assert res.where == f"yours {g * 0.7123:.6g}, expected {g:.6g} from autograd."
    res = cmp("x", t.grad * 2, t, quiet=True)
    assert (
        res.mistake == "scale"
        and res.where == f"yours {2 * g:.6g}, expected {g:.6g} from autograd."
    )


def test_a_uniform_odd_factor_over_many_elements_is_still_scale():
    t = leaf_with_grad((4, 5))
    res = cmp("x", t.grad * (751 / 954), t, quiet=True)
    assert res.mistake == "scale" and "751/954 times the gradient" in res.hint


@pytest.mark.parametrize("shape", [(), (6, 7)])
@pytest.mark.parametrize(
    ("k", "words"),
    [
        (-2.0, "-2 times the gradient (the sign flipped, and twice the size)"),
        (-2 / 3, "-2/3 times the gradient (the sign flipped, and 2/3 of the size)"),
        (-0.5, "-1/2 of the gradient (the sign flipped, and 1/2 of the size)"),
    ],
)
def test_a_negative_factor_is_said_once(shape, k, words):
    t = leaf_with_grad(shape)
    res = cmp("d", t.grad * k, t, quiet=True)
    assert res.mistake == "scale" and words in res.hint, res.hint
    # "the sign flipped", "check the sign"
    assert "with the sign flipped" not in res.hint and res.hint.count("sign") == 2


def test_a_negative_batch_factor_names_the_sign_and_the_batch_size():
    t = leaf_with_grad((32, 5))
    res = cmp("x", t.grad * -32, t, n=32, quiet=True)
    assert (
        res.mistake == "scale"
        and "(the sign flipped, and 32 times the size), and 32 is the batch size n" in res.hint
    )


def test_a_single_number_not_written_yet_asks_for_a_number():
    t = leaf_with_grad(())
    for answer in (None, ...):
        res = cmp("d", answer, t, quiet=True)
        assert res.mistake == "missing" and res.hint.endswith(
            "with dd, a number (or a 0-d tensor)."
        ), res.hint
    assert "a tensor of shape (1,)" in cmp("d", None, leaf_with_grad((1,)), quiet=True).hint


def test_a_single_number_as_a_python_float_passes():
    ta, tb = scalar(2.0), scalar(-3.0)
    tL = ta * tb
    tL.backward()
    assert cmp("a", -3.0, ta, quiet=True).ok and cmp("a", -3, ta, quiet=True).ok
    assert cmp("b", 2.0, tb, quiet=True).ok


def test_a_single_nan_says_so_without_an_index():
    tu, _ = _chain()
    res = cmp("u", float("nan"), tu, quiet=True)
    assert (
        res.mistake == "nan" and res.hint.startswith("your du is NaN:") and "index" not in res.hint
    )


# Notebook 01 (solutions/01-scalar-autograd.ipynb), "A value used twice" and the quiz, as the
# learner runs them.
USED_TWICE = """
import torch
from checks import cmp

def scalar(x):
    return torch.tensor(x, dtype=torch.float64, requires_grad=True)

a, b = 3.0, -2.0
ta, tb = scalar(a), scalar(b)
tL = ta * tb + ta
tL.backward(RETAIN)
L = tL.item()
da = b * 1.0              # the path through the sum forgotten
first = cmp('a (used twice)', da, ta)
da += 1.0
second = cmp('a (used twice)', da, ta)

a = 3.0
ta = scalar(a)
tL = ta * ta
tL.backward(RETAIN)
da = a * 1.0              # forgot to add the second slot's contribution
quiz = cmp('a (a*a)', da, ta)
da += a * 1.0
quiz_ok = cmp('a (a*a)', da, ta)
"""


def _run_notebook(source: str, retain: bool) -> dict:
    ns: dict = {}
    code = source.replace("RETAIN", "retain_graph=True" if retain else "")
    exec(compile(code, "<notebook>", "exec"), ns)
    return ns


@pytest.mark.parametrize("retain", [False, True])
def test_a_value_used_twice_forgotten_path_is_missing_path(retain, capsys):
    ns = _run_notebook(USED_TWICE, retain)
    first, quiz = ns["first"], ns["quiz"]
    assert first.mistake == "missing-path", first.hint
    assert (
        "add the one through `tL` (add)" in first.hint
        and first.where == "yours -2, expected -1 from autograd."
    )
    assert quiz.mistake == "missing-path", quiz.hint
    assert "is used 2 times (input 1 of `tL` (mul), input 2 of `tL` (mul))" in quiz.hint
    assert ns["second"].ok and ns["quiz_ok"].ok
    assert "✗ scale" not in capsys.readouterr().out


def test_the_root_is_the_last_named_scalar_not_an_intermediate_one():
    ta, tb = scalar(3.0), scalar(-2.0)
    tm = ta * tb  # named, 0-d and reaching ta, but not where backward started
    tL = tm + ta
    tL.backward()
    res = cmp("a", -2.0, ta, quiet=True)
    assert res.mistake == "missing-path" and "`tL` (add)" in res.hint, res.hint
    assert tm is not tL


@pytest.mark.parametrize("retain", [False, True])
def test_contributions_that_cannot_be_measured_are_said_to_be_unknown(retain):
    ta, tb = scalar(3.0), scalar(-2.0)
    # neither use's output is named or kept: after a plain backward, nothing to rebuild from
    tL = (ta * tb + ta) * 1.5
    tL.backward(retain_graph=retain)
    res = cmp("a", 1.5 * -2.0, ta, quiet=True)
    if retain:
        assert res.mistake == "missing-path", res.hint
    else:
        unknown = "cmp cannot tell whether one of their contributions is missing"
        assert res.mistake == "scale" and unknown in res.hint, res.hint
        res = cmp("a", 0.37, ta, quiet=True)
        assert (
            res.mistake == "wrong"
            and unknown in res.hint
            and "expected -1.5 from autograd" in res.where
        )


def test_a_single_path_with_the_wrong_sign_among_two():
    ta, tb = scalar(3.0), scalar(-2.0)
    tL = ta * tb + ta
    tL.backward()
    res = cmp("a", 2.0 + 1.0, ta, quiet=True)  # -b instead of b through the product
    assert res.mistake == "sign" and "a mul" in res.hint, res.hint


def test_inspecting_the_graph_raises_no_warning():
    ta, tb = scalar(3.0), scalar(-2.0)
    tL = ta * tb + ta  # a non-leaf whose .grad is not kept: reading it warns, unless we silence it
    tL.backward()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = cmp("a", -2.0, ta, quiet=True)
        cmp("a", 0.37, ta, quiet=True)
    assert res.mistake == "missing-path"
    assert [str(w.message) for w in caught] == []


# ---------------------------------------------------------------- values that are not gradients


@pytest.mark.parametrize(
    "make, mistake",
    [
        (lambda e: -e, "sign"),
        (lambda e: 2 * e, "scale"),
        (lambda e: e.T.clone(), "transpose"),
        (lambda e: e + 0.3, "wrong"),
        (lambda e: ..., "missing"),
        (lambda e: None, "missing"),
        (lambda e: e[0], "shape"),
    ],
)
def test_check_value_speaks_of_the_value_not_a_gradient(make, mistake):
    from checks import check_value

    e = torch.randn(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    res = check_value("p (5 steps)", make(e), e, source="torch.optim.AdamW", quiet=True)
    assert not res.ok and res.mistake == mistake
    text = res.report()
    assert "gradient" not in text and "dp" not in text and "local derivative" not in text, text
    if mistake not in ("missing", "shape", "transpose"):
        assert (
            "the value from torch.optim.AdamW" in res.hint and "from torch.optim.AdamW" in res.where
        )


def test_check_value_passes_close_values_and_numpy():
    import numpy as np

    from checks import check_value

    e = torch.randn(3, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    assert check_value("m", e * (1 + 1e-9), e, source="torch.optim.AdamW", quiet=True).ok
    assert check_value("m", np.array(e.tolist()), e, source="torch.optim.AdamW", quiet=True).ok


def test_check_value_single_number_says_both_numbers_once():
    from checks import check_value

    res = check_value(
        "m", 1.37, torch.tensor(2.0, dtype=torch.float64), source="torch.optim.AdamW", quiet=True
    )
    assert (
        res.mistake == "wrong"
        and res.hint == "your m is not the value from torch.optim.AdamW: re-derive it step by step."
    )
    assert res.where == "yours 1.37, expected 2 from torch.optim.AdamW."


def test_a_value_object_where_a_number_was_meant_says_what_happened():
    class Value:  # a micrograd-style number, as notebook 01 builds it
        def __init__(self, data):
            self.data, self.grad = data, 0.0

    t = torch.tensor(-2.0, dtype=torch.float64, requires_grad=True)
    (t * 3).backward()
    res = cmp("d", Value(-2.0), t, quiet=True)
    assert res.mistake == "wrong" and "is a Value (data=-2.0), not a number" in res.hint
    assert "run this section again from its first code cell" in res.hint


@pytest.mark.parametrize("slip", ["after", "never"])
def test_a_softmax_mask_applied_after_the_softmax_or_never_is_named(slip):
    """Causal attention's probabilities: masked after the softmax (rows no longer sum to 1) or not
    masked at all; a right answer and an answer wrong another way are not called a mask."""
    from checks import check_value

    g = torch.Generator().manual_seed(0)
    scores = torch.randn(2, 3, 5, 5, generator=g, dtype=torch.float64)
    mask = torch.tril(torch.ones(5, 5, dtype=torch.bool))
    probs = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
    wrong = torch.softmax(scores, -1)
    if slip == "after":
        wrong = wrong.masked_fill(~mask, 0.0)
    res = check_value("att_probs", wrong, probs, source="autograd", quiet=True)
    assert res.mistake == "mask", res
    assert ("came after the softmax" if slip == "after" else "the mask is missing") in res.hint, (
        res.hint
    )
    assert check_value("att_probs", probs.clone(), probs, source="autograd", quiet=True).ok
    for other in (probs**2, probs.flip(-1), probs * 0.9):  # wrong in other ways
        assert (
            check_value("att_probs", other, probs, source="autograd", quiet=True).mistake != "mask"
        )


@pytest.mark.parametrize("k", [3.0, 1 / 3])
def test_a_missing_or_doubled_attention_scale_names_the_head_size(k):
    """dq without (or with twice) the 1/sqrt(head_size) of attention's scores, where the notebook
    has a head size: the factor 3 is read as sqrt(9)."""
    hs = 9  # noqa: F841 - read by cmp from this frame, as from a notebook's globals
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 5, hs, generator=g, requires_grad=True)
    kk = torch.randn(2, 5, hs, generator=g)
    att = (q @ kk.transpose(-2, -1)) * hs**-0.5
    loss = (att.softmax(-1) * torch.randn(2, 5, 5, generator=g)).sum()
    loss.backward()
    res = cmp("q", q.grad * k, q, quiet=True)
    assert res.mistake == "scale" and "the square root of the head size" in res.hint, res.hint
    assert ("is missing" if k > 1 else "one 1/sqrt(head_size) too many") in res.hint, res.hint


def test_a_paths_use_is_data_and_its_label_is_made_from_it():
    """A use of a tensor crosses to the diagnosis (and the grader's records) as a ``Use``: the
    operation, the tensor it makes, the input where the operation takes the tensor twice."""
    from checks.diagnose import Use
    from checks.grading.facts import use_of, use_record
    from checks.graph import GraphFacts

    a = torch.randn(3, dtype=torch.float64, requires_grad=True)
    sq, ex = a * a, a.exp()
    loss = (sq + ex).sum()
    loss.backward()
    uses = [u for u, _ in GraphFacts(a, a.grad, {"sq": sq, "ex": ex}, loss).paths()]
    assert sorted(uses, key=str) == [
        Use("`ex` (exp)", "ex"),
        Use("`sq` (mul)", "sq", 0),
        Use("`sq` (mul)", "sq", 1),
    ]
    assert sorted(map(str, uses))[1:] == ["input 1 of `sq` (mul)", "input 2 of `sq` (mul)"]
    assert [use_of(use_record(u)) for u in uses] == uses


def test_a_path_left_out_is_named_before_the_sign_its_numbers_match():
    """``x`` feeds ``x**2`` and ``x**2 / x`` (which is ``x``): the direct term of the division,
    kept alone, is minus the whole gradient."""
    x = (torch.rand(4, 5, generator=gen(7)) + 0.5).requires_grad_(True)
    square = x**2
    out = square / x
    for t in (square, out):
        t.retain_grad()
    loss = (out * torch.randn(4, 5, generator=gen(8))).sum()
    loss.backward(retain_graph=True)
    kept = -square.detach() / x.detach() ** 2 * out.grad
    assert torch.allclose(kept, -x.grad)
    res = cmp("x", kept, x, loss=loss, quiet=True)
    assert (res.ok, res.mistake) == (False, "missing-path"), res.hint


def test_a_path_left_out_is_named_before_the_transpose_its_numbers_match():
    """A square ``x`` used as it is and transposed, the second term ``G.T - G``: the first term
    kept alone is the whole gradient transposed."""
    g = torch.randn(4, 4, generator=gen(9))
    x = torch.randn(4, 4, generator=gen(10)).requires_grad_(True)
    loss = (x * g).sum() + (x.T * (g - g.T)).sum()
    loss.backward(retain_graph=True)
    assert torch.allclose(g, x.grad.T)
    res = cmp("x", g.clone(), x, loss=loss, quiet=True)
    assert (res.ok, res.mistake) == (False, "missing-path"), res.hint
    # the whole gradient transposed, where no use's term is: still a transpose
    assert cmp("x", x.grad.T.clone() + 1.0, x, loss=loss, quiet=True).mistake != "missing-path"


def test_an_answer_left_at_zeros_is_no_path_left_out():
    """Zeros where one use adds almost nothing (the path through a row's maximum, about 1e-9):
    no formula yet, not that path alone."""
    logits = torch.randn(6, 5, generator=gen(11)).requires_grad_(True)
    maxes = logits.max(1, keepdim=True).values
    norm = logits - maxes
    loss = -norm.log_softmax(1)[range(6), torch.tensor([0, 1, 2, 3, 4, 0])].mean()
    loss.backward(retain_graph=True)
    res = cmp("logits", torch.zeros(6, 5), logits, loss=loss, quiet=True)
    assert res.mistake == "wrong" and "all zeros" in res.hint
