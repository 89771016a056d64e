"""``race()``: training steps side by side on the same minibatches. Each hand-written step's
gradients are checked against autograd's first (a wrong step is not timed); then each step's
median time, its ratio to autograd's, its operators and the bytes they allocate
(:mod:`checks.cost`), and the biggest saving it has left against the leanest step: the solution's,
where the package ships what the solution's steps cost on the same network and batch, else the
fastest here.

A step is ``step(net, Xb, Yb) -> (loss, grads)``, as notebook 03's ``step``: ``grads`` in the
order of ``net`` (a list of tensors), or by name where ``net`` is a dict (notebook 05's ``p``).
The autograd step computes the loss from ``net`` and calls ``loss.backward()``, its gradients the
parameters' ``.grad``; the others run under ``torch.no_grad()``. Every step gets its own copy of
``net``, so none moves another's parameters.

In a notebook the race is shown with itself as data in the output's metadata: ``backprop-workbook
student`` ships the executed solution's races as ``checks/hints/costs/<notebook>.json``, the
solution's rows of a learner's race and of ``summary()``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import count
from pathlib import Path

import torch

from checks import kernel, session
from checks.compare import close_enough
from checks.cost import Cost, saving, tally, timings
from checks.paths import COSTS, METADATA
from checks.render.html import TABLE, code_html, esc, td, th, tr
from checks.session import RACE
from checks.tolerances import ATOL, RTOL

__all__ = ["Lap", "Race", "race"]

POOL = 16  # minibatches drawn once, which every step walks in the same order
AUTOGRAD = "autograd"  # the reference's name in the table
SOLUTION = "solution's "  # what a shipped solution's step is called in the table
COLUMNS = (24, 10, 6, 5, 9)  # the text table's widths: step, median µs, ratio, ops, kB
Net = Sequence[torch.Tensor] | dict[str, torch.Tensor]


@dataclass(frozen=True)
class Lap:
    """One step's run: its median seconds per call and its cost, or why it was not timed."""

    name: str
    seconds: float | None = None
    cost: Cost | None = None
    problem: str | None = None

    def json(self) -> dict:
        """The lap as data (a shipped solution's race holds its laps so)."""
        cost = None if self.cost is None else self.cost.json()
        return {"name": self.name, "seconds": self.seconds, "cost": cost, "problem": self.problem}

    @classmethod
    def from_json(cls, data: dict) -> Lap:
        """A lap as :meth:`json` wrote it."""
        cost = None if data["cost"] is None else Cost.from_json(data["cost"])
        return cls(data["name"], data["seconds"], cost, data["problem"])


