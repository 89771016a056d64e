"""Hints on demand: ``hint("counts")`` gives one rung of the ladder for ``dcounts`` per call.

The rungs come from the solution notebooks (the ``# hint dX: ...`` comment lines above each
solution block, written to ``checks/hints/<notebook>.json`` by ``python -m checks.student``): the
idea (what the tensor feeds, which rule applies), the local derivative, a skeleton with blanks.
The solution lines themselves come only with ``hint("counts", reveal=True)``.

The ladder follows the learner. A name that several notebooks ask for (``dW1``) gets the ladder
of the notebook open in the kernel, or, where no path is known (nbclient, Colab, VS Code), of the
notebook whose checks this kernel ran most recently. When the learner's last answer for the name
failed, the rung speaks to that mistake, and a new, different mistake starts the ladder again at
its first rung. A step that is right but built on a wrong earlier answer (``upstream``) gets no
rung: the hint names the earlier answer to fix. ``summary()`` shows how many rungs each check
used.

Shown in Jupyter, a hint's output carries :data:`MARKER` in its metadata (the answer, its check,
the rung, whether it was the solution), so the saved notebook records the hints used
(:mod:`checks.grading.hintlog` reads them). In a class edition (:func:`checks.paths.class_edition`)
``reveal=True`` says that it is off for the course and shows nothing of the solution.
"""

from __future__ import annotations

import collections
import difflib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from checks import kernel, practice, session
from checks.paths import HINTS, METADATA, class_edition
from checks.render.html import NOTE, code_html, esc
from checks.verdict import Result

RUNG_NAMES = ("the idea", "the local derivative", "a skeleton")
MARKER = METADATA  # the key of a shown hint's output metadata
_USED: collections.Counter = collections.Counter()  # (notebook, answer, which) -> deepest rung
_AT: dict[tuple[str, str, int], int] = {}  # the rung the next call gives, from 0
_SPOKE: dict[tuple[str, str, int], tuple[str, str]] = {}  # the (mistake, hint) last spoken to
_REVEALED: set[tuple[str, str, int]] = set()
# the latest drill's ladders (checks.drills), offered in this kernel: by answer name, as a
# notebook's; where it stands among the checks (the drill's "recency"); the results its checks
# had from an earlier drill, which say nothing of this one
DRILL = "drill"
_LIVE: dict[str, dict[str, list[dict]]] = {}
# a notebook's ladders as this kernel's variant of it has them (checks.variants), by notebook
_OWN: dict[str, dict[str, list[dict]]] = {}
_OFFERED: dict[str, object] = {}


@cache
def _files() -> dict[str, dict[str, list[dict]]]:
    """Every notebook's ladders, by notebook stem and answer name."""
    if not HINTS.is_dir():
        return {}
    found = {p.stem: json.loads(p.read_text()) for p in sorted(HINTS.glob("*.json"))}
    return {stem: ladders for stem, ladders in found.items() if ladders}


def _ladders() -> dict[str, dict[str, list[dict]]]:
    """The notebooks' ladders and the latest drill's."""
    return {**_files(), **_OWN, **_LIVE}


def offer_own(notebook: str, ladders: dict[str, list[dict]]) -> None:
    """Make ``ladders`` (by answer name) ``notebook``'s in this kernel: a variant's
    (:func:`checks.variants.variant`) in place of the lecture's."""
    _OWN[notebook] = ladders


def offer(ladders: dict[str, list[dict]]) -> None:
    """Make ``ladders`` (a drill's, by answer name) the drill's ladders in this kernel, in place of
    the previous drill's: every rung starts again, and the hints follow this drill's checks."""
    for store in (_USED, _AT, _SPOKE):
        for key in [k for k in store if k[0] == DRILL]:
            del store[key]
    _REVEALED.difference_update({k for k in _REVEALED if k[0] == DRILL})
    _LIVE[DRILL] = ladders
    checks = {lad.get("check", "") for options in ladders.values() for lad in options}
    _OFFERED["at"] = (kernel.execution_count() or -1, len(_results()))
    _OFFERED["stale"] = {r.name: r for r in _results() if r.name in checks}


