"""Edits of a notebook's cells, each bound to text the cell must hold exactly once, so that a
change of the notebook that an edit no longer fits stops the generator instead of passing over."""

from __future__ import annotations

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
