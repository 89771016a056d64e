"""Checks of a micrograd-style ``Value`` class (notebook 01), on graphs built to expose one property
each, every gradient compared with PyTorch's.

``check_op(Value, "mul")`` runs one operation's ``_backward`` with 0.7 arriving from above: on two
distinct operands, on one Value in both slots (``x * x``), on operands that already hold a gradient
(as if from another use), and compares the forward value too. ``check_backward(Value)`` runs
``backward()`` on graphs whose intermediate nodes are used by two later nodes, and reads the order
in which it called each node's ``_backward``. ``check_grads`` compares a whole backward pass with
PyTorch tensors the notebook built, ``check_graph`` with autograd on the same graph built again in
PyTorch from the Values' ``_prev`` and ``_op``, ``check_central`` with central differences.

A wrong answer is explained by what the probes show, never by reading the code: a wrong forward
value, the local derivative alone (``out.grad`` never multiplied in), another operation's rule, the
output where the input belongs, a contribution overwritten (``=`` for ``+=``), a node run before
the nodes that use it, twice or never; a whole graph names the operation whose own check fails.
Each check is recorded under its name, the operation's name for ``check_op`` and ``"backward"``
for ``check_backward``, which are the names of their hint ladders: ``hint("mul")`` starts from the
last failure and ``summary()`` counts the rungs shown.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import torch

from checks.compare import close_enough, record
from checks.numeric import numgrad
from checks.placeholders import NotWritten
from checks.render.html import num
from checks.tolerances import ATOL, RTOL
from checks.verdict import Result, Worst

__all__ = [
    "G",
    "OPS",
    "check_backward",
    "check_central",
    "check_graph",
    "check_grads",
    "check_op",
    "judge_backward",
    "judge_central",
    "judge_graph",
    "judge_grads",
    "judge_op",
]

G = 0.7  # the gradient that arrives from above in every probe of one operation
NAMES = "xyz"  # the inputs of a probe, as its formula calls them


# ---------------------------------------------------------------- the operations and their probes


@dataclass(frozen=True)
class Probe:
    """One call of an operation's ``_backward``: ``slots`` says which input fills each operand
    (``(0, 0)`` is ``x * x``), ``starts`` the gradients the inputs hold before it runs."""

    text: str
    xs: tuple[float, ...]
    slots: tuple[int, ...] = (0,)
    starts: tuple[float, ...] = ()
    k: float | None = None  # the exponent of a power


@dataclass(frozen=True)
class Op:
    """An operation of the ``Value`` class: its check's (and hint ladder's) name, how the messages
    call it, the ``_op`` its output carries, its probes and the wrong operand its rule may take."""

    name: str
    says: str
    probes: tuple[Probe, ...]
    swap: str = ""


def _two(text: str) -> tuple[Probe, ...]:
    """A binary operation's probes: two operands, one Value in both slots, earlier gradients."""
    same = text.replace("y", "x")
    return (
        Probe(text, (2.0, -3.0), (0, 1)),
        Probe(same, (1.5,), (0, 0)),
        Probe(text, (2.0, -3.0), (0, 1), (0.25, -0.4)),
    )


def _one(text: str, *xs: float, k: float | None = None) -> tuple[Probe, ...]:
    """A unary operation's probes: at each of ``xs``, then at the first with an earlier gradient."""
    return (*(Probe(text, (x,), k=k) for x in xs), Probe(text, (xs[0],), starts=(0.25,), k=k))


OPS: dict[str, Op] = {
    "add": Op("add", "a sum", _two("x + y")),
    "mul": Op(
        "mul", "a product", _two("x * y"), "its own operand's value where the other one's belongs"
    ),
    "pow": Op(
        "pow",
        "a power",
        (
            Probe("x**3", (-1.3,), k=3),
            Probe("x**-0.5", (2.0,), k=-0.5),
            Probe("x**3", (-1.3,), starts=(0.25,), k=3),
        ),
        "the power rule at the output (`out.data`) where the input (`self.data`) belongs",
    ),
    "tanh": Op(
        "tanh",
        "tanh",
        _one("tanh(x)", 0.8, -1.2),
        "tanh's slope written with the input (`self.data`) where tanh's output belongs",
    ),
    "exp": Op(
        "exp",
        "exp",
        _one("exp(x)", 0.5, -0.3),
        "the input (`self.data`) where the derivative of eˣ, the output itself, belongs",
    ),
    "relu": Op("relu", "relu", _one("relu(x)", 1.5, -1.5)),
}


