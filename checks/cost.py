"""What a step costs: the tensor operations it dispatches, the bytes those operations allocate, and
its time against other steps on the same minibatches; and where a leaner step saves.

A step is any function of tensors (a learner's ``step(net, Xb, Yb)``, autograd's forward and
``loss.backward()``). :func:`tally` runs it once under a ``TorchDispatchMode``: every ATen operator
that reaches the dispatcher counts (those the autograd engine runs during ``backward()`` too, and
views such as ``.T``), and so does every new storage an operator returns (a view or an in-place
operator allocates none). Each operator is put down to the statement that dispatched it, under
the names that statement assigns: a statement of the step, or of a function of the step's own
module that it calls (a notebook's ``gpt_backward``, called by a step of two lines; a ``return``
there passes its operators on to the statement that called it). So :func:`saving` can say which
intermediates cost the most that a leaner step never builds. :func:`timings` gives median times
per call, the calls taking turns in blocks so that a change in the machine's load hits them all.

Results are data (:class:`Cost`, :class:`Part`); :func:`saving` turns two of them into one sentence.
"""

from __future__ import annotations

import ast
import inspect
import statistics
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, ModuleType

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from checks.parsing import parse

__all__ = ["Cost", "Part", "Tally", "saving", "size_said", "tally", "timings"]

_TORCH = str(Path(torch.__file__).parent)  # torch's own Python frames between a step and ATen
# saving() compares names only with a leaner step whose operators are nearly all put down to
# named statements (not hidden in a helper it calls, say)
NAMED_SHARE = 0.9


@dataclass(frozen=True)
class Part:
    """The operators that statements assigning ``names`` dispatched, or (``names`` empty) those of
    ``line``, which assigns none or calls a function of the step's own; ``line`` None: outside the
    step. And the bytes they allocated."""

    names: tuple[str, ...]
    line: int | None
    ops: int
    nbytes: int

    @property
    def label(self) -> str:
        """The part as a reader names it: ``dprobs``, ``loss, grads``, ``line 12``."""
        if self.names:
            return ", ".join(self.names)
        return "outside the step" if self.line is None else f"line {self.line}"

    def json(self) -> dict:
        """The part as JSON (a solution's cost, shipped with the package)."""
        return {
            "names": list(self.names),
            "line": self.line,
            "ops": self.ops,
            "nbytes": self.nbytes,
        }

    @classmethod
    def from_json(cls, data: dict) -> Part:
        """A part as :meth:`json` wrote it."""
        return cls(tuple(data["names"]), data["line"], int(data["ops"]), int(data["nbytes"]))


@dataclass(frozen=True)
class Cost:
    """One call of a step: its operators by kind, the bytes they allocated, and its parts,
    costliest first."""

    ops: Counter
    nbytes: int
    parts: tuple[Part, ...]

    @property
    def count(self) -> int:
        """The number of operators dispatched."""
        return sum(self.ops.values())

    def part(self, name: str) -> Part | None:
        """The part that assigns ``name`` (alone or with other names), if any."""
        return next((p for p in self.parts if name in p.names), None)

    def json(self) -> dict:
        """The cost as JSON (a solution's, shipped with the package)."""
        parts = [p.json() for p in self.parts]
        return {"ops": dict(sorted(self.ops.items())), "nbytes": self.nbytes, "parts": parts}

    @classmethod
    def from_json(cls, data: dict) -> Cost:
        """A cost as :meth:`json` wrote it."""
        parts = tuple(Part.from_json(p) for p in data["parts"])
        return cls(Counter({k: int(n) for k, n in data["ops"].items()}), int(data["nbytes"]), parts)


