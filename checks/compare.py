"""Compare a hand-written gradient with autograd's: the lecture's ``cmp``, stricter and more
helpful.

``cmp(name, dt, t)`` prints the lecture's line::

    logprobs        | exact: True  | approximate: True  | maxdiff: 0.0

and returns a :class:`~checks.verdict.Result`. ``approximate`` is the verdict: the answer has the
shape of ``t`` and every element is within ``torch.allclose``'s tolerances (rtol=1e-5, atol=1e-8)
plus float32 rounding at the scale of the gradients involved (see :func:`close_enough`). An answer
that only lacks leading size-1 axes of ``t`` (the lecture's ``(64,)`` for a ``(1, 64)`` tensor)
passes with a note, unless ``strict_shapes=True``. When an answer fails, a second line names the
mistake (one word from ``checks.MISTAKES``) with a hint, and a third points at the worst element.

In a terminal the report is printed as plain text. In Jupyter it is shown with both a
``text/plain`` form (the same lines, which nbval compares) and a ``text/html`` one: a green ✓ for
a pass, amber for a pass with a note, red ✗ for a mistake, grey for an answer not written yet.
"""

from __future__ import annotations

import functools
import math
import re
import sys
import weakref
from collections.abc import Callable
from types import EllipsisType, FrameType
from typing import Any

import torch

from checks import session, source
from checks.diagnose import (
    Context,
    diagnose_shape,
    diagnose_values,
    fmt_axes,
    fmt_shape,
    leading_ones_dropped,
    variable_of,
)
from checks.graph import Earlier, GraphFacts, frame_ints, frame_tensors
from checks.kernel import execution_count
from checks.overview import Summary, summary
from checks.render.html import FAIL, NOTE, PASS, TODO
from checks.session import (
    expect,
    expected_checks,
    record,
    reset,
    results,
    shown_checks,
)
from checks.tolerances import ATOL, ROUNDING, RTOL
from checks.verdict import Note, Result, Worst, show

# ``checks.compare`` stays where the learner's names are found: ``Summary``, ``summary``
# (checks.overview), ``expect``, ``record``, ``reset``, ``results``, ``expected_checks``
# (checks.session), ``show`` (checks.verdict) and ``execution_count`` (checks.kernel) are
# imported here from the modules below, and re-exported.
__all__ = [
    "FAIL",
    "NOTE",
    "PASS",
    "TODO",
    "Result",
    "Summary",
    "check_value",
    "cmp",
    "execution_count",
    "expect",
    "expected_checks",
    "record",
    "reset",
    "results",
    "show",
    "shown_checks",
    "summary",
]


# ---------------------------------------------------------------- inputs


class Refused(Exception):
    """An answer that cannot be compared: the mistake word and a hint say why."""

    def __init__(self, mistake: str, hint: str) -> None:
        super().__init__(hint)
        self.mistake, self.hint = mistake, hint


def _reference(name: str, t: Any) -> torch.Tensor:
    """``t.grad``, or a refusal that says what to call to get it."""
    if not isinstance(t, torch.Tensor):
        what = "None" if t is None else type(t).__name__
        raise Refused(
            "no-grad",
            f"the third argument must be the tensor {name} itself (got {what}): "
            f"`cmp('{name}', d{name}, {name})`.",
        )
    if not t.requires_grad:
        raise Refused(
            "no-grad",
            (
                f"{name} does not require grad, so autograd has no gradient for it: pass the "
                f"tensor itself, not `{name}.grad`, and build it from tensors with "
                "requires_grad=True."
            ),
        )
    if not t.is_leaf and not t.retains_grad:
        raise Refused(
            "no-grad",
            f"`{name}.grad` is not kept: call `{name}.retain_grad()` before "
            "`loss.backward()`, then run the backward pass again.",
        )
    if t.grad is None:
        raise Refused(
            "no-grad",
            f"`{name}.grad` is empty: call `loss.backward()` first (after "
            "setting `p.grad = None` for the parameters).",
        )
    return t.grad.detach()