def apply(op: str, args: Sequence[Any], k: float | None = None) -> Any:
    """The operation ``op`` on Values or on PyTorch tensors alike (a binary one given a single
    operand, as a ``_prev`` set holds ``x * x``, takes it twice)."""
    if op == "add":
        return args[0] + args[-1]
    if op == "mul":
        return args[0] * args[-1]
    if op == "pow":
        return args[0] ** k
    return getattr(args[0], op)()


def op_of(v: Any) -> str | None:
    """The operation that made the Value ``v``, read off its ``_op`` ("?" when unknown, None for a
    leaf)."""
    if not children(v):
        return None
    sym = getattr(v, "_op", "")
    sym = sym if isinstance(sym, str) else ""
    if sym.startswith("**"):
        return "pow"
    return {"+": "add", "*": "mul", "tanh": "tanh", "exp": "exp", "relu": "relu"}.get(sym, "?")


def _local(op: str, vals: Sequence[float], k: float | None) -> tuple[float, list[float]]:
    """PyTorch's value of the operation at ``vals`` and its local derivative for each operand."""
    ts = [torch.tensor(float(x), dtype=torch.float64, requires_grad=True) for x in vals]
    z = apply(op, ts, k)
    grads = torch.autograd.grad(z, ts, allow_unused=True)
    return float(z.detach()), [0.0 if g is None else float(g) for g in grads]


def _swapped(op: str, vals: Sequence[float], z: float, k: float | None) -> list[float] | None:
    """The operation's local derivatives taken with the wrong operand (``Op.swap``)."""
    found: Any = None
    if op == "mul":
        found = list(vals)
    elif op == "tanh":
        found = [1 - vals[0] ** 2]
    elif op == "exp":
        found = [vals[0]]
    elif op == "pow" and k is not None and z != 0:
        found = [k * z ** (k - 1)]
    ok = found is not None and all(isinstance(d, float) and math.isfinite(d) for d in found)
    return found if ok else None


def _rules(op: str, vals: Sequence[float]) -> list[tuple[str, list[float]]]:
    """The other operations' local derivatives at the same operands; for a unary operation a sum's
    rule is ``out.grad`` handed on unchanged."""
    pool = ("add", "mul") if len(vals) == 2 else ("add", "tanh", "exp", "relu")
    out = []
    for other in pool:
        if other != op:
            derivs = [1.0] if other == "add" and len(vals) == 1 else _local(other, vals, None)[1]
            out.append((other, derivs))
    return out


# ---------------------------------------------------------------- what a number is


def _number(x: Any) -> float | None:
    """``x`` as a float when it is a plain number (a 0-d tensor, a numpy number), else None."""
    if isinstance(x, (bool, int, float)):
        return float(x)
    if isinstance(x, torch.Tensor) and x.numel() == 1:
        return float(x)
    if type(x).__module__ == "numpy":
        try:
            return float(x)
        except (TypeError, ValueError):
            return None
    return None


def _kind(x: Any) -> str:
    """What a non-number is, for a message: "None", "a Value", "a str"."""
    if x is None or x is Ellipsis:
        return "None" if x is None else "`...`"
    name = type(x).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _near(a: float, b: float, scale: float = 0.0) -> bool:
    """Equal up to ``cmp``'s tolerances and float rounding."""
    return close_enough(
        torch.tensor([a], dtype=torch.float64), torch.tensor([b], dtype=torch.float64), RTOL, ATOL
    ) or abs(a - b) <= 32 * torch.finfo(torch.float64).eps * max(abs(a), abs(b), scale)


def _fmt(x: float) -> str:
    """A number as the messages write it."""
    return num(x)


def _stopped(name: str, why: BaseException, where: str) -> Result:
    """The result of a check whose code stopped: not written yet, or the error in one sentence."""
    if isinstance(why, NotWritten):
        return Result(
            name=name,
            ok=False,
            exact=False,
            maxdiff=None,
            mistake="missing",
            hint=f"not written yet: {why}",
        )
    said = str(why).split("\n")[0][:200]
    return Result(
        name=name,
        ok=False,
        exact=False,
        maxdiff=None,
        mistake="wrong",
        hint=f"{where} raised {type(why).__name__}: {said}.",
    )


