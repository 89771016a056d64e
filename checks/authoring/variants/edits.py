"""Edits of a notebook's cells, each bound to text the cell must hold exactly once, so that a
change of the notebook that an edit no longer fits stops the generator instead of passing over."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


class EditError(ValueError):
    """An edit does not fit the notebook: its text is in no cell, or in more than one place."""


@dataclass(frozen=True)
class Sub:
    """``old`` replaced by ``new`` in the one cell that holds it, once."""

    old: str
    new: str


@dataclass(frozen=True)
class Swap:
    """The one cell that holds ``anchor``, replaced whole by ``text``."""

    anchor: str
    text: str


@dataclass(frozen=True)
class Drop:
    """The one cell that holds ``anchor``, taken out (None in its place)."""

    anchor: str


Edit = Sub | Swap | Drop


def apply(sources: list[str | None], edits: Iterable[Edit]) -> list[str | None]:
    """``sources`` (one text per cell, None for a cell taken out) with ``edits`` made in order."""
    out = list(sources)
    for edit in edits:
        key = edit.old if isinstance(edit, Sub) else edit.anchor
        hits = [i for i, text in enumerate(out) if text is not None and key in text]
        if len(hits) != 1 or out[hits[0]].count(key) != 1:
            where = f"{len(hits)} cells" if len(hits) != 1 else "one cell, more than once"
            raise EditError(f"{type(edit).__name__} {key[:60]!r}: found in {where}")
        i = hits[0]
        if isinstance(edit, Sub):
            out[i] = out[i].replace(key, edit.new)
        else:
            out[i] = edit.text if isinstance(edit, Swap) else None
    return out


def line(code: str, comment: str, column: int = 46) -> str:
    """A forward-pass line as the notebook writes them: ``code``, its comment at ``column``."""
    return f"{code}{' ' * max(2, column - len(code))}# {comment}"


def reorder_answers(text: str, wanted: tuple[str, ...]) -> str:
    """An answer cell of independent answers (one solution line and one check each), its answers
    in the ``wanted`` order: their comment blocks, solution lines and checks."""
    head, rest = text.split("### BEGIN SOLUTION\n")
    body, checks = rest.split("### END SOLUTION\n")
    blocks = re.split(r"(?m)^(?=# d\w+: dL/)", head)[1:]
    by_name = {b.split(":")[0][2:]: b for b in blocks}
    lines = {ln.split(" = ")[0]: ln for ln in body.splitlines(keepends=True)}
    cmps = {"d" + ln.split("'")[1]: ln for ln in checks.splitlines()}
    if set(by_name) != set(wanted) or set(lines) != set(wanted) or set(cmps) != set(wanted):
        raise ValueError(f"the cell of {wanted} is not one line per answer")
    return (
        "".join(by_name[n] for n in wanted)
        + "### BEGIN SOLUTION\n"
        + "".join(lines[n] for n in wanted)
        + "### END SOLUTION\n"
        + "\n".join(cmps[n] for n in wanted)
        + ("\n" if checks.endswith("\n") else "")
    )


def reordered(
    sources: list[str | None], groups: tuple[tuple[str, ...], ...], order
) -> list[str | None]:
    """Every cell that answers one of ``groups`` (the lecture's order) with its answers in
    ``order``'s (:func:`reorder_answers`); a cell a variant took out is left out."""
    out = list(sources)
    for lecture, wanted in zip(groups, order, strict=True):
        if tuple(wanted) == lecture:
            continue
        head = f"# {lecture[0]}: dL/{lecture[0]}"
        i = next((i for i, t in enumerate(out) if t is not None and t.startswith(head)), None)
        if i is not None:  # None: a cell the variant took out (batch norm's gain, without a norm)
            out[i] = reorder_answers(out[i], wanted)
    return out


def announced(v, imports: str, notebook: str | None = None) -> list[Edit]:
    """The imports cell's call of :func:`checks.variants.variant` with ``v``'s choices (those that
    are not the lecture's, ``notebook`` named first unless it is 03): it tells the learner their
    network, and ``hint()`` its ladders. ``imports``: the cell's line that imports from checks."""
    lecture, mine = type(v)().to_metadata(), v.to_metadata()
    mine.pop("order")
    told = [f"{k}={x!r}".replace("'", '"') for k, x in mine.items() if x != lecture[k]]
    args = ", ".join([f'"{notebook}"'] * (notebook is not None) + told)
    return [
        Sub(imports, imports.replace("training\n", "training, variant\n")),
        Sub(
            "when the other core is busy",
            f"when the other core is busy\nvariant({args})"
            "  # your own network: hint() speaks of it",
        ),
    ]


def race_said(exercise: int) -> str:
    """The sentence of a notebook's last summary on the race of its fast exercise (``exercise``),
    which a variant without that exercise takes out."""
    return (
        f"\nAfter exercise {exercise}'s `race()`, what your steps cost as well: the time of each "
        "against autograd's, the tensor operations\nit makes and the memory they allocate, beside "
        "the solution's, and the biggest saving it has left."
    )


# the last summary's sentence on the race of a variant without its notebook's fast exercise
COST_SAID = (
    "\nAfter the `race()` of your step, what it costs as well: its time against autograd's, the "
    "tensor operations it makes\nand the memory they allocate."
)
