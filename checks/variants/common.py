"""What the variants of every notebook share: their choices as a notebook's metadata, the order
of a notebook's independent answers, and their hint ladders from the lecture's (each choice that
is not the lecture's brings the ladders it changes, ``checks/hints/variants/``, written by
``backprop-workbook student``)."""

from __future__ import annotations

import re
from dataclasses import asdict, fields
from functools import cache
from typing import Any, ClassVar

Groups = tuple[tuple[str, ...], ...]


class Choices:
    """A mixin for a frozen dataclass of a variant's choices of notebook ``STEM``: its ``AXES``
    (the choices that change answers, the lecture's first) and its ``order``, which permutes the
    answers within each of ``GROUPS`` (the lecture's order); as JSON data and back."""

    STEM: ClassVar[str]
    AXES: ClassVar[dict[str, tuple[str, ...]]]
    GROUPS: ClassVar[Groups]
    order: Groups

    def chosen(self) -> dict[str, str]:
        """The choices of ``AXES`` that are not the lecture's, by axis."""
        picked = {axis: getattr(self, axis) for axis in self.AXES}
        return {axis: c for axis, c in picked.items() if c != self.AXES[axis][0]}

    @property
    def answers_differ(self) -> bool:
        """Whether some answer differs from the lecture's (sizes and order change none)."""
        return bool(self.chosen())

    def _check_order(self) -> None:
        """``ValueError`` unless ``order`` is an order of ``GROUPS``."""
        try:
            ordered = sorted(map(sorted, self.order)) == sorted(map(sorted, self.GROUPS))
        except TypeError:
            ordered = False
        if not ordered:
            raise ValueError(f"order {self.order!r} is not an order of {self.GROUPS}")

    def to_metadata(self) -> dict:
        """The variant as JSON data (a notebook's metadata)."""
        data = asdict(self)  # type: ignore[call-overload]
        data["order"] = [list(group) for group in self.order]
        return data

    @classmethod
    def from_metadata(cls, data: dict) -> Any:
        """The variant written by :meth:`to_metadata`; unknown keys are an error."""
        unknown = sorted(set(data) - {f.name for f in fields(cls)})  # type: ignore[arg-type]
        if unknown:
            raise ValueError(f"a variant of {cls.__name__} has no {', '.join(unknown)}")
        values = dict(data)
        try:
            if "order" in values:
                values["order"] = tuple(tuple(group) for group in values["order"])
        except TypeError:
            raise ValueError(f"order {values['order']!r} is not an order of {cls.GROUPS}") from None
        return cls(**values)


def in_order(lecture: list[str], groups: Groups, order: Groups) -> list[str]:
    """The lecture's check names (in the order its notebook runs them) with each group's answers
    in ``order``: their checks trade places."""
    names = list(lecture)
    for lecture_order, wanted in zip(groups, order, strict=True):
        if tuple(wanted) == lecture_order or not all(n[1:] in names for n in lecture_order):
            continue  # the lecture's order (its cell unchanged), or no lecture's list at hand
        spots = sorted(names.index(n[1:]) for n in lecture_order)
        for spot, name in zip(spots, wanted, strict=True):
            names[spot] = name[1:]
    return names


def with_changes(lecture: dict, changed: dict, chosen: dict[str, str]) -> dict:
    """``lecture``'s ladders (by answer name) with the changes of each axis's ``chosen`` choice
    (by axis, only those not the lecture's): a list in place of a name's ladders, where a null
    keeps the ladder at that place (one name may answer in two cells, each choice changing one);
    a null list where the choice takes the name away."""
    out = dict(lecture)
    for axis, choice in chosen.items():
        for name, options in changed[axis][choice].items():
            if options is None:
                out.pop(name, None)
            else:
                out[name] = [out[name][i] if o is None else o for i, o in enumerate(options)]
    return out


def changes(lecture: dict, mine: dict) -> dict:
    """What turns ``lecture``'s ladders into ``mine`` (a variant's with one choice made), in the
    form :func:`with_changes` reads."""
    out: dict = {name: None for name in lecture if name not in mine}
    for name, options in mine.items():
        before = lecture.get(name)
        if before == options:
            continue
        if before is not None and len(before) == len(options):
            out[name] = [None if a == b else a for a, b in zip(options, before, strict=True)]
        else:
            out[name] = options
    return out


def rename(text: str, names: dict[str, str | None]) -> str:
    """``text`` with each name of ``names``, and its gradient (``d`` before it), made the new
    name; one mapped to None (a tensor the variant has not) is left as it is."""
    if not names:
        return text
    return _pattern(tuple(names)).sub(lambda m: m[1] + (names[m[2]] or m[2]), text)


@cache
def _pattern(names: tuple[str, ...]) -> re.Pattern:
    """Any of ``names`` as a whole word, ``d`` before it or not; the longest first."""
    return re.compile(rf"\b(d?)({'|'.join(sorted(names, key=len, reverse=True))})\b")