def answer(
    name: str,
    dt: Any,
    e: torch.Tensor,
    own_grad: torch.Tensor | None = None,
    label: str | None = None,
) -> tuple[torch.Tensor, list[Note]]:
    """The answer as a tensor of ``e``'s dtype and device, with notes on any conversion.

    Raises ``Refused`` for an answer that cannot be compared (missing, not a number, or
    ``own_grad`` itself, autograd's tensor). ``label`` is what messages call the answer.
    """
    label = label or f"d{name}"
    if dt is None or isinstance(dt, EllipsisType):
        raise _not_written(name, dt, e, label)
    if isinstance(dt, torch.Tensor):
        y, notes = _own_tensor(name, dt, own_grad, label), []
    else:
        _refuse_non_number(dt, label)
        y, notes = _made_tensor(dt, label)
    if y.is_complex():
        raise Refused("wrong", f"your {label} is complex ({y.dtype}); it must be real.")
    if y.dtype != e.dtype:
        if y.dtype.is_floating_point and e.dtype.is_floating_point:
            notes.append(_dtype_note(label, name, y.dtype, e.dtype))
        y = y.to(e.dtype)
    if y.device != e.device:
        y = y.to(e.device)
    return y, notes


def _not_written(name: str, dt: Any, e: torch.Tensor, label: str) -> Refused:
    """The refusal of an answer not written yet: None or the placeholder's ``...``."""
    what = "the `...`" if dt is ... else "None"
    kind = (
        "a number (or a 0-d tensor)" if e.dim() == 0 else f"a tensor of shape {fmt_shape(e.shape)}"
    )
    if label == name:  # a value, computed by the learner's code elsewhere
        return Refused("missing", f"not written yet: {name} is {what}; {kind} is expected.")
    return Refused("missing", f"not written yet: replace {what} with {label}, {kind}.")


def _own_tensor(
    name: str, dt: torch.Tensor, own_grad: torch.Tensor | None, label: str
) -> torch.Tensor:
    """A tensor answer, detached and dense; refused when it is autograd's own ``.grad``."""
    if own_grad is not None and dt.numel() and _shares_storage(dt, own_grad):
        raise Refused(
            "autograd-grad",
            f"this is autograd's own `{name}.grad`: compute {label} by hand from the forward pass.",
        )
    y = dt.detach()
    return y.to_dense() if y.layout != torch.strided else y


def _refuse_non_number(dt: Any, label: str) -> None:
    """Refuse an answer that is plainly no number: a micrograd ``Value``, a string, a callable."""
    if isinstance(getattr(dt, "data", None), (int, float)) and not isinstance(dt, (int, float)):
        # a micrograd-style Value where a number was meant: a name in the formula means another
        # thing
        raise Refused(
            "wrong",
            f"your {label} is a {type(dt).__name__} (data={dt.data}), not a number: a later "
            "cell has given a name in your formula a new meaning; run this section again from "
            "its first code cell (or use .data for the number).",
        )
    if isinstance(dt, (str, bytes, dict, set)) or callable(dt):
        raise Refused(
            "wrong",
            f"your {label} is a {type(dt).__name__}, not a tensor: compute it with torch "
            "operations.",
        )


def _made_tensor(dt: Any, label: str) -> tuple[torch.Tensor, list[Note]]:
    """A number, list or numpy array as a tensor, with a note when it was numpy's."""
    try:
        y = torch.as_tensor(_numpy_safe(dt))
    except (TypeError, ValueError, RuntimeError) as exc:
        raise Refused(
            "wrong",
            f"your {label} is a {type(dt).__name__} that cannot be made into a tensor ({exc}).",
        ) from None
    if type(dt).__module__ != "numpy":
        return y, []
    what = f"your answer was a numpy {type(dt).__name__}, converted to a tensor"
    return y, [Note("converted", what)]


def _dtype_note(label: str, name: str, got: torch.dtype, want: torch.dtype) -> Note:
    """A float answer of another float dtype: compared after conversion, but trouble later."""
    var = variable_of(name) or name
    other = "the expected value is" if label == name else f"{var} is"
    cast = "" if label == name else f", or end with `.to({var}.dtype)`"
    return Note(
        "dtype",
        f"your {label} is {_dt(got)} where {other} {_dt(want)}: compared after conversion, but "
        f"in a training step a {_dt(got)} gradient makes the parameters {_dt(got)} and the next "
        f"matrix product fails; compute it with torch operations on the notebook's tensors (no "
        f"numpy){cast}",
    )