@dataclass
class Hint:
    """One rung, as data; shown as text or HTML. ``number`` is 1-based, 0 for the solution
    (``of`` rungs) or for a message that is no rung (``of`` 0: no ladder, an earlier answer)."""

    name: str
    number: int
    of: int
    title: str
    text: str
    after: str = ""  # what to do next
    check: str = ""  # the name cmp checks the answer under ("counts"), where a ladder has one
    notebook: str = ""  # the stem of the notebook whose ladder it is
    revealed: bool = False  # the solution lines (reveal=True)

    def marker(self) -> dict:
        """The metadata of this hint's output in a notebook, as :mod:`checks.grading.hintlog` reads
        it."""
        return {
            MARKER: {
                "hint": self.name,
                "check": self.check,
                "notebook": self.notebook,
                "rung": self.number,
                "of": self.of,
                "reveal": self.revealed,
            }
        }

    def _ipython_display_(self) -> None:
        """Show it with :meth:`marker` in the output's metadata (a print where IPython is not)."""
        try:
            from IPython.display import display
        except ImportError:
            print(self)
            return
        bundle = {"text/plain": str(self), "text/html": self._repr_html_()}
        display(bundle, raw=True, metadata=self.marker())

    def _where(self, sep: str) -> str:
        return f"{self.number} of {self.of}{sep}{self.title}" if self.number else self.title

    def __str__(self) -> str:
        head = f"hint for {self.name} ({self._where(': ')})"
        return "\n".join(filter(None, [head, self.text, self.after]))

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = esc(f"{self.name}: " + (f"hint {self._where(', ')}" if self.number else self.title))
        # inline only: JupyterLab's stylesheet gives a <pre> its code font, no padding, no border
        # and the page's background; say so here, for VS Code and Colab
        pre = (
            "margin:4px 0;padding:0;border:none;background:transparent;color:inherit;"
            "font-family:monospace;white-space:pre-wrap;text-align:left"
        )
        solution = self.number == 0 and self.of > 0
        skeleton = 0 < self.number == self.of and "\n" in self.text
        body = (
            f"<pre style='{pre}'>{esc(self.text)}</pre>"
            if solution or skeleton
            else f"<div style='margin:4px 0'>{code_html(self.text)}</div>"
        )
        after = f"<div style='color:#57606a'>{code_html(self.after)}</div>" if self.after else ""
        return (
            f"<div style='border:none;border-left:3px solid {NOTE};padding:2px 10px;"
            "font-family:sans-serif;text-align:left'>"
            f"<div style='color:{NOTE};font-weight:bold'>{head}</div>{body}{after}</div>"
        )


def _known() -> list[str]:
    """Every answer name some ladder is written for."""
    return sorted({n for ladders in _ladders().values() for n in ladders})


def _answer(name: str) -> str:
    """``counts`` and ``dcounts`` both mean the answer ``dcounts``; a check of no ``d`` (notebook
    01's ``mul``) is kept, and so is a name no ladder has."""
    known = set(_known())
    return "d" + name if name not in known and "d" + name in known else name


def _asked_as(answer: str, like: str) -> str:
    """``answer`` the way ``like`` was asked: ``counts`` for ``dcounts`` when ``like`` had no d."""
    if like.startswith("d") or not answer.startswith("d") or answer[1:] in _known():
        return answer
    return answer[1:]


def _results() -> list[Result]:
    return session.results()


def _recency() -> dict[str, tuple[int, int]]:
    """Each check this kernel has run, by how recently: the execution count of the cell that
    showed its latest result (-1 when quiet), then its place among the results."""
    return {r.name: (getattr(r, "_shown_in", None) or -1, i) for i, r in enumerate(_results())}


def _expected(notebook: str) -> tuple[str, ...]:
    """The checks a notebook's executed solution shows, in order (a drill's: its answer cell's)."""
    if notebook in _LIVE:
        return tuple(lad.get("check", "") for ls in _LIVE[notebook].values() for lad in ls)
    if notebook in _OWN:  # a variant's (its checks named as its notebook names them)
        return tuple(session.expected_checks(notebook))
    return _expected_of_file(notebook)


@cache
def _expected_of_file(notebook: str) -> tuple[str, ...]:
    return tuple(session.expected_checks(notebook))


def _checks_of(notebook: str) -> frozenset[str]:
    """The names of a notebook's checks: its ladders' and those its executed solution shows."""
    ladders = _ladders().get(notebook, {})
    own = {lad.get("check", "") for options in ladders.values() for lad in options}
    return frozenset(own) | frozenset(_expected(notebook))


def _gaps(notebook: str, ran: dict) -> int:
    """How many of a notebook's checks, up to the farthest one this kernel ran, it has not run
    (a learner works from the top): fewer gaps, a likelier notebook."""
    order = _expected(notebook)
    last = max((i for i, c in enumerate(order) if c in ran), default=0)
    return sum(c not in ran for c in order[:last])


def _open_file() -> str:
    """The path of the notebook open in the kernel; "" where it is not known."""
    return kernel.open_notebook()


def _open_stem() -> str:
    """The number of the notebook open in the kernel ("03"); "" where none is known."""
    open_file = _open_file()
    return Path(open_file).name.split("-")[0] if open_file else ""