@dataclass(frozen=True)
class Race:
    """The steps' laps, autograd's first; ``batch``: the minibatch size; ``net``: each parameter's
    label, shape and dtype; ``torch_version``: the torch it ran on; ``solution``: the solution's
    race on the same ``net``, ``batch`` and device type, as the package ships it; ``device``:
    where the steps ran (the parameters' device)."""

    laps: tuple[Lap, ...]
    batch: int
    net: tuple[tuple[str, tuple[int, ...], str], ...] = ()
    torch_version: str = torch.__version__
    solution: Race | None = None
    device: str = "cpu"

    def json(self) -> dict:
        """The race as data (its solution left out), as a shown race's metadata holds it."""
        net = [[label, list(shape), dtype] for label, shape, dtype in self.net]
        laps = [lap.json() for lap in self.laps]
        return {
            "batch": self.batch,
            "net": net,
            "torch": self.torch_version,
            "device": self.device,
            "laps": laps,
        }

    @classmethod
    def from_json(cls, data: dict) -> Race:
        """A race as :meth:`json` wrote it."""
        net = tuple((label, tuple(shape), dtype) for label, shape, dtype in data["net"])
        laps = tuple(Lap.from_json(lap) for lap in data["laps"])
        device = str(data.get("device", "cpu"))  # races made before the device was kept: the CPU
        return cls(laps, int(data["batch"]), net, str(data["torch"]), device=device)

    def lap(self, name: str) -> Lap:
        """The lap of the step called ``name``."""
        found = [lap for lap in self.laps if lap.name == name]
        if not found:
            raise KeyError(name)
        return found[0]

    def ratio(self, name: str) -> float | None:
        """``name``'s median time over autograd's."""
        base, mine = self.laps[0].seconds, self.lap(name).seconds
        return None if base is None or mine is None else mine / base

    def timed(self) -> list[Lap]:
        """The steps other than autograd that were timed and counted."""
        return [x for x in self.laps[1:] if x.seconds is not None and x.cost is not None]

    def leanest(self) -> tuple[Lap, str] | None:
        """The step a slower one is told its saving against, and what it is called: the
        solution's fastest where it is shipped, else the fastest timed here."""
        for race, prefix in ((self.solution, SOLUTION), (self, "")):
            fastest = min(race.timed() if race else [], key=lambda x: x.seconds, default=None)
            if fastest is not None:
                return fastest, f"{'the ' if prefix else ''}{prefix}`{fastest.name}`"
        return None

    def note(self, lap: Lap) -> str:
        """What is left to say of ``lap``: why it was not timed, or its biggest saving against
        the leanest step (:meth:`leanest`)."""
        if lap.problem:
            return lap.problem
        leanest = self.leanest()
        if leanest is None or leanest[0] is lap or lap is self.laps[0] or lap.cost is None:
            return ""
        return saving(lap.cost, leanest[0].cost, leanest[1]) or ""

    def rows(self) -> list[tuple[str, list[str], str]]:
        """Each row of the table: the step's name, its cells (median µs, ratio to autograd,
        operators, kB allocated) and its note; the solution's steps last, their times a ratio
        only (measured where the solution was run)."""
        rows = [(lap.name, _cells(lap, self.ratio(lap.name)), self.note(lap)) for lap in self.laps]
        for lap in self.solution.timed() if self.solution else []:
            cells = _cells(dataclasses.replace(lap, seconds=None), self.solution.ratio(lap.name))
            rows.append((SOLUTION + lap.name, cells, ""))
        return rows

    def _solution_said(self) -> str:
        """Where the solution's rows come from, or "" without them."""
        if self.solution is None or not self.solution.timed():
            return ""
        return (
            "the solution's rows as measured when the notebook was made (torch "
            f"{self.solution.torch_version}): their time as a ratio to autograd's there"
        )

    def __str__(self) -> str:
        head = _line(["step", "median µs", "ratio", "ops", "kB"])
        lines = [f"steps on minibatches of {self.batch}{self._where()}:", head, "-" * len(head)]
        for name, cells, note in self.rows():
            lines.append(_line([name, *cells]))
            lines += [f"  {note}"] if note else []
        said = self._solution_said()
        return "\n".join(lines + ([said] if said else []))

    def _where(self) -> str:
        """Where the steps ran, said where it is not the CPU ("" on the CPU)."""
        return "" if torch.device(self.device).type == "cpu" else f", on {self.device}"

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        """IPython's plain text (a terminal, a notebook's text/plain): the table, as printed."""
        printer.text(str(self))

    def _repr_html_(self) -> str:
        heads = ["step", "median µs", f"× {self.laps[0].name}"]
        head = "".join(th(h, "left" if i == 0 else "right") for i, h in enumerate(heads))
        head += th("operators", "right") + th("kB allocated", "right") + th("")
        rows = []
        for k, (name, cells, note) in enumerate(self.rows()):
            row = td(f"<code>{esc(name)}</code>") + "".join(td(c, "right") for c in cells)
            rows.append(tr(k, row + td(code_html(note))))
        caption = f"<p>steps on minibatches of {self.batch}{esc(self._where())}, each timed on the "
        caption += "same ones</p>"
        said = self._solution_said()
        table = f"<table style='{TABLE}'><tr>{head}</tr>{''.join(rows)}</table>"
        return caption + table + (f"<p>{esc(said)}</p>" if said else "")


def _line(cells: list[str]) -> str:
    """A line of the text table: the name left-aligned, the numbers right-aligned, in
    :data:`COLUMNS`."""
    numbers = (f"{c:>{w}s}" for c, w in zip(cells[1:], COLUMNS[1:], strict=True))
    return " ".join([cells[0].ljust(COLUMNS[0]), *numbers])


def _cells(lap: Lap, ratio: float | None) -> list[str]:
    """A lap's cells: median µs, ratio to autograd, operators and kB allocated ("" unknown)."""
    cost = lap.cost
    return [
        "" if lap.seconds is None else f"{lap.seconds * 1e6:,.0f}",
        "" if ratio is None else f"{ratio:.2f}x",
        "" if cost is None else str(cost.count),
        "" if cost is None else f"{cost.nbytes / 1e3:,.1f}",
    ]


def shipped(batch: int, net: tuple, folder: Path | None = None, device: str = "cpu") -> Race | None:
    """The solution's race on the same ``net`` (labels, shapes and dtypes), ``batch`` and type
    of device (a race on a GPU is not compared with one on a CPU), as the package ships it in
    ``folder`` (``checks/hints/costs/``, which ``backprop-workbook student`` writes), or None."""
    kind = torch.device(device).type
    races = _shipped(folder or COSTS)
    same = (r for r in races if r.batch == batch and r.net == net)
    return next((r for r in same if torch.device(r.device).type == kind), None)


