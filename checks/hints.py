"""Hints on demand: ``hint("counts")`` gives one rung of the ladder for ``dcounts`` per call.

The rungs come from the solution notebooks (the ``# hint dX: ...`` comment lines above each
solution block, written to ``checks/hints/<notebook>.json`` by ``python -m checks.student``): the
idea (what the tensor feeds, which rule applies), the local derivative, a skeleton with blanks.
The solution lines themselves come only with ``hint("counts", reveal=True)``. When the learner's
last answer for that name failed, the first rung starts from that mistake. ``summary()`` shows
how many rungs each check used.
"""

from __future__ import annotations

import collections
import html
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from checks.verdict import NOTE, code_html

HINTS = Path(__file__).resolve().parent / "hints"
RUNG_NAMES = ("the idea", "the local derivative", "a skeleton")
_USED: collections.Counter = collections.Counter()  # (notebook, answer name) -> rungs shown
_REVEALED: set[tuple[str, str]] = set()


@cache
def _ladders() -> dict[str, dict[str, dict]]:
    """Every notebook's ladders, by notebook stem and answer name."""
    if not HINTS.is_dir():
        return {}
    return {p.stem: json.loads(p.read_text()) for p in sorted(HINTS.glob("*.json"))}


@dataclass
class Hint:
    """One rung, as data; shown as text or HTML."""

    name: str
    number: int  # 1-based; 0 for the solution
    of: int
    title: str
    text: str
    after: str = ""  # what to do next

    def __str__(self) -> str:
        head = f"hint for {self.name}" + (
            f" ({self.number} of {self.of}: {self.title})" if self.number else f" ({self.title})"
        )
        return "\n".join(filter(None, [head, self.text, self.after]))

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = html.escape(
            f"{self.name}: "
            + (f"hint {self.number} of {self.of}, {self.title}" if self.number else self.title)
        )
        # inline only: JupyterLab's stylesheet gives a <pre> its code font, no padding, no border
        # and the page's background; say so here, for VS Code and Colab
        pre = (
            "margin:4px 0;padding:0;border:none;background:transparent;color:inherit;"
            "font-family:monospace;white-space:pre-wrap;text-align:left"
        )
        body = (
            f"<pre style='{pre}'>{html.escape(self.text)}</pre>"
            if self.number in (0, self.of) and "\n" in self.text or self.number == 0
            else f"<div style='margin:4px 0'>{code_html(self.text)}</div>"
        )
        after = f"<div style='color:#57606a'>{code_html(self.after)}</div>" if self.after else ""
        return (
            f"<div style='border:none;border-left:3px solid {NOTE};padding:2px 10px;"
            "font-family:sans-serif;text-align:left'>"
            f"<div style='color:{NOTE};font-weight:bold'>{head}</div>{body}{after}</div>"
        )


def _answer(name: str) -> str:
    """``counts`` and ``dcounts`` both mean the answer ``dcounts``; a check of no ``d`` (notebook
    01's ``mul``) is kept."""
    known = {n for ladders in _ladders().values() for n in ladders}
    return "d" + name if "d" + name in known or name not in known else name


def _notebook(answer: str) -> str | None:
    """The notebook whose ladder has ``answer``: the only one, else the one open in the kernel
    (JupyterLab's ``__session__``, VS Code's ``__vsc_ipynb_file__``), else the first."""
    having = [nb for nb, ladders in _ladders().items() if answer in ladders]
    if len(having) <= 1:
        return having[0] if having else None
    try:
        from IPython import get_ipython

        ns = get_ipython().user_ns if get_ipython() else {}
    except ImportError:
        ns = {}
    open_file = str(ns.get("__session__") or ns.get("__vsc_ipynb_file__") or "")
    stem = Path(open_file).name.split("-")[0]
    return next((nb for nb in having if stem and nb.split("-")[0] == stem), having[0])


def _results() -> dict:
    from checks.compare import _RESULTS

    return _RESULTS


def _pick(answer: str, ladders: list[dict]) -> int:
    """Of the ladders of a name asked more than once (notebook 01's ``da``), the one whose check
    the learner ran last; the first when none has run."""
    ran = list(_results())
    at = {
        i: max((k for k, key in enumerate(ran) if key == lad.get("check")), default=-1)
        for i, lad in enumerate(ladders)
    }
    best = max(at, key=lambda i: (at[i], -i))
    return best if at[best] >= 0 else 0


def _last_failure(check: str):
    """The learner's last result for the check ``check`` when it failed, else None."""
    got = _results().get(check)
    return got[0] if got is not None and not got[0].ok else None


def hint(name: str, reveal: bool = False) -> Hint:
    """The next rung of the hint ladder for ``name`` (``"counts"`` or ``"dcounts"``); with
    ``reveal=True``, the solution lines."""
    answer = _answer(name)
    nb = _notebook(answer)
    if nb is None:
        known = sorted({n for ladders in _ladders().values() for n in ladders})
        return Hint(
            answer,
            1,
            1,
            "no hints",
            f"there is no hint ladder for {answer}",
            f"ladders exist for: {', '.join(known[:12])}{', ...' if len(known) > 12 else ''}",
        )
    options = _ladders()[nb][answer]
    which = _pick(answer, options)
    ladder = options[which]
    rungs = list(ladder.get("rungs") or [])
    key = (nb, answer, which)
    if reveal:
        _REVEALED.add(key)
        _USED[key] = max(_USED[key], len(rungs))
        return Hint(answer, 0, len(rungs), "the solution", ladder["solution"])
    if not rungs:
        return Hint(
            answer,
            1,
            1,
            "no hints written",
            f"no hint ladder is written for {answer} yet",
            f"hint({name!r}, reveal=True) shows the solution",
        )
    k = min(_USED[key], len(rungs) - 1)
    _USED[key] = k + 1
    text = rungs[k]
    failed = _last_failure(ladder.get("check", answer[1:])) if k == 0 else None
    if failed is not None and failed.hint:
        text = f"Your last {answer} failed ({failed.status}): {failed.hint}\n{text}"
    more = (
        f"hint({name!r}) again for the next one"
        if k + 1 < len(rungs)
        else f"that was the last rung; hint({name!r}, reveal=True) shows the solution"
    )
    title = (
        RUNG_NAMES[k] if k < len(RUNG_NAMES) and len(rungs) == len(RUNG_NAMES) else f"rung {k + 1}"
    )
    return Hint(answer, k + 1, len(rungs), title, text, more)


def used(check: str) -> tuple[int, bool]:
    """How many rungs were shown for the check named ``check`` (as ``cmp`` names it), and whether
    the solution was."""
    for nb, ladders in _ladders().items():
        for answer, options in ladders.items():
            for i, lad in enumerate(options):
                if lad.get("check") == check:
                    return _USED[(nb, answer, i)], (nb, answer, i) in _REVEALED
    return 0, False


def reset() -> None:
    _USED.clear()
    _REVEALED.clear()
