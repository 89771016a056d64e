"""``race()``: training steps side by side on the same minibatches. Each hand-written step's
gradients are checked against autograd's first (a wrong step is not timed); then each step's
median time, its ratio to autograd's, its operators and the bytes they allocate
(:mod:`checks.cost`), and the biggest saving it has left against the fastest step.

A step is ``step(net, Xb, Yb) -> (loss, grads)``, as notebook 03's ``step``: ``grads`` in the
order of ``net``. The autograd step computes the loss from ``net`` and calls ``loss.backward()``,
its gradients the parameters' ``.grad``; the others run under ``torch.no_grad()``. Every step gets
its own copy of ``net``, so none moves another's parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from checks.compare import close_enough
from checks.cost import Cost, saving, tally, timings
from checks.render.html import TABLE, code_html, esc, td, th, tr
from checks.tolerances import ATOL, RTOL

__all__ = ["Lap", "Race", "race"]

POOL = 16  # minibatches drawn once, which every step walks in the same order
_AUTOGRAD = "autograd"  # the reference's name in the table


@dataclass(frozen=True)
class Lap:
    """One step's run: its median seconds per call and its cost, or why it was not timed."""

    name: str
    seconds: float | None = None
    cost: Cost | None = None
    problem: str | None = None


@dataclass(frozen=True)
class Race:
    """The steps' laps, autograd's first where it ran; ``batch``: the minibatch size."""

    laps: tuple[Lap, ...]
    batch: int

    def lap(self, name: str) -> Lap:
        return next(lap for lap in self.laps if lap.name == name)

    def ratio(self, name: str) -> float | None:
        """``name``'s median time over the first lap's (autograd's, where it ran)."""
        base, mine = self.laps[0].seconds, self.lap(name).seconds
        return None if base is None or mine is None else mine / base

    def note(self, lap: Lap) -> str:
        """What is left to say of ``lap``: why it was not timed, or its biggest saving against
        the fastest timed step."""
        if lap.problem:
            return lap.problem
        timed = [x for x in self.laps[1:] if x.seconds is not None and x.cost is not None]
        fastest = min(timed, key=lambda x: x.seconds, default=None)
        if fastest is None or fastest is lap or lap is self.laps[0] or lap.cost is None:
            return ""
        return saving(lap.cost, fastest.cost, f"`{fastest.name}`") or ""

    def _cells(self, lap: Lap) -> list[str]:
        ratio = self.ratio(lap.name)
        cost = lap.cost
        return [
            "" if lap.seconds is None else f"{lap.seconds * 1e6:,.0f}",
            "" if ratio is None else f"{ratio:.2f}x",
            "" if cost is None else str(cost.count),
            "" if cost is None else f"{cost.nbytes / 1e3:,.1f}",
        ]

    def __str__(self) -> str:
        head = f"{'step':18s} {'median µs':>10s} {'ratio':>6s} {'ops':>5s} {'kB':>9s}"
        lines = [f"steps on minibatches of {self.batch}:", head, "-" * len(head)]
        for lap in self.laps:
            t, r, n, kb = self._cells(lap)
            lines.append(f"{lap.name:18s} {t:>10s} {r:>6s} {n:>5s} {kb:>9s}")
            if self.note(lap):
                lines.append(f"  {self.note(lap)}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        heads = ["step", "median µs", f"× {self.laps[0].name}"]
        head = "".join(th(h, "left" if i == 0 else "right") for i, h in enumerate(heads))
        head += th("operators", "right") + th("kB allocated", "right") + th("")
        rows = []
        for k, lap in enumerate(self.laps):
            cells = td(f"<code>{esc(lap.name)}</code>")
            cells += "".join(td(c, "right") for c in self._cells(lap))
            rows.append(tr(k, cells + td(code_html(self.note(lap)))))
        caption = f"<p>steps on minibatches of {self.batch}, each timed on the same ones</p>"
        return f"{caption}<table style='{TABLE}'><tr>{head}</tr>{''.join(rows)}</table>"


def race(
    *steps: Callable,
    net: Sequence[torch.Tensor],
    X: torch.Tensor,
    Y: torch.Tensor,
    autograd: Callable | None = None,
    batch: int = 32,
    generator: torch.Generator | None = None,
    blocks: int = 10,
    per_block: int = 20,
) -> Race:
    """Race ``steps`` (and ``autograd``, the reference, first) on minibatches of ``batch`` rows of
    ``X``, ``Y``, drawn with ``generator`` (seeded 0 when not given), and show the table."""
    named = _named(steps, autograd)
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    pool = [torch.randint(0, X.shape[0], (batch,), generator=g) for _ in range(POOL)]
    batches = [(X[ix], Y[ix]) for ix in pool]
    calls = {name: _bound(step, step is autograd, net) for name, step in named}
    expected = _gradients(calls[_AUTOGRAD], batches[0]) if autograd is not None else None
    laps: dict[str, Lap] = {}
    for name, call in calls.items():
        problem = _problem(call, batches[0], expected) if name != _AUTOGRAD else None
        laps[name] = Lap(name, problem=problem)
    timed = {n: _walker(c, batches) for n, c in calls.items() if not laps[n].problem}
    seconds = timings(timed, per_block=per_block, blocks=blocks)
    Xb, Yb = batches[0]
    for name in timed:
        laps[name] = Lap(name, seconds[name], calls[name].tally(Xb, Yb))
    return _shown(Race(tuple(laps.values()), batch))


def _named(steps: tuple, autograd: Callable | None) -> list[tuple[str, Callable]]:
    named = [(_AUTOGRAD, autograd)] if autograd is not None else []
    for step in steps:
        if not callable(step):
            raise TypeError(
                f"race() takes your step functions themselves (race(step_fast, step, ...)), "
                f"not {type(step).__name__}: define the function first"
            )
        named.append((getattr(step, "__name__", repr(step)), step))
    if not named:
        raise TypeError("race() needs a step to time: race(step_fast, autograd=step_autograd, ...)")
    return named


@dataclass
class _Bound:
    """A step bound to its own copy of the parameters."""

    step: Callable
    params: list[torch.Tensor]
    graph: bool

    def __call__(self, Xb: torch.Tensor, Yb: torch.Tensor):
        with torch.enable_grad() if self.graph else torch.no_grad():
            return self.step(self.params, Xb, Yb)

    def tally(self, Xb: torch.Tensor, Yb: torch.Tensor) -> Cost:
        with torch.enable_grad() if self.graph else torch.no_grad():
            return tally(self.step, self.params, Xb, Yb)


def _bound(step: Callable, graph: bool, net: Sequence[torch.Tensor]) -> _Bound:
    params = [p.detach().clone().requires_grad_(graph) for p in net]
    return _Bound(step, params, graph)


def _walker(call: _Bound, batches: list) -> Callable[[], object]:
    """A call that takes the next minibatch at each call, so every step walks the same ones."""
    at = iter(range(10**12))

    def walk():
        Xb, Yb = batches[next(at) % len(batches)]
        return call(Xb, Yb)

    return walk


def _gradients(call: _Bound, minibatch) -> list[torch.Tensor]:
    _, grads = call(*minibatch)
    return [g.detach().clone() for g in grads]


def _problem(call: _Bound, minibatch, expected: list[torch.Tensor] | None) -> str | None:
    """Why ``call`` is not timed: it raises, returns no gradients, or others than autograd's."""
    try:
        _, grads = call(*minibatch)
    except Exception as error:  # the learner's code: any error is theirs to see, in one line
        return f"not timed: it raised {type(error).__name__}: {str(error)[:200]}"
    if not isinstance(grads, list | tuple) or not all(isinstance(g, torch.Tensor) for g in grads):
        return "not timed: it must return (loss, grads), grads a list of tensors"
    if expected is None:
        return None
    if len(grads) != len(expected):
        return f"not timed: it returns {len(grads)} gradients, for {len(expected)} parameters"
    for i, (got, want) in enumerate(zip(grads, expected, strict=True)):
        if got.shape != want.shape or not close_enough(got.to(want.dtype), want, RTOL, ATOL):
            return f"not timed: its gradient of net[{i}] differs from autograd's"
    return None


def _shown(result: Race) -> Race:
    from checks import kernel

    if kernel.in_notebook():
        from IPython.display import display

        display(result)
    return result
