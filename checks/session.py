"""What this kernel remembers of its checks: every result (for ``summary()`` and ``hint()``), the
answers checked so far (for a later check's ``upstream`` replay), the checks a notebook is
expected to run, and the steps raced (``race()``, for what ``summary()`` says they cost).

The state lives here, below the checks that write it (:mod:`checks.compare`,
:mod:`checks.numeric`, :mod:`checks.values`) and the modules that read it back
(:mod:`checks.hints`, :mod:`checks.overview`), so that none of them imports another to find it.
:func:`reset` forgets it all. No torch at import: the hints and the grader's runner read this too.
"""

from __future__ import annotations

import json
import weakref
from pathlib import Path
from typing import Any

from checks import kernel, practice
from checks.paths import METADATA, ROOT
from checks.verdict import Result, checked, show

_RESULTS: dict[str, tuple[Result, int]] = {}  # name -> (latest result, tries), first-run order
_EXPECTED: list[str] = []
_RACES: list[Any] = []  # the latest race run in this kernel (checks.races.Race), if any
RACE = "race"  # the key of a shown race in its output's metadata (under METADATA)

# The answers checked so far, by the tensor they were checked against and the check's name: (that
# tensor, the answer's name, a copy of the answer, whether it passed, the first wrong answers behind
# it). A later check uses them to tell a wrong step from a right step on a wrong upstream answer.
_ANSWERS: dict[tuple[int, str], tuple[weakref.ref, str, Any, bool, tuple[str, ...]]] = {}


def record(res: Result, quiet: bool = False) -> Result:
    """Remember ``res`` for ``summary()`` and print it unless ``quiet``."""
    _, tries = _RESULTS.get(res.name, (None, 0))
    # keeps its first-run place; an answer not written yet (Run All over the `...`) is no try
    _RESULTS[res.name] = (res, tries + (res.mistake != "missing"))
    practice.note(res, _RESULTS[res.name][1])  # the learner's progress file, across kernels
    if not quiet:
        show(res)
        res._shown_in = kernel.execution_count()
    return res


def results() -> list[Result]:
    """The latest result of every check run in this kernel, in first-run order."""
    return [r for r, _ in _RESULTS.values()]


def tried() -> list[tuple[Result, int]]:
    """The latest result of every check run in this kernel and how many tries it took, in
    first-run order."""
    return list(_RESULTS.values())


def reset() -> None:
    """Forget all results, remembered answers and races (a fresh start for ``summary()``)."""
    _RESULTS.clear()
    _ANSWERS.clear()
    _EXPECTED.clear()
    _RACES.clear()


def raced(race: Any) -> None:
    """Remember ``race`` (a :class:`checks.races.Race`) for ``summary()``, in place of the last."""
    _RACES[:] = [race]


def last_race() -> Any:
    """The latest race run in this kernel, or None."""
    return _RACES[-1] if _RACES else None


# ---------------------------------------------------------------- the answers checked so far


def remember(t: Any, name: str, label: str, value: Any, ok: bool, roots: tuple[str, ...]) -> None:
    """Keep the answer ``label`` (``value``, a copy) checked against the tensor ``t`` by the check
    ``name``; a check run again moves to the end: its latest answer."""
    key = (id(t), name)
    _ANSWERS.pop(key, None)
    _ANSWERS[key] = (weakref.ref(t), label, value, ok, roots)


def remembered() -> list[tuple[Any, str, Any, bool, tuple[str, ...]]]:
    """(tensor, answer's name, its copy, passed, the first wrong answers behind it) of each answer
    whose tensor is still alive, in the order checked; those of tensors gone (a drill's, once the
    next one replaced it) are forgotten, copies and all."""
    out = []
    for key, (ref, label, value, ok, roots) in list(_ANSWERS.items()):
        t = ref()
        if t is None:
            del _ANSWERS[key]
        else:
            out.append((t, label, value, ok, roots))
    return out


def answer_names() -> set[str]:
    """The names of every answer checked so far (``dcounts``, ...)."""
    return {a[1] for a in _ANSWERS.values()}


# ---------------------------------------------------------------- the checks a notebook expects


def expect(*names: str) -> None:
    """Declare every check of a notebook, so that ``summary()`` counts those not run yet."""
    for name in names:
        if name not in _EXPECTED:
            _EXPECTED.append(name)


def declared() -> list[str]:
    """The checks declared with :func:`expect`, in order."""
    return list(_EXPECTED)


def _outputs(cells: list) -> list[dict]:
    """Every output of ``cells``, in order."""
    return [out for cell in cells for out in cell.get("outputs", [])]


def shown_checks(cells: list) -> list[str]:
    """The names of the checks that executed cells show, in order, each once: read from their
    outputs' metadata (:func:`checks.verdict.checked`), not from the text they show."""
    names: list[str] = []
    for name in map(checked, _outputs(cells)):
        if name is not None and name not in names:
            names.append(name)
    return names


def shown_races(cells: list) -> list[dict]:
    """The races that executed cells show, as data (:meth:`checks.races.Race.json`): read from
    their outputs' metadata."""
    marks = [(out.get("metadata") or {}).get(METADATA) for out in _outputs(cells)]
    return [m[RACE] for m in marks if isinstance(m, dict) and isinstance(m.get(RACE), dict)]


# a notebook's checks as this kernel's variant of it has them (checks.variants.variant)
_OWN_CHECKS: dict[str, list[str]] = {}


# the notebooks this kernel works on a variant of with other maths than the lecture's
# (checks.variants.variant): the solution's steps the package ships are the lecture network's
_OTHER_MATHS: set[str] = set()


def other_maths(notebook: str, differ: bool) -> None:
    """Say whether this kernel's variant of ``notebook`` computes other maths than the lecture's."""
    (_OTHER_MATHS.add if differ else _OTHER_MATHS.discard)(notebook)


def lectures_maths() -> bool:
    """Whether this kernel computes the lecture's maths (no variant of other maths told): the
    solution's steps that the package ships are then this kernel's solution's too."""
    return not _OTHER_MATHS


def own_checks(notebook: str, names: list[str] | None) -> None:
    """Make ``names`` ``notebook``'s checks in this kernel (None: the notebook's own again)."""
    if names is None:
        _OWN_CHECKS.pop(notebook, None)
    else:
        _OWN_CHECKS[notebook] = list(names)


def expected_checks(notebook: str, root: Path | None = None) -> list[str]:
    """The names of every check of a notebook, in order: this kernel's variant's, else listed in
    its student copy's metadata (``python -m checks.student`` writes them there from the executed
    solution), else read off the executed solution (a class edition carries no solutions)."""
    if root is None and notebook in _OWN_CHECKS:
        return list(_OWN_CHECKS[notebook])
    base = root or ROOT
    try:
        listed = json.loads((base / "notebooks" / f"{notebook}.ipynb").read_text())["metadata"]
        names = listed[METADATA]["checks"]
        if isinstance(names, list) and all(isinstance(n, str) for n in names):
            return list(names)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        cells = json.loads((base / "solutions" / f"{notebook}.ipynb").read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return []
    return shown_checks(cells)
