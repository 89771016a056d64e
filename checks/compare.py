"""Compare a hand-written gradient with autograd's: the lecture's ``cmp``, made stricter and more helpful.

``cmp(name, dt, t)`` prints the lecture's line::

    logprobs        | exact: True  | approximate: True  | maxdiff: 0.0

and returns a :class:`Result`. ``approximate`` is the verdict: the answer has exactly the
shape of ``t`` (no broadcasting) and ``torch.allclose(dt, t.grad)`` holds with its default
tolerances (rtol=1e-5, atol=1e-8). When it fails, a second line names the mistake (one word
from ``checks.MISTAKES``) with a hint, and a third points at the worst element.

In a terminal the report is printed as plain text. In Jupyter it is shown with both a ``text/plain``
(the same lines, which nbval compares) and a ``text/html`` form: a green ✓ for a pass, a red ✗ for a
mistake, a grey ✗ for an answer not written yet.
"""

from __future__ import annotations

import html
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import EllipsisType, FrameType
from typing import Any

import torch

from checks.diagnose import Context, diagnose_shape, diagnose_values, fmt_num, fmt_shape
from checks.graph import GraphFacts, frame_ints, frame_tensors

RTOL, ATOL = 1e-5, 1e-8


@dataclass
class Result:
    """The outcome of one check. ``bool(result)`` is ``result.ok``."""

    name: str
    ok: bool
    exact: bool
    maxdiff: float | None
    mistake: str | None = None
    hint: str | None = None
    note: str | None = None
    where: str | None = None
    index: tuple[int, ...] | None = None
    yours: float | None = None
    expected: float | None = None
    mismatched: int | None = None
    total: int | None = None

    def __bool__(self) -> bool:
        return self.ok

    @property
    def status(self) -> str:
        return "pass" if self.ok else (self.mistake or "fail")

    def line(self) -> str:
        """The lecture's one-line report."""
        return (
            f"{self.name:15s} | exact: {str(self.exact):5s} | approximate: {str(self.ok):5s} "
            f"| maxdiff: {self.maxdiff}"
        )

    def report(self) -> str:
        lines = [self.line()]
        if not self.ok:
            lines.append(f"  ✗ {self.mistake}: {self.hint}")
            if self.where:
                lines.append(f"    {self.where}")
        elif self.note:
            lines.append(f"  ✓ {self.note}")
        return "\n".join(lines)

    __str__ = report

    def html(self) -> str:
        """The same lines for Jupyter: a coloured bar and symbol (green ✓ pass, red ✗ fail, grey ✗ not written yet)."""
        colour = _colour(self)
        lines = [f"{_b(colour, '✓' if self.ok else '✗')} {_esc(self.line())}"]
        if not self.ok:
            lines.append(_b(colour, f"  ✗ {_esc(self.mistake or 'fail')}:") + f" {_esc(self.hint or '')}")
            if self.where:
                lines.append(f"    {_esc(self.where)}")
        elif self.note:
            lines.append(f"  ✓ {_esc(self.note)}")
        style = (f"margin:0;padding:1px 6px;border-left:4px solid {colour};background:{_TINT[colour]};"
                 "white-space:pre-wrap;word-break:normal;overflow-wrap:anywhere")
        kind = "pass" if self.ok else "fail"
        return f"<pre class='workbook-check workbook-{kind}' style='{style}'>" + "\n".join(lines) + "</pre>"

    def _ipython_display_(self) -> None:
        # cmp() already showed this result in the current cell: do not echo it a second time.
        if self._shown_in is not None and self._shown_in == _execution_count():
            return
        _show(self)

    _shown_in: int | None = None


# ---------------------------------------------------------------- inputs


class Refused(Exception):
    def __init__(self, mistake: str, hint: str) -> None:
        super().__init__(hint)
        self.mistake, self.hint = mistake, hint


def _reference(name: str, t: Any) -> torch.Tensor:
    """``t.grad``, or a refusal that says what to call to get it."""
    if not isinstance(t, torch.Tensor):
        what = "None" if t is None else type(t).__name__
        raise Refused("no-grad", f"the third argument must be the tensor {name} itself (got {what}): cmp('{name}', d{name}, {name}).")
    if not t.requires_grad:
        raise Refused("no-grad", (
            f"{name} does not require grad, so autograd has no gradient for it: pass the tensor itself, "
            f"not {name}.grad, and build it from tensors with requires_grad=True."
        ))
    if not t.is_leaf and not t.retains_grad:
        raise Refused("no-grad", (
            f"{name}.grad is not kept: call {name}.retain_grad() before loss.backward(), then run the backward pass again."
        ))
    if t.grad is None:
        raise Refused("no-grad", f"{name}.grad is empty: call loss.backward() first (after setting p.grad = None for the parameters).")
    return t.grad.detach()