class Tally(TorchDispatchMode):
    """While active (``with Tally() as counter``), counts operators by kind (``counter.ops``) and
    new storages, each put down where :meth:`_where` says (``counter.lines``, ``counter.nbytes``):
    under the names the statement of ``code`` that dispatched it assigns, or under its line;
    nowhere without ``code``."""

    def __init__(self, code: CodeType | None = None, scope: dict | None = None) -> None:
        super().__init__()
        self.code = code
        self.scope = scope  # the step's module: its own functions' statements count as its own
        self.names = _Names(scope or {})
        self.ops: Counter = Counter()
        self.lines: Counter = Counter()
        self.nbytes: Counter = Counter()

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """False: torch then leaves ``__torch_dispatch__`` unwrapped. Its wrapper for
        ``torch.compile`` imports ``torch._dynamo`` at the first operator counted (some 800
        modules, 1.2 s of CPU in every kernel that counts a step), and no step here is compiled."""
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        before = _storages((args, kwargs))  # before the call: an out= or resize_ allocates
        out = func(*args, **(kwargs or {}))
        where = self._where()
        self.ops[str(func.overloadpacket)] += 1
        self.lines[where] += 1
        self.nbytes[where] += sum(n for ptr, n in _storages(out).items() if ptr not in before)
        return out

    def _where(self) -> tuple[tuple[str, ...], int | None]:
        """Where the operator is put down: under the names assigned by the innermost statement
        that dispatched it itself, in ``code`` or in a function of ``scope`` that ``code`` calls
        (a notebook's ``gpt_backward``, called by a step of two lines; a statement that assigns
        nothing, such as a ``return``, passes it to the statement that called its function);
        else, where a function of another module did the work, under the line of ``code`` that
        called it (``(), line``); ``(), None`` outside ``code``."""
        if self.code is None:
            return (), None
        frame, direct = sys._getframe(2), True
        while frame is not None:
            code = frame.f_code
            own = code is self.code or (frame.f_globals is self.scope and code.co_name[:1] != "<")
            assigned = self.names.of(code).get(frame.f_lineno) if own and direct else None
            if assigned:
                return assigned, None
            if code is self.code:
                return (), frame.f_lineno
            if not own and not (code.co_filename.startswith(_TORCH) or code.co_name[:1] == "<"):
                direct = False
            frame = frame.f_back
        return (), None


def _storages(tree: object) -> dict[int, int]:
    """The storages of the strided tensors in ``tree``: their addresses and sizes (a tensor
    without a storage of its own, sparse or a subclass's wrapper, counts none)."""
    leaves, _ = tree_flatten(tree)
    found = {}
    for t in leaves:
        if isinstance(t, torch.Tensor) and t.layout == torch.strided:
            try:
                storage = t.untyped_storage()
                found[storage.data_ptr()] = storage.nbytes()
            except (RuntimeError, NotImplementedError):
                continue
    return found


def tally(step: Callable, *args: object) -> Cost:
    """Run ``step(*args)`` once and return what it cost: each operator put down to the names the
    statement that dispatched it assigns, in ``step`` or in a function of its own module that it
    calls (:meth:`Tally._where`)."""
    unwrapped = inspect.unwrap(step)
    code, scope = getattr(unwrapped, "__code__", None), getattr(unwrapped, "__globals__", None)
    counter = Tally(code, scope)
    with counter:
        step(*args)
    found = [Part(*k, counter.lines[k], counter.nbytes[k]) for k in counter.lines]
    return Cost(
        ops=counter.ops,
        nbytes=sum(counter.nbytes.values()),
        parts=tuple(sorted(found, key=lambda p: (-p.nbytes, -p.ops, p.label))),
    )


class _Names:
    """The names each line of a function assigns (:func:`_assigned_names`), read once per
    function; ``scope``: the step's module, whose modules (``torch``) are no names."""

    def __init__(self, scope: dict) -> None:
        self.modules = {k for k, v in scope.items() if isinstance(v, ModuleType)}
        self.read: dict[CodeType, dict[int, tuple[str, ...]]] = {}

    def of(self, code: CodeType) -> dict[int, tuple[str, ...]]:
        if code not in self.read:
            self.read[code] = _assigned_names(code, self.modules)
        return self.read[code]