def reveal_off() -> bool:
    """Whether this kernel works on a class edition: its working folder, or the folder of the
    notebook open in it, is one (:func:`checks.paths.class_edition`)."""
    open_file = Path(_open_file())
    return class_edition() or (open_file.is_absolute() and class_edition(open_file.parent))


def _evidence(candidates: list[str]) -> dict[str, tuple]:
    """For each candidate notebook, what says this kernel works on it, strongest first: it is the
    one open in the kernel; how recently the kernel ran one of its own checks (those not every
    candidate has); how many of them; how few of its checks were skipped (:func:`_gaps`)."""
    stem, ran = _open_stem(), _recency()
    checks = {nb: _checks_of(nb) for nb in candidates}
    shared = frozenset.intersection(*checks.values()) if len(checks) > 1 else frozenset()
    found = {}
    for nb in candidates:
        own = [ran[c] for c in checks[nb] - shared if c in ran]
        is_open = bool(stem) and nb.split("-")[0] == stem
        # a kernel that was told its variant of a notebook works on it, where no path says which
        is_open = is_open or (nb in _OWN and not stem)
        if nb in _LIVE:  # a drill is as open as the notebook it was drawn in, and newer
            is_open, own = True, [*own, _OFFERED["at"]]
        found[nb] = (is_open, max(own, default=(-2, -1)), len(own), -_gaps(nb, ran))
    return found


def _ranked(candidates: list[str]) -> list[str]:
    """``candidates`` (notebook stems), the likeliest first by :func:`_evidence`; ties keep
    their order."""
    if len(candidates) <= 1:
        return list(candidates)
    evidence = _evidence(candidates)
    return sorted(candidates, key=evidence.__getitem__, reverse=True)  # stable: ties keep order


def _in_use(besides: str | None = None) -> str | None:
    """The notebook this kernel works on, when the open path or the checks it ran say so (of
    those other than ``besides``)."""
    evidence = _evidence([nb for nb in _ladders() if nb != besides])
    best = max(evidence, key=evidence.__getitem__, default=None)
    return best if best is not None and (evidence[best][0] or evidence[best][2]) else None


def _having(answer: str) -> list[str]:
    return [nb for nb, ladders in _ladders().items() if answer in ladders]


def _notebook(answer: str) -> str | None:
    """The notebook whose ladder for ``answer`` to give: the one this kernel works on
    (:func:`_in_use`), None when that one has none; else the likeliest (:func:`_ranked`)."""
    having, use = _having(answer), _in_use()
    if use in _LIVE and use not in having:  # not a drill's answer: the notebook's, if any
        use = _in_use(besides=use)
    if use is not None and having:
        return use if use in having else None
    return next(iter(_ranked(having)), None)


def _pick(ladders: list[dict]) -> int:
    """Of the ladders of a name asked more than once in one notebook (01's ``da``, 03's
    ``dlogits``), the one whose check the learner ran last; the first when none has run."""
    ran = _recency()
    at = {i: ran.get(lad.get("check", ""), (-2, -1)) for i, lad in enumerate(ladders)}
    best = max(at, key=lambda i: (at[i], -i))
    return best if at[best] > (-2, -1) else 0


def _latest(check: str, nb: str = "") -> Result | None:
    """The learner's latest result for the check named ``check`` (of notebook ``nb``), if it has
    run: for a drill, not a result of an earlier drill's check of the same name."""
    found = next((r for r in _results() if r.name == check), None)
    stale = _OFFERED.get("stale", {}) if nb in _LIVE else {}
    return None if found is not None and stale.get(check) is found else found


def _unknown(name: str, answer: str) -> Hint:
    """No ladder for ``name`` (in the notebook in use): the names it most likely meant there, or
    the ladders there are, and the notebooks that have one for it."""
    nb = _in_use()
    names = list(_ladders()[nb]) if nb else _known()
    pool = {form: n for n in names for form in (n, _asked_as(n, ""))}
    near = list(dict.fromkeys(pool[m] for m in difflib.get_close_matches(name, pool, 4, 0.6)))
    spelled = answer if answer in _known() or name.startswith("d") else f"{name} or d{name}"
    where = "the latest drill" if nb in _LIVE else nb
    text = f"there is no hint ladder for {spelled}" + (f" in {where}" if nb else "")
    if near:
        after = "did you mean " + " or ".join(f"hint({_asked_as(n, name)!r})" for n in near[:3])
        after += "?"
    else:
        after = f"ladders exist for: {', '.join(names[:12])}{', ...' if len(names) > 12 else ''}"
    elsewhere = [other for other in _having(answer) if other != nb]
    if elsewhere:
        text += f" ({' and '.join(elsewhere)} {'has' if len(elsewhere) == 1 else 'have'} one)"
    return Hint(name, 0, 0, "no hints", text, after)