def answer(name: str, dt: Any, e: torch.Tensor, own_grad: torch.Tensor | None = None,
           label: str | None = None) -> tuple[torch.Tensor, str | None]:
    """The answer as a tensor of ``e``'s dtype and device, with a note on any conversion.

    Raises ``Refused`` for an answer that cannot be compared (missing, not a number, or
    ``own_grad`` itself, autograd's tensor). ``label`` is what the messages call the answer (``d<name>``).
    """
    label = label or f"d{name}"
    if dt is None or isinstance(dt, EllipsisType):
        what = "the `...`" if dt is ... else "None"
        kind = "a number (or a 0-d tensor)" if e.dim() == 0 else f"a tensor of shape {fmt_shape(e.shape)}"
        if label == name:  # a value, computed by the learner's code elsewhere
            raise Refused("missing", f"not written yet: {name} is {what}; {kind} is expected.")
        raise Refused("missing", f"not written yet: replace {what} with {label}, {kind}.")
    note = None
    if isinstance(dt, torch.Tensor):
        if own_grad is not None and dt.numel() and _shares_storage(dt, own_grad):
            raise Refused("autograd-grad", f"this is autograd's own {name}.grad: compute {label} by hand from the forward pass.")
        y = dt.detach()
        if y.layout != torch.strided:
            y = y.to_dense()
    elif isinstance(getattr(dt, "data", None), (int, float)) and not isinstance(dt, (int, float)):
        # a micrograd-style Value where a number was meant: a name in the formula now means something else
        raise Refused("wrong", (
            f"your {label} is a {type(dt).__name__} (data={dt.data}), not a number: a later cell has given a name in your "
            f"formula a new meaning; run this section again from its first code cell (or use .data for the number)."
        ))
    elif isinstance(dt, (str, bytes, dict, set)) or callable(dt):
        raise Refused("wrong", f"your {label} is a {type(dt).__name__}, not a tensor: compute it with torch operations.")
    else:
        try:
            y = torch.as_tensor(_numpy_safe(dt))
        except (TypeError, ValueError, RuntimeError) as exc:
            raise Refused("wrong", f"your {label} is a {type(dt).__name__} that cannot be made into a tensor ({exc}).") from None
        if type(dt).__module__ == "numpy":
            note = f"your answer was a numpy {type(dt).__name__}, converted to a tensor"
    if y.is_complex():
        raise Refused("wrong", f"your {label} is complex ({y.dtype}); it must be real.")
    if y.dtype != e.dtype:
        if y.dtype.is_floating_point and e.dtype.is_floating_point:
            note = note or f"your answer is {_dt(y.dtype)}, compared after conversion to {_dt(e.dtype)}"
        y = y.to(e.dtype)
    if y.device != e.device:
        y = y.to(e.device)
    return y, note


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
            return torch.as_tensor(x)  # a complex number or a ragged list: refused or explained below
    return x


def _shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    try:
        return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return a is b


def _dt(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


# ---------------------------------------------------------------- the judgement


def judge(name: str, y: torch.Tensor, e: torch.Tensor, ctx: Context) -> Result:
    """Compare ``y`` with ``e`` (already of one dtype and device) and explain a mismatch; ``ctx.source`` says where
    ``e`` comes from ("autograd", "central difference", "torch.optim.AdamW")."""
    source = ctx.source
    if y.shape != e.shape:
        fallback = f"your {ctx.answer} has shape {fmt_shape(y.shape)}, expected {fmt_shape(e.shape)}."
        mistake, hint = _safe(lambda: diagnose_shape(y, e, ctx), fallback)
        return Result(name, False, False, None, mistake, hint)
    exact = bool(torch.equal(y, e)) or bool(torch.allclose(y, e, rtol=0.0, atol=0.0, equal_nan=True))
    if y.numel() == 0:
        return Result(name, True, True, 0.0)
    diff = (y - e).abs()
    maxdiff = float(diff.max())
    ok = exact or bool(torch.allclose(y, e, rtol=ctx.rtol, atol=ctx.atol, equal_nan=True))
    if ok:
        note = None if exact else f"not bit-identical to {source}, only float rounding: a pass"
        return Result(name, True, exact, maxdiff, note=note)
    mistake, hint = _safe(lambda: diagnose_values(y, e, ctx), f"your {ctx.answer} differs from {ctx.target}.")
    res = Result(name, False, exact, maxdiff, mistake, hint)
    _point_at_worst(res, y, e, diff, ctx)
    return res


def _safe(fn, fallback: str) -> tuple[str, str]:
    try:
        return fn()
    except Exception:  # a diagnosis must never turn a verdict into a traceback
        return "wrong", fallback


def _point_at_worst(res: Result, y: torch.Tensor, e: torch.Tensor, diff: torch.Tensor, ctx: Context) -> None:
    source = ctx.source
    d = torch.nan_to_num(diff.double(), nan=math.inf)
    flat = int(d.flatten().argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), y.shape)) if y.dim() else ()
    res.index, res.yours, res.expected = index, float(y.flatten()[flat]), float(e.flatten()[flat])
    res.total = y.numel()
    res.mismatched = int((~torch.isclose(y, e, rtol=ctx.rtol, atol=ctx.atol)).sum())
    if res.total == 1:  # one number: no index, no count; and nothing at all when the hint already gives both numbers
        says_both = res.mistake == "wrong" and res.hint is not None and f"but {ctx.target} is" in res.hint
        res.where = None if says_both else f"yours {fmt_num(res.yours)}, expected {fmt_num(res.expected)} from {source}."
        return
    pct = 100.0 * res.mismatched / res.total
    res.where = (
        f"Mismatched elements: {res.mismatched} / {res.total} ({pct:.1f}%), greatest absolute difference "
        f"{fmt_num(float(d.flatten()[flat]))} at index {index}: yours {fmt_num(res.yours)}, "
        f"expected {fmt_num(res.expected)} from {source}."
    )


