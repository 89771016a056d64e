"""Drills: small forward passes drawn from a seed, to differentiate by hand, checked by ``cmp``
against autograd like every answer of the notebooks.

>>> from checks import drill
>>> drill(seed=7)   # doctest: +SKIP
"""

from __future__ import annotations

import secrets
import sys

from checks.drills.build import Drill, draw

__all__ = ["Drill", "drill"]


def drill(seed: int | None = None) -> Drill | None:
    """A new drill: its forward pass run where it is called (its tensors become the caller's
    variables), its code shown, and the cell for the answers put beneath (Jupyter) or printed.

    ``seed`` makes it reproducible; without one a fresh seed is drawn, and the code shows it.
    """
    if seed is None:
        seed = secrets.randbelow(1_000_000)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        print(f"drill(seed=...) takes a whole number of 0 or more, not {seed!r}.")
        return None
    d = draw(seed)
    code = d.forward_code()
    exec(compile(code, f"<drill {seed}>", "exec"), sys._getframe(1).f_globals)
    print(code)
    _put_beneath(d.answer_cell())
    return d


def _put_beneath(cell: str) -> None:
    """The answer cell as the next cell in Jupyter; printed anywhere else."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None and hasattr(shell, "set_next_input"):
        shell.set_next_input(cell, replace=False)
    else:
        print("\n# your answers: each gradient, then its check\n" + cell)