# ---------------------------------------------------------------- one operation


@dataclass
class Outcome:
    """One probe: its largest difference and exactness, or the failed Result."""

    maxdiff: float = 0.0
    exact: bool = True
    failed: Result | None = None


def judge_op(Value: type, name: str) -> Result:
    """The ``_backward`` of the operation ``name`` ("add", "mul", "pow", "tanh", "exp", "relu") on
    each of its probes; the first probe that fails is explained. Never raises on the learner's
    code."""
    op = OPS[name]
    worst, exact = 0.0, True
    for p in op.probes:
        try:
            got = _probe(Value, op, p)
        except Exception as exc:  # our own diagnosis must never become a traceback
            got = Outcome(failed=_stopped(name, exc, f"checking `{p.text}`"))
        if got.failed is not None:
            return got.failed
        worst, exact = max(worst, got.maxdiff), exact and got.exact
    return Result(name=name, ok=True, exact=exact, maxdiff=worst)


def check_op(Value: type, name: str, quiet: bool = False) -> Result:
    """``judge_op``, printed and recorded under the operation's name (its hint ladder's)."""
    return record(judge_op(Value, name), quiet)


def _shown(p: Probe) -> str:
    """A probe as the messages show it: "`x * y` at x = 2, y = -3"."""
    inputs = ", ".join(f"{NAMES[i]} = {_fmt(x)}" for i, x in enumerate(p.xs))
    return f"`{p.text}` at {inputs}"


def _who(p: Probe, i: int) -> str:
    """The gradient that input ``i`` receives, as the learner's ``_backward`` calls it."""
    slots = [s for s, j in enumerate(p.slots) if j == i]
    if len(p.slots) == 1:
        return "`self.grad`"
    if len(slots) == 2:
        return f"the grad of {NAMES[i]} (both `self` and `other`)"
    return f"`{('self', 'other')[slots[0]]}.grad` ({NAMES[i]})"


def _probe(Value: type, op: Op, p: Probe) -> Outcome:
    """Run one probe on the learner's class and judge it against PyTorch."""
    try:
        vs = [Value(x) for x in p.xs]
        for v, s in zip(vs, p.starts, strict=False):
            v.grad = s
        out = apply(op.name, [vs[i] for i in p.slots], p.k)
    except Exception as exc:
        return Outcome(failed=_stopped(op.name, exc, f"computing {_shown(p)} with your Value"))
    z, local = _local(op.name, [p.xs[i] for i in p.slots], p.k)
    zy = _number(getattr(out, "data", None))
    if zy is None or not _near(zy, z):
        why = "is not a number" if zy is None else "is wrong"
        hint = (
            f"your {op.name} computes {_shown(p)}, and its `out.data` {why}: the forward value is "
            "wrong, so no gradient built on it can be right."
        )
        return _failed(op.name, "forward", hint, zy, z, "PyTorch")
    try:
        out.grad = G
        out._backward()
    except Exception as exc:
        return Outcome(failed=_stopped(op.name, exc, f"your {op.name}'s `_backward` in `{p.text}`"))
    starts = p.starts or (0.0,) * len(vs)
    e = [
        starts[i] + G * sum(d for d, j in zip(local, p.slots, strict=True) if j == i)
        for i in range(len(vs))
    ]
    return _compare_probe(op, p, [v.grad for v in vs], e, starts, (z, local))


def _failed(
    name: str, word: str, hint: str, yours: float | None, expected: float, source: str
) -> Outcome:
    """A failed probe: its Result, with yours and the expected number as the worst element."""
    worst = None
    if yours is not None and math.isfinite(yours):
        worst = Worst((), yours, expected, abs(yours - expected), 1, 1, source)
    diff = worst.absdiff if worst else None
    return Outcome(
        failed=Result(
            name=name, ok=False, exact=False, maxdiff=diff, mistake=word, hint=hint, worst=worst
        )
    )


