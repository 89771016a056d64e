"""Kernel side, informational only: what a probe's call of a learner's function costs (the tensor
operations it dispatches and the bytes they allocate, :class:`checks.cost.Tally`), for the cost
column of ``grades.csv``; never part of a grade.

The count never touches the answers. The probe has run and its answers are recorded and checked
before :func:`send` calls it a second time, counted, on copies of the tensors its expression
names (lists, tuples and dicts of them too; a tensor the function reads from the notebook by
itself is not copied), with the random state, the grad mode and the default dtype put back
afterwards, and stopped after :data:`SECONDS` (counting slows every operator down, and a
learner's loop of scalar operations could otherwise run past the cell's time limit). A call that
fails or runs out of time sends no cost. The grader's helpers that make a probe's inputs and pack
its answers (``recorder.fresh``, ``normed``, ``op``...) count nothing (:func:`paused`). A
learner's code can change what this module sends, as it can any output of its own; the grader
reads back only two whole numbers (``checks.grading.run``).
"""

from __future__ import annotations

import contextlib
import random
import signal
import threading
from collections.abc import Iterator
from typing import Any

import torch

SECONDS = 5.0  # the most a counted second call may take; past it, the probe's cost is not sent
_PAUSED = {"on": False}


class OutOfTime(BaseException):
    """The counted call ran past :data:`SECONDS` (a BaseException: a learner's ``except
    Exception`` does not swallow it)."""


def send(probe: str, scope: dict) -> None:
    """Call ``probe`` (the probe's expression) again, counted, and send what it cost."""
    from checks.grading.recorder import emit

    counted = count(probe, scope)
    if counted is not None:
        emit("cost", cost=counted)


def count(probe: str, scope: dict, seconds: float = SECONDS) -> dict[str, int] | None:
    """The operators and bytes of one call of ``probe`` on copies of what it reads from
    ``scope``, or None where it fails, runs out of ``seconds`` (even where the learner's code
    catches the stop), or no time limit can be set."""
    if not _can_stop():
        return None
    try:
        counter = _counter()
        code = compile(probe, "<probe>", "eval")
        # the deadline innermost: its timer is off before the count or the saved state ends
        with _state_kept(), counter, _deadline(seconds) as limit:
            eval(code, scope, _Copies(scope))
    except (Exception, OutOfTime):  # the learner's code, counted: it sends no cost
        return None
    if limit["fired"]:  # stopped, and the stop caught by the learner's code: a part counted
        return None
    return {"ops": sum(counter.ops.values()), "nbytes": sum(counter.nbytes.values())}


def _counter() -> Any:
    """A :class:`checks.cost.Tally` that counts nothing while :func:`paused`."""
    from checks.cost import Tally

    class Counting(Tally):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if _PAUSED["on"]:
                return func(*args, **(kwargs or {}))
            return super().__torch_dispatch__(func, types, args, kwargs)

    return Counting()


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Operators dispatched in the block are not counted (the grader's own work in a probe)."""
    was, _PAUSED["on"] = _PAUSED["on"], True
    try:
        yield
    finally:
        _PAUSED["on"] = was


class _Copies(dict):
    """The names a probe reads, each copied as it is first read: tensors cloned (in lists, tuples
    and dicts too), so that a function which changes its inputs changes no tensor of the
    notebook's. Names it does not hold fall through to the globals and the builtins."""

    def __init__(self, scope: dict) -> None:
        super().__init__()
        self.scope = scope

    def __missing__(self, name: str) -> Any:
        with paused():
            value = _copied(self.scope[name])
        self[name] = value
        return value


def _copied(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        copy = value.detach().clone()
        return copy.requires_grad_() if value.requires_grad and copy.is_floating_point() else copy
    if isinstance(value, list | tuple):
        items = [_copied(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if type(value) is dict:
        return {k: _copied(v) for k, v in value.items()}
    return value


def _can_stop() -> bool:
    """Whether :func:`_deadline` can stop a call: a timer signal, in the main thread."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[dict[str, bool]]:
    """Raise :class:`OutOfTime` in the block after ``seconds``, and again every 50 ms until it
    ends (a learner's ``except BaseException`` may catch one); the dict it yields says whether
    it fired. Leaving the block switches the timer off and puts the old handler back, even
    where a last stop arrives on the way out."""
    limit = {"armed": True, "fired": False}

    def stop(signum: int, frame: Any) -> None:
        if limit["armed"]:
            limit["fired"] = True
            raise OutOfTime

    before = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.05)
    try:
        yield limit
    finally:
        while True:  # a stop raised here is caught: once disarmed, none comes
            try:
                limit["armed"] = False
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, before)
                break
            except OutOfTime:
                continue


@contextlib.contextmanager
def _state_kept() -> Iterator[None]:
    """torch's and Python's random state, torch's grad mode and default dtype as they were
    before the block, after it (a call stopped half-way may have changed them)."""
    state, grad, dtype = random.getstate(), torch.is_grad_enabled(), torch.get_default_dtype()
    with torch.random.fork_rng(devices=[]):
        try:
            yield
        finally:
            random.setstate(state)
            torch.set_grad_enabled(grad)
            torch.set_default_dtype(dtype)