@cache
def _shipped(folder: Path) -> tuple[Race, ...]:
    """Every race shipped in ``folder``; a file that cannot be read gives none."""
    found: list[Race] = []
    for path in sorted(folder.glob("*.json")):
        try:
            found += [Race.from_json(r) for r in json.loads(path.read_text())["races"]]
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return tuple(found)


def race(
    *steps: Callable,
    autograd: Callable,
    net: Net,
    X: torch.Tensor,
    Y: torch.Tensor,
    batch: int = 32,
    generator: torch.Generator | None = None,
    blocks: int = 10,
    per_block: int = 20,
) -> Race:
    """Race ``steps`` against ``autograd`` (the reference, shown first) on minibatches of
    ``batch`` rows of ``X``, ``Y``, drawn with ``generator`` (a CPU one, seeded 0 when not
    given), and show the table: race(step_fast, step, autograd=step_autograd, net=net, X=Xtr,
    Y=Ytr). The steps run where ``net`` is (a GPU's timings wait for its work to end); the
    minibatches are drawn on the CPU and moved there, so a seed draws the same ones anywhere."""
    named = _named(steps, autograd)
    _check_inputs(net, X, Y, batch)
    on = _entries(net)[0][1].device
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    pool = [torch.randint(0, X.shape[0], (batch,), generator=g) for _ in range(POOL)]
    batches = [(X[ix.to(X.device)].to(on), Y[ix.to(Y.device)].to(on)) for ix in pool]
    calls = {name: _bound(step, name == AUTOGRAD, net, batches) for name, step in named}
    expected = _gradients(calls[AUTOGRAD])
    laps = {name: Lap(name, problem=_problem(call, expected)) for name, call in calls.items()}
    timed = {n: _walker(c) for n, c in calls.items() if not laps[n].problem}
    seconds = timings(timed, per_block=per_block, blocks=blocks, device=on)
    for name in timed:
        try:
            laps[name] = Lap(name, seconds[name], calls[name].tally(*calls[name].batches[0]))
        except Exception as error:  # the learner's code, on a second run
            laps[name] = Lap(name, problem=f"not counted: it raised {_said(error)}")
    key = tuple((label, tuple(p.shape), str(p.dtype)) for label, p in _entries(net))
    # the shipped steps are the lecture network's: none for a variant of other maths
    solution = shipped(batch, key, device=str(on)) if session.lectures_maths() else None
    return _shown(Race(tuple(laps.values()), batch, key, solution=solution, device=str(on)))


def _named(steps: tuple, autograd: Callable) -> list[tuple[str, Callable]]:
    """The steps by name, autograd's first; a name taken twice gets a number."""
    named: list[tuple[str, Callable]] = []
    for i, step in enumerate((autograd, *steps)):
        if not callable(step):
            what = "autograd=" if i == 0 else "the steps"
            raise TypeError(
                f"race() takes your step functions themselves (race(step_fast, step, "
                f"autograd=step_autograd, ...)), not {type(step).__name__} as {what}: define the "
                "function first"
            )
        name = AUTOGRAD if i == 0 else getattr(step, "__name__", type(step).__name__)
        named.append((_unique(name, {n for n, _ in named}), step))
    if len(named) == 1:
        raise TypeError("race() needs a step to time: race(step_fast, autograd=step_autograd, ...)")
    return named


def _unique(name: str, taken: set[str]) -> str:
    """``name``, or ``name 2``, ``name 3``... where it is taken."""
    return next(n for k in count(1) if (n := name if k == 1 else f"{name} {k}") not in taken)


def _entries(net: Net) -> list[tuple[str, torch.Tensor]]:
    """Each parameter with its label: ``net[0]``, or ``net['W_head']`` in a dict."""
    if isinstance(net, dict):
        return [(f"net[{k!r}]", v) for k, v in net.items()]
    return [(f"net[{i}]", p) for i, p in enumerate(net)]


def _returned(out: object, params: Net) -> list | None:
    """The gradients of a step's ``(loss, grads)`` in the order of ``params``, or None where it
    returned something else, or gradients unlike ``params``: a list as long for a list, a dict
    of the same names for a dict."""
    if not isinstance(out, tuple) or len(out) != 2:
        return None
    grads = out[1]
    if isinstance(params, dict):
        return (
            [grads[k] for k in params]
            if isinstance(grads, dict) and set(grads) == set(params)
            else None
        )
    return list(grads) if isinstance(grads, list | tuple) and len(grads) == len(params) else None