def _context(name: str, t: torch.Tensor, e: torch.Tensor, frame: FrameType | None, loss: Any, n: int | None,
             rtol: float, atol: float) -> Context:
    """What the diagnosis may use: batch sizes, and the graph around ``t`` (computed only if asked)."""
    batch = [n] if isinstance(n, int) and n > 1 else []
    batch += [k for k in frame_ints(frame) if k not in batch]
    if not batch and t.grad_fn is not None and t.dim() >= 1 and t.shape[0] > 1:
        batch.append(int(t.shape[0]))
    facts: list[GraphFacts] = []

    def graph() -> GraphFacts:
        if not facts:
            facts.append(GraphFacts(t, e, frame_tensors(frame), loss if isinstance(loss, torch.Tensor) else None))
        return facts[0]

    return Context(name, rtol, atol, batch, paths=lambda: graph().paths(), index_uses=lambda: graph().index_uses())


# ---------------------------------------------------------------- the public check

_RESULTS: dict[str, tuple[Result, int]] = {}


def cmp(name: str, dt: Any, t: Any, *, loss: torch.Tensor | None = None, n: int | None = None,
        rtol: float = RTOL, atol: float = ATOL, quiet: bool = False) -> Result:
    """Check the hand-written gradient ``dt`` against ``t.grad`` and print the lecture's line.

    ``loss`` (the scalar the backward pass started from) and ``n`` (the batch size) sharpen
    the diagnosis of a wrong answer; both are found among the caller's variables when not given.
    Never raises on the learner's input.
    """
    name, frame = str(name), sys._getframe(1)

    def check() -> Result:
        e = _reference(name, t)
        y, note = answer(name, dt, e, t.grad)
        res = _noted(judge(name, y, e, _context(name, t, e, frame, loss, n, rtol, atol)), note)
        if not res.ok and isinstance(dt, torch.Tensor) and not (dt.is_floating_point() or dt.is_complex()):
            res.hint = f"{res.hint[:-1]}; note that your d{name} is {_dt(dt.dtype)}, which cannot hold fractions: make it a float tensor."
        return res

    return record(guarded(name, f"d{name}", check), quiet)


def check_value(name: str, value: Any, expected: torch.Tensor, *, source: str, rtol: float = RTOL, atol: float = ATOL,
                quiet: bool = False) -> Result:
    """Check a computed value that is not a gradient (an optimiser's new parameter, a running average) against
    ``expected``, which comes from ``source`` (say "torch.optim.AdamW"). Prints the same line as ``cmp``; the
    messages call the answer by its name and compare it with "the value from <source>". Never raises on ``value``.
    """
    name, frame = str(name), sys._getframe(1)

    def check() -> Result:
        e = torch.as_tensor(expected).detach()
        y, note = answer(name, value, e, label=name)
        return _noted(judge(name, y, e, Context(name, rtol, atol, frame_ints(frame), source=source, value=True)), note)

    return record(guarded(name, name, check), quiet)


def _noted(res: Result, note: str | None) -> Result:
    """A pass after converting the answer says what was converted."""
    if res.ok and note:
        res.note = note + ("" if res.exact else "; the rest is float rounding: a pass")
    return res


