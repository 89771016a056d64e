"""Property tests of ``checks.cmp`` over random shapes, dtypes and values.

Every tensor is drawn from a seed that hypothesis chooses (``torch.Generator().manual_seed(seed)``),
so a failure shrinks to, and replays from, one explicit seed. No backward pass is run: ``t`` is a
leaf that requires grad and whose ``.grad`` is set to the expected gradient ``e`` directly, which is
all ``cmp`` compares with.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

import checks
from checks import MISTAKES, Result

SETTINGS = settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
RTOL, ATOL = 1e-5, 1e-8  # cmp's defaults (torch.allclose's)

# ---------------------------------------------------------------- strategies

seeds = st.integers(min_value=0, max_value=2**32 - 1)
dtypes = st.sampled_from([torch.float32, torch.float64])
dims = st.integers(min_value=1, max_value=12)
shapes = st.one_of(st.just(()), st.lists(dims, min_size=1, max_size=3).map(tuple))
scales = st.sampled_from([1e-2, 1.0, 1e2])


@st.composite
def gradients(draw, shape=shapes, kinds=("normal",)) -> torch.Tensor:
    """An expected gradient ``e``: seeded normal values times a scale (or zeros / small ints)."""
    shp = draw(shape)
    dtype = draw(dtypes)
    kind = draw(st.sampled_from(kinds))
    g = torch.Generator().manual_seed(draw(seeds))
    if kind == "zeros":
        return torch.zeros(shp, dtype=dtype)
    if kind == "ints":
        return torch.randint(-3, 4, shp, generator=g).to(dtype)
    return torch.randn(shp, generator=g, dtype=dtype) * draw(scales)


def significant(e: torch.Tensor) -> bool:
    return e.numel() > 0 and float(e.abs().max()) > 1e-3


def leaf_with_grad(e: torch.Tensor) -> torch.Tensor:
    """A leaf ``t`` that requires grad, with ``t.grad`` the expected gradient (a copy of ``e``)."""
    t = torch.zeros_like(e).requires_grad_(True)
    t.grad = e.clone()
    return t


def check(dt, t, name: str = "x") -> Result:
    """``checks.cmp`` as the learner calls it, plus the invariants every result must satisfy."""
    has_grad = isinstance(t, torch.Tensor) and (t.is_leaf or t.retains_grad) and t.grad is not None
    grad_before = t.grad.clone() if has_grad else None
    dt_before = (
        dt.detach().clone()
        if isinstance(dt, torch.Tensor) and dt.layout == torch.strided and not dt.is_meta
        else None
    )
    res = checks.cmp(name, dt, t, quiet=True)
    # neither the gradient nor the answer is touched
    if grad_before is not None:
        assert torch.equal(t.grad, grad_before) or torch.allclose(
            t.grad, grad_before, rtol=0, atol=0, equal_nan=True
        )
    if dt_before is not None:
        same = dt.detach()
        assert same.shape == dt_before.shape and (
            torch.equal(same, dt_before)
            or bool((same.isnan() & dt_before.isnan() | (same == dt_before)).all())
        )
    assert isinstance(res, Result)
    assert bool(res) is res.ok
    if res.ok:
        assert res.mistake is None, res
    else:
        assert res.mistake in MISTAKES, res
        assert res.hint, res
    # what is printed agrees with the verdict
    line = res.line()
    assert ("approximate: True" in line) == res.ok, line
    assert ("exact: True" in line) == res.exact, line
    if res.exact and res.mistake != "autograd-grad":
        assert res.ok, res
    res.report()  # renders without error
    return res


def numerically_right(dt, e: torch.Tensor) -> bool:
    """An independent oracle: does ``dt`` hold ``e``'s values in ``e``'s shape, or in that shape
    without its leading size-1 axes (allclose)?"""
    if dt is None or dt is Ellipsis or isinstance(dt, (str, bytes, dict, set)) or callable(dt):
        return False
    try:
        if isinstance(dt, torch.Tensor):
            y = dt.detach()
            y = y.to_dense() if y.layout != torch.strided else y
        elif isinstance(dt, (np.ndarray, np.generic)):
            if np.iscomplexobj(dt):
                return False
            y = torch.as_tensor(np.asarray(dt, dtype=np.float64))
        elif isinstance(dt, (list, tuple)) and dt and all(isinstance(v, torch.Tensor) for v in dt):
            y = torch.stack([v.detach() for v in dt])
        else:
            y = torch.as_tensor(dt)
        if y.is_complex() or y.device.type != "cpu":
            return False
        y = y.to(torch.float64)
    except Exception:
        return False
    ys, es = tuple(y.shape), tuple(e.shape)
    # only leading size-1 axes missing: it broadcasts back exactly (a pass, noted)
    k = len(es) - len(ys)
    if ys != es and not (k > 0 and es[k:] == ys and set(es[:k]) == {1}):
        return False
    return bool(torch.allclose(y.reshape(es), e.double(), rtol=RTOL, atol=ATOL))


# ---------------------------------------------------------------- the right answer passes


def _non_contiguous(e: torch.Tensor) -> torch.Tensor:
    """A view with ``e``'s values and shape but every other element of a wider buffer."""
    wide = torch.stack([e, torch.full_like(e, 7.0)], dim=-1)
    return wide[..., 0]