def _numpy_safe(x: Any) -> Any:
    """numpy arrays and Python numbers in float64 (complex stays complex, to be refused)."""
    if type(x).__module__ == "numpy" and hasattr(x, "astype"):
        kind = getattr(getattr(x, "dtype", None), "kind", "O")
        return x.copy() if kind == "c" else x.astype("float64").copy()
    if isinstance(x, (list, tuple)) and x and all(isinstance(v, torch.Tensor) for v in x):
        return torch.stack([v.detach() for v in x])
    if isinstance(x, (bool, int, float, list, tuple)):
        try:
            return torch.as_tensor(x, dtype=torch.float64)
        except (TypeError, ValueError, RuntimeError):
            # a complex number or a ragged list: refused or explained below
            return torch.as_tensor(x)
    return x


def _shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    try:
        return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return a is b


def _dt(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


# ---------------------------------------------------------------- the judgement


def close_enough(
    y: torch.Tensor, e: torch.Tensor, rtol: float, atol: float, scale: float = 0.0
) -> bool:
    """Every element within ``allclose``'s tolerances, or within float rounding.

    Rounding is ``ROUNDING`` units of the dtype's epsilon times the larger of the gradient's own
    largest entry and ``scale``, the size of the gradients it was computed from: a float32 sum
    taken in another order than autograd's differs by that much, most visibly where the
    gradient itself is near zero (``db1``, which batch norm makes exactly zero in exact
    arithmetic, is all rounding noise).
    """
    return bool(torch.allclose(y, e, rtol=rtol, atol=atol + _rounding(e, scale), equal_nan=True))


def _rounding(e: torch.Tensor, scale: float = 0.0) -> float:
    """The absolute difference that float rounding explains, for a gradient like ``e``."""
    if not e.is_floating_point() or not e.numel():
        return 0.0
    big = float(e.abs().max())
    if not math.isfinite(big):
        big = float(torch.nan_to_num(e, nan=0.0, posinf=0.0, neginf=0.0).abs().max())
    return ROUNDING * torch.finfo(e.dtype).eps * max(big, scale)


def judge(name: str, y: torch.Tensor, e: torch.Tensor, ctx: Context) -> Result:
    """Compare ``y`` with ``e`` (one dtype and device) and explain a mismatch; ``ctx.source`` says
    where ``e`` comes from ("autograd", "central difference", "torch.optim.AdamW")."""
    notes = list(ctx.notes)
    if y.shape != e.shape:
        dropped = leading_ones_dropped(tuple(y.shape), tuple(e.shape))
        if dropped is None or ctx.strict_shapes:
            fallback = (
                f"your {ctx.answer} has shape {fmt_shape(y.shape)}, expected {fmt_shape(e.shape)}."
            )
            mistake, hint = _safe(lambda: diagnose_shape(y, e, ctx), fallback)
            notes += _hard_coded(ctx, y.shape, e.shape)
            return Result(
                name=name,
                ok=False,
                exact=False,
                maxdiff=None,
                mistake=mistake,
                hint=hint,
                notes=_notes(notes, ctx, False),
                compared=(y.detach(), e.detach()),
            )
        kept = (y.shape, dropped)
        y = y.reshape(e.shape)
    else:
        kept = None
    if y.numel() == 0:
        notes += [Note("keepdim", _keepdim_note(*kept, e.shape, ctx, True))] if kept else []
        return Result(name=name, ok=True, exact=True, maxdiff=0.0, notes=tuple(notes))
    exact = bool(torch.equal(y, e)) or bool(
        torch.allclose(y, e, rtol=0.0, atol=0.0, equal_nan=True)
    )
    diff = (y - e).abs()
    maxdiff = float(diff.max())
    scale = 0.0
    ok = exact or close_enough(y, e, ctx.rtol, ctx.atol)
    if not ok and ctx.scale is not None:
        scale = _safe_scale(ctx)
        ok = close_enough(y, e, ctx.rtol, ctx.atol, scale)
    if kept:
        notes.append(Note("keepdim", _keepdim_note(*kept, e.shape, ctx, ok)))
    if ok:
        return Result(name=name, ok=True, exact=exact, maxdiff=maxdiff, notes=tuple(notes))
    good = torch.isclose(y, e, rtol=ctx.rtol, atol=ctx.atol + _rounding(e, scale), equal_nan=True)
    fallback = f"your {ctx.answer} differs from {ctx.target}."
    mistake, hint = _safe(lambda: diagnose_values(y, e, ctx), fallback)
    worst = _worst(y, e, diff, good, ctx)
    return Result(
        name=name,
        ok=False,
        exact=exact,
        maxdiff=maxdiff,
        mistake=mistake,
        hint=hint,
        notes=_notes(notes, ctx, False),
        worst=worst,
        missing_uses=tuple(ctx.missing_uses) if mistake == "missing-path" else (),
        compared=(y.detach(), e.detach()),
        blamed=tuple(ctx.blamed) if mistake == "upstream" else (),
    )


def _notes(notes: list[Note], ctx: Context, ok: bool) -> tuple[Note, ...]:
    return tuple(notes) if ok else (*notes, *ctx.fail_notes)


def _hard_coded(ctx: Context, ys: torch.Size, es: torch.Size) -> list[Note]:
    """A note when a size of the answer that differs from the tensor's is a number in the code."""
    if not ctx.code or len(ys) != len(es):
        return []
    for got, want in zip(ys, es, strict=True):
        if got != want and got > 1:
            if _facts(ctx.code, ctx.answer, got).batch_literals:
                return [_batch_note(ctx.answer, got, want)]
    return []


def _batch_note(label: str, number: int, here: int | None = None) -> Note:
    """The batch size written as a number: ``here`` is the size it should have had, when another."""
    if here is None:
        return Note(
            "batch-size",
            f"your {label} is built with the number {number}, the batch size "
            "here: write `n` (or `X.shape[0]`) instead, so that it holds for "
            "any batch size.",
        )
    return Note(
        "batch-size",
        f"your {label} is built with the number {number}, but here that size "
        f"is {here} (another batch size): write `n` or `X.shape[0]` instead "
        "of a number, so that it holds for any batch.",
    )


def _keepdim_note(
    ys: torch.Size, dropped: list[int], es: torch.Size, ctx: Context, right: bool
) -> str:
    """The dropped size-1 axes; that the values are right and broadcast back only when they are."""
    axes = fmt_axes(dropped)
    var = ctx.variable or ctx.name
    values = "The values are right and broadcast back here, but keep" if right else "Keep"
    return (
        f"your {ctx.answer} has shape {fmt_shape(ys)} and {var} has shape {fmt_shape(es)}: "
        f"the size-1 {axes} was dropped. {values} the tensor's shape (`keepdim=True`): a "
        "gradient of another shape can broadcast the wrong way in a later step (a (64,) against a "
        "(64, 1) gives a (64, 64))."
    )


def _safe(fn: Callable[[], tuple[str, str]], fallback: str) -> tuple[str, str]:
    try:
        return fn()
    except Exception:  # a diagnosis must never turn a verdict into a traceback
        return "wrong", fallback


def _safe_scale(ctx: Context) -> float:
    """``ctx.scale()``, or 0 when the graph cannot say (never a traceback)."""
    try:
        return float(ctx.scale() or 0.0)
    except Exception:
        return 0.0


def _worst(
    y: torch.Tensor, e: torch.Tensor, diff: torch.Tensor, good: torch.Tensor, ctx: Context
) -> Worst:
    d = torch.nan_to_num(diff.double(), nan=float("inf"))
    flat = int(d.flatten().argmax())
    index = (
        tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), y.shape)) if y.dim() else ()
    )
    return Worst(
        index,
        float(y.flatten()[flat]),
        float(e.flatten()[flat]),
        float(d.flatten()[flat]),
        int((~good).sum()),
        y.numel(),
        ctx.source,
        ctx.argument,
    )


