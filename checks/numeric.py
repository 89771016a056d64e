"""Gradients by central differences, in float64, with no autograd involved.

``numgrad(f, x)`` nudges each element of ``x`` by ``±h`` and returns
``(f(x + h) - f(x - h)) / 2h`` element by element; ``check_numeric`` compares a
hand-written gradient with it and reports in the same style as ``cmp``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

from checks.compare import Refused, Result, answer, guarded, judge, record
from checks.diagnose import Context
from checks.graph import frame_ints
from checks.tolerances import ATOL, RTOL


def numgrad(
    f: Callable[..., Any], *inputs: Any, h: float = 1e-6
) -> torch.Tensor | tuple[torch.Tensor, ...]:
    """Central-difference gradient of the scalar ``f(*inputs)`` with respect to each input.

    The inputs are copied to float64 tensors (the originals are not touched) and ``f`` is
    called on the copies under ``torch.no_grad()``; it must return a single number.
    Returns one gradient per input (a tensor alone when there is one input).
    """
    xs = [torch.as_tensor(x).detach().to(torch.float64).clone() for x in inputs]
    grads = []
    with torch.no_grad():
        for x in xs:
            g = torch.zeros_like(x)
            flat, gflat = x.view(-1), g.view(-1)
            for j in range(flat.numel()):
                old = float(flat[j])
                flat[j] = old + h
                up = float(f(*xs))
                flat[j] = old - h
                down = float(f(*xs))
                flat[j] = old
                gflat[j] = (up - down) / (2 * h)
            grads.append(g)
    return grads[0] if len(grads) == 1 else tuple(grads)


def check_numeric(
    name: str,
    dt: Any,
    f: Callable[..., Any],
    *inputs: Any,
    wrt: int = 0,
    h: float = 1e-6,
    rtol: float = RTOL,
    atol: float = ATOL,
    quiet: bool = False,
) -> Result:
    """Check ``dt``, the gradient of ``f(*inputs)`` with respect to ``inputs[wrt]``, by
    central differences.

    Prints the same line as ``cmp`` and returns a :class:`~checks.compare.Result`; the
    comparison is in float64. Never raises on the learner's input (a failing ``f`` is reported).
    """
    name, frame = str(name), sys._getframe(1)

    def check() -> Result:
        if not 0 <= wrt < len(inputs):
            raise Refused(
                "no-grad", f"wrt={wrt} but only {len(inputs)} input(s) were given to check_numeric."
            )
        try:
            grads = numgrad(f, *inputs, h=h)
        except Exception as exc:
            raise Refused(
                "no-grad",
                "the function could not be evaluated on float64 inputs "
                f"({type(exc).__name__}: {exc}).",
            ) from None
        e = grads if isinstance(grads, torch.Tensor) else grads[wrt]
        y, notes = answer(name, dt, e)
        ctx = Context(
            name,
            rtol,
            atol,
            frame_ints(frame),
            source="central difference",
            notes=notes,
            argument=wrt,
        )
        return judge(name, y, e, ctx)

    return record(guarded(name, f"d{name}", check), quiet)