def _compare_probe(
    op: Op, p: Probe, grads: list[Any], e: list[float], starts: Sequence[float], at: tuple
) -> Outcome:
    """The inputs' grads after one ``_backward`` against PyTorch's, the first wrong one
    explained."""
    for i, g in enumerate(grads):
        if _number(g) is None:
            hint = (
                f"after your {op.name}'s `_backward` in {_shown(p)}, {_who(p, i)} is {_kind(g)}, "
                "not a number: add numbers to it (a Value's number is its `.data`)."
            )
            return _failed(op.name, "wrong", hint, None, e[i], "autograd")
    y = [float(g) for g in grads]
    for i, yi in enumerate(y):
        if not math.isfinite(yi):
            hint = (
                f"your {op.name}'s `_backward` gives {_who(p, i)} a NaN or an infinity in "
                f"{_shown(p)}, where the gradient is finite: look for a division by zero."
            )
            return _failed(op.name, "nan", hint, None, e[i], "autograd")
    wrong = [i for i in range(len(y)) if not _near(y[i], e[i])]
    if not wrong:
        diffs = [abs(a - b) for a, b in zip(y, e, strict=True)]
        return Outcome(max(diffs), all(a == b for a, b in zip(y, e, strict=True)))
    i = wrong[0]
    word, hint = _explain_probe(op, p, i, y[i], e[i], starts[i], *at)
    return _failed(op.name, word, hint, y[i], e[i], "autograd")


def _explain_probe(
    op: Op, p: Probe, i: int, y: float, e: float, start: float, z: float, local: list[float]
) -> tuple[str, str]:
    """Mistake and hint for input ``i``'s wrong grad ``y`` (``e`` expected) in one probe."""
    at, who, name = _shown(p), _who(p, i), op.name
    vals = [p.xs[j] for j in p.slots]
    mine = [s for s, j in enumerate(p.slots) if j == i]

    def fits(derivs: Sequence[float], g: float = G) -> bool:
        guess = start + g * sum(derivs[s] for s in mine)
        return _near(y, guess, abs(e)) and not _near(e, guess, abs(e))

    if fits(local, 1.0):
        return "chain", (
            f"in {at}, your {name}'s `_backward` gives {who} the local derivative alone: multiply "
            f"it by `out.grad`, the gradient arriving from above ({G} here)."
        )
    swapped = _swapped(name, vals, z, p.k)
    if op.swap and swapped is not None and fits(swapped):
        return "operand", f"in {at}, your {name}'s `_backward` gives {who} {op.swap}."
    for other, derivs in _rules(name, vals):
        if fits(derivs):
            plain = " (`out.grad` handed on unchanged)" if len(vals) == 1 and other == "add" else ""
            return "rule", (
                f"in {at}, your {name}'s `_backward` gives {who} what the rule of "
                f"{OPS[other].says} gives{plain}: {op.says} has a local derivative of its own "
                f'(hint("{name}"))'
            ) + "."
    kept = _kept(y, start, [G * local[s] for s in mine], e)
    if kept is not None:
        return "missing-path", kept.format(at=at, who=who, name=name, start=_fmt(start))
    if _near(y - start, -(e - start)):
        return "sign", (
            f"in {at}, your {name}'s `_backward` gives {who} the negative of its share: check the "
            "sign of the local derivative."
        )
    if _near(y, start):
        return "wrong", (
            f"in {at}, your {name}'s `_backward` adds nothing to {who}: every operand receives its "
            "share of `out.grad`."
        )
    return "wrong", (
        f"in {at}, with {G} arriving from above, your {name}'s `_backward` gives {who} a value "
        f'that matches no common slip: re-derive its local derivative (hint("{name}")).'
    )


def _kept(y: float, start: float, parts: list[float], e: float) -> str | None:
    """When ``y`` holds only some of the contributions (the gradient already there, and one per
    slot), the hint's template; else None."""
    pieces = [start, *parts]
    for size in range(1, len(pieces)):
        for subset in combinations(range(len(pieces)), size):
            total = sum(pieces[j] for j in subset)
            if subset == (0,) or not _near(y, total, abs(e)) or _near(e, total, abs(e)):
                continue
            if 0 not in subset and start != 0:
                return (
                    "in {at}, {who} already held {start} (as if from another use of the Value), "
                    "and your {name}'s `_backward` replaced it instead of adding to it: a Value "
                    "used several times collects one contribution per use, so add with `+=`, "
                    "never assign with `=`."
                )
            return (
                "in {at} both operands are one Value, and your {name}'s `_backward` keeps only "
                "one of their two contributions: add each with `+=`, so that the second does not "
                "overwrite the first."
            )
    return None


