"""The grader's side of a grading kernel: what its cells call, imported once by the first cell.

Answers leave the kernel as cell output (a display message of the type ``MIME``) as soon as their
cell has run: the test runner outside the kernel reads each cell's output as it comes and keeps
the messages of the cells the grader wrote for that purpose. Nothing written here decides a
grade: a learner's code that changes this module can only change what its own answers look like.

Before each answer cell the grader hands in the state the instructor's notebook had at that
point (the answers before it, and the tensors and numbers the notebook computed), so that every
answer is judged given correct upstream values, whatever earlier cells did to them.
"""

from __future__ import annotations

import base64
import contextlib
import io
import os
import random
import sys
from collections.abc import Callable
from typing import Any

import torch

from checks import heap
from checks.grading.mime import MIME
from checks.grading.novalue import DELETED, MISSING, NoValue, from_wire, other, raised, to_wire
from checks.grading.probecost import OutOfTime, paused

# elements: larger tensors (a whole data set) are left as the notebook made them
STATE_LIMIT = 2**16
_ORIGINAL: dict[str, Callable] = {}
_STATE: dict[str, Any] = {}  # the instructor's state as handed in so far (this kernel's copy)


def emit(kind: str, **content: Any) -> None:
    """Send one message to the grader, as the output of the running cell."""
    from IPython.display import publish_display_data

    publish_display_data({MIME: {"kind": kind, **content}}, metadata={})


def pack(obj: Any) -> str:
    """``obj`` (a dict of tensors, numbers, ``NoValue``...) as text for a message."""
    buf = io.BytesIO()
    torch.save(to_wire(obj), buf)
    return base64.b64encode(buf.getvalue()).decode()


def unpack(text: str) -> Any:
    """What :func:`pack` packed, read with ``weights_only`` (tensors and plain containers)."""
    return from_wire(torch.load(io.BytesIO(base64.b64decode(text)), weights_only=True))


def as_value(value: Any) -> Any:
    """An answer as the grader keeps it: a CPU tensor, or a ``NoValue`` for what is not one."""
    if value is Ellipsis or value is None:
        return MISSING
    if isinstance(value, NoValue):
        return value
    if isinstance(value, torch.Tensor):
        value = value.detach().to("cpu").clone().contiguous()
        return value.to_dense() if value.is_sparse else value
    try:
        return torch.as_tensor(value, dtype=torch.float64)
    except Exception:
        return other(value)


def record(values: dict[str, Any], facts: dict[str, Any] | None = None) -> None:
    """Send the answers of a cell (check id -> value), with the reference run's graph facts."""
    _stop()
    emit("values", data=pack({c: as_value(v) for c, v in values.items()}), facts=pack(facts or {}))


def values_of(names: list[str], scope: dict) -> dict[str, Any]:
    """The cell's answers by name, ``DELETED`` for a name it no longer assigns."""
    return {n: scope.get(n, DELETED) for n in names}


def attempt(fn: Callable[[], Any]) -> Any:
    """``fn()``, or the record of what it raised (the stop of a counted call goes on up)."""
    try:
        return fn()
    except OutOfTime:
        raise
    except BaseException as e:
        return raised(e)


def op(V: type, f: Callable, xs: tuple[float, ...], full: bool = False) -> torch.Tensor:
    """The gradients a ``Value`` class gives the inputs of ``f``: after ``backward()`` (``full``),
    else after the output's own ``_backward`` with 0.7 arriving from above."""
    vs = [V(x) for x in xs]
    out = f(*vs)
    if full:
        out.backward()
    else:
        out.grad = 0.7
        out._backward()
    with paused():  # the grader's packing, not the learner's cost
        return torch.tensor([float(v.grad) for v in vs], dtype=torch.float64)


def seed() -> int:
    return int(os.environ.get("WORKBOOK_SEED", "0"))


def fresh(like: torch.Tensor, k: int) -> torch.Tensor:
    """For a probe: a tensor of ``like``'s shape and dtype drawn from the run's seed (``k`` tells a
    probe's inputs apart), the same in the reference run and the learner's; no earlier cell of the
    notebook holds it, so no answer handed in before can stand for the function's result."""
    g = torch.Generator().manual_seed(seed() * 1009 + k)
    with paused():  # the grader's input, not the learner's cost
        return torch.randn(
            like.shape, generator=g, dtype=like.dtype if like.is_floating_point() else torch.float32
        )