def guarded(name: str, label: str, check: Callable[[], Result]) -> Result:
    """``check()``, or a failed Result that says why: never a traceback from our code."""
    try:
        return check()
    except Refused as why:
        return Result(name, False, False, None, why.mistake, why.hint)
    except Exception as exc:
        return Result(name, False, False, None, "wrong", f"could not compare {label} ({type(exc).__name__}: {exc}).")


def record(res: Result, quiet: bool = False) -> Result:
    """Remember ``res`` for :func:`summary` and print it unless ``quiet``."""
    _, tries = _RESULTS.get(res.name, (None, 0))
    _RESULTS[res.name] = (res, tries + 1)  # keeps its first-run place
    if not quiet:
        _show(res)
        res._shown_in = _execution_count()
    return res


# Colours that read on JupyterLab's light and dark themes alike (and in Colab, which has no --jp variables).
PASS, FAIL, TODO = "#1a7f37", "#cf222e", "#8c959f"
_LEFT = "style='text-align:left'"
_TINT = {PASS: "rgba(26,127,55,0.10)", FAIL: "rgba(207,34,46,0.10)", TODO: "rgba(140,149,159,0.12)"}


def _colour(res: Result) -> str:
    return PASS if res.ok else TODO if res.mistake == "missing" else FAIL


def _esc(text: str) -> str:
    return html.escape(text, quote=False)


def _b(colour: str, text: str) -> str:
    return f"<span style='color:{colour};font-weight:bold'>{text}</span>"


def _show(res: Result) -> None:
    """Print the report in a terminal; in Jupyter show it coloured, with the same plain text for nbval and copies."""
    if _in_notebook():
        from IPython.display import publish_display_data

        publish_display_data({"text/plain": res.report(), "text/html": res.html()})
    else:
        print(res.report())


def results() -> list[Result]:
    """The latest result of every check run in this kernel, in first-run order."""
    return [r for r, _ in _RESULTS.values()]


def reset() -> None:
    """Forget all results (a fresh start for :func:`summary`)."""
    _RESULTS.clear()


class Summary:
    """Every check so far: plain text in a terminal, an HTML table in Jupyter."""

    def __init__(self) -> None:
        self.rows = [(r, tries) for r, tries in _RESULTS.values()]

    @property
    def passed(self) -> int:
        return sum(r.ok for r, _ in self.rows)

    def __str__(self) -> str:
        head = f"{'check':16s} {'status':14s} {'maxdiff':>10s} {'tries':>5s}"
        lines = [head, "-" * len(head)]
        for r, tries in self.rows:
            md = "" if r.maxdiff is None else f"{r.maxdiff:.2g}"
            lines.append(f"{r.name:16s} {('✓ ' if r.ok else '✗ ') + r.status:14s} {md:>10s} {tries:>5d}")
        lines.append(f"{self.passed} / {len(self.rows)} checks pass")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        cells = []
        for r, tries in self.rows:
            colour = _colour(r)
            md = "" if r.maxdiff is None else f"{r.maxdiff:.2g}"
            hint = html.escape(r.hint or r.note or "")
            status = f"{'✓' if r.ok else '✗'} {html.escape(r.status)}"
            cells.append(
                f"<tr><td {_LEFT}><code>{html.escape(r.name)}</code></td>"
                f"<td style='text-align:left;white-space:nowrap;color:{colour};font-weight:bold'>{status}</td>"
                f"<td>{md}</td><td>{tries}</td><td {_LEFT}>{hint}</td></tr>"
            )
        return (
            f"<table><thead><tr><th {_LEFT}>check</th><th {_LEFT}>status</th><th>maxdiff</th><th>tries</th><th {_LEFT}>hint</th>"
            f"</tr></thead><tbody>{''.join(cells)}</tbody></table><p>{self.passed} / {len(self.rows)} checks pass</p>"
        )


def summary() -> Summary:
    """Show every check run so far in this kernel with its status, and return the table."""
    table = Summary()
    if _in_notebook():
        from IPython.display import display

        display(table)
    else:
        print(table)
    return _Quiet(table)


class _Quiet(Summary):
    """The shown summary as a return value that Jupyter does not echo a second time."""

    def __init__(self, table: Summary) -> None:
        self.rows = table.rows

    def _ipython_display_(self) -> None:
        pass


def _execution_count() -> int | None:
    ip = _ipython()
    return getattr(ip, "execution_count", None) if ip is not None else None


def _ipython():
    mod = sys.modules.get("IPython")
    if mod is None:
        return None
    try:
        return mod.get_ipython()
    except Exception:
        return None


def _in_notebook() -> bool:
    ip = _ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None