RIGHT_FORMS = {
    "clone": lambda e: e.clone(),
    "float64": lambda e: e.double(),
    "float32": lambda e: e.float(),
    "non-contiguous view": _non_contiguous,
    "transposed memory": lambda e: e.mT.contiguous().mT if e.dim() >= 2 else e.clone(),
    "numpy": lambda e: e.numpy().copy(),
    "numpy float64": lambda e: e.double().numpy().copy(),
    "list": lambda e: e.tolist(),
    "requires_grad leaf": lambda e: e.clone().requires_grad_(True),
    "requires_grad non-leaf": lambda e: e.clone().requires_grad_(True) * 1,
    "parameter": lambda e: torch.nn.Parameter(e.clone()),
}


@SETTINGS
@given(e=gradients(kinds=("normal", "zeros", "ints")), form=st.sampled_from(sorted(RIGHT_FORMS)))
def test_right_answer_passes(e, form):
    t = leaf_with_grad(e)
    dt = RIGHT_FORMS[form](e)
    if form == "non-contiguous view" and e.numel() > 1:
        assert not dt.is_contiguous()
    res = check(dt, t)
    assert res.ok, res
    assert res.mistake is None and res.hint is None
    assert res.maxdiff is not None and res.maxdiff <= ATOL + RTOL * float(e.abs().max())
    if form in (
        "clone",
        "non-contiguous view",
        "transposed memory",
        "requires_grad leaf",
        "parameter",
    ):
        assert res.exact and res.maxdiff == 0.0, res


@SETTINGS
@given(e=gradients(), seed=seeds)
def test_float_rounding_passes_but_is_not_exact(e, seed):
    """A last-bit difference: approximate, not exact, and a plain pass."""
    assume(significant(e))
    t = leaf_with_grad(e)
    g = torch.Generator().manual_seed(seed)
    i = int(torch.randint(e.numel(), (), generator=g))
    dt = e.clone()
    flat = dt.view(-1)
    flat[i] = torch.nextafter(flat[i], torch.tensor(math.inf, dtype=e.dtype))
    res = check(dt, t)
    assert res.ok and not res.exact, res
    assert not res.notes, res  # rounding needs no note: "exact: False" in the line says it


# ---------------------------------------------------------------- junk answers


class _Hostile:
    """An object that fails every conversion it is asked for."""

    def __len__(self):
        raise ZeroDivisionError("len")

    def __float__(self):
        raise ArithmeticError("float")

    def __array__(self, *a, **k):
        raise RuntimeError("array")