# ---------------------------------------------------------------- what the learner wrote before


def _remember(t: Any, label: str, y: Any, res: Result) -> None:
    """Keep the answer for later checks' ``upstream`` replays (:func:`checks.session.remember`)."""
    if isinstance(t, torch.Tensor) and isinstance(y, torch.Tensor):
        roots = () if res.ok else (res.blamed if res.mistake == "upstream" else (label,))
        session.remember(t, res.name, label, y.detach().clone(), res.ok, roots)


def earlier() -> list[Earlier]:
    """The learner's checked answers whose tensors are still alive, in the order checked (a tensor
    checked twice, as exercise 1's step and a fused formula, has both)."""
    return [Earlier(*kept) for kept in session.remembered()]


def _context(
    name: str,
    t: torch.Tensor,
    e: torch.Tensor,
    frame: FrameType | None,
    loss: Any,
    n: int | None,
    rtol: float,
    atol: float,
    strict_shapes: bool,
) -> Context:
    """What the diagnosis may use: batch sizes, the graph around ``t`` and the cell's source."""
    batch = [n] if isinstance(n, int) and n > 1 else []
    batch += [k for k in frame_ints(frame) if k not in batch]
    if not batch and t.grad_fn is not None and t.dim() >= 1 and t.shape[0] > 1:
        batch.append(int(t.shape[0]))
    facts: list[GraphFacts] = []
    names: list[dict[str, torch.Tensor]] = []

    def scope() -> dict[str, torch.Tensor]:
        # the tensors on the checked one's device: a CPU tensor beside a graph on a GPU can be
        # no factor, operand or term of it
        if not names:
            names.append({k: v for k, v in frame_tensors(frame).items() if v.device == t.device})
        return names[0]

    def graph() -> GraphFacts:
        if not facts:
            root = loss if isinstance(loss, torch.Tensor) else None
            facts.append(GraphFacts(t, e, scope(), root))
        return facts[0]

    ctx = Context(
        name,
        rtol,
        atol,
        batch,
        head_sizes=frame_ints(frame, ("head_size", "hs")),
        strict_shapes=strict_shapes,
        paths=lambda: graph().paths(),
        index_uses=lambda: graph().index_uses(),
        misplaced=lambda: graph().misplaced(),
        terms=lambda: graph().terms(),
        scale=lambda: graph().upstream_scale(),
        shared_over=lambda: graph().shared_over(),
        variance_sizes=lambda: graph().variance_sizes(),
        broadcast=lambda: graph().broadcast(),
        upstream=lambda: graph().given(earlier()),
        local=lambda: graph().local(earlier()),
        transposed=lambda: graph().transposed(earlier()),
        elementwise=lambda: graph().elementwise(earlier()),
        instead=lambda: graph().instead(earlier()),
        tensors=lambda: _forward_tensors(scope()),
        swaps=lambda: graph().swaps(scope()),
        reordered=lambda: graph().reordered(),
        shared_terms=lambda: graph().shared_terms(),
        positions=lambda: graph().positions(),
        skipped=lambda: graph().skipped(),
    )
    return ctx