# ---------------------------------------------------------------- a whole backward pass


def children(v: Any) -> list[Any]:
    """The Values ``v`` was computed from (its ``_prev``: a tuple, a list or a set)."""
    prev = getattr(v, "_prev", ())
    try:
        return list(prev or ())
    except TypeError:
        return []


def graph(root: Any, limit: int = 100_000) -> tuple[list[Any], dict[int, list[Any]]]:
    """Every Value below ``root`` (each once, the root first) and, by id, the Values that use
    each."""
    nodes, users, seen, stack = [], {id(root): []}, set(), [root]
    while stack and len(nodes) < limit:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        nodes.append(v)
        for c in children(v):
            users.setdefault(id(c), [])
            if v not in users[id(c)]:
                users[id(c)].append(v)
            stack.append(c)
    return nodes, users


@dataclass
class Run:
    """One backward pass of the learner's: the graph, the order in which the nodes' ``_backward``
    ran (by id), each node's grad when its ``_backward`` first ran, the error that stopped it."""

    root: Any
    nodes: list[Any]
    users: dict[int, list[Any]]
    calls: list[int] = field(default_factory=list)
    grad_at: dict[int, Any] = field(default_factory=dict)
    error: BaseException | None = None
    said: tuple[str, str, tuple[str, ...]] | None = None  # the explanation, once found


def run_backward(root: Any) -> Run:
    """``root.backward()`` from zero gradients, with every node's ``_backward`` logged as it runs;
    the nodes get their own ``_backward`` back afterwards."""
    nodes, users = graph(root)
    run = Run(root, nodes, users)
    kept = {}
    for v in nodes:
        try:
            v.grad = 0.0
            kept[id(v)] = (v, v._backward)
            v._backward = _logged(run, v, v._backward)
        except Exception:  # a Value of another shape: run it unlogged
            continue
    try:
        root.backward()
    except Exception as exc:
        run.error = exc
    finally:
        for v, fn in kept.values():
            v._backward = fn
    return run


def _logged(run: Run, v: Any, fn: Callable[[], Any]) -> Callable[[], Any]:
    """``v``'s ``_backward`` ``fn``, noting in ``run`` when it ran and ``v``'s grad then."""

    def logged() -> Any:
        run.calls.append(id(v))
        run.grad_at.setdefault(id(v), v.grad)
        return fn()

    return logged


def judge_grads(
    root: Any, checks: Iterable[tuple[str, Any, torch.Tensor]], source: str = "autograd"
) -> list[Result]:
    """``root.backward()`` once (``run_backward``), then for each ``(name, values, t)`` the grads
    of ``values`` (a Value or a list) against ``t.grad``."""
    run = run_backward(root)
    out = []
    for name, values, t in checks:
        vs = list(values) if isinstance(values, (list, tuple)) else [values]
        if not isinstance(t, torch.Tensor) or t.grad is None or t.numel() != len(vs):
            hint = f"the tensor for {name} has no `.grad` for {len(vs)} Value(s): run its backward."
            out.append(
                Result(name=name, ok=False, exact=False, maxdiff=None, mistake="no-grad", hint=hint)
            )
            continue
        out.append(verdict(name, vs, t.grad.detach(), source, run, where=name))
    return out


def check_grads(root: Any, *checks: tuple[str, Any, torch.Tensor], quiet: bool = False) -> None:
    """``judge_grads``, each result printed and recorded: ``check_grads(L, ("a", a, ta), ...)``."""
    for res in judge_grads(root, checks):
        record(res, quiet)


