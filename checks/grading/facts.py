"""What the autograd graph says about a checked tensor, as data the grader can keep.

The grader judges answers outside the learner's kernel, where there is no graph. The reference run
of the instructor's notebook records, for each ``cmp('X', dX, X)`` of an answer cell, what the
notebook's diagnosis reads off the graph: each use's contribution, the index tensors of lookups,
the size of the gradients arriving at the uses, the gradient with a product's operand swapped
for another tensor, and the gradient with the gradient from above forgotten (ones in its place)
or, where it is square, transposed.
The grader's judgement reads these instead of the graph, so that the notebook and the grader name
a mistake with the same word and hint.
"""

from __future__ import annotations

import math
import re
from typing import Any

import torch

from checks.diagnose import Context, Use
from checks.graph import GraphFacts, scope_tensors

# The facts' format: part of the key of a cached reference run, so that a reference recorded by an
# earlier grader (without the later facts) is made again.
VERSION = 6  # 6: a path's use as [op, tensor, slot], not its label

# cmp('X', dX, X) in a solution cell: the check's name, the answer's variable, the tensor's
# expression
CMP = re.compile(r"""\bcmp\(\s*(['"])([^'"]+)\1\s*,\s*(\w+)\s*,\s*([\w.\[\]"']+)\s*[,)]""")


def use_record(use: Use) -> list[Any]:
    """A path's use as the record keeps it (``weights_only`` loads plain lists, no dataclass)."""
    return [use.op, use.tensor, use.slot]


def use_of(record: list[Any]) -> Use:
    """A path's use, from :func:`use_record`'s list."""
    op, tensor, slot = record
    return Use(str(op), str(tensor), None if slot is None else int(slot))


def targets(code: str) -> dict[str, str]:
    """For each answer variable checked with a literal name in ``code``, the tensor's expression."""
    return {m.group(3): m.group(4) for m in CMP.finditer(code)}


def of(
    t: torch.Tensor,
    names: dict[str, torch.Tensor],
    loss: torch.Tensor | None = None,
) -> dict[str, Any]:
    """The graph facts of ``t`` (which has its ``.grad``), found as ``cmp`` finds them."""
    from checks.compare import earlier  # the notebook's checked answers so far, as cmp sees them

    g = GraphFacts(t, t.grad.detach(), names, loss)
    return {
        "paths": [[use_record(use), c] for use, c in g.paths()],
        "terms": [[label, c] for label, c in g.terms()],
        "index": list(g.index_uses()),
        "misplaced": list(g.misplaced()),
        "scale": float(g.upstream_scale() or 0.0),
        "swaps": [[used, meant, grad] for used, meant, grad in g.swaps(names)],
        "local": [[list(left_out), grad] for left_out, grad in g.local(earlier())],
        "transposed": [[label, grad] for label, grad in g.transposed(earlier())],
        "broadcast": [list(copies) for copies in g.broadcast()],
        "elementwise": [list(way) for way in g.elementwise(earlier())],
        "instead": [list(swap) for swap in g.instead(earlier())],
        "reordered": [[other, grad] for other, grad in g.reordered()],
        "shared_terms": g.shared_terms(),
        "positions": list(g.positions()),
        "skipped": [list(way) for way in g.skipped(most=6)],
    }


def of_op(f: Any, xs: tuple[float, ...], upstream: float = 0.7) -> dict[str, Any]:
    """The graph facts of an operation's inputs, as the grader's probe of notebook 01's ``Value``
    class builds its graph: ``upstream * f(*t)`` for a float64 tensor ``t`` of the inputs, its
    graph kept, the operation's result named ``out`` as its ``_backward`` calls it. Each use of an
    input is a path (``x * x`` takes it twice); no operand swaps, whose other factors would be
    elements of ``t`` that no name of the notebook stands for."""
    t = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
    out = f(*t)
    root = upstream * out
    root.backward(retain_graph=True)
    g = GraphFacts(t, t.grad.detach(), {"out": out}, root)
    paths = [[use_record(use), c] for use, c in g.paths()]
    return {"paths": paths, "scale": float(g.upstream_scale() or 0.0)}


def of_adamw(
    p: torch.Tensor, grad: torch.Tensor, m: torch.Tensor, v: torch.Tensor, t: int, lr: float
) -> dict[str, dict[str, Any]]:
    """The facts of a probed AdamW step (``p_new``, ``m_new``, ``v_new``): what each of the
    usual slips gives (``checks.optim``)."""
    from checks.optim import facts as slipped

    return slipped(p, grad, m, v, t, lr)


def collect(wanted: dict[str, str], scope: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Facts for each check id of ``wanted`` (check id -> tensor expression), evaluated
    in ``scope``.

    A check whose tensor cannot be found, or has no gradient, is left out; so is one whose facts
    cannot be computed: the grader then judges it without them, as before.
    """
    names = scope_tensors(scope)  # as cmp finds them among a notebook's variables
    out = {}
    for check, expr in wanted.items():
        try:
            t = eval(expr, dict(scope))  # an instructor's expression from the solution: `logits`
            if isinstance(t, torch.Tensor) and t.requires_grad and t.grad is not None:
                out[check] = of(t, names)
        except Exception:
            continue
    return out


def apply(ctx: Context, facts: dict[str, Any] | None) -> Context:
    """``ctx`` reading the recorded facts where the notebook's ``cmp`` reads the graph."""
    if not facts:
        return ctx
    paths = [(use_of(record), c) for record, c in facts.get("paths", [])]
    swaps = [(str(u), str(m), x) for u, m, x in facts.get("swaps", [])]
    terms = [(str(label), c) for label, c in facts.get("terms", [])]
    ctx.paths = lambda: paths
    ctx.terms = lambda: terms
    ctx.index_uses = lambda: list(facts.get("index", []))
    ctx.misplaced = lambda: list(facts.get("misplaced", []))
    scale = float(facts.get("scale", 0.0))
    ctx.scale = lambda: scale if math.isfinite(scale) else 0.0
    ctx.swaps = lambda: swaps
    local = [(tuple(str(a) for a in left_out), x) for left_out, x in facts.get("local", [])]
    ctx.local = lambda: local
    transposed = [(str(label), x) for label, x in facts.get("transposed", [])]
    ctx.transposed = lambda: transposed
    slips = [(str(word), str(hint), x) for word, hint, x in facts.get("slips", [])]
    ctx.slips = lambda: slips
    copies = [(int(k), int(axis)) for k, axis in facts.get("broadcast", [])]
    ctx.broadcast = lambda: copies
    instead = [(str(u), str(m), x) for u, m, x in facts.get("instead", [])]
    ctx.instead = lambda: instead
    ways = [(x, up, str(label), rest) for x, up, label, rest in facts.get("elementwise", [])]
    ctx.elementwise = lambda: ways
    reordered = [(str(other), x) for other, x in facts.get("reordered", [])]
    ctx.reordered = lambda: reordered
    shared = facts.get("shared_terms")
    ctx.shared_terms = lambda: shared
    positions = list(facts.get("positions", []))
    ctx.positions = lambda: positions
    skipped = [(str(u), str(m), x) for u, m, x in facts.get("skipped", [])]
    ctx.skipped = lambda: skipped
    return ctx
