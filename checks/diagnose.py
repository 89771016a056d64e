"""Name the most likely mistake behind a wrong gradient, in one word and one sentence.

The words (``MISTAKES``, kept in ``checks.words`` and imported here too) are the vocabulary of
``Result.mistake``. Shape mistakes are read off the shapes alone; value mistakes compare the
answer ``y`` with the expected gradient ``e`` (same shape, same dtype) under simple
transformations: negation, transposition, a constant factor, a subset of the paths through the
graph.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations, permutations
from typing import Any

import torch

from checks.render.html import num
from checks.tolerances import ATOL, RTOL
from checks.verdict import Note
from checks.words import MISTAKES as MISTAKES


@dataclass(frozen=True)
class Given:
    """The gradient a step gives from the learner's own earlier answers: ``grad``, the wrong
    answers it was taken from (``wrong``), the first wrong answers behind those (``roots``) and
    the size of the answers it was computed from (``scale``: float rounding grows with it)."""

    grad: torch.Tensor | None  # None: the graph was freed, so the step could not be replayed
    wrong: tuple[str, ...]
    roots: tuple[str, ...]
    scale: float = 0.0


@dataclass(frozen=True)
class Use:
    """One use of a tensor on the way to the loss, as a path's label says it: the operation
    (``op``: "`counts_sum` (sum)", "a mul on the way to `h`"), the named tensor it makes or leads
    to (``tensor``, "" for none) and, where the operation takes the tensor twice (``a * a``), the
    input it is (``slot``, from 0)."""

    op: str
    tensor: str = ""
    slot: int | None = None

    def __str__(self) -> str:
        return self.op if self.slot is None else f"input {self.slot + 1} of {self.op}"


def fmt_shape(shape: Sequence[int]) -> str:
    """``(32, 64)`` for a shape, ``()`` for a scalar."""
    dims = tuple(int(s) for s in shape)
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"


def fmt_axes(axes: Sequence[int]) -> str:
    axes = list(axes)
    return ("axis " if len(axes) == 1 else "axes ") + ", ".join(map(str, axes))


def fmt_num(x: float) -> str:
    return num(x)


def close(a: torch.Tensor, b: torch.Tensor, rtol: float, atol: float) -> bool:
    """``torch.allclose`` for same-shape tensors, False instead of an error otherwise."""
    return a.shape == b.shape and bool(torch.allclose(a, b, rtol=rtol, atol=atol))


@dataclass
class Context:
    """What the diagnosis may know beyond the two tensors."""

    name: str
    rtol: float = RTOL
    atol: float = ATOL
    batch_sizes: list[int] = field(default_factory=list)
    # The (size, axis) of each axis the tensor was broadcast along in the forward pass.
    broadcast: Callable[[], list[tuple[int, int]]] | None = None
    # Where no batch size is known: the sizes the tensor is shared over in the graph (a batch).
    shared_over: Callable[[], list[int]] | None = None
    # How many entries each variance in the graph is taken over (its Bessel's correction's n).
    variance_sizes: Callable[[], list[int]] | None = None
    # Attention's head sizes (``head_size``, ``hs``): a factor of sqrt(head size) is a scale's slip.
    head_sizes: list[int] = field(default_factory=list)
    # where the expected value comes from: "autograd", "central difference"
    source: str = "autograd"
    # Lazily computed graph facts: (use, contribution or None) for each use of the tensor,
    # and the index tensor of each index-style use (the embedding lookup C[Xb]).
    paths: Callable[[], list[tuple[Use, torch.Tensor | None]]] | None = None
    index_uses: Callable[[], list[torch.Tensor]] | None = None
    # What the index uses give with the index and the gradient flattened in different orders.
    misplaced: Callable[[], list[torch.Tensor]] | None = None
    terms: Callable[[], list[tuple[str, torch.Tensor | None]]] | None = None  # paths split further
    value: bool = False  # a value checked against a reference (an optimiser's step), not a gradient
    strict_shapes: bool = False  # a dropped leading size-1 axis fails instead of being noted
    # The size of the gradients the expected one is computed from (float rounding scales with it).
    scale: Callable[[], float | None] | None = None
    # The gradient given the learner's own earlier answers, once for each way to read them.
    upstream: Callable[[], list[Given]] | None = None
    # The gradient with the gradient from above forgotten: (the answers left out, the gradient).
    local: Callable[[], list[tuple[tuple[str, ...], torch.Tensor]]] | None = None
    # What named slips of the computation give (an optimiser's): (word, hint with {name}, value).
    slips: Callable[[], list[tuple[str, str, torch.Tensor]]] | None = None
    # For each use reaching a later tensor through elementwise operations only: the tensor's
    # values, the gradient arriving there, its name, and what the other uses contribute.
    elementwise: Callable[[], list[tuple[torch.Tensor, torch.Tensor, str, torch.Tensor]]] | None = (
        None
    )
    # The notebook's forward tensors by name (not its answers): a factor missing or one too many.
    tensors: Callable[[], dict[str, torch.Tensor]] | None = None
    # The gradient with a gradient from above replaced by another tensor: (used, meant, gradient).
    instead: Callable[[], list[tuple[str, str, torch.Tensor]]] | None = None
    # The gradient with a square gradient from above transposed: (that answer, the gradient).
    transposed: Callable[[], list[tuple[str, torch.Tensor]]] | None = None
    # The gradient with a later tensor's gradient taken from a tensor after it: (used, meant, grad).
    skipped: Callable[[], list[tuple[str, str, torch.Tensor]]] | None = None
    # A lookup's contribution split by the index's positions (its second axis), one per position.
    positions: Callable[[], list[torch.Tensor]] | None = None
    # A matrix product's rule split into its terms, one per value of the summed index (stacked).
    shared_terms: Callable[[], torch.Tensor | None] | None = None
    # The gradient with a matrix product's two factors in the other order: (the factor, grad).
    reordered: Callable[[], list[tuple[str, torch.Tensor]]] | None = None
    # The gradient with one operand of a product replaced by another tensor: (used, meant, grad).
    swaps: Callable[[], list[tuple[str, str, torch.Tensor]]] | None = None
    facts: Any = None  # what the learner's code says (checks.source.SourceFacts)
    code: str | None = None  # the learner's code around the answer
    notes: list = field(default_factory=list)  # Notes shown with any verdict
    fail_notes: list = field(default_factory=list)  # Notes shown only with a failure
    missing_uses: list = field(default_factory=list)  # a missing-path: the uses left out, by name
    blamed: list = field(default_factory=list)  # an upstream: the first wrong answers behind it
    answer_label: str | None = None  # what the learner's answer is called, when not d<name>
    argument: int | None = None  # central differences: which input of the function

    @property
    def variable(self) -> str | None:
        """The Python variable in the check's name: ``logits`` for "logits (fused)"."""
        return variable_of(self.name)

    @property
    def tensor(self) -> str:
        """The tensor, as the messages call it."""
        return self.variable or self.name

    @property
    def answer(self) -> str:
        """What the learner wrote: ``dW`` for a gradient, the name itself for a value."""
        if self.answer_label:
            return self.answer_label
        return self.name if self.value else f"d{self.variable or self.name}"

    @property
    def target(self) -> str:
        """What it is compared with, in a sentence."""
        return f"the value from {self.source}" if self.value else "the gradient"


def leading_ones_dropped(ys: tuple[int, ...], es: tuple[int, ...]) -> list[int] | None:
    """The axes when ``ys`` is ``es`` without its leading size-1 axes ((64,) for (1, 64)),
    else None.

    Such an answer broadcasts back to exactly ``es``. Nothing else does: (32,) for (32, 1) lines up
    with the wrong axis, and an extra axis ((1, 27) for (27,)) makes a parameter update grow.
    """
    k = len(es) - len(ys)
    if k < 1 or es[k:] != ys or any(s != 1 for s in es[:k]):
        return None
    return list(range(k))


# ---------------------------------------------------------------- shapes


def _batch_from_graph(ctx: Context) -> None:
    """Batch sizes from the graph when the notebook names none (02's layers have no ``n``)."""
    if not ctx.batch_sizes and ctx.shared_over is not None:
        try:
            ctx.batch_sizes = list(ctx.shared_over())
        except Exception:  # the graph can only help a diagnosis, never break one
            pass


def diagnose_shape(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str]:
    """Mistake and hint for an answer whose shape differs from the tensor's: the first rule of
    ``SHAPE_RULES`` that explains it, else the axes that differ."""
    _batch_from_graph(ctx)
    ys, es = tuple(y.shape), tuple(e.shape)
    yours = (
        f"your {ctx.answer} has shape {fmt_shape(ys)} but "
        f"{ctx.target if ctx.value else ctx.tensor} has shape {fmt_shape(es)}"
    )
    for rule in SHAPE_RULES:
        found = rule(y, e, ctx)
        if found:
            mistake, why = found
            return mistake, f"{yours}: {why}"
    return "shape", f"{yours}: {_sizes_differ(ys, es)}"