def verdict(
    name: str,
    values: list[Any],
    e: torch.Tensor,
    source: str,
    run: Run,
    where: str,
    own: bool = False,
    names: dict[int, str] | None = None,
) -> Result:
    """The grads of ``values`` after ``run`` against ``e``; a mismatch explained by the run (the
    order of the ``_backward`` calls) or by the operation whose own check fails."""
    if run.error is not None:
        return _stopped(name, run.error, "your backward()")
    got = [_number(getattr(v, "grad", None)) for v in values]
    bad = next((v for v, g in zip(values, got, strict=True) if g is None), None)
    if bad is not None:
        found = _op_fault(type(run.root), run.nodes)
        word, hint, blamed = _blame(*found, where, own) if found else ("wrong", "", ())
        hint = hint or (
            f"after your backward(), the grad of {_node(bad, names or {})} is "
            f"{_kind(getattr(bad, 'grad', None))}, not a number: each `_backward` adds numbers (a "
            "Value's number is its `.data`)."
        )
        return Result(
            name=name, ok=False, exact=False, maxdiff=None, mistake=word, hint=hint, blamed=blamed
        )
    y = torch.tensor(got, dtype=e.dtype).reshape(e.shape)
    if not bool(torch.isfinite(y).all()) and bool(torch.isfinite(e).all()):
        found = _op_fault(type(run.root), run.nodes)
        word, hint, blamed = _blame(*found, where, own) if found else ("nan", "", ())
        hint = hint or f"your backward() gives NaN or infinity in {where}: look for a 0/0."
        return Result(
            name=name, ok=False, exact=False, maxdiff=None, mistake=word, hint=hint, blamed=blamed
        )
    exact = bool(torch.equal(y, e))
    maxdiff = float((y - e).abs().max()) if e.numel() else 0.0
    if exact or close_enough(y, e, RTOL, ATOL):
        return Result(name=name, ok=True, exact=exact, maxdiff=maxdiff)
    word, hint, blamed = _explain_run(run, where, own, names or {})
    return Result(
        name=name,
        ok=False,
        exact=exact,
        maxdiff=maxdiff,
        mistake=word,
        hint=hint,
        worst=_worst(y, e, source),
        blamed=blamed,
    )


def _worst(y: torch.Tensor, e: torch.Tensor, source: str) -> Worst:
    """The element that differs most, and how many differ, as ``cmp`` reports them."""
    diff = (y - e).abs().flatten()
    k = int(diff.argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(k), y.shape)) if y.dim() else ()
    good = torch.isclose(y, e, rtol=RTOL, atol=ATOL)
    flat_y, flat_e = y.flatten(), e.flatten()
    return Worst(
        index,
        float(flat_y[k]),
        float(flat_e[k]),
        float(diff[k]),
        int((~good).sum()),
        y.numel(),
        source,
    )


def _node(v: Any, names: dict[int, str], root: Any = None) -> str:
    """A node as the messages call it: its name in the probe, its label, the root, else its
    operation."""
    label = names.get(id(v)) or getattr(v, "label", "")
    if isinstance(label, str) and label:
        return f"`{label}`"
    op = getattr(v, "_op", "")
    if v is root:
        return "the root"
    return f"a `{op}` node" if isinstance(op, str) and op else "a node"


def _explain_run(
    run: Run, where: str, own: bool, names: dict[int, str]
) -> tuple[str, str, tuple[str, ...]]:
    """Mistake, hint and blamed operations for a backward pass whose grads differ: for
    ``backward()``'s own check (``own``) the order first, an operation's own check failing an
    ``upstream``; for a whole graph the operation first, whose check comes earlier."""
    if run.said is None:
        order = _order_fault(run, where, names)
        if order is not None and own:
            run.said = (*order, ())
        elif (found := _op_fault(type(run.root), run.nodes)) is not None:
            op, word, hint = found
            run.said = _blame(op, word, hint, where, own)
        elif order is not None:
            also = "; the check `backward` shows the same on a small graph."
            run.said = (order[0], order[1][:-1] + also, ())
        else:
            run.said = (
                "wrong",
                f"your backward() runs every `_backward` once, each after the nodes that use it, "
                f"and every operation passes its own check, yet {where} differs: compare it with "
                "PyTorch one operation at a time (`-`, `/` and a number on either side are built "
                "from the others).",
                (),
            )
    return run.said


def _blame(op: str, word: str, hint: str, where: str, own: bool) -> tuple[str, str, tuple]:
    """A graph's failure put down to the operation ``op``, whose own check failed with ``word``
    and ``hint``: ``upstream`` for backward()'s own check (``own``), else the operation's word."""
    if own:
        return (
            "upstream",
            f"your backward() runs every `_backward` once, each after the nodes that use it, but "
            f"the graph {where} goes through your {op}, which fails its own check `{op}`: fix it "
            "first, then run this check again.",
            (op,),
        )
    return word, f"{where} goes through your {op}, which fails its own check `{op}`: {hint}", ()


