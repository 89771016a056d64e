"""A drill drawn from a seed: a small forward pass of named steps (checks/drills/ops.py), its code,
the answer cell a learner fills in, and the generator's own answers built from the operations'
rules (the tests hold them to autograd).

The structure comes from ``random.Random(seed)``, the values from the ``torch.Generator`` the
drill's code seeds itself, so that running the code shown gives the tensors checked.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from checks.drills.ops import (
    BINARY,
    CAT,
    CROSS_ENTROPY,
    INDEX,
    LINEAR,
    MATMUL,
    REDUCE,
    UNARY,
    VIEW,
    Op,
    kept_axes,
    unbroadcast,
)

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Step:
    """``out = expr``: one named intermediate, from ``op`` on ``operands``."""

    out: str
    op: Op
    operands: tuple[str, ...]
    expr: str
    axis: int | None = None  # a reduction's axis
    keepdim: bool = False
    index: tuple[int, ...] = ()  # the rows an index step picks


@dataclass
class Drill:
    """A forward pass to differentiate by hand: leaves (with their shapes), steps, and the fixed
    weights ``u`` of the loss ``(h * u).sum()`` that make every element's gradient differ."""

    seed: int
    focus: str | None = None  # the mistake word it was drawn for, if any
    leaves: dict[str, Shape] = field(default_factory=dict)
    positive: set[str] = field(default_factory=set)  # leaves drawn > 0, and positive outputs
    bounded: set[str] = field(default_factory=set)  # leaves, and outputs in [-1, 1]
    steps: list[Step] = field(default_factory=list)
    shapes: dict[str, Shape] = field(default_factory=dict)

    @property
    def last(self) -> str:
        return self.steps[-1].out

    @property
    def last_is_loss(self) -> bool:
        return self.steps[-1].op.name == "cross_entropy"

    @property
    def answers(self) -> list[str]:
        """The tensors whose gradients the learner writes, in the order a backward pass meets
        them: the steps last to first, then the leaves."""
        return [s.out for s in reversed(self.steps)] + list(reversed(self.leaves))

    def forward_code(self) -> str:
        """The code that makes the drill's tensors and runs autograd's backward pass."""
        called = f"{self.focus!r}, seed={self.seed}" if self.focus else f"seed={self.seed}"
        lines = [
            f"# drill({called})",
            "import torch",
            *(["import torch.nn.functional as F"] if self.last_is_loss else []),
            "from checks import cmp",
            "",
            f"g = torch.Generator().manual_seed({self.seed})",
        ]
        for name, shape in self.leaves.items():
            dims = ", ".join(map(str, shape))
            if name in self.positive:  # > 0: it divides, or a log takes it
                draw = f"(torch.rand({dims}, generator=g, dtype=torch.float64) + 0.5)"
                lines.append(f"{name} = {draw}.requires_grad_()")
            else:
                draw = f"torch.randn({dims}, generator=g, dtype=torch.float64, requires_grad=True)"
                lines.append(f"{name} = {draw}")
        dims = ", ".join(map(str, self.shapes[self.last])) or "()"  # () for a loss: a number
        lines.append(f"u = torch.randn({dims}, generator=g, dtype=torch.float64)  # fixed weights")
        lines += ["", *(f"{s.out} = {s.expr}" for s in self.steps)]
        lines.append(f"loss = ({self.last} * u).sum()")
        lines += [
            "",
            f"for t in [{', '.join(s.out for s in self.steps)}]:",
            "    t.retain_grad()",
            "loss.backward(retain_graph=True)  # the graph kept: cmp can trace a wrong answer",
        ]
        return "\n".join(lines)

    def answer_cell(self) -> str:
        """The cell beneath the drill: each ``dX = ...`` with the ``cmp`` that checks it."""
        return "\n".join(f"d{n} = ...\ncmp({n!r}, d{n}, {n})" for n in self.answers)

    def solution(self, slip: tuple[int, int, str] | None = None, blank: bool = False) -> str:
        """The generator's own answers, from each operation's rule; a tensor used by several
        steps gets the sum of their contributions. ``slip`` (step, operand, mistake word) writes
        that one contribution as a learner who makes that mistake does (``Op.slips``); ``blank``
        writes every one with a blank (``____``) where the rule's key part goes (a hint's
        skeleton)."""
        parts: dict[str, list[str]] = {self.last: ["____" if blank else "u"]}
        lines = []
        for k in reversed(range(len(self.steps))):
            step = self.steps[k]
            lines.append(f"d{step.out} = {_total(parts[step.out])}")
            for i, name in enumerate(step.operands):
                word = slip[2] if slip and slip[:2] == (k, i) else None
                parts.setdefault(name, []).append(self._contribution(step, i, word, blank))
        lines += [f"d{n} = {_total(parts[n])}" for n in reversed(self.leaves)]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<drill {self.seed}: {len(self.steps)} steps, {len(self.answers)} gradients>"

    def names(self, step: Step) -> dict:
        """What a rule of ``step`` names (``{a}``, ``{g}``, ``{size}``...), for its gradient code
        and its hint ladder alike: operands, output and its gradient, the axis and its sizes, a
        loss's rows and classes, the rows an index picks; ``{g_kept}`` and ``{out_kept}`` with a
        reduced axis put back, so that they broadcast against the operand."""
        a, b, c = (*step.operands, "", "")[:3]
        g, axis = f"d{step.out}", step.axis
        if step.keepdim or axis is None:
            kept, out_kept = g, step.out
        else:
            kept, out_kept = f"{g}.unsqueeze({axis})", f"{step.out}.unsqueeze({axis})"
        rows, classes = (*self.shapes[a], 1, 1)[:2]
        return dict(
            a=a, b=b, c=c, out=step.out, g=g, g_kept=kept, out_kept=out_kept, axis=axis,
            size=self.shapes[a][axis] if axis is not None else 1,
            size_b=self.shapes[b][axis] if axis is not None and b else 1,
            rows=rows, classes=classes, ix=list(step.index),
        )  # fmt: skip

    def _contribution(
        self, step: Step, i: int, slip: str | None = None, blank: bool = False
    ) -> str:
        """What ``step`` adds to the gradient of its ``i``-th operand, as code (as a learner who
        makes the mistake ``slip`` writes it, when given; with a blank, with ``blank``)."""
        rule = step.op.slips[slip][i] if slip else (step.op.skeleton if blank else step.op.grads)[i]
        term = rule.format(**self.names(step))
        if step.op.name in BINARY and slip != "shape":
            shape, full = self.shapes[step.operands[i]], self.shapes[step.out]
            term = unbroadcast(term, shape, full, blank, keep=slip != "keepdim")
        return term