def normed(x: torch.Tensor, eps: float = 1e-5) -> tuple[torch.Tensor, torch.Tensor]:
    """For a probe of a layer norm's backward: ``x``'s rows normalised over the last axis, and
    their 1/std (biased variance, as layer norm takes it)."""
    with paused():  # the grader's input, not the learner's cost
        var = x.var(-1, keepdim=True, unbiased=False)
        rstd = (var + eps) ** -0.5
        return (x - x.mean(-1, keepdim=True)) * rstd, rstd


def rms_normed(x: torch.Tensor, eps: float = 1e-5) -> tuple[torch.Tensor, torch.Tensor]:
    """For a probe of an RMS norm's backward: ``x``'s rows divided by their root mean square over
    the last axis (no mean taken away), and that 1/RMS."""
    with paused():  # the grader's input, not the learner's cost
        rstd = ((x**2).mean(-1, keepdim=True) + eps) ** -0.5
        return x * rstd, rstd


def draw(xs: tuple[float, ...]) -> tuple[float, ...]:
    """Inputs for a probe, drawn from the run's seed: each number scaled by a factor in
    [0.6, 1.4] (signs and domains kept), the same in the reference run and the learner's."""
    rng = random.Random(f"{seed()}/{xs}")
    return tuple(round(x * rng.uniform(0.6, 1.4), 3) for x in xs)


def watch_autograd() -> None:
    """Report every call of autograd (``backward``, ``torch.autograd.grad``) to the grader; the
    grader counts those made while an answer cell runs. Also sets up the closer watch that
    ``restore`` switches on for each answer cell (:func:`_guard`)."""

    def wrap(owner: Any, name: str, label: str) -> None:
        original = _ORIGINAL.setdefault(label, getattr(owner, name))

        def watched(*args: Any, **kwargs: Any) -> Any:
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if caller.split(".")[0] not in ("torch", "checks"):  # the notebook's own code called it
                emit("autograd", call=label)
            return original(*args, **kwargs)

        setattr(owner, name, watched)

    wrap(torch.Tensor, "backward", "backward()")
    wrap(torch.autograd, "backward", "torch.autograd.backward")
    wrap(torch.autograd, "grad", "torch.autograd.grad")
    _guard()


# ---------------------------------------------------------------- the watch over an answer cell
#
# Between the hand-in before an answer cell (``restore``) and the record after it (``record``),
# any use of autograd's machinery that the learner's code makes, however it gets there, is
# reported as an "autograd" message with what was seen: a run of autograd's engine (through any
# API: ``backward``, ``torch.autograd.grad``, ``torch.func``, ``autograd.functional``, the engine
# object itself), a backward kernel (``torch.ops.aten.tanh_backward``), a read of a tensor's
# ``grad_fn`` (the way into the graph's nodes, which can be called one by one), a hook on a
# tensor, a leaf made to require grad, and a gradient of a gradient. What ``checks`` itself does
# (``cmp`` reads the graph) and what torch does for its own ends (printing reads ``grad_fn``) is
# not the learner's.

_WATCH: dict[str, Any] = {"on": False, "seen": set(), "before": set()}
_AUTOGRAD_PARTS = ("torch.autograd", "torch.func", "torch._functorch", "torch.utils.hooks")


def _passed_through(name: str) -> bool:
    """Frames a call passes through on its way from the learner's code: torch's, and this module's
    own wrappers (``watch_autograd``)."""
    return name == "torch" or name.startswith("torch.") or name == __name__


def _learners(frame: Any) -> bool:
    """Whether the call at ``frame`` is the learner's: the first frame outside torch (and this
    module) is not the grader's package, and any torch frames before it are autograd's own
    (``torch.autograd``...) or none; torch code for other ends (printing a tensor reads its
    ``grad_fn``) does not count."""
    through_torch = autograd = False
    while frame is not None:
        name = frame.f_globals.get("__name__", "") or ""
        if not _passed_through(name):
            return not name.startswith("checks") and (autograd or not through_torch)
        through_torch = through_torch or name != __name__
        autograd = autograd or name.startswith(_AUTOGRAD_PARTS)
        frame = frame.f_back
    return False