def _forward_tensors(names: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The notebook's tensors by name, less the learner's answers (``dX``, and what was checked)."""
    answers = session.answer_names()
    return {
        k: v for k, v in names.items() if k not in answers and not (k[:1] == "d" and k[1:] in names)
    }


def _source_of(frame: FrameType | None) -> str | None:
    """The code around the check: the notebook cell, or else the function it is in."""
    if frame is None:
        return None
    code = frame.f_code
    if code not in _SOURCES:
        _SOURCES[code] = _read_source(code)
    return _SOURCES[code]


_SOURCES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # code object -> its source


def _read_source(code: Any) -> str | None:
    try:
        return source.code_text(code)
    except Exception:  # the learner's code is read for hints only: never a traceback
        return None


def _missing_because(label: str, frame: FrameType | None) -> None:
    """Refuse an answer that is `...` because the learner computed it from another `...`."""
    code = _source_of(frame)
    if (
        not code
        or frame is None
        or re.search(rf"^\s*{re.escape(label)}\s*=\s*(\.\.\.|None)\b", code, re.M)
    ):
        return  # written as `...` here: the plain "not written yet"
    names = [
        n
        for n in source.placeholders_used(code, {**frame.f_globals, **frame.f_locals})
        if n != label
    ]
    if names:
        which = " and ".join(names)
        verb = "is" if len(names) == 1 else "are"
        raise Refused(
            "missing",
            f"not written yet: your {label} is `...` because {which} {verb} still "
            "`...`: write that first (its cell comes earlier), run it, then this cell again.",
        )


@functools.lru_cache(maxsize=512)
def _facts(code: str, label: str, batch: int | None) -> source.SourceFacts:
    return source.facts(code, label, batch)


def with_source(
    ctx: Context,
    code: str | None,
    label: str,
    answers: set[str] | None = None,
) -> Context:
    """``ctx`` with what the learner's code says about ``label`` (``dX``); refuses a
    copy of ``.grad``.

    ``answers`` are the names of the learner's other answers (an alias of one of them is noted)."""
    if not code:
        return ctx
    ctx.code = code
    facts = _facts(code, label, ctx.batch_sizes[0] if ctx.batch_sizes else None)
    own = facts.reads_grad and facts.reads_grad.split(".")[0] == ctx.variable  # its own .grad
    if facts.reads_grad and (own or facts.runs_autograd):  # or any .grad of a backward run here
        raise Refused(
            "autograd-grad",
            f"your {label} is a copy of autograd's `{facts.reads_grad}`: "
            "compute it by hand from the forward pass.",
        )
    ctx.facts = facts
    if facts.alias_of and facts.alias_of in (answers or ()):
        ctx.notes.append(
            Note(
                "alias",
                (
                    f"`{label} = {facts.alias_of}` makes one tensor with two names, so changing "
                    f"{label} in place changed {facts.alias_of} too, which no longer holds what "
                    f"you checked: start from `{facts.alias_of}.clone()`."
                ),
            )
        )
    if facts.batch_literals and not ctx.fail_notes:  # said on a pass too: another batch breaks it
        ctx.notes.append(_batch_note(label, facts.batch_literals[0]))
    return ctx


# ---------------------------------------------------------------- the public checks


def cmp(
    name: str,
    dt: Any,
    t: Any,
    *,
    loss: torch.Tensor | None = None,
    n: int | None = None,
    rtol: float = RTOL,
    atol: float = ATOL,
    strict_shapes: bool = False,
    quiet: bool = False,
) -> Result:
    """Check the hand-written gradient ``dt`` against ``t.grad`` and print the lecture's line.

    ``loss`` (the scalar the backward pass started from) and ``n`` (the batch size) sharpen the
    diagnosis of a wrong answer; both are found among the caller's variables when not given.
    ``strict_shapes`` fails an answer that lacks a leading size-1 axis instead of noting it.
    Never raises on the learner's input.
    """
    name, frame = str(name), sys._getframe(1)
    var = variable_of(name)
    label = f"d{var}" if var else f"answer for `{name}`"  # "x * x" checks an operation

    def check() -> Result:
        e = _reference(name, t)
        if dt is None or dt is Ellipsis:
            _missing_because(label, frame)
        y, notes = answer(name, dt, e, t.grad, label=label)
        ctx = _context(name, t, e, frame, loss, n, rtol, atol, strict_shapes)
        ctx.answer_label, ctx.notes = label, notes
        ctx = with_source(ctx, _source_of(frame), label, session.answer_names())
        if isinstance(dt, torch.Tensor) and not (dt.is_floating_point() or dt.is_complex()):
            ctx.fail_notes.append(
                Note(
                    "dtype",
                    f"your {label} is {_dt(dt.dtype)}, which cannot hold "
                    "fractions: make it a float tensor.",
                )
            )
        res = judge(name, y, e, ctx)
        _remember(t, label, y.reshape(e.shape) if y.numel() == e.numel() else y, res)
        return res

    return record(guarded(name, label, check), quiet)


def check_value(
    name: str,
    value: Any,
    expected: torch.Tensor,
    *,
    source: str,
    rtol: float = RTOL,
    atol: float = ATOL,
    quiet: bool = False,
    slips: list[tuple[str, str, torch.Tensor]] | None = None,
) -> Result:
    """Check a computed value that is not a gradient (an optimiser's new parameter, a running
    average) against ``expected``, which comes from ``source`` (say "torch.optim.AdamW"). Prints
    the same line as ``cmp``; the messages compare it with "the value from <source>". ``slips``
    (``checks.adamw_slips``) names a value that a known slip gives. Never raises on ``value``.
    """
    name, frame = str(name), sys._getframe(1)

    def check() -> Result:
        e = torch.as_tensor(expected).detach()
        y, notes = answer(name, value, e, label=name)
        ctx = Context(name, rtol, atol, frame_ints(frame), source=source, value=True, notes=notes)
        ctx.slips = lambda: list(slips or [])
        return judge(name, y, e, ctx)

    return record(guarded(name, name, check), quiet)


def guarded(name: str, label: str, check: Callable[[], Result]) -> Result:
    """``check()``, or a failed Result that says why: never a traceback from our code."""
    try:
        return check()
    except Refused as why:
        return Result(
            name=name, ok=False, exact=False, maxdiff=None, mistake=why.mistake, hint=why.hint
        )
    except Exception as exc:
        return Result(
            name=name,
            ok=False,
            exact=False,
            maxdiff=None,
            mistake="wrong",
            hint=f"could not compare {label} ({type(exc).__name__}: {exc}).",
        )