def _total(terms: list[str]) -> str:
    """The sum of a gradient's contributions, as code (each in brackets when there are several)."""
    if len(terms) == 1:
        return terms[0]
    return " + ".join(f"({t})" if " " in t and not t.startswith("(") else t for t in terms)


# the operations a step of each kind picks from
TABLES: dict[str, dict[str, Op]] = {
    "unary": UNARY,
    "binary": BINARY,
    "reuse": BINARY,
    "matmul": {MATMUL.name: MATMUL},
    "linear": {LINEAR.name: LINEAR},
    "reduce": REDUCE,
    "index": {INDEX.name: INDEX},
    "loss": {CROSS_ENTROPY.name: CROSS_ENTROPY},
    "view": {VIEW.name: VIEW},
    "cat": {CAT.name: CAT},
}
# the mistake words a drill can be drawn for: those its operations teach, and a tensor used twice
FOCUSES: tuple[str, ...] = tuple(
    sorted(
        {w for ops in TABLES.values() for op in ops.values() for w in op.teaches} | {"missing-path"}
    )
)
KINDS = (
    *("unary", "unary", "binary", "binary", "matmul", "linear"),
    *("reduce", "reduce", "index", "reuse", "reuse", "view", "cat"),
)


def draw(seed: int, focus: str | None = None) -> Drill:
    """The drill of ``seed``: an input ``x`` and 2 to 5 steps, each picked among those that fit
    the tensor so far (shapes 2 to 8 per axis), a quarter of them then ending in a cross-entropy
    where the last tensor fits one (2 rows or more of 3 classes or more). With ``focus`` (a word
    of ``FOCUSES``) one of them, the second or later, is a step where that mistake is made: a
    tensor used a second time for ``missing-path``, a product for ``transpose``, a mean for
    ``scale``... A drill whose tensor leaves no room for the focused step (a variance over 3
    entries or more, for ``bessel``) is drawn again, from where the generator stands."""
    rng = random.Random(seed)
    for _ in range(1000):
        try:
            return _drawn(Drill(seed, focus=focus), rng)
        except _NoRoom:
            continue
    raise RuntimeError(f"no drill for {focus!r} in a thousand tries from seed {seed}")