def _junk_from_e(e: torch.Tensor, seed: int) -> st.SearchStrategy:
    """Answers built from ``e`` that are wrong in kind (or, rarely, right: the oracle decides)."""
    g = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    other_shape = tuple(int(s) for s in rng.integers(0, 5, size=int(rng.integers(0, 4))))
    items = [
        e.int(),
        e.long(),
        e.bool(),
        e.half(),
        e.bfloat16(),
        e.to(torch.complex64),
        e[None],
        e.unsqueeze(-1),
        e.reshape(-1),
        e.sum(),
        e.sum(0) if e.dim() else e,
        e.sum(-1, keepdim=True) if e.dim() else e,
        e.T.clone() if e.dim() == 2 else e.mT if e.dim() > 2 else -e,
        e.to_sparse() if e.dim() else e.clone(),
        torch.empty(0),
        torch.empty(0, dtype=e.dtype),
        torch.empty((*e.shape, 0), dtype=e.dtype),
        torch.randn(other_shape, generator=g),
        torch.randint(0, 2, other_shape, generator=g).bool(),
        torch.randint(-5, 5, other_shape, generator=g),
        torch.full_like(e, math.nan),
        torch.full_like(e, math.inf),
        torch.full_like(e, -math.inf),
        torch.randn(e.shape, generator=g, dtype=e.dtype).requires_grad_(True),
        torch.empty(e.shape, device="meta"),
        torch.randn(e.shape, generator=g, dtype=e.dtype) + 1j,
        rng.standard_normal(other_shape),
        rng.integers(-3, 3, size=other_shape),
        rng.standard_normal(other_shape) > 0,
        rng.standard_normal((*e.shape, 2)).astype(np.float32),
        np.array(["a", "b"]),
        np.array([object(), 1], dtype=object),
        np.zeros(3, dtype=[("a", "f8"), ("b", "i4")]),
        np.float32(1.5),
        np.int64(2),
        np.array(0.0),
        np.datetime64("2024-01-01"),
        e.tolist() if e.dim() else [e.item()],
        [e, e] if e.dim() else [e],
        [e, e.sum()],
        str(e),
        repr(e).encode(),
        {"x": e},
        {1, 2},
        (e,),
        lambda: e,
        torch.Size(e.shape),
        _Hostile(),
        object(),
        10**40,
        -(10**40),
        range(e.numel()),
        iter([1.0, 2.0]),
        complex(1, 2),
        [1 + 2j],
        e.numpy() + 0.0,
    ]
    return st.sampled_from(items)


junk_scalars = st.one_of(
    st.none(),
    st.just(Ellipsis),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.binary(max_size=8),
    st.complex_numbers(max_magnitude=1e6),
)
ragged = st.recursive(
    st.one_of(
        st.integers(-5, 5),
        st.floats(allow_nan=True, allow_infinity=True, width=32),
        st.none(),
        st.text(max_size=2),
    ),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner),
    max_leaves=12,
)


@SETTINGS
@given(e=gradients(kinds=("normal", "zeros", "ints")), seed=seeds, data=st.data())
def test_junk_never_raises_and_fails_unless_right(e, seed, data):
    t = leaf_with_grad(e)
    dt = data.draw(st.one_of(junk_scalars, ragged, _junk_from_e(e, seed)), label="junk")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a warning is not an error here; only a raise is
        res = check(dt, t)
    right = numerically_right(dt, e)
    event(f"numerically right: {right}")
    assert res.ok == right, (res, type(dt))
    if dt is None or dt is Ellipsis:
        assert res.mistake == "missing"


def test_complex_numpy_is_refused_like_complex_tensor():
    # a plain test, not a hypothesis one: a failing hypothesis test (even an expected one) writes a
    # patch file
    for seed, shape in enumerate([(), (3,), (2, 5)]):
        e = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
        t = leaf_with_grad(e)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tensor_res = check(e + 1j, t)
            numpy_res = check(e.numpy() + 1j, t)
        assert not tensor_res.ok and tensor_res.mistake == "wrong"
        assert not numpy_res.ok, numpy_res


def test_python_numbers_keep_their_precision():
    # a plain test, for the same reason as above
    for seed, shape in enumerate([(), (3,), (2, 5)]):
        e = torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        t = leaf_with_grad(e)
        res = check(e.tolist(), t)  # the very same float64 values, as Python floats
        assert res.ok and res.exact, res
        tight = checks.cmp("x", e.tolist(), t, rtol=1e-12, atol=0.0, quiet=True)
        assert tight.ok, tight


@SETTINGS
@given(e=gradients(), t_kind=st.sampled_from(["no grad", "grad None", "not a tensor", "non-leaf"]))
def test_no_grad_setups_are_refused_not_raised(e, t_kind):
    if t_kind == "no grad":
        t = e.clone()
    elif t_kind == "grad None":
        t = torch.zeros_like(e).requires_grad_(True)
    elif t_kind == "not a tensor":
        t = e.tolist()
    else:
        t = torch.zeros_like(e).requires_grad_(True) * 2  # not retaining its grad
    res = check(e.clone(), t)
    assert not res.ok and res.mistake == "no-grad", res


# ---------------------------------------------------------------- injected mistakes are named


@SETTINGS
@given(e=gradients())
def test_sign(e):
    assume(significant(e))
    res = check(-e, leaf_with_grad(e))
    assert res.mistake == "sign", res