def _saw(what: str, frame: Any, any_torch: bool = False) -> None:
    """Report ``what`` once per answer cell, where the watch is on and the learner's code did it
    (``any_torch``: through any of torch's functions, as a kernel run for the learner is)."""
    if not _WATCH["on"] or what in _WATCH["seen"]:
        return
    if any_torch:
        while frame is not None and _passed_through(frame.f_globals.get("__name__", "") or ""):
            frame = frame.f_back
    if frame is not None and _learners(frame):
        _WATCH["seen"].add(what)
        emit("autograd", call=what)


def _kernel(owner: Any, name: str, what: str = "", any_torch: bool = True) -> None:
    """Wrap a backward kernel torch has as a function (``torch._softmax_backward_data``), or
    another function of autograd's (``what`` says which)."""
    original = _ORIGINAL.setdefault(f"kernel {id(owner)}.{name}", getattr(owner, name))
    what = what or f"autograd's kernel `{name}`"

    def kernel(*args: Any, **kwargs: Any) -> Any:
        _saw(what, sys._getframe(1), any_torch)
        return original(*args, **kwargs)

    with contextlib.suppress(AttributeError, TypeError):  # torch._C's own tables are read-only
        setattr(owner, name, kernel)


def _op_calls() -> None:
    """Report a backward kernel called as an operator (``torch.ops.aten.tanh_backward``)."""
    for cls in (torch._ops.OpOverloadPacket, torch._ops.OpOverload):
        original = _ORIGINAL.setdefault(f"call {cls.__name__}", cls.__call__)

        def call(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            name = str(getattr(self, "_qualified_op_name", None) or getattr(self, "__name__", ""))
            if "backward" in name:
                _saw(f"autograd's kernel `{name.split('::')[-1]}`", sys._getframe(1), True)
            return _original(self, *args, **kwargs)

        cls.__call__ = call


def _guard() -> None:
    """Install the watch's hooks (once): the engine, backward kernels, ``grad_fn``, hooks on
    tensors and leaves made to require grad. Nothing of it runs for an honest answer's
    operations, which cost what they cost without the watch."""
    if "grad_fn" in _ORIGINAL:
        return
    from torch.autograd.variable import Variable

    class Engine(torch._C._ImperativeEngine):
        """Autograd's engine: each backward pass is reported, whatever API started it."""

        def run_backward(self, *args: Any, **kwargs: Any) -> Any:
            _saw("autograd's engine (a backward pass)", sys._getframe(1), any_torch=True)
            return super().run_backward(*args, **kwargs)

    torch._C._ImperativeEngine, Variable._execution_engine = Engine, Engine()
    for owner in (torch, torch._C._VariableFunctions):
        for name in [n for n in dir(owner) if "backward" in n and not n.startswith("__")]:
            _kernel(owner, name)
    _op_calls()
    import torch.autograd.forward_ad as forward_ad

    for name in ("make_dual", "unpack_dual"):  # forward mode: its dual numbers
        _kernel(forward_ad, name, f"forward-mode autograd (`{name}`)", any_torch=False)
    base = _ORIGINAL.setdefault("grad_fn", torch._C.TensorBase.__dict__["grad_fn"])

    def grad_fn(self: torch.Tensor) -> Any:
        _saw("the autograd graph (`grad_fn`)", sys._getframe(1))
        return base.__get__(self, type(self))

    torch.Tensor.grad_fn = property(grad_fn)
    for name in ("register_hook", "register_post_accumulate_grad_hook", "retain_grad"):
        _report(name, f"a hook on a tensor (`{name}`)")
    _report("requires_grad_", "a tensor made to require grad (`requires_grad_`)")


def _report(name: str, what: str) -> None:
    original = _ORIGINAL.setdefault(f"Tensor.{name}", getattr(torch.Tensor, name))

    def watched(*args: Any, **kwargs: Any) -> Any:
        _saw(what, sys._getframe(1))
        return original(*args, **kwargs)

    setattr(torch.Tensor, name, watched)


def _start(scope: dict) -> None:
    """Before an answer cell (the end of ``restore``): the watch on, and the tensors it starts
    with noted. Only in a learner's run, where ``watch_autograd`` set the hooks up."""
    if "grad_fn" not in _ORIGINAL:
        return
    _WATCH["seen"] = set()
    _WATCH["before"] = {id(v) for v in list(scope.values()) if isinstance(v, torch.Tensor)}
    _WATCH["on"] = True


def _stop() -> None:
    """After an answer cell and its probes (the start of ``record``): the watch off."""
    _WATCH["on"] = False


def _new_leaves(scope: dict) -> list[str]:
    """The names of tensors the cell made that autograd would fill in (a leaf that requires
    grad), or that hold a gradient of a gradient (a ``...BackwardBackward`` node)."""
    before, found = _WATCH["before"], []
    for n, v in list(scope.items()):
        if n.startswith("_") or not isinstance(v, torch.Tensor) or id(v) in before:
            continue
        node = _grad_fn_of(v)
        double = node is not None and type(node).__name__.count("Backward") > 1
        if (v.requires_grad and v.is_leaf) or double:
            found.append(n)
    return found


def _grad_fn_of(t: torch.Tensor) -> Any:
    """``t.grad_fn`` read past the watch."""
    return _ORIGINAL.get("grad_fn", torch._C.TensorBase.__dict__["grad_fn"]).__get__(t, type(t))


def settle() -> None:
    """At the start of a grading run, before the notebook's first cell: move what the imports made
    (torch, IPython: about 250,000 objects) to the collector's permanent generation
    (``checks.heap.settle``). The scans for gradients below then read the notebook's objects, and
    the collector's own passes get as much cheaper."""
    heap.settle()


def _with_grad() -> list[torch.Tensor]:
    """Every tensor of the kernel that holds a gradient (in a list, a dict or an object too)."""
    return [t for t in heap.tensors() if (t.is_leaf or t.retains_grad) and t.grad is not None]


def wipe() -> None:
    """Forget autograd's gradients, so that an answer cell finds none to copy."""
    for t in _with_grad():
        t.grad = None


def check_grads(scope: dict) -> None:
    """After an answer cell: tell the grader if autograd filled in gradients since the wipe."""
    held = {id(t) for t in _with_grad()}
    leaves = _new_leaves(scope) if _WATCH["before"] else []
    _WATCH["before"] = set()
    if leaves:
        emit(
            "autograd",
            call="a tensor made for autograd: " + ", ".join(f"`{n}`" for n in leaves[:3]),
        )
    if held:
        names = sorted(n for n, v in list(scope.items()) if id(v) in held and not n.startswith("_"))
        emit(
            "autograd",
            call="gradients in " + (", ".join(f"`{n}.grad`" for n in names[:3]) or "tensors"),
        )


def state(scope: dict) -> dict[str, Any]:
    """The notebook's numbers and tensors (not too large), detached copies, by name."""
    out: dict[str, Any] = {}
    for n, v in list(scope.items()):
        if n.startswith("_") or isinstance(v, bool):
            continue
        if isinstance(v, torch.Tensor) and v.numel() <= STATE_LIMIT and v.layout == torch.strided:
            t = v.detach().to("cpu").clone()
            out[n] = (
                t.requires_grad_() if v.requires_grad and v.is_leaf and t.is_floating_point() else t
            )
        elif type(v) in (int, float):
            out[n] = v
    return out


def emit_state(scope: dict) -> None:
    """In the reference run: send the state before an answer cell."""
    emit("state", data=pack(state(scope)))


def restore(scope: dict, delta: str, names: list[str], answers: list[str], drop: list[str]) -> None:
    """Give ``scope`` the instructor's state: ``delta`` (packed) holds what changed since the last
    hand-in, ``names`` every name of the state. Answers are bound afresh; a tensor the notebook
    made is put back in place (so that lists and views that hold it see it) when it differs."""
    _STATE.update(unpack(delta))
    for n in names:
        want = _STATE.get(n)
        have = scope.get(n)
        if isinstance(want, torch.Tensor):
            if (
                n not in answers
                and isinstance(have, torch.Tensor)
                and have.shape == want.shape
                and have.dtype == want.dtype
                and have.device == want.device
            ):
                if not torch.equal(have.detach(), want.detach()):
                    have.data.copy_(want.detach())
            else:
                fresh = want.detach().clone()
                scope[n] = fresh.requires_grad_() if want.requires_grad else fresh
        elif want is not None:
            scope[n] = want
    for n in drop:  # the names the next cell must assign: a leftover earns nothing
        scope.pop(n, None)
    wipe()
    _start(scope)