class _NoRoom(Exception):
    """No step of any kind fits the tensor and teaches the word wanted."""


def _drawn(d: Drill, rng: random.Random) -> Drill:
    """``d`` (empty) given its input and steps from ``rng``, one of them for ``d.focus``."""
    d.leaves["x"] = d.shapes["x"] = (rng.randint(2, 8), rng.randint(2, 8))
    d.bounded.add("x")
    count = rng.randint(2, 5)
    focus = d.focus
    at = rng.randint(2, count) if focus else 0
    for k in range(1, count + 1):
        # before the focused step, the tensor keeps two axes (a matrix product may follow), and
        # right before a second use, its shape (so that an earlier tensor shares it)
        want = focus if k == at else "same" if k == at - 1 and focus == "missing-path" else None
        keep_2d = bool(focus) and k < at
        _add_step(d, rng, f"h{k}", d.steps[-1].out if d.steps else "x", want, keep_2d)
    last = d.steps[-1].out
    two_rows = len(d.shapes[last]) == 2 and d.shapes[last][0] >= 2  # a mean over rows: 2 or more
    if rng.random() < LOSS_SHARE and two_rows and _fits(d, CROSS_ENTROPY, last):
        _add_loss(d, rng, f"h{count + 1}", last)
    return d


LOSS_SHARE = 0.25  # the drills that end in a cross-entropy, where the last tensor fits one


def _add_loss(d: Drill, rng: random.Random, out: str, cur: str) -> None:
    """A last step: the mean cross-entropy of ``cur``'s rows against a target class each."""
    rows, classes = d.shapes[cur]
    targets = [rng.randrange(classes) for _ in range(rows)]
    expr = CROSS_ENTROPY.forward.format(a=cur, ix=targets)
    _append(d, Step(out, CROSS_ENTROPY, (cur,), expr, index=tuple(targets)), ())


def _add_step(
    d: Drill, rng: random.Random, out: str, cur: str, want: str | None, keep_2d: bool
) -> None:
    """One more step on ``cur``, named ``out``, of a kind that fits ``cur``'s shape: one that
    teaches ``want`` when it is a mistake word, one that keeps the shape when it is "same"."""
    kinds = [k for k in KINDS if _possible(d, k, cur, want, keep_2d)]
    if not kinds:
        raise _NoRoom
    kind = rng.choice(kinds)
    step, shape = _BUILDERS[kind](d, rng, out, cur, want, keep_2d, kind)
    _append(d, step, shape)


Built = tuple[Step, Shape]


def _unary(d: Drill, rng: random.Random, out: str, cur: str, want, keep_2d, kind) -> Built:
    op = rng.choice(_ops(d, kind, cur, want))
    return Step(out, op, (cur,), op.forward.format(a=cur)), d.shapes[cur]


def _product(d: Drill, rng: random.Random, out: str, cur: str, want, keep_2d, kind) -> Built:
    """A matrix product with a new weight matrix (and, for a linear layer, a bias per column)."""
    w = f"W{out[1:]}"
    d.leaves[w] = d.shapes[w] = (d.shapes[cur][1], rng.randint(2, 8))
    operands = (cur, w)
    if kind == "linear":
        operands += (f"b{out[1:]}",)
        d.leaves[operands[2]] = d.shapes[operands[2]] = (d.shapes[w][1],)
    d.bounded.update(operands[1:])
    op = TABLES[kind][kind]
    expr = op.forward.format(**dict(zip("abc", operands, strict=False)))
    return Step(out, op, operands, expr), (d.shapes[cur][0], d.shapes[w][1])