@SETTINGS
@given(e=gradients(), k=st.sampled_from([2.0, 3.0, 0.5, 1 / 32, 32.0, -2.0]))
def test_scale(e, k):
    assume(significant(e))
    res = check(e * k, leaf_with_grad(e))
    # a single number is always some multiple of the right one: only a simple factor (here no batch
    # size is known) is named
    simple = e.numel() > 1 or k in (2.0, 3.0, 0.5, -2.0)
    assert res.mistake == ("scale" if simple else "wrong"), res


@SETTINGS
@given(e=gradients(), n=st.integers(3, 64), up=st.booleans())
def test_bessel(e, n, up):
    # the local is called n, as in the learner's notebook: cmp reads the batch size from it
    assume(significant(e))
    dt = e * (n / (n - 1)) if up else e * ((n - 1) / n)
    res = check(dt, leaf_with_grad(e))
    assert res.mistake == "bessel", res
    assert f"n={n}" in res.hint, res


@SETTINGS
@given(rows=dims, cols=dims, data=st.data())
def test_transpose(rows, cols, data):
    e = data.draw(gradients(shape=st.just((rows, cols))))
    assume(significant(e) and e.numel() > 1)
    if rows == cols:  # a square e: only when e.T differs from e and from -e
        assume(
            not torch.allclose(e.T, e, rtol=RTOL, atol=ATOL)
            and not torch.allclose(-e.T, e, rtol=RTOL, atol=ATOL)
        )
    res = check(e.T, leaf_with_grad(e))
    assert res.mistake == "transpose", res


@SETTINGS
@given(base=st.lists(dims, max_size=2).map(tuple), data=st.data())
def test_dropped_keepdim(base, data):
    at = data.draw(st.integers(0, len(base)), label="axis")
    shape = base[:at] + (1,) + base[at:]
    e = data.draw(gradients(shape=st.just(shape)), label="e")
    res = check(e.squeeze(at), leaf_with_grad(e))
    if all(s == 1 for s in shape[:at]):  # only leading size-1 axes gone: it broadcasts back exactly
        assert res.ok and [n.word for n in res.notes] == ["keepdim"], res
        res = checks.cmp("x", e.squeeze(at), leaf_with_grad(e), strict_shapes=True, quiet=True)
    assert res.mistake == "shape" and "keepdim" in res.hint, res


@SETTINGS
@given(
    base=st.lists(dims, max_size=2).map(tuple),
    m=st.integers(2, 12),
    leading=st.booleans(),
    data=st.data(),
)
def test_broadcast_needs_sum(base, m, leading, data):
    if leading:  # the answer has an extra leading axis of size m
        e = data.draw(gradients(shape=st.just(base)), label="e")
        dt = e.expand((m, *base))
    else:  # e has a size-1 axis that the answer fills with m copies
        at = data.draw(st.integers(0, len(base)), label="axis")
        shape = base[:at] + (1,) + base[at:]
        e = data.draw(gradients(shape=st.just(shape)), label="e")
        dt = e.expand(base[:at] + (m,) + base[at:]).clone()
    res = check(dt, leaf_with_grad(e))
    assert res.mistake == "shape" and "sum" in res.hint, res


@SETTINGS
@given(e=gradients(), seed=seeds, bad=st.sampled_from([math.nan, math.inf, -math.inf]))
def test_nan(e, seed, bad):
    dt = e.clone()
    i = int(torch.randint(e.numel(), (), generator=torch.Generator().manual_seed(seed)))
    dt.view(-1)[i] = bad
    res = check(dt, leaf_with_grad(e))
    assert res.mistake == "nan", res


@SETTINGS
@given(
    e=gradients(kinds=("normal", "zeros")),
    view=st.sampled_from(["itself", "detach", "view", "slice"]),
)
def test_autograd_grad(e, view):
    t = leaf_with_grad(e)
    dt = {
        "itself": t.grad,
        "detach": t.grad.detach(),
        "view": t.grad.view(e.shape),
        "slice": t.grad[...],
    }[view]
    res = check(dt, t)
    assert res.mistake == "autograd-grad", res


@SETTINGS
@given(e=gradients(), seed=seeds)
def test_unrelated_tensor_is_flagged(e, seed):
    g = torch.Generator().manual_seed(seed)
    dt = torch.randn(e.shape, generator=g, dtype=e.dtype) * float(e.abs().max().clamp_min(1.0))
    assume(not torch.allclose(dt, e, rtol=RTOL, atol=ATOL))
    res = check(dt, leaf_with_grad(e))
    assert not res.ok and res.mistake is not None, res