def _op_fault(Value: type, nodes: list[Any]) -> tuple[str, str, str] | None:
    """(operation, mistake, hint) of the first operation in the graph that fails its own check."""
    present = {op_of(v) for v in nodes} - {None}
    for name in OPS:
        if name in present or "?" in present:
            res = judge_op(Value, name)
            if not res.ok and res.mistake != "missing":
                return name, res.mistake or "wrong", res.hint or ""
    return None


def _order_fault(run: Run, where: str, names: dict[int, str]) -> tuple[str, str] | None:
    """What the order of the ``_backward`` calls says: the root not started at 1, a node never run,
    run twice, or run before a node that uses it; None when it is a reverse topological order."""
    at = f"in {where}, " if where else ""
    inner = [v for v in run.nodes if children(v)]
    count = Counter(run.calls)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for k, i in enumerate(run.calls):
        first.setdefault(i, k)
        last[i] = k

    def name(v: Any) -> str:
        return _node(v, names, run.root)

    start = _number(run.grad_at.get(id(run.root), 1.0))
    if start is not None and not _near(start, 1.0):
        return "wrong", (
            f"{at}your backward() ran the root's `_backward` with the root's grad at "
            f"{_fmt(start)}: the backward pass starts from ∂L/∂L = 1, in place before the first "
            "`_backward` runs."
        )
    for v in inner:
        if not count[id(v)]:
            return "order", (
                f"{at}the `_backward` of {name(v)} never ran, so no gradient passed through it: "
                "the order must hold every node the root depends on, the root itself too."
            )
    for v in inner:
        if count[id(v)] > 1:
            return "order", (
                f"{at}the `_backward` of {name(v)} ran {count[id(v)]} times, so it passed its "
                "gradient on as often: list each node once, however many nodes use it (a set of "
                "the nodes already visited)."
            )
    for v in inner:
        for u in run.users.get(id(v), []):
            if last.get(id(u), -1) > first[id(v)]:
                node, user = name(v), name(u)
                user = "another" + user[1:] if user == node and user.startswith("a ") else user
                return "order", (
                    f"{at}the `_backward` of {node} ran before that of {user}, which uses it, so "
                    f"{node if node.startswith('`') else 'it'} passed on only the gradient that "
                    "had arrived so far: run the nodes in reverse topological order, each after "
                    "every node that uses it."
                )
    return None


# ---------------------------------------------------------------- backward() on its own graphs


@dataclass(frozen=True)
class Graph:
    """A graph for ``backward()``: ``build`` makes its named nodes from the leaves (Values or
    tensors), "L" the root; ``text`` is the formula the messages show."""

    text: str
    build: Callable[..., dict[str, Any]]
    xs: tuple[float, ...]


def _diamond(x: Any, y: Any, z: Any) -> dict[str, Any]:
    """A node used by two later nodes that both feed the root."""
    a = x * y
    t, s = a.tanh(), a + z
    return {"a": a, "t": t, "s": s, "L": t * s}


def _shortcut(x: Any, y: Any, z: Any) -> dict[str, Any]:
    """A node used near the root and again deeper down (a breadth-first order fails here)."""
    a = x + y
    m = a * z
    b = m.tanh()
    return {"a": a, "m": m, "b": b, "L": b * a}


GRAPHS = (
    Graph("L = t * s (t = tanh(a), s = a + z, a = x * y)", _diamond, (0.6, -0.8, 1.1)),
    Graph("L = b * a (b = tanh(m), m = a * z, a = x + y)", _shortcut, (0.5, -0.2, 1.3)),
)


def judge_backward(Value: type) -> Result:
    """``backward()`` on graphs whose intermediate nodes are used by two later nodes (``GRAPHS``),
    the leaves' grads against autograd's; a mismatch explained by the order of the calls."""
    worst, exact = 0.0, True
    for g in GRAPHS:
        try:
            leaves = [Value(x) for x in g.xs]
            nodes = g.build(*leaves)
        except Exception as exc:
            return _stopped("backward", exc, f"building {g.text} with your Value")
        ts = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in g.xs]
        g.build(*ts)["L"].backward()
        names = {id(v): k for k, v in zip(NAMES, leaves, strict=True)}
        names.update({id(v): k for k, v in nodes.items()})
        e = torch.stack([t.grad for t in ts])
        run = run_backward(nodes["L"])
        res = verdict("backward", leaves, e, "autograd", run, g.text, own=True, names=names)
        if not res.ok:
            return res
        worst, exact = max(worst, res.maxdiff or 0.0), exact and res.exact
    return Result(name="backward", ok=True, exact=exact, maxdiff=worst)