# A shape rule takes (y, e, ctx) like a value rule and gives the mistake and what follows the
# shapes in the hint ("your dW has shape (3, 2) but W has shape (2, 3): ..."), or None.


def _one_number(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """A single number where the tensor has several."""
    if not (y.numel() == 1 and e.numel() > 1):
        return None
    what = "it must have that shape" if ctx.value else "a gradient has its tensor's shape"
    return "shape", f"{what}, one number per element."


def _permuted(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """The tensor's sizes in another order (up to 4 axes): transposed values, or a transposed
    shape whose values are wrong too."""
    ys, es = tuple(y.shape), tuple(e.shape)
    if not (y.dim() == e.dim() >= 2 and sorted(ys) == sorted(es) and y.dim() <= 4):
        return None
    perms = [perm for perm in permutations(range(y.dim())) if tuple(ys[p] for p in perm) == es]
    for perm in perms:
        if close(y.permute(perm), e, ctx.rtol, ctx.atol):
            how = (
                "use `.T` or swap the operands of the matrix product"
                if y.dim() == 2
                else f"permute{perm}"
            )
            return "transpose", f"the values are right but transposed; {how}."
    how = (
        "check the order of the operands of the matrix product"
        if y.dim() == 2
        else f"as if permuted by {perms[0]}"
    )
    return (
        "shape",
        f"that is its shape transposed ({how}){_after_permute(y.permute(perms[0]), e, ctx)}.",
    )


def _size_one_dropped(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """The tensor's shape without some of its size-1 axes: a sum without keepdim."""
    ones = _dropped_ones(tuple(e.shape), tuple(y.shape))
    if ones is None:
        return None
    return "shape", _size_one_hint(
        y, e, ctx, f"the size-1 {fmt_axes(ones)} was dropped", "sum with keepdim=True"
    )


def _size_one_extra(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """The tensor's shape with size-1 axes added: a keepdim too many."""
    ones = _dropped_ones(tuple(y.shape), tuple(e.shape))
    if ones is None:
        return None
    return "shape", _size_one_hint(
        y, e, ctx, f"it has an extra size-1 {fmt_axes(ones)}", "sum without keepdim"
    )


def _size_one_hint(y: torch.Tensor, e: torch.Tensor, ctx: Context, what: str, fix: str) -> str:
    """What is wrong with the size-1 axes, whether the values are right, and the fix."""
    tail = " (the values are right)" if close(y.reshape(e.shape), e, ctx.rtol, ctx.atol) else ""
    return f"{what}{tail}; {fix} or reshape to {fmt_shape(e.shape)}."


def _not_summed(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """The gradient of the broadcast tensor, not summed back over the axes it was broadcast
    along."""
    ys, es = tuple(y.shape), tuple(e.shape)
    axes = _broadcast_axes(ys, es)
    if axes is None:
        return None
    keep = len(ys) == len(es)
    fixed = y.sum(dim=axes, keepdim=keep)
    right = close(fixed.reshape(es), e, ctx.rtol, ctx.atol) if fixed.numel() == e.numel() else False
    tail = ", and then it matches" if right else ""
    kd = ", keepdim=True" if keep else ""
    return "shape", (
        f"{ctx.tensor} was broadcast along {fmt_axes(axes)} in the forward pass, "
        f"so sum your {ctx.answer} over {fmt_axes(axes)} (`.sum({_axes_arg(axes)}{kd})`){tail}."
    )


def _summed_other_axis(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """A sum with keepdim over another axis than the one the tensor was broadcast along."""
    ys, es = tuple(y.shape), tuple(e.shape)
    if len(ys) != len(es):
        return None
    summed = [i for i in range(len(es)) if ys[i] == 1 and es[i] != 1]
    needed = [i for i in range(len(es)) if es[i] == 1 and ys[i] != 1]
    others = [i for i in range(len(es)) if i not in summed + needed]
    if not (summed and needed and all(ys[i] == es[i] for i in others)):
        return None
    return "shape", (
        f"you summed over {fmt_axes(summed)}, but {ctx.answer} needs "
        f"the sum over {fmt_axes(needed)} (the axis it was broadcast along)."
    )


def _summed_other_axis_dropped(
    y: torch.Tensor, e: torch.Tensor, ctx: Context
) -> tuple[str, str] | None:
    """A sum without keepdim over another axis than the one the tensor was broadcast along."""
    ys, es = tuple(y.shape), tuple(e.shape)
    wrong_axis = _summed_without_keepdim(ys, es)
    if wrong_axis is None:
        return None
    summed_axis, needed = wrong_axis
    kd = ", keepdim=True" if len(es) == len(ys) + 1 else ""
    return "shape", (
        f"you summed over axis {summed_axis}, but {ctx.tensor} was broadcast along "
        f"{fmt_axes(needed)}, so sum over that (`.sum({_axes_arg(needed)}{kd})`)."
    )


def _flattened(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """The right values in another shape of as many elements (flattened, viewed otherwise)."""
    es = tuple(e.shape)
    if not (y.numel() == e.numel() and close(y.reshape(es), e, ctx.rtol, ctx.atol)):
        return None
    var = ctx.variable
    shape = f"{var}.shape" if var else ", ".join(map(str, es))
    return "shape", (
        f"the values are right, so view them back into {ctx.tensor}'s shape (`.view({shape})`)."
    )


def _summed_away(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """One axis of the tensor missing, as if summed over, where no sum belongs."""
    ys, es = tuple(y.shape), tuple(e.shape)
    if len(ys) != len(es) - 1:
        return None
    gone = [b for b in range(len(es)) if es[:b] + es[b + 1 :] == ys]
    if not gone:
        return None
    return "shape", (
        f"axis {gone[0]} (of size {es[gone[0]]}) is gone, as if summed away; "
        f"{ctx.tensor} was not broadcast along it, so {ctx.answer} needs no sum there."
    )


def _indexed(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """More axes than the tensor and its trailing sizes: the gradient of a lookup (``C[Xb]``)
    not added back into the rows it came from."""
    ys, es = tuple(y.shape), tuple(e.shape)
    if not (len(es) >= 2 and len(ys) > len(es) and ys[len(ys) - len(es) + 1 :] == es[1:]):
        return None
    return "shape", (
        f"if {ctx.tensor} was indexed (like C[Xb]), add each row of your {ctx.answer} "
        f"into the row of {ctx.tensor} it came from, with `index_add_`, to get shape "
        f"{fmt_shape(es)}."
    )


def _ones_for_sizes(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """Size 1 on every axis where the tensor's size differs: one entry where it needs many."""
    ys, es = tuple(y.shape), tuple(e.shape)
    if len(ys) != len(es):
        return None
    differ = [i for i in range(len(es)) if ys[i] != es[i]]
    if not all(ys[i] == 1 for i in differ):
        return None
    sizes = ", ".join(f"{es[i]} along axis {i}" for i in differ)
    return "shape", (
        f"{ctx.tensor} has {sizes}, so {ctx.answer} needs one entry for each of them; "
        "if a sum produced this in the forward pass, broadcast it back "
        f"(e.g. `torch.ones_like({ctx.tensor}) * ...`)."
    )


def _dimensions(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """Another number of axes, in no way the rules above explain."""
    if y.dim() == e.dim():
        return None
    plural = "s" if y.dim() != 1 else ""
    return "shape", f"it has {y.dim()} dimension{plural} where {e.dim()} are expected."


def _sizes_differ(ys: tuple[int, ...], es: tuple[int, ...]) -> str:
    """The axes of two shapes of one length whose sizes differ, with those sizes."""
    differ = [i for i in range(len(es)) if ys[i] != es[i]]
    sizes = "; ".join(f"{ys[i]} vs {es[i]}" for i in differ)
    return f"{fmt_axes(differ)} differ{'s' if len(differ) == 1 else ''} ({sizes})."


# The shape rules, in the order tried: the first that explains the shape gives the diagnosis.
SHAPE_RULES = (
    _one_number,
    _permuted,
    _size_one_dropped,
    _size_one_extra,
    _not_summed,
    _summed_other_axis,
    _summed_other_axis_dropped,
    _flattened,
    _summed_away,
    _indexed,
    _ones_for_sizes,
    _dimensions,
)


def _dropped_ones(full: tuple[int, ...], short: tuple[int, ...]) -> list[int] | None:
    """Axes of ``full`` (all of size 1) whose removal gives ``short``, if any."""
    if len(full) <= len(short):
        return None
    dropped, j = [], 0
    for i, s in enumerate(full):
        if j < len(short) and s == short[j]:
            j += 1
        elif s == 1:
            dropped.append(i)
        else:
            return None
    return dropped if j == len(short) else None


def _broadcast_axes(ys: tuple[int, ...], es: tuple[int, ...]) -> list[int] | None:
    """Axes of ``ys`` along which a tensor of shape ``es`` was broadcast to ``ys``."""
    if len(es) > len(ys):
        return None
    pad = (1,) * (len(ys) - len(es)) + es
    if any(p not in (1, s) for p, s in zip(pad, ys, strict=False)):
        return None
    axes = [i for i, (p, s) in enumerate(zip(pad, ys, strict=False)) if p == 1 and s != 1]
    axes += [i for i in range(len(ys) - len(es)) if ys[i] == 1]
    return sorted(set(axes)) or None


def _summed_without_keepdim(
    ys: tuple[int, ...], es: tuple[int, ...]
) -> tuple[int, list[int]] | None:
    """(b, axes) when ``ys`` is a gradient summed over axis b (dropped) instead of the
    broadcast ``axes``.

    The axes are those of the broadcast gradient, which has one axis more than ``ys``. That is
    ``es``'s own number of axes, or, for a 1-D tensor like a bias, the 2-D output it was added to; a
    tensor of two or more axes is rarely broadcast to more, so its shape mistakes are explained
    otherwise.
    """
    if not (len(es) == len(ys) + 1 or len(es) == len(ys) == 1):
        return None
    pad = (1,) * (len(ys) + 1 - len(es)) + es
    for b in range(len(ys) + 1):
        if pad[b] == 1:
            continue
        full = ys[:b] + (pad[b],) + ys[b:]
        if any(p not in (1, f) for p, f in zip(pad, full, strict=True)):
            continue
        needed = [i for i, (p, f) in enumerate(zip(pad, full, strict=True)) if p == 1 and f > 1]
        if needed:
            return b, needed
    return None


def _axes_arg(axes: Sequence[int]) -> str:
    return str(axes[0]) if len(axes) == 1 else "(" + ", ".join(map(str, axes)) + ")"


def _after_permute(yp: torch.Tensor, e: torch.Tensor, ctx: Context) -> str:
    """What the answer is once permuted into ``e``'s shape: a factor of the gradient, or else a
    plain difference."""
    if close(-yp, e, ctx.rtol, ctx.atol):
        return f"; transposed back, it is the negative of {ctx.target}"
    c = _uniform_factor(yp, e, ctx)
    if c is not None:
        words, advice = _factor_words(c, ctx, of=ctx.target)
        return f"; transposed back, it is {words}: {advice}"
    return f"; transposed back, its values still differ from {ctx.target}"


# ---------------------------------------------------------------- values


def diagnose_values(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str]:
    """Mistake and hint for a same-shape answer that is not close to ``e``: the first rule of
    ``VALUE_RULES`` that explains it, the graph's last (they cost the most), else ``wrong``."""
    _batch_from_graph(ctx)
    single = e.numel() == 1
    # for a single number any wrong answer is some factor times the right one, and only the graph
    # can tell a missing path from a factor. An answer that is some of the paths' own terms is a
    # path left out before anything those terms happen to equal: a factor (``x * x`` has paths of
    # equal weight) or another operand of a product
    graph = (
        (_operand, _missing_path, _accumulate, _scale)
        if single
        else (
            *(_missing_path, _operand, _scale, _fused_terms, _accumulate, _local),
            *(_factor, _path_factor, _entry_terms, _positions, _skipped),
        )
    )
    for test in (*VALUE_RULES, *graph):
        found = _tried(test, y, e, ctx)
        if found:
            mistake, hint = found
            return mistake, hint + (_unmeasured(ctx) if single and mistake == "scale" else "")
    # the numbers follow in the worst element's sentence (``Result.where``): a hint states no
    # expected value
    if single:
        whence = "" if ctx.value else f" (from {ctx.source})"
        hint = f"your {ctx.answer} is not {ctx.target}{whence}: re-derive it step by step."
    else:
        hint = (
            f"your {ctx.answer} differs from {ctx.target} in no recognisable way: "
            "re-derive it step by step."
        )
    return "wrong", hint + _unmeasured(ctx)


def _not_finite(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """NaN or infinity where the gradient is finite."""
    bad = ~torch.isfinite(y) & torch.isfinite(e)
    if not bool(bad.any()):
        return None
    kind = "NaN" if bool(torch.isnan(y[bad]).any()) else "infinite"
    if y.dim() == 0:
        where = "look for 0/0, the log of 0 or a division by zero"
        return "nan", f"your {ctx.answer} is {kind}: {where}."
    first = tuple(int(i) for i in torch.nonzero(bad)[0].tolist())
    return "nan", (
        f"your {ctx.answer} has {int(bad.sum())} {kind} value(s), the first at index {first}: "
        "look for 0/0, the log of 0 or a division by zero."
    )


def _all_zeros(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """Nothing but zeros where the gradient is not: a mask the wrong way round, or no formula."""
    if not e.numel() or e.numel() == 1 or bool(y.any()) or not bool(e.any()):
        return None
    if re.search(r"\bmasked_fill_?\(|\bwhere\(", ctx.code or ""):
        return "mask", (
            f"your {ctx.answer} is all zeros, but {ctx.target} is not: its mask keeps none of the "
            "entries that carry a gradient (`masked_fill(m, 0)` writes 0 where `m` is True): check "
            "which way round the mask is."
        )
    return "wrong", (
        f"your {ctx.answer} is all zeros, but {ctx.target} is not: fill in its formula, or check "
        "what it multiplies by, masks or selects."
    )


def _path_left_out(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> bool:
    """Whether the answer is the contribution of some of its tensor's uses, the others left out.
    That reading comes before a coincidence its numbers happen to match: the negative of the whole
    (``h / x`` with ``h = x**2`` makes one use's term minus the sum), its transpose, its entries
    in other places. Not before zeros: a use whose term is near zero (the path through a row's
    maximum) would explain any answer left at zeros."""
    return _tried(_missing_path, y, e, ctx) is not None


def _negative(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    if not close(-y, e, ctx.rtol, ctx.atol) or _path_left_out(y, e, ctx):
        return None
    fix = "the signs in your formula" if ctx.value else "the sign of each local derivative"
    return "sign", f"your {ctx.answer} is exactly the negative of {ctx.target}: check {fix}."


def _transposed(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    if not (y.dim() >= 2 and y.shape[-1] == y.shape[-2] > 1 and close(y.mT, e, ctx.rtol, ctx.atol)):
        return None
    if _path_left_out(y, e, ctx):
        return None
    last = "" if y.dim() == 2 else " in its last two axes"
    return "transpose", (
        f"your {ctx.answer} is {ctx.target} transposed{last}: swap the operands of the matrix "
        "product or transpose it back."
    )


# A factor is "simple" when its numerator and denominator are both at most this (2, 3/4, -1/3, ...).
SIMPLE_PARTS = 4


def simple_factor(c: float, batch: Sequence[int]) -> bool:
    """Whether the factor ``c`` is worth naming for a single number.

    Any wrong number is some multiple of the right one, so for a single number only a factor
    that a slip plausibly makes counts: ``±p/q`` with ``p, q <= SIMPLE_PARTS``, or, for a batch
    size ``n``, ``±n``, ``±1/n``, ``±(n-1)``, ``±1/(n-1)``, ``±n/(n-1)`` and ``±(n-1)/n``.
    """
    mag = abs(c)
    frac = Fraction(mag).limit_denominator(SIMPLE_PARTS)
    if frac and frac.numerator <= SIMPLE_PARTS and math.isclose(float(frac), mag, rel_tol=1e-4):
        return True
    return any(math.isclose(mag, k, rel_tol=1e-4) for k in _batch_factors(batch))


def _batch_factors(batch: Sequence[int]) -> list[float]:
    return [
        k for n in batch if n > 1 for k in (n, 1 / n, n - 1, 1 / (n - 1), n / (n - 1), (n - 1) / n)
    ]


def _uniform_factor(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> float | None:
    """The constant c with y = c * e (least squares, then checked), if there is one and
    it is not 1."""
    yd, ed = y.double().flatten(), e.double().flatten()
    den = float(ed @ ed)
    if den == 0.0 or not math.isfinite(den):
        return None
    c = float(yd @ ed) / den
    if not math.isfinite(c) or not 1e-3 <= abs(c) <= 1e7 or abs(c - 1) < 1e-4:
        return None
    resid = float((yd - c * ed).norm())
    if resid > 1e-4 * float(yd.norm()) + ctx.atol * math.sqrt(yd.numel()):
        return None
    return c


def _scale(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    c = _uniform_factor(y, e, ctx)
    if c is None:
        return None
    k = _bessel_n(c)
    if k is not None and (
        k in ctx.batch_sizes
        or k in _variance_sizes(ctx)
        or (not ctx.batch_sizes and k <= max(e.shape, default=0))
    ):
        ratio = f"{k}/{k - 1}" if c > 1 else f"{k - 1}/{k}"
        use = "1/(n-1)" if c < 1 else "1/n"
        return "bessel", (
            f"your {ctx.answer} is {ratio} times {ctx.target} (n={k}): "
            f"Bessel's correction is off; the forward pass uses {use}, so the backward must too."
        )
    if e.numel() == 1 and not simple_factor(c, ctx.batch_sizes):
        # a single number is always some multiple of the right one: only a simple factor says
        # anything
        return None
    words, advice = _factor_words(c, ctx, of=ctx.target)
    return "scale", f"your {ctx.answer} is {words}: {advice}."


def _variance_sizes(ctx: Context) -> list[int]:
    """The n of each variance in the graph (none without a graph, or where it cannot be read)."""
    if ctx.variance_sizes is None:
        return []
    try:
        return ctx.variance_sizes()
    except Exception:  # the graph can only help a diagnosis, never break one
        return []


def _bessel_n(c: float) -> int | None:
    """n when c is n/(n-1) or (n-1)/n for an integer n >= 3."""
    if 1 < c < 2:
        k = c / (c - 1)
    elif 0.5 < c < 1:
        k = 1 / (1 - c)
    else:
        return None
    n = round(k)
    return n if n >= 3 and abs(k - n) < 1e-3 * n else None


def _factor_words(c: float, ctx: Context, of: str = "the gradient") -> tuple[str, str]:
    """How ``c`` times ``of`` reads ("-2 times the gradient (...)", "1/32 of the gradient, and 32
    is ..."), and what to do, naming the size ``c`` is: a broadcast's copies, a mean's n (the
    check's ``n=``), the batch size, or the square root of an attention head size."""
    frac = Fraction(c).limit_denominator(1000)
    mag = abs(frac)
    exact = abs(float(frac) - c) <= 1e-4 * abs(c)
    if not exact:
        out = f"{fmt_num(c)} times {of}"
        size = f"{fmt_num(abs(c))} times the size"
    elif frac.denominator == 1:
        out = f"{frac.numerator} times {of}"
        size = "twice the size" if mag == 2 else f"{mag} times the size"
    elif frac.numerator in (1, -1):
        out = f"{'-' if frac < 0 else ''}1/{frac.denominator} of {of}"
        size = f"{mag} of the size"
    else:
        out = f"{frac.numerator}/{frac.denominator} times {of}"
        size = f"{mag} {'times' if mag > 1 else 'of'} the size"
    if c < 0:
        out += f" (the sign flipped, and {size})"
    said = _named_size(mag, ctx) if exact else None
    if said is None:
        said = _head_size(abs(c), ctx.head_sizes)
    if said is not None:
        return out + said[0], said[1]
    return out, (
        "check the sign and " if c < 0 else ""
    ) + "find the missing or extra constant factor"


def _named_size(mag: Fraction, ctx: Context) -> tuple[str, str] | None:
    """A factor that is a size the check knows: (what it is, what to do), or None."""
    for k, axis in _copies(ctx):
        if k in ctx.batch_sizes:  # copies along the batch: said as the batch size, below
            continue
        if mag == Fraction(1, k):
            return (
                f", and {k} is the number of copies `{ctx.tensor}` was broadcast to (axis {axis})",
                "a broadcast's copies each pass their gradient back, and the copies' gradients "
                "are summed, not averaged",
            )
        if mag == k:
            return (
                f", and {k} is the number of copies `{ctx.tensor}` was broadcast to (axis {axis})",
                "the copies' gradients are summed once: a second sum or a factor of the copies is "
                "too many",
            )
    for n in ctx.batch_sizes:
        if mag == n:
            return (
                f", and {n} is the batch size n",
                "a 1/n is missing (a mean over the batch divides by n)",
            )
        if mag == Fraction(1, n):
            return f", and {n} is the batch size n", "there is one 1/n too many"
        if mag in (n - 1, Fraction(1, n - 1)):
            return (
                f", and {n - 1} is n-1 for the batch size n={n}",
                "a 1/(n-1) is missing or one too many",
            )
    return None


def _copies(ctx: Context) -> list[tuple[int, int]]:
    """(size, axis) of each axis the tensor was broadcast along in the forward pass."""
    if ctx.broadcast is None:
        return []
    try:
        return list(ctx.broadcast())
    except Exception:  # the graph can only help a diagnosis, never break one
        return []


def _head_size(c: float, heads: Sequence[int]) -> tuple[str, str] | None:
    """A factor that is the square root of an attention head size, or its inverse."""
    for s in heads:
        root = math.sqrt(s)
        for k, advice in (
            (root, "the scale 1/sqrt(head_size) is missing"),
            (1 / root, "there is one 1/sqrt(head_size) too many"),
        ):
            if abs(c - k) <= 1e-4 * k:
                said = f", and {fmt_num(root)} is sqrt({s}), the square root of the head size"
                return said, advice
    return None


def _missing_path(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    if ctx.paths is None:
        return None
    paths = ctx.paths()
    if len(paths) < 2:
        return None
    unknown = [i for i, (_, c) in enumerate(paths) if c is None]
    contribs = [c for _, c in paths]
    if len(unknown) == 1:
        known = sum(c for c in contribs if c is not None)
        contribs[unknown[0]] = e - known
    elif unknown:
        return None
    elif not _adds_up(contribs, e):
        # the contributions are not those of this gradient (another backward pass): do not guess
        return None
    uses = [use for use, _ in paths]
    labels = [str(use) for use in uses]
    k = len(paths)
    for size in range(1, k):
        for subset in combinations(range(k), size):
            part = sum(contribs[i] for i in subset)
            if close(y, part, ctx.rtol, ctx.atol):
                have = " and ".join(labels[i] for i in subset)
                miss = " and ".join(labels[i] for i in range(k) if i not in subset)
                left_out = [i for i in range(k) if i not in subset]
                ctx.missing_uses = [uses[i].tensor or labels[i] for i in left_out]
                return "missing-path", (
                    f"{_uses_phrase(ctx.variable or 'its input', uses)}, and your {ctx.answer} "
                    f"holds only the contribution through {have}: add the one through {miss} "
                    "(`+=`)."
                )
    found = _one_path_off(y, e, contribs, labels, ctx) or _one_path_placed(y, contribs, labels, ctx)
    if found is None and ctx.terms is not None:  # a slip inside one term of a fused formula
        terms = ctx.terms()
        parts = [c for _, c in terms]
        unknown = [i for i, c in enumerate(parts) if c is None]
        if len(unknown) == 1:  # one term unknown: it is what the others leave of the gradient
            parts[unknown[0]] = e - sum(c for c in parts if c is not None)
        if len(terms) > len(paths) and len(unknown) <= 1:
            labels = [t for t, _ in terms]
            found = _one_path_off(y, e, parts, labels, ctx) or _one_path_placed(
                y, parts, labels, ctx
            )
    return found


def _one_path_placed(
    y: torch.Tensor, contribs: list[torch.Tensor], labels: list[str], ctx: Context
) -> tuple[str, str] | None:
    """One path's contribution put in the wrong places: spread over entries it never reaches (a
    max's gradient to every entry, not the winner's), or written over the others' there instead
    of added to them."""
    for i, c in enumerate(contribs):
        rest = sum((x for j, x in enumerate(contribs) if j != i), torch.zeros_like(c))
        reach = c != 0
        if c.shape != y.shape or not bool(reach.any()) or bool(reach.all()):
            continue
        where = f"its contribution through {labels[i]}"
        mine = y - rest
        if close(mine[reach], c[reach], ctx.rtol, ctx.atol) and bool(mine[~reach].any()):
            return "mask", (
                f"your {ctx.answer} is right except that {where} has values at entries it never "
                "reaches (a max passes its gradient to the winning entry only, an index to the "
                "entries it picked): give the others 0 there."
            )
        changed = ~torch.isclose(y, rest, rtol=ctx.rtol, atol=ctx.atol)  # where it wrote
        over = bool(changed.any()) and not bool((reach & ~changed).any())
        if over and close(y[changed], c[changed], ctx.rtol, ctx.atol):
            return "accumulate", (
                f"your {ctx.answer} writes {where} over the others at the entries it reaches "
                "instead of adding to them: add it (`+=`)."
            )
    return None


def _adds_up(contribs: list[torch.Tensor], e: torch.Tensor) -> bool:
    """Whether the contributions sum to the gradient, up to float rounding in another order."""
    total = sum(contribs).double()
    scale = max((float(c.double().abs().max()) for c in contribs if c.numel()), default=0.0)
    return bool(torch.allclose(total, e.double(), rtol=1e-3, atol=1e-4 * scale + 1e-12))


def _uses_phrase(name: str, uses: list[Use]) -> str:
    """ "x feeds 2 operations (...)", or "x is used 2 times (...)" when one operation
    takes it twice."""
    ops = len({use.op for use in uses})
    what = f"feeds {ops} operations" if ops == len(uses) else f"is used {len(uses)} times"
    return f"{name} {what} ({', '.join(map(str, uses))})"


def _unmeasured(ctx: Context) -> str:
    """A sentence for a tensor with several uses whose contributions could not be
    measured, else ""."""
    paths = ctx.paths() if ctx.paths is not None else []
    if len(paths) < 2 or sum(c is None for _, c in paths) < 2:
        return ""
    return (
        f" Note: {_uses_phrase(ctx.variable or 'its input', [use for use, _ in paths])}, "
        "and cmp cannot tell whether one of their contributions is missing: the backward pass "
        "freed the graph, so it cannot measure each contribution "
        "(backward(retain_graph=True) would let it)."
    )


def _one_path_off(
    y: torch.Tensor, e: torch.Tensor, contribs: list[torch.Tensor], labels: list[str], ctx: Context
) -> tuple[str, str] | None:
    """The answer as a weighted sum of the paths' contributions, with one weight wrong, or several
    wrong alike (a sign, a factor: a fused layer norm's sign flipped, its means taken as sums)."""
    scale = float(e.double().norm())
    keep = [i for i, c in enumerate(contribs) if float(c.double().norm()) > 1e-6 * scale]
    if len(keep) < 2:
        return None
    A = torch.stack([contribs[i].double().flatten() for i in keep], 1)
    yd = y.double().flatten()
    if yd.numel() <= len(keep):
        # too few numbers to fit every weight: try one weight at a time (each an alternative)
        off = _one_weight_off(A, yd, ctx)
        if len(off) != 1:
            return None
    else:
        coef = torch.linalg.lstsq(A, yd.unsqueeze(1)).solution.flatten()
        if float((A @ coef - yd).norm()) > 1e-4 * float(yd.norm()) + ctx.atol * math.sqrt(
            yd.numel()
        ):
            return None
        off = [(j, float(a)) for j, a in enumerate(coef) if abs(float(a) - 1) > 1e-3]
    if not off or len(off) == len(keep) or any(abs(b - off[0][1]) > 1e-3 for _, b in off):
        return None  # no weight off, every one (a scale), or several off in different ways
    a = off[0][1]
    group = [labels[keep[j]] for j, _ in off]
    verb = "has" if len(group) == 1 else "have"
    where = f"the contribution{'s' if len(group) > 1 else ''} through {' and '.join(group)}"
    if abs(a + 1) < 1e-3:
        return "sign", f"your {ctx.answer} is right except that {where} {verb} the wrong sign."
    n = _bessel_n(a)
    if n is not None and (n in ctx.batch_sizes or not ctx.batch_sizes or n in _variance_sizes(ctx)):
        ratio = f"{n}/{n - 1}" if a > 1 else f"{n - 1}/{n}"
        return "bessel", (
            f"your {ctx.answer} is right except that {where} {'is' if verb == 'has' else 'are'} "
            f"{ratio} times what it should be (n={n}): use the same 1/(n-1) or 1/n there as the "
            "forward pass does."
        )
    if 1e-3 <= abs(a) <= 1e4:
        be = "is" if verb == "has" else "are"
        words, advice = _factor_words(a, ctx, of=f"what {'it' if be == 'is' else 'they'} should be")
        return "scale", f"your {ctx.answer} is right except that {where} {be} {words}: {advice}."
    return None


def _one_weight_off(A: torch.Tensor, yd: torch.Tensor, ctx: Context) -> list[tuple[int, float]]:
    """(column, weight) for each column whose weight alone, at a simple value, explains ``yd``;
    the others weigh 1."""
    found = []
    tol = 1e-4 * float(yd.abs().max()) + ctx.atol
    for j in range(A.shape[1]):
        col = A[:, j]
        rest = yd - (A.sum(1) - col)  # what column j must explain
        a = float(rest @ col) / float(col @ col)
        fits = float((rest - a * col).abs().max()) <= tol
        if fits and abs(a - 1) > 1e-3 and (abs(a + 1) < 1e-3 or simple_factor(a, ctx.batch_sizes)):
            found.append((j, a))
    signs = [(j, a) for j, a in found if abs(a + 1) < 1e-3]
    # one path with its sign flipped is the likeliest slip
    return signs if len(signs) == 1 else found


def _misplaced(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> bool:
    """Whether every position's gradient was added into another position's row: ``y`` is what the
    index and the gradient flattened in different orders give, or has the right totals over the
    rows where those totals say something (a batch norm upstream makes them zero for any batch)."""
    if any(
        m.shape == y.shape and _near(y, m, ctx) for m in (ctx.misplaced() if ctx.misplaced else [])
    ):
        return True
    totals = e.sum(0)
    telling = float(totals.abs().max()) > 1e-3 * float(e.abs().max()) * e.shape[0] ** 0.5
    return telling and close(y.sum(0), totals, ctx.rtol, ctx.atol + 1e-6)


def _accumulate(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    said = getattr(ctx.facts, "indexed_add", None)
    if ctx.index_uses is None or y.dim() == 0:
        # no graph to tell which rows are wrong: the code alone, when it has an indexed +=
        return ("accumulate", _indexed_add_hint(ctx, said)) if said and y.dim() else None
    uses = ctx.index_uses()
    if uses and y.dim() >= 2 and _misplaced(y, e, ctx):
        return "layout", (
            f"your {ctx.answer} adds up every position's gradient, but into the wrong rows: the "
            "gradient of position (i, j) goes to the row its index picked there, so flatten the "
            "index and the gradient in the same order."
        )
    for idx in uses:
        counts = torch.bincount(idx.flatten(), minlength=y.shape[0])[: y.shape[0]]
        row_bad = ~torch.isclose(y, e, rtol=ctx.rtol, atol=ctx.atol).reshape(y.shape[0], -1).all(
            dim=1
        )
        once = counts == 1  # rows used once: a slip of overwriting leaves them right
        if bool(row_bad.any()) and bool(once.any()) and not bool((row_bad & (counts <= 1)).any()):
            rows = torch.nonzero(row_bad).flatten().tolist()
            if said:
                return "accumulate", _indexed_add_hint(ctx, said)
            return "accumulate", (
                f"rows {_short_list(rows)} of your {ctx.answer} are wrong, and each was used more "
                "than once: sum the gradients of every use (`index_add_`, or `+=` in a loop over "
                "the positions) instead of overwriting."
            )
    return None


def _positions(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """A lookup's gradient (``C[X]``) from only some of the index's positions: the rows of the
    other positions never added (``X[:, -1]`` for all of ``X``)."""
    parts = _graph(ctx.positions, [])
    if len(parts) < 2 or any(p.shape != y.shape for p in parts):
        return None
    A = torch.stack([p.double().flatten() for p in parts], 1)
    yd = y.double().flatten()
    w = torch.linalg.lstsq(A, yd.unsqueeze(1)).solution.flatten()
    picked = (w - 1).abs() < 1e-4
    if not bool((picked | (w.abs() < 1e-4)).all()) or bool(picked.all()) or not bool(picked.any()):
        return None
    if not _near(y, (A[:, picked].sum(1)).reshape(y.shape).to(y.dtype), ctx):
        return None
    have = [int(j) for j in torch.nonzero(picked).flatten()]
    return "missing-path", (
        f"your {ctx.answer} holds the rows of only position{'s' if len(have) > 1 else ''} "
        f"{', '.join(map(str, have))} of the {len(parts)} positions of the index that picks from "
        f"{ctx.tensor}: every position's gradient goes back to the row it picked, so add them all "
        "(`index_add_` over the whole index, flattened as the gradient is)."
    )


def _short_list(items: list[int], most: int = 5) -> str:
    head = ", ".join(map(str, items[:most]))
    return head + (f" and {len(items) - most} more" if len(items) > most else "")


def _mask(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """A softmax's probabilities (rows of ``e`` that sum to 1, with zeros where a mask is) whose
    mask came after the softmax (the learner's rows, scaled to sum to 1, are the expected ones)
    or never (the learner's rows, masked and scaled to sum to 1, are). One factor for every row is
    a ``scale``, not a mask."""
    if e.dim() < 2 or e.shape[-1] < 2 or not e.is_floating_point() or bool((e < 0).any()):
        return None
    masked = e == 0
    if (
        not bool(masked.any())
        or not close(e.sum(-1), torch.ones_like(e[..., 0]), 1e-4, 1e-4)
        or bool((y < 0).any())
    ):
        return None

    def rescaled(t: torch.Tensor) -> torch.Tensor:
        return t / t.sum(-1, keepdim=True).clamp_min(torch.finfo(t.dtype).tiny)

    where = "the scores before the softmax (`masked_fill(~mask, float('-inf'))`)"
    sums = y.sum(-1)
    # a mask after the softmax leaves each row its own sum
    uneven = float(sums.max() - sums.min()) > 1e-3
    if not bool(y[masked].any()) and uneven and close(rescaled(y), e, ctx.rtol, ctx.atol):
        return "mask", (
            f"your {ctx.answer} is 0 where the mask is, but its rows sum to less than 1: the mask "
            f"came after the softmax. Mask {where}, so that each row's weights sum to 1."
        )
    if bool(y[masked].any()) and close(rescaled(y.masked_fill(masked, 0.0)), e, ctx.rtol, ctx.atol):
        return "mask", (
            f"your {ctx.answer} puts weight where the mask is (positions a query may not see): "
            f"the mask is missing. Mask {where}."
        )
    return None


def _rows_of_probabilities(p: torch.Tensor) -> bool:
    """Whether ``p``'s last axis holds probabilities: none negative, each row summing to 1."""
    if p.dim() < 2 or p.shape[-1] < 2:
        return False
    ones = torch.ones_like(p[..., 0])
    return not bool((p < 0).any()) and close(p.sum(-1), ones, 1e-4, 1e-4)


def _temperature(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """Probabilities that are the softmax of the right scores times a constant: a scale inside
    the softmax missing or one too many (05's ``1/sqrt(head_size)``). Each row's logarithms are
    then the right ones times that constant, plus the row's own shift."""
    if y.shape != e.shape or not e.is_floating_point():
        return None
    if not (_rows_of_probabilities(e) and _rows_of_probabilities(y)):
        return None
    live = e > 0
    if bool(y[~live].any()) or not bool((y[live] > 0).all()):
        return None
    count = live.sum(-1, keepdim=True).clamp_min(1)

    def centred(p: torch.Tensor) -> torch.Tensor:
        logs = torch.where(live, p.double().clamp_min(1e-300).log(), torch.zeros_like(p.double()))
        return (logs - logs.sum(-1, keepdim=True) / count) * live

    u, v = centred(e), centred(y)
    den = float((u * u).sum())
    if den <= 0.0:
        return None
    c = float((u * v).sum()) / den
    if (
        abs(c - 1) < 1e-3
        or c <= 0
        or float((v - c * u).abs().max()) > 1e-4 * max(1.0, float(v.abs().max()))
    ):
        return None
    said = _head_size(c, ctx.head_sizes)
    what = f"{fmt_num(c)} times the scores" + (said[0] if said else "")
    advice = said[1] if said else "find the constant factor missing or extra before the softmax"
    return "scale", (
        f"your {ctx.answer} is the softmax of {what}: the right softmax, with a constant factor "
        f"inside it: {advice}."
    )


def _padding(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """Right where the gradient is not zero, but not zero where it is (entries the loss never
    reads: padding targets of -1, what a max or an index did not pick, a relu's dead inputs): a
    mask or a selection left out."""
    if e.numel() < 2 or y.shape != e.shape or not e.is_floating_point():
        return None
    dead = e == 0
    if not bool(dead.any()) or bool(dead.all()) or not bool(y[dead].any()):
        return None
    if close(y[~dead], e[~dead], ctx.rtol, ctx.atol):
        rest = "everywhere else it is right."
    else:
        c = _uniform_factor(y[~dead], e[~dead], ctx)
        if c is None:
            return None
        words, advice = _factor_words(c, ctx, of=ctx.target)
        rest = f"everywhere else it is {words}: {advice}."
    extra = dead & (y != 0)
    k = int(extra.sum())
    rows = e.dim() >= 2 and bool((dead.all(-1) | ~extra.any(-1)).all())  # only in dead rows
    where = (
        "positions the loss never sees, such as padding targets of -1"
        if rows
        else "entries the loss never reads: those a max, an index or a mask did not pick"
    )
    return "mask", (
        f"your {ctx.answer} has values at {k} entries where the gradient is zero ({where}): they "
        f"must get 0; {rest}"
    )


def _factor(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """The gradient times a tensor of the forward pass, or divided by it (or by its square): a
    factor of the formula missing or one too many (``bngain``, ``lnf_rstd``). A factor with zeros
    (a masked softmax's probabilities) counts as missing when the answer times it is the gradient
    and the gradient is zero wherever it is."""
    found = []  # (how far off, name, power)
    for name, x in _factor_tensors(e, ctx, zeros=True):
        has_zeros = not bool((x != 0).all())
        for k in (1,) if has_zeros else (1, -1, 2):
            fixed = y * x**k
            if close(fixed, e, ctx.rtol, ctx.atol):
                found.append((float((fixed - e).abs().max()), name, k))
    if not found:
        return None
    _, name, k = min(found)  # the closest: `/ rstd` is `rstd` twice over before it is `var`
    what = {1: "missing", -1: "one too many", 2: "missing twice"}[k]
    return "factor", (
        f"your {ctx.answer} is the gradient {'divided by' if k > 0 else 'times'} `{name}`"
        f"{'**2' if k == 2 else ''}: the factor `{name}` is {what} in your formula (a `*` that "
        "should be a `/`, or the other way round, counts too)."
    )


def _factor_tensors(
    e: torch.Tensor, ctx: Context, zeros: bool = False, sums: bool = False
) -> list[tuple[str, torch.Tensor]]:
    """The forward tensors that may be a factor of the gradient: broadcasting to its shape, not
    the checked tensor itself, its values other than 0 not all alike (no mask), and with no
    zeros, or (``zeros``) zeros only where the gradient is zero and at most half of them; with
    ``sums``, also the sums along one axis of those of the gradient's shape (a row's count)."""
    out = []
    named = dict(ctx.tensors() if ctx.tensors is not None else {})
    if sums:
        for name, x in list(named.items()):
            if x.shape == e.shape and x.dim() == 2 and x.is_floating_point():
                for a in range(x.dim()):
                    named[f"{name}.sum({a}, keepdim=True)"] = x.detach().sum(a, keepdim=True)
    for name, x in named.items():
        x = x.detach()
        if (
            name == ctx.variable
            or x.numel() < 2
            or not x.is_floating_point()
            or not _broadcasts_to(x, e)
        ):
            continue
        nz = x[x != 0]
        if nz.numel() < 2 or float(nz.max() - nz.min()) <= 1e-6 * float(nz.abs().max()):
            continue
        if nz.numel() < x.numel():
            dead = (x == 0).expand(e.shape)
            if not zeros or nz.numel() * 2 < x.numel() or bool(e[dead].any()):
                continue
        out.append((name, x.to(e.dtype)))
    return out


def _path_factor(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """Right through some of the tensor's uses (or of a fused formula's terms), and through the
    others times or divided by a tensor of the forward pass: a factor missing or one too many in
    one part of the sum (a fused layer norm's ``/ rstd`` for ``* rstd``, beside a residual's)."""
    if ctx.paths is None or ctx.tensors is None or y.shape != e.shape:
        return None
    paths = ctx.paths()
    if len(paths) < 2:
        paths = _graph(ctx.terms, [])
    if len(paths) < 2 or any(c is None or c.shape != e.shape for _, c in paths):
        return None
    big = float(e.abs().max())
    keep = [i for i, (_, c) in enumerate(paths) if float(c.abs().max()) > 1e-6 * big]
    if not 2 <= len(keep) <= 6:
        return None
    tensors = _factor_tensors(e, ctx, sums=True)
    for size in range(1, len(keep)):
        for group in combinations(keep, size):
            part = sum(paths[i][1] for i in group)
            mine = y - sum(paths[i][1] for i in keep if i not in group)
            if _near(mine, part, ctx) or not bool(part.any()):
                continue
            for name, x in tensors:
                for k in (1, -1, 2):
                    if _near(mine * x**k, part, ctx):
                        labels = [str(paths[i][0]) for i in group]
                        return "factor", _path_factor_hint(ctx, labels, name, k)
    return None


def _fused_terms(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """A tensor used once, in a fused rule of two terms (a softmax's, cross-entropy's): the answer
    is those terms with one of them off by a sign or a constant factor."""
    if ctx.paths is None or ctx.terms is None or len(ctx.paths()) >= 2:
        return None  # several uses: ``_missing_path`` weighs their terms
    terms = _graph(ctx.terms, [])
    if len(terms) < 2 or any(c is None or c.shape != e.shape for _, c in terms):
        return None
    parts, labels = [c for _, c in terms], [label for label, _ in terms]
    if not _adds_up(parts, e):
        return None
    return _one_path_off(y, e, parts, labels, ctx) or _one_path_placed(y, parts, labels, ctx)


def _path_factor_hint(ctx: Context, labels: list[str], name: str, k: int) -> str:
    what = {1: "missing", -1: "one too many", 2: "missing twice"}[k]
    s = "s" if len(labels) > 1 else ""
    return (
        f"your {ctx.answer} is right except that its contribution{s} through "
        f"{' and '.join(labels)} {'is' if not s else 'are'} {'divided by' if k > 0 else 'times'} "
        f"`{name}`{'**2' if k == 2 else ''}: the factor `{name}` is {what} in that part of your "
        "formula (a `*` that should be a `/`, or the other way round, counts too)."
    )


def _entry_terms(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """Entries of a matrix product's gradient that each hold the rule's terms (one per value of
    the summed index: a weight's gradient from each sample) with some left out or negated, the
    other entries right: a path missing, or a sign, entry by entry."""
    terms = _graph(ctx.shared_terms, None)
    if terms is None or terms.shape[1:] != y.shape or not 2 <= terms.shape[0] <= 6:
        return None
    bad = ~torch.isclose(y, e, rtol=ctx.rtol, atol=ctx.atol)
    if not bool(bad.any()):
        return None
    k = terms.shape[0]
    if int(bad.sum()) * 3**k > 2_000_000:  # too many entries to try every choice of terms
        return None
    weights = torch.cartesian_prod(*[torch.tensor([-1.0, 0.0, 1.0])] * k).to(terms.dtype)
    flat = terms.reshape(k, -1)[:, bad.flatten()]  # (k, wrong entries)
    sums = weights @ flat  # each entry's value under each choice of weights
    tol = ctx.atol + 1e-5 * float(terms.abs().max()) + 64 * torch.finfo(y.dtype).eps
    fits = (sums - y[bad].to(terms.dtype)).abs() <= tol
    fits &= weights.abs().sum(1, keepdim=True) > 0  # nothing at all is no term left out
    if not bool(fits.any(0).all()):
        return None
    picked = weights[fits.int().argmax(0)]  # one choice per wrong entry
    where = [tuple(int(i) for i in at) for at in torch.nonzero(bad)][:4]
    entries = ", ".join(map(str, where))
    if bool((picked >= 0).all()):
        return "missing-path", (
            f"your {ctx.answer} at {entries} holds only some of the terms of its sum: each entry "
            f"of {ctx.tensor} is used once for every value of the index the matrix product sums "
            f"over ({k} of them: every sample for a weight), and its gradient adds one term per "
            "use: add the ones left out."
        )
    return "sign", (
        f"your {ctx.answer} at {entries} has the terms of its sum, but with "
        f"{'the wrong sign' if bool((picked <= 0).all()) else 'a term of the wrong sign'}: check "
        "the sign of each term there."
    )


def _broadcasts_to(x: torch.Tensor, e: torch.Tensor) -> bool:
    """Whether ``x`` broadcasts to ``e``'s shape exactly."""
    try:
        return tuple(torch.broadcast_shapes(x.shape, e.shape)) == tuple(e.shape)
    except RuntimeError:
        return False


def _few_turns(v: torch.Tensor, turns: float = 3.5) -> bool:
    """Whether the values, in order, go up and down little: their total variation is at most
    ``turns`` times their range (1 for a monotone run, 2 for one turn; noise far more)."""
    spread = float(v.max() - v.min())
    return float(v.diff().abs().sum()) <= turns * spread + 1e-9 * float(v.abs().max())


def _smooth(x: torch.Tensor, v: torch.Tensor, tol: float = 0.01) -> bool:
    """Whether ``v``, in the order of ``x``, lies close to the line through each point's two
    neighbours (a smooth function of ``x``): the median miss at most ``tol`` of its range."""
    if v.numel() < 3:
        return False
    gap = x[2:] - x[:-2]
    w = torch.where(gap > 0, (x[1:-1] - x[:-2]) / gap.clamp_min(1e-300), torch.full_like(gap, 0.5))
    miss = (v[1:-1] - (v[:-2] + w * (v[2:] - v[:-2]))).abs()
    return float(miss.median()) <= tol * float(v.max() - v.min()) + 1e-12


def _local(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """The gradient from above multiplied in, by a smooth function of the input that is not its
    local derivative: an elementwise step's slope re-derived wrong (in one use's path, the others
    right)."""
    ways = ctx.elementwise() if ctx.elementwise is not None else []
    for x, up, label, rest in ways:
        if x.shape == y.shape == up.shape == rest.shape and _slope_of_input(y - rest, up, x):
            where = "" if len(ways) == 1 and not bool(rest.any()) else " in that path"
            return "local", (
                f"your {ctx.answer} multiplies in `{label}`, the gradient from above, but{where} "
                f"by another function of `{ctx.tensor}` than the local derivative, the slope of "
                f"`{_tensor_of(label)}` in `{ctx.tensor}`: re-derive that slope (in terms of the "
                "step's input or output, whichever the rule is written with)."
            )
    return None


def _slope_of_input(y: torch.Tensor, up: torch.Tensor, x: torch.Tensor) -> bool:
    """Whether ``y`` is ``up`` times a smooth function of ``x``, entry by entry: zero where ``up``
    is, something where it is not, and a slope with few turns that lies on the line through its
    neighbours, in value and in orders of magnitude."""
    reach = up.abs() > 1e-12 * float(up.abs().max())
    if int(reach.sum()) < 8 or not bool(torch.isfinite(y[reach]).all()):
        return False
    if bool(y[~reach].any()) or not bool(y[reach].any()):
        return False
    order = x[reach].double().argsort()
    at, slope = x[reach].double()[order], (y[reach] / up[reach]).double()[order]
    if not (_few_turns(slope) and _smooth(at, slope)):
        return False
    if bool((slope > 0).all()) or bool((slope < 0).all()):
        return _few_turns(slope.abs().log()) and _smooth(at, slope.abs().log())
    return True


def _layout(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """The right numbers in the wrong places: the same values, rearranged (heads joined in
    another order, a view of the wrong axes, pieces concatenated in another order, a max's or an
    index's gradient sent to other entries)."""
    if y.shape != e.shape or e.numel() < 4 or not e.is_floating_point():
        return None
    if float(e.max() - e.min()) <= 0.0:
        return None
    ys, es = y.flatten().sort().values, e.flatten().sort().values
    if not close(ys, es, ctx.rtol, ctx.atol) or _path_left_out(y, e, ctx):
        return None
    if e.dim() >= 1 and int((e != 0).sum(-1).max()) <= 1:  # one entry a row: a picked one
        return "layout", (
            f"your {ctx.answer} holds the right values at the wrong entries: the gradient goes to "
            "the entries the forward pass picked (its maximum, its indices), and only those."
        )
    return "layout", (
        f"your {ctx.answer} holds the right numbers in the wrong places: its axes were split, "
        "joined, stacked or concatenated in another order than the forward pass's; undo the "
        "forward pass's reshapes and transposes in reverse order."
    )


def _transposed_upstream(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """The rule applied with a square gradient from above transposed (``datt.T`` for ``datt``)."""
    if ctx.transposed is None:
        return None
    for label, grad in ctx.transposed():
        if grad.shape == y.shape and _near(y, grad, ctx) and not _near(e, grad, ctx):
            if _tried(_missing_path, y, e, ctx):
                return None  # the part a transposed gradient adds is zero: a path left out
            return "transpose", (
                f"your {ctx.answer} is what the rule gives with the last two axes of {label}, the "
                "gradient from above, swapped: check which of its axes is which (the forward "
                "pass's order) and transpose it only where the rule needs it."
            )
    return None


def _graph(fact: Callable[[], Any] | None, default: Any) -> Any:
    """A graph fact, or ``default`` when there is none or it cannot be had: the graph can only
    help a diagnosis, never break one."""
    try:
        return default if fact is None else fact()
    except Exception:
        return default


def _reordered(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """A matrix product's rule with its two factors in the other order (``dN @ A.T`` for
    ``A.T @ dN``): both square, the shapes fit either way."""
    for other, grad in _graph(ctx.reordered, []):
        if grad.shape == y.shape and _near(y, grad, ctx) and not _near(e, grad, ctx):
            factor = f"`{other}`" if other else "the product's other factor"
            return "transpose", (
                f"your {ctx.answer} multiplies {factor} (transposed) and the gradient from above "
                "in the other order: both are square, so the shapes fit either way, but a matrix "
                "product does not commute. For the right factor of `X @ Y` the rule is "
                "`X.T @ dOut`, for the left factor `dOut @ Y.T`."
            )
    return None


def _skipped(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """The gradient arriving at a later tensor taken from a tensor a step or more after it: a
    fused formula fed ``dlnf`` where ``lnf_hat``'s gradient (``lnf_w * dlnf``) belongs."""
    for used, meant, grad in _graph(ctx.skipped, []):
        if grad.shape == y.shape and _near(y, grad, ctx) and not _near(e, grad, ctx):
            return "operand", (
                f"your {ctx.answer} is what the rules give with `d{used}`, the gradient of "
                f"`{used}`, where the gradient of `{meant}` belongs: `{used}` is computed from "
                f"`{meant}`, so carry `d{used}` back through that step (its factor) first."
            )
    return None


def _instead(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """The rule applied with another tensor where the gradient from above belongs: the gradient
    of a step too far (``dhpreact`` for ``dhprebn``) or the later tensor's own value."""
    if ctx.instead is None:
        return None
    for used, meant, grad in ctx.instead():
        if grad.shape == y.shape and _near(y, grad, ctx) and not _near(e, grad, ctx):
            if _tried(_missing_path, y, e, ctx):
                return None  # the part the other tensor gives is zero (a norm's): a path left out
            what = f"`{used}` itself" if used == _tensor_of(meant) else f"`{used}`"
            return "operand", (
                f"your {ctx.answer} is what the rule gives with {what} where `{meant}`, the "
                f"gradient arriving from above, belongs: the step takes the gradient of the "
                f"tensor it feeds, `{meant}`."
            )
    return None


def _slip(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """The value a named slip of the computation gives (AdamW without its decoupled decay)."""
    for word, hint, value in ctx.slips() if ctx.slips is not None else []:
        x = torch.as_tensor(value).to(y.dtype)
        if x.shape == y.shape and close(y, x, ctx.rtol, ctx.atol) and not close(e, x, 1e-7, 0.0):
            return word, hint.format(name=ctx.answer)
    return None


def _alias(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """A wrong answer that was right until another name for the same tensor changed it in place."""
    other = getattr(ctx.facts, "changed_through", None)
    if not other:
        return None
    return "alias", (
        f"`{other} = {ctx.answer}` makes one tensor with two names, so changing {other} in place "
        f"changed your {ctx.answer} too: start {other} from `{ctx.answer}.clone()`."
    )


def _upstream(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """A right step taken from a wrong earlier answer: the error started upstream."""
    if ctx.upstream is None:
        return None
    for given in ctx.upstream():
        if given.grad is None:  # say why the error may have started earlier, and how to tell
            ctx.fail_notes.append(_untraced(given))
            continue
        if given.grad.shape != y.shape or not _near(y, given.grad, ctx, given.scale):
            continue
        ctx.blamed = list(given.roots)
        return "upstream", _upstream_hint(given.wrong, given.roots)
    return None


def _untraced(given: Given) -> Note:
    """A note for a wrong answer after wrong earlier ones, on a freed graph."""
    verb, it = ("is", "it") if len(given.wrong) == 1 else ("are", "them")
    return Note(
        "untraced",
        f"your {_and(given.wrong)} {verb} wrong too, and cmp cannot tell whether this step is "
        f"right given {it}: the backward pass freed the graph (`loss.backward(retain_graph=True)` "
        "keeps it, so that cmp can replay the step from your own answers)",
    )


def _upstream_hint(wrong: Sequence[str], roots: Sequence[str]) -> str:
    """Which earlier answers the step was taken from, and which of them to fix first."""
    names = _and(wrong)
    if list(roots) == list(wrong):
        which, first = ("which is", "it") if len(wrong) == 1 else ("which are", "them")
        return (
            f"your step is right given your {names}, {which} wrong: fix {first} first, then run "
            "this check again."
        )
    which = "which is" if len(wrong) == 1 else "which are"
    return (
        f"your step is right given your {names}, {which} wrong because of your {_and(roots)}: "
        f"fix {_and(roots)} first, the first wrong answer, then run the checks after it again."
    )


def _and(names: Sequence[str]) -> str:
    return " and ".join(f"`{n}`" for n in names)


def _tensor_of(label: str) -> str:
    """The tensor an answer is the gradient of: ``probs`` for ``dprobs``."""
    return label[1:] if label.startswith("d") and label[1:].isidentifier() else label


def _chain(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """The local derivative alone: the gradient from above (a later tensor's ``dX``) never
    multiplied in, for every path or for one of them."""
    if ctx.local is None or ctx.value:
        return None
    ways = ctx.local()
    for left_out, grad in ways:
        if grad.shape != y.shape or not _near(y, grad, ctx) or _near(e, grad, ctx):
            continue
        ups = _and(left_out)
        if len(ways) == 1 or left_out == ways[0][0]:
            return "chain", (
                f"your {ctx.answer} is the local derivative alone: the gradient arriving from "
                f"above, {ups}, is missing from it (chain rule: the local derivative times the "
                "gradient of the output)."
            )
        if _tried(_missing_path, y, e, ctx):
            return None  # that part is zero (a softmax's, whose rows sum to one): a path left out
        tensor = " and ".join(f"`{_tensor_of(a)}`" for a in left_out)
        return "chain", (
            f"your {ctx.answer} is right except that its contribution through {tensor} is the "
            f"local derivative alone: {ups}, the gradient arriving from above, is missing from "
            "that part."
        )
    return None


def _operand(y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple[str, str] | None:
    """A product's gradient taken with the wrong operand: another tensor where the input belongs."""
    if ctx.swaps is None:
        return None
    for used, meant, grad in ctx.swaps():
        if grad.shape != y.shape or not _near(y, grad, ctx):
            continue
        if used.endswith(" transposed"):  # a square operand, its transpose missing or doubled
            return "transpose", (
                f"your {ctx.answer} is what the rule gives with `{used[: -len(' transposed')]}` "
                "transposed: it is square, so the shapes fit either way; check where the rule "
                "transposes it and where not."
            )
        if not meant:  # a factor the notebook has no name for, its gradient in its place
            return "operand", (
                f"your {ctx.answer} is what the rule gives with the gradient of the product's "
                "other factor where that factor itself belongs: the gradient through a product "
                "takes the other factor from the forward pass, not its gradient."
            )
        if not used:  # the tensor itself in the other factor's place
            return "operand", (
                f"your {ctx.answer} is what the rule gives with {ctx.tensor} itself as the other "
                f"factor: the gradient of a product with respect to {ctx.tensor} is the other "
                f"factor times the gradient of the product."
            )
        return "operand", (
            f"your {ctx.answer} is what the rule gives with `{used}` where `{meant}` belongs: "
            f"the gradient through a product takes the other factor, `{meant}`, from the "
            "forward pass."
        )
    return None


def _tried(rule: Callable, y: torch.Tensor, e: torch.Tensor, ctx: Context) -> tuple | None:
    """``rule``'s explanation, or None when it cannot be worked out for this answer (a graph it
    cannot rebuild): one rule that fails leaves the next ones their turn."""
    try:
        return rule(y, e, ctx)
    except Exception:  # noqa: BLE001 - any failure of one rule is that rule not applying
        return None


def _near(y: torch.Tensor, z: torch.Tensor, ctx: Context, scale: float = 0.0) -> bool:
    """Close up to float rounding at the scale of either tensor, or of the gradients they were
    computed from (``scale``): both are sums in some order."""
    big = max(float(y.abs().max()), float(z.abs().max()), scale) if y.numel() else 0.0
    eps = torch.finfo(y.dtype).eps if y.is_floating_point() else 0.0
    return bool(torch.allclose(y, z.to(y.dtype), rtol=ctx.rtol, atol=ctx.atol + 64 * eps * big))


def variable_of(name: str) -> str | None:
    """The Python variable in a check's name: ``W3`` for "W3 (tanh)"; None when there is none."""
    head = name.split(" (", 1)[0].strip()
    return head if head.isidentifier() else None


def _indexed_add_hint(ctx: Context, said: str) -> str:
    """Why ``dC[Xb] += demb`` adds a repeated row once."""
    return (
        f"your {ctx.answer} comes from `{said}`, which reads the selected rows, adds, and writes "
        "them back once: a row selected several times keeps only one of its additions. Use "
        "`index_add_`, which adds every one, or `+=` in a loop over the positions."
    )


# The value rules that need no graph measurement, or only a cheap one, in the order tried.
VALUE_RULES = (
    _not_finite,
    _alias,
    _upstream,
    _mask,
    _temperature,
    _chain,
    _padding,
    _transposed_upstream,
    _reordered,
    _negative,
    _instead,
    _slip,
    _all_zeros,
    _transposed,
    _layout,
)
