"""Drills: small forward passes drawn from a seed, to differentiate by hand, checked by ``cmp``
against autograd like every answer of the notebooks; drawn for a mistake word when asked, or for
the mistake of a check that fails in this kernel.

>>> from checks import drill
>>> drill("missing-path", seed=7)   # doctest: +SKIP
"""

from __future__ import annotations

import secrets
import sys
from collections import Counter

from checks import hints, practice
from checks.drills.build import FOCUSES, Drill, draw
from checks.drills.ladder import ladders
from checks.kernel import ipython
from checks.session import results

__all__ = ["FOCUSES", "Drill", "drill"]


def drill(
    mistake: str | None = None, *, seed: int | None = None, cell: bool = True
) -> Drill | None:
    """A new drill: its forward pass run where it is called (its tensors become the caller's
    variables), its code shown, and the cell for the answers put beneath (Jupyter) or printed;
    ``hint("h1")`` then gives the rungs of this drill's ladder for ``dh1``.

    ``mistake`` (a word of ``FOCUSES``) draws one with a step where that mistake is made; without
    it, the drill is for the mistake most of this kernel's failing checks name, if any. ``seed``
    makes it reproducible; without one a fresh seed is drawn, and the code's first line shows it.
    ``cell=False`` puts no answer cell beneath: the notebook holds it already (06's first drill).
    """
    if isinstance(seed, bool) or not isinstance(seed, int | None) or (seed or 0) < 0:
        print(f"drill(seed=...) takes a whole number of 0 or more, not {seed!r}.")
        return None
    if mistake is not None and mistake not in FOCUSES:
        print(f"there is no drill for {mistake!r}; there are drills for: {', '.join(FOCUSES)}.")
        return None
    focus = mistake or _most_needed()
    d = draw(secrets.randbelow(1_000_000) if seed is None else seed, focus)
    code = d.forward_code()
    exec(compile(code, f"<drill {d.seed}>", "exec"), sys._getframe(1).f_globals)
    hints.offer(ladders(d))  # hint("h1") now climbs this drill's ladder for dh1
    practice.began(d.seed, d.focus, d.answers)  # its checks are this drill's attempts
    print(code)
    if cell:
        _put_beneath(d.answer_cell())
    return d


def _most_needed() -> str | None:
    """The mistake word that most of this kernel's failing checks name (or, for a right answer
    noted for a dropped keepdim, ``keepdim``), among those a drill can be drawn for (the latest
    one's, on a tie); else the misconception of the learner's progress file most due
    (``checks.progress()``); None when there is neither."""
    words = [w for r in results() if (w := practice.misconception(r)) in FOCUSES]
    if not words:
        return next((w for w in practice.due_now() if w in FOCUSES), None)
    counts = Counter(words)
    return max(reversed(words), key=lambda w: counts[w])


def _put_beneath(cell: str) -> None:
    """The answer cell as the next cell in IPython (Jupyter); printed anywhere else."""
    shell = ipython()
    if shell is not None and hasattr(shell, "set_next_input"):
        shell.set_next_input(cell, replace=False)
    else:
        print("\n# your answers: each gradient, then its check\n" + cell)