def check_backward(Value: type, quiet: bool = False) -> Result:
    """``judge_backward``, printed and recorded as "backward" (its hint ladder's name)."""
    return record(judge_backward(Value), quiet)


# ---------------------------------------------------------------- a whole graph, rebuilt in PyTorch


def _post_order(root: Any) -> list[Any]:
    """The Values below ``root``, each after all the Values it was computed from."""
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        v, done = stack.pop()
        if done:
            order.append(v)
        elif id(v) not in seen:
            seen.add(id(v))
            stack.append((v, True))
            stack.extend((c, False) for c in children(v) if id(c) not in seen)
    return order


def mirror(root: Any) -> dict[int, torch.Tensor]:
    """The graph below ``root`` in PyTorch, by the id of each Value: every leaf a float64 tensor
    of its data that requires grad, every other node its ``_op`` on its children's tensors.
    Raises ValueError for what cannot be built (an unknown ``_op``, data that is not a number)."""
    tensors: dict[int, torch.Tensor] = {}
    for v in _post_order(root):
        kids = children(v)
        if not kids:
            data = _number(getattr(v, "data", None))
            if data is None:
                raise ValueError(f"a leaf's `data` is {_kind(getattr(v, 'data', None))}")
            tensors[id(v)] = torch.tensor(data, dtype=torch.float64, requires_grad=True)
            continue
        op = op_of(v)
        if op == "?" or (op != "pow" and len(kids) > (2 if op in ("add", "mul") else 1)):
            raise ValueError(f"a node's `_op` is {getattr(v, '_op', None)!r}")
        k = float(v._op[2:]) if op == "pow" else None
        tensors[id(v)] = apply(op, [tensors[id(c)] for c in kids], k)
    return tensors


def judge_graph(name: str, root: Any, values: Iterable[Any]) -> Result:
    """``root.backward()`` and the grads of ``values`` against autograd on the same graph, built
    again in PyTorch (``mirror``)."""
    vs = list(values)
    try:
        tensors = mirror(root)
    except ValueError as why:
        hint = (
            f"{name} cannot be built in PyTorch to compare with: {why} (the Value class's `+`, "
            "`*`, `**k`, `tanh`, `exp` and `relu` are known): keep `_op` as the class gives it."
        )
        return Result(name=name, ok=False, exact=False, maxdiff=None, mistake="no-grad", hint=hint)
    tensors[id(root)].backward()
    zero = torch.zeros((), dtype=torch.float64)
    e = torch.stack([_grad_or(tensors.get(id(v)), zero) for v in vs])
    return verdict(name, vs, e, "autograd", run_backward(root), where=name)


def _grad_or(t: torch.Tensor | None, zero: torch.Tensor) -> torch.Tensor:
    """A mirrored leaf's gradient, 0 for a Value that is not in the graph."""
    return zero if t is None or t.grad is None else t.grad.detach()


def check_graph(name: str, root: Any, values: Iterable[Any], quiet: bool = False) -> Result:
    """``judge_graph``, printed and recorded: ``check_graph("net", loss, net.parameters())``."""
    return record(judge_graph(name, root, values), quiet)


def judge_central(
    name: str, f: Callable[[list[Any]], Any], xs: Sequence[float], Value: type
) -> Result:
    """The grads that ``backward()`` gives the inputs of ``f`` (a list of Values to the root
    Value) against central differences of ``f``'s own forward pass."""
    try:
        leaves = [Value(float(x)) for x in xs]
        root = f(leaves)

        def forward(t: torch.Tensor) -> float:
            value = _number(f([Value(float(x)) for x in t]).data)
            return math.nan if value is None else value

        e = numgrad(forward, torch.tensor(list(xs), dtype=torch.float64))
    except Exception as exc:
        return _stopped(name, exc, "your Value's forward pass")
    return verdict(name, leaves, e, "central difference", run_backward(root), where=name)


def check_central(
    name: str, f: Callable[[list[Any]], Any], xs: Sequence[float], Value: type, quiet: bool = False
) -> Result:
    """``judge_central``, printed and recorded."""
    return record(judge_central(name, f, xs, Value), quiet)