def _upstream(name: str, answer: str, res: Result) -> Hint:
    """A right step on a wrong earlier answer: no rung, the earlier answer to fix."""
    wrong = [b for b in res.blamed if b]
    names = " and ".join(f"`{b}`" for b in wrong) or "an earlier answer"
    text = (
        f"Your {answer} is right as a step: it only carries on the error of your {names}, which "
        f"{'is' if len(wrong) <= 1 else 'are'} wrong. Fix {names} first, then run this check again."
    )
    ladders = [b for b in wrong if _answer(b) in _known()]
    if ladders:
        after = f"hint({_asked_as(_answer(ladders[0]), name)!r}) helps with {ladders[0]}"
    else:
        after = "" if reveal_off() else f"hint({name!r}, reveal=True) shows this step's solution"
    return Hint(answer, 0, 0, "an earlier answer is wrong", text, after)


def _mistake(res: Result | None) -> tuple[str, str] | None:
    """The mistake a failed result names, as (word, hint); None for a pass or an answer not
    written yet."""
    if res is None or res.ok or res.mistake == "missing":
        return None
    return (res.mistake or "fail", res.hint or "")


def hint(name: str, reveal: bool = False) -> Hint:
    """The next rung of the hint ladder for ``name`` (``"counts"`` or ``"dcounts"``); with
    ``reveal=True``, the solution lines (in a class edition: that reveal is off)."""
    answer = _answer(name)
    nb = _notebook(answer)
    if nb is None:
        return _unknown(name, answer)
    options = _ladders()[nb][answer]
    which = _pick(options)
    ladder, key = options[which], (nb, answer, which)
    check = ladder.get("check", answer[1:])
    found = _give(name, answer, key, ladder, reveal, nb)
    found.check, found.notebook = check, nb
    if found.number or found.revealed:
        practice.hinted(check)
    return found


def _give(
    name: str, answer: str, key: tuple[str, str, int], ladder: dict, reveal: bool, nb: str
) -> Hint:
    """What :func:`hint` gives from ``ladder`` (notebook ``nb``'s): a rung, the solution, or a
    message."""
    rungs = list(ladder.get("rungs") or [])
    off = reveal_off()
    if reveal and off:
        text = (
            f"hint(..., reveal=True) is off for this course (a class edition): the solution of "
            f"{answer} is not shown. Ask your instructor or a teaching assistant."
        )
        return Hint(answer, 0, 0, "reveal is off", text, f"hint({name!r}) gives the next rung")
    if reveal:
        _REVEALED.add(key)
        _USED[key] = max(_USED[key], len(rungs))
        return Hint(answer, 0, len(rungs), "the solution", ladder["solution"], revealed=True)
    if not rungs:
        text = f"no hint ladder is written for {answer} yet"
        after = "" if off else f"hint({name!r}, reveal=True) shows it"
        return Hint(answer, 0, 0, "no hints written", text, after)
    res = _latest(ladder.get("check", answer[1:]), nb)
    if res is not None and res.mistake == "upstream":
        return _upstream(name, answer, res)
    return _rung(name, answer, key, rungs, res)


def _rung(name: str, answer: str, key: tuple[str, str, int], rungs: list[str], res) -> Hint:
    """The next rung of ``rungs``; from the first again, speaking to it, on a new mistake."""
    mistake = _mistake(res)
    k = _AT.get(key, 0)
    if mistake is not None and mistake != _SPOKE.get(key):
        k = 0  # a new mistake: start again from the idea, and say what went wrong
    k = min(k, len(rungs) - 1)
    _AT[key] = k + 1
    _USED[key] = max(_USED[key], k + 1)
    text = rungs[k]
    if mistake is not None and k == 0:
        _SPOKE[key] = mistake
        text = f"Your last {answer} failed ({mistake[0]}): {mistake[1]}\n{text}"
    if k + 1 < len(rungs):
        more = f"hint({name!r}) again for the next one"
    elif reveal_off():
        more = "that was the last rung (reveal is off for this course)"
    else:
        more = f"that was the last rung; hint({name!r}, reveal=True) shows the solution"
    three = len(rungs) == len(RUNG_NAMES)
    return Hint(answer, k + 1, len(rungs), RUNG_NAMES[k] if three else f"rung {k + 1}", text, more)


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
    """Forget every rung shown, revealed and spoken to (a fresh start)."""
    _USED.clear()
    _AT.clear()
    _SPOKE.clear()
    _REVEALED.clear()