def _assigned_names(code: CodeType, modules: set[str]) -> dict[int, tuple[str, ...]]:
    """Each line of the function of ``code``: the names its statement assigns (every line of a
    statement that spans several), as far as the source can be read; none for a lambda."""
    if code.co_name == "<lambda>":
        return {}
    try:
        lines, first = inspect.getsourcelines(code)
        tree = parse(textwrap.dedent("".join(lines)))
    except Exception:  # a source that cannot be read or parsed: nothing is named
        return {}
    found: dict[int, tuple[str, ...]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue  # the def line itself (a decorator's work) keeps its number
        if not isinstance(node, ast.stmt):
            continue
        names = _targets(node, modules)
        if names:
            for n in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                found.setdefault(n + first - 1, tuple(names))
    return found


def _targets(stmt: ast.stmt, modules: set[str]) -> list[str]:
    """The names a statement binds or changes in place (``x += ...``, ``x[i] -= 1``,
    ``x.add_(...)``, ``torch.relu_(x)``: ``modules`` are the names of modules), in order."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AugAssign | ast.AnnAssign):
        targets = [stmt.target]
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        targets = [_receiver(stmt.value, modules)]
    else:
        return []
    names: list[str] = []
    for target in targets:
        for node in ast.walk(target) if target is not None else ():
            if isinstance(node, ast.Name) and node.id not in names:
                names.append(node.id)
                break
            if isinstance(node, ast.Tuple | ast.List):
                names += [e.id for e in node.elts if isinstance(e, ast.Name) and e.id not in names]
                break
    return names


def _receiver(call: ast.Call, modules: set[str]) -> ast.expr | None:
    """``x`` of ``x.method_(...)`` or ``torch.method_(x, ...)`` (an in-place function, its name
    ending in one underscore)."""
    func = call.func
    if not isinstance(func, ast.Attribute) or not func.attr.endswith("_") or func.attr[-2:] == "__":
        return None
    root = func.value
    while isinstance(root, ast.Attribute):
        root = root.value
    if isinstance(root, ast.Name) and root.id in modules:
        return call.args[0] if call.args else None
    return func.value


def timings(
    calls: dict[str, Callable[[], object]],
    per_block: int = 20,
    blocks: int = 10,
    warmup: int = 5,
    device: torch.device | str = "cpu",
) -> dict[str, float]:
    """The median time of each call, in seconds: after ``warmup`` calls of each, the calls take
    turns in ``blocks`` blocks of ``per_block``, each call timed on its own, on ``device``."""
    for call in calls.values():
        for _ in range(warmup):
            call()
    wait = waiter(torch.device(device))
    times: dict[str, list[int]] = {name: [] for name in calls}
    for _ in range(blocks):
        for name, call in calls.items():
            for _ in range(per_block):
                wait()
                start = time.perf_counter_ns()
                call()
                wait()
                times[name].append(time.perf_counter_ns() - start)
    return {name: statistics.median(ts) / 1e9 for name, ts in times.items()}


def waiter(device: torch.device) -> Callable[[], None]:
    """What waits for ``device``'s queued work to end: a GPU's call returns before its work is
    done, and a timing that does not wait times the launches only. Nothing to wait for on the
    CPU (or on a device torch cannot synchronize)."""
    sync = getattr(getattr(torch, device.type, None), "synchronize", None)
    if device.type == "cpu" or sync is None:
        return lambda: None
    return sync if device.type == "mps" else lambda: sync(device)  # one Apple GPU: no argument


def saving(mine: Cost, leaner: Cost, whose: str = "the solution's step") -> str | None:
    """One sentence naming the biggest saving ``mine`` has left against ``leaner``, in operators:
    the intermediates it assigns that ``leaner`` never does (the costliest three named), or the
    intermediate that takes the most operators more than ``leaner``'s of the same name (names
    are compared, not the maths: another name for the same intermediate is told as new); None
    where it has neither, where it is no costlier than ``leaner``, or where ``leaner``'s
    operators are not known by name (its work done in a helper it calls, say)."""
    if mine.count <= leaner.count or _named_share(leaner) < NAMED_SHARE:
        return None
    built = {n for p in leaner.parts for n in p.names}
    named = [p for p in mine.parts if p.names]
    extra = [p for p in named if not set(p.names) & built and (p.ops or p.nbytes)]
    worse = [(p, leaner.part(p.names[0])) for p in named]
    worse = [(p, q) for p, q in worse if q is not None and p.ops > q.ops]
    most = max(
        worse, key=lambda pq: (pq[0].ops - pq[1].ops, pq[0].nbytes - pq[1].nbytes), default=None
    )
    if most and most[0].ops - most[1].ops > sum(p.ops for p in extra):
        p, q = most
        return (
            f"your `{p.label}` takes {_count(p.ops, 'operation')} where {whose} takes {q.ops} "
            f"for its `{q.label}`."
        )
    if not extra:
        return None
    top = extra[:3]
    names = _listed([f"`{n}`" for p in top for n in p.names])
    ops, nbytes = sum(p.ops for p in top), sum(p.nbytes for p in top)
    return (
        f"your step assigns {names} ({_count(ops, 'operation')}, {size_said(nbytes)}), names "
        f"that {whose} never assigns."
    )


def _named_share(cost: Cost) -> float:
    """The share of ``cost``'s operators put down to statements that assign a name."""
    named = sum(p.ops for p in cost.parts if p.names)
    return named / max(1, cost.count)


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def size_said(nbytes: int) -> str:
    """Bytes as a reader says them: 840 bytes, 25.6 kB, 3.1 MB."""
    if nbytes < 1000:
        return _count(nbytes, "byte")
    for unit, scale in (("kB", 1e3), ("MB", 1e6), ("GB", 1e9)):
        if nbytes < 1000 * scale or unit == "GB":
            return f"{nbytes / scale:.1f} {unit}"
    raise AssertionError("unreachable")