def _reduction(d: Drill, rng: random.Random, out: str, cur: str, want, keep_2d, kind) -> Built:
    op, axis = rng.choice(_reductions(d, cur, want, keep_2d))
    keep = keep_2d or rng.random() < 0.5
    expr = op.forward.format(a=cur, axis=axis, keep=", keepdim=True" if keep else "")
    shape = list(d.shapes[cur])
    shape[axis : axis + 1] = [1] if keep else []
    return Step(out, op, (cur,), expr, axis, keep), tuple(shape)


def _picked(d: Drill, rng: random.Random, out: str, cur: str, want, keep_2d, kind) -> Built:
    index = _index(rng, d.shapes[cur][0])
    step = Step(out, INDEX, (cur,), INDEX.forward.format(a=cur, ix=index), index=tuple(index))
    return step, (len(index), *d.shapes[cur][1:])


def _elementwise(d: Drill, rng: random.Random, out: str, cur: str, want, keep_2d, kind) -> Built:
    """With a new operand (maybe broadcast), or (``reuse``) an earlier tensor of ``cur``'s shape."""
    reuse = kind == "reuse"
    other = rng.choice(_same_shape(d, cur)) if reuse else _new_operand(d, rng, out, cur, want)
    op = rng.choice(_ops(d, kind, other, want))
    return Step(out, op, (cur, other), op.forward.format(a=cur, b=other)), d.shapes[cur]


def _viewed(d: Drill, rng: random.Random, out: str, cur: str, want, keep_2d, kind) -> Built:
    """``cur`` viewed as another matrix of as many entries (:func:`_views`)."""
    shape = rng.choice(_views(d.shapes[cur]))
    expr = VIEW.forward.format(a=cur, shape=", ".join(map(str, shape)))
    return Step(out, VIEW, (cur,), expr), shape


def _joined(d: Drill, rng: random.Random, out: str, cur: str, want, keep_2d, kind) -> Built:
    """``cur`` and a new leaf side by side along an axis where the result keeps 8 or fewer."""
    shape = d.shapes[cur]
    axis = rng.choice([ax for ax in (0, 1) if shape[ax] <= 6])
    more = list(shape)
    more[axis] = rng.randint(2, 8 - shape[axis])
    other = f"q{out[1:]}"
    d.leaves[other] = d.shapes[other] = tuple(more)
    d.bounded.add(other)
    expr = CAT.forward.format(a=cur, b=other, axis=axis)
    joined = list(shape)
    joined[axis] += more[axis]
    return Step(out, CAT, (cur, other), expr, axis=axis), tuple(joined)