# ---------------------------------------------------------- what is printed agrees with the verdict


@SETTINGS
@given(e=gradients(), k=st.sampled_from([1.0, 1.0 + 1e-7, 1.0 + 1e-3, -1.0, 2.0]), dtype=dtypes)
def test_approximate_is_ok_and_exact_implies_ok(e, k, dtype):
    t = leaf_with_grad(e)
    res = check((e * k).to(dtype), t)
    line = res.line()
    assert line.startswith(f"{'x':15s} | exact: ")
    assert ("approximate: True" in line) is res.ok
    assert ("approximate: False" in line) is (not res.ok)
    if res.exact:
        assert res.ok
    if k == 1.0:
        assert res.ok


# ---------------------------------------------------------------- the worst element


@SETTINGS
@given(e=gradients(), seed=seeds, sign=st.sampled_from([1.0, -1.0]))
def test_worst_element_pointer(e, seed, sign):
    g = torch.Generator().manual_seed(seed)
    flat = int(torch.randint(e.numel(), (), generator=g))
    index = tuple(int(i) for i in np.unravel_index(flat, tuple(e.shape))) if e.dim() else ()
    dt = e.clone()
    big = 1e3 * max(1.0, float(e.abs().max()))
    dt[index] = e[index] + sign * big
    res = check(dt, leaf_with_grad(e))
    assert not res.ok
    assert res.index == index, res
    assert res.yours == float(dt[index]) and res.expected == float(e[index]), res
    assert res.mismatched == 1 and res.total == e.numel(), res
    assert res.maxdiff == pytest.approx(abs(float(dt[index]) - float(e[index])))
    if e.numel() > 1:
        assert str(index) in res.where, res.where
    else:  # a single number: its two values, in the where line or in the hint, and no index
        assert "index" not in (res.where or "") and "Mismatched" not in (res.where or "")
        assert f"{float(dt[index]):.6g}" in (res.where or res.hint), res


# ------------------------------------------------------------ shape hints name only axes that exist

_AXES = re.compile(r"\baxis (\d+)|\baxes ([\d, ]+)|\.sum\((\d+)|\.sum\(\(([\d, ]+)\)")


def _axes_named(hint: str) -> list[int]:
    return [
        int(a)
        for groups in _AXES.findall(hint)
        for g in groups
        if g
        for a in g.replace(",", " ").split()
    ]


@SETTINGS
@given(
    es=st.tuples(dims, dims),
    other=st.tuples(dims, dims),
    transposed=st.booleans(),
    factor=st.sampled_from([1.0, 32.0, -0.5, None]),
    seed=seeds,
)
def test_2d_shape_mismatches_name_no_axis_beyond_the_second(es, other, transposed, factor, seed):
    """A (2, 4) answer for a (4, 2) tensor, and any other 2-D mismatch: every axis named
    is 0 or 1."""
    ys = es[::-1] if transposed else other
    assume(ys != es)
    g = torch.Generator().manual_seed(seed)
    e = torch.randn(es, generator=g, dtype=torch.float64)
    # the transposed gradient times a factor (None: unrelated values of that shape)
    dt = (
        (e * factor).T.contiguous()
        if transposed and factor is not None
        else torch.randn(ys, generator=g, dtype=torch.float64)
    )
    res = check(dt, leaf_with_grad(e))
    assert res.mistake in ("shape", "transpose"), res
    assert all(a < 2 for a in _axes_named(res.hint)), res.hint
    if transposed and factor != 1.0:
        assert res.mistake == "shape" and "shape transposed" in res.hint, res.hint


def test_transposed_shape_with_wrong_values_is_said_plainly():
    # the learner's dW3 = dlogits.T @ h2 with dlogits missing its 1/n: (2, 4) for a (4, 2) W3
    e = torch.randn(4, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    res = checks.cmp("W3 (tanh)", (e * 32).T.contiguous(), leaf_with_grad(e), n=32, quiet=True)
    assert res.mistake == "shape", res
    assert res.hint.startswith(
        "your dW3 has shape (2, 4) but W3 has shape (4, 2): that is its shape transposed"
    )
    assert (
        "32 times the gradient, and 32 is the batch size n" in res.hint and "axis 2" not in res.hint
    )