def _check_inputs(net: object, X: object, Y: object, batch: object) -> None:
    """One sentence for what race() cannot use: which argument, and what it should be."""
    values = list(net.values()) if isinstance(net, dict) else net
    if (
        not isinstance(values, list | tuple)
        or not values
        or not all(isinstance(p, torch.Tensor) for p in values)
    ):
        raise TypeError(
            "race(): net must be your parameter tensors, as step() takes them: a list, or a dict"
        )
    for name, t in (("X", X), ("Y", Y)):
        if not isinstance(t, torch.Tensor) or t.dtype.is_floating_point or t.is_complex():
            raise TypeError(
                f"race(): {name} must be a tensor of integers (Xtr, Ytr), not {type(t).__name__}"
            )
    if X.shape[0] == 0 or X.shape[0] != Y.shape[0]:
        raise ValueError(
            f"race(): X and Y must hold the same rows, at least one ({X.shape[0]} and {Y.shape[0]})"
        )
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise ValueError(f"race(): batch must be a whole number of rows, 1 or more, not {batch!r}")


@dataclass
class _Bound:
    """A step bound to its own copies of the parameters (they require grad for autograd's) and of
    the minibatches: a step that changes either in place changes them for no other."""

    step: Callable
    params: Net
    graph: bool
    batches: list[tuple[torch.Tensor, torch.Tensor]]

    def _mode(self):
        return torch.enable_grad() if self.graph else torch.no_grad()

    def __call__(self, Xb: torch.Tensor, Yb: torch.Tensor):
        with self._mode():
            return self.step(self.params, Xb, Yb)

    def tally(self, Xb: torch.Tensor, Yb: torch.Tensor) -> Cost:
        """What one call costs."""
        with self._mode():
            return tally(self.step, self.params, Xb, Yb)


def _bound(step: Callable, graph: bool, net: Net, batches: list) -> _Bound:
    def copy(p: torch.Tensor) -> torch.Tensor:
        return p.detach().clone().requires_grad_(graph)

    params = (
        {k: copy(p) for k, p in net.items()} if isinstance(net, dict) else [copy(p) for p in net]
    )
    return _Bound(step, params, graph, [(Xb.clone(), Yb.clone()) for Xb, Yb in batches])


def _walker(call: _Bound) -> Callable[[], object]:
    """A call that takes the next minibatch at each call, so every step walks the same ones."""
    at, batches = count(), call.batches

    def walk():
        Xb, Yb = batches[next(at) % len(batches)]
        return call(Xb, Yb)

    return walk


def _gradients(call: _Bound) -> list[torch.Tensor]:
    """Autograd's gradients on one minibatch, in net's order (zeros for a parameter the loss does
    not use)."""
    grads = _returned(call(*call.batches[0]), call.params)
    if grads is None:
        raise TypeError(
            "race(): the autograd step must return (loss, grads), a gradient for each parameter "
            "of net, as step() does"
        )
    params = [p for _, p in _entries(call.params)]
    return [
        torch.zeros_like(p) if g is None else g.detach().clone()
        for g, p in zip(grads, params, strict=True)
    ]


def _problem(call: _Bound, expected: list[torch.Tensor]) -> str | None:
    """Why ``call`` is not timed: it raises, returns no gradients, or others than autograd's."""
    if call.graph:
        return None
    try:
        out = call(*call.batches[0])
    except Exception as error:  # the learner's code: any error is theirs to see, in one line
        return f"not timed: it raised {_said(error)}"
    grads = _returned(out, call.params)
    if grads is None or not all(isinstance(g, torch.Tensor) for g in grads):
        kind = "dict of the same names" if isinstance(call.params, dict) else "list as long"
        return f"not timed: it must return (loss, grads), grads a {kind} as net, of tensors"
    for (label, _), got, want in zip(_entries(call.params), grads, expected, strict=True):
        got = got.to(want.device, want.dtype)
        if got.shape != want.shape or not close_enough(got, want, RTOL, ATOL):
            return f"not timed: its gradient of {label} differs from autograd's"
    return None


def _said(error: Exception) -> str:
    """An error in one line: its type and the first line of its message."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:200]}" if lines else type(error).__name__


class _Quiet(Race):
    """The shown race as a return value that Jupyter does not show a second time."""

    def _ipython_display_(self) -> None:
        pass


def _shown(result: Race) -> Race:
    """Show the table (HTML in a notebook, with the race as data in the output's metadata; text
    elsewhere), keep it for ``summary()``, and return it, not to be shown again."""
    if kernel.in_notebook():
        from IPython.display import display

        display(result, metadata={METADATA: {RACE: result.json()}})
    else:
        print(result)
    session.raced(result)
    return _Quiet(**{f.name: getattr(result, f.name) for f in dataclasses.fields(result)})