def _views(shape: Shape) -> list[Shape]:
    """The other matrices of ``shape``'s entries, 2 to 8 per axis, neither it nor its transpose
    (whose gradient would look like a transposition)."""
    n = shape[0] * shape[1]
    return [
        (r, n // r)
        for r in range(2, 9)
        if n % r == 0 and 2 <= n // r <= 8 and (r, n // r) not in (shape, shape[::-1])
    ]


_BUILDERS = {
    "unary": _unary,
    "matmul": _product,
    "linear": _product,
    "reduce": _reduction,
    "index": _picked,
    "binary": _elementwise,
    "reuse": _elementwise,
    "view": _viewed,
    "cat": _joined,
}


def _ops(d: Drill, kind: str, operand: str | None, want: str | None) -> list[Op]:
    """The operations a step of ``kind`` may apply to ``operand`` (None: one not drawn yet, so
    none that needs it positive or small), teaching ``want`` when it is a mistake word; a second
    use (``reuse``) teaches missing-path whatever its operation."""
    ops = TABLES[kind].values()
    teaching = want in (None, "same") or kind == "reuse"
    return [op for op in ops if _fits(d, op, operand) and (teaching or want in op.teaches)]


def _index(rng: random.Random, rows: int) -> list[int]:
    """3 to 8 picks of ``rows`` rows (2 or more): one row picked twice or more, one once (so
    that overwriting instead of adding leaves some rows right and others wrong), the rest any."""
    twice, once = rng.sample(range(rows), 2)
    rest = [rng.choice([r for r in range(rows) if r != once]) for _ in range(rng.randint(0, 5))]
    index = [twice, twice, once, *rest]
    rng.shuffle(index)
    return index


def _reductions(d: Drill, cur: str, want: str | None, keep_2d: bool) -> list[tuple[Op, int]]:
    """The reductions of ``cur`` a step may take, with their axes: a variance over 3 entries or
    more, and before a focused step only over the second axis, so that the rows stay (2 or more:
    an index or a variance over them may follow)."""
    shape = d.shapes[cur]
    return [
        (op, ax)
        for op in _ops(d, "reduce", cur, want)
        for ax in (0, 1)
        if (shape[ax] > 2 or not op.needs_spread) and (not keep_2d or ax == 1)
    ]


def _possible(d: Drill, kind: str, cur: str, want: str | None, keep_2d: bool) -> bool:
    """Whether a step of ``kind`` fits ``cur`` and, with ``want``, teaches it (or keeps the
    shape, for "same")."""
    two_d = len(d.shapes[cur]) == 2
    if kind in ("matmul", "linear", "reduce", "view", "cat") and not two_d:
        return False
    if kind == "view" and not _views(d.shapes[cur]) or kind == "cat" and min(d.shapes[cur]) > 6:
        return False
    if kind == "reuse" and not _same_shape(d, cur):
        return False
    if kind == "reduce" and not _reductions(d, cur, want, keep_2d):
        return False
    if kind == "index" and d.shapes[cur][0] < 2:
        return False
    if want == "same":
        return kind in ("unary", "binary")
    if want == "missing-path":
        return kind == "reuse"
    if want == "keepdim":  # a row or a column stretched along the other axis
        return kind == "binary" and two_d and max(d.shapes[cur]) > 1
    if want is None:
        return True
    return kind != "reuse" and bool(
        _ops(d, kind, cur if kind in ("unary", "reduce") else None, want)
    )


def _fits(d: Drill, op: Op, operand: str) -> bool:
    """``op`` may take ``operand``: positive where it must be (a log, a divisor), small where it
    must be (an exp), so that every value and gradient of the drill is finite."""
    spread = operand is None or max(d.shapes[operand]) > 2
    return (
        (not op.needs_positive or operand in d.positive)
        and (not op.needs_bounded or operand in d.bounded)
        and (not op.needs_spread or spread)
        and (op.spans is None or operand is None or d.shapes[operand][op.spans] > 2)
    )


def _append(d: Drill, step: Step, shape: Shape) -> None:
    d.steps.append(step)
    d.shapes[step.out] = shape
    if step.op.positive_out:
        d.positive.add(step.out)
    if step.op.bounded_out:
        d.bounded.add(step.out)


def _same_shape(d: Drill, cur: str) -> list[str]:
    """Earlier tensors of ``cur``'s shape: a second use of one is a path its gradient must sum."""
    return [n for n, s in d.shapes.items() if n != cur and s == d.shapes[cur]]


def _new_operand(d: Drill, rng: random.Random, out: str, cur: str, want: str | None) -> str:
    """A new leaf for an elementwise step on ``cur``: its shape, a row (or a 1-d vector) or a
    column broadcast against it (for ``keepdim``: a row or a column that is stretched); drawn
    positive half the time (so that it may divide)."""
    shape = d.shapes[cur]
    choices = [shape, shape[-1:]]
    if len(shape) == 2:
        choices += [(1, shape[1]), (shape[0], 1)]
    if want == "keepdim":
        choices = [c for c in choices if len(c) == 2 and kept_axes(c, shape)]
    name = f"p{out[1:]}"
    d.leaves[name] = d.shapes[name] = rng.choice(choices)
    d.bounded.add(name)
    if rng.random() < 0.5:
        d.positive.add(name)
    return name
