"""Stage 1 for a class of variants: which variant of a notebook (03's, 05's) a submission is graded
against, and that variant's solution as an exercise of its own (its reference run cached by its
text).

A hand-out's record (``backprop-workbook variants``, ``grade --handout DIR``, one per notebook)
says which variant each learner was given; the submission's folder name is the learner's id. The
seed a notebook carries in its metadata is only checked against the record, never trusted over
it: a notebook swapped for another learner's is graded against its submitter's own variant, and
said so in its rows. Without a record a notebook is graded as the variant it names (the
self-check), and one that names none as the lecture's notebook.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import nbformat

from checks.grading.exercise import Exercise, load_exercise
from checks.paths import METADATA
from checks.variants import (
    KINDS,
    NOTEBOOK,
    RECORD,
    Variant,
    check_record,
    kind_choices,
    kind_of,
    named_in,
    variant_of,
)

# said in the rows of a learner whose variant's solution is not the one handed out
CHANGED = (
    "this variant's notebook has changed since the hand-out (another version of the workbook): "
    "graded against today's"
)


class HandoutUnreadable(ValueError):
    """``--handout`` names no hand-out's record."""


def read_handout(path: Path) -> dict:
    """The record of the hand-out at ``path`` (its folder, or its ``handout.json``), checked."""
    file = path / RECORD if path.is_dir() else path
    try:
        return check_record(json.loads(file.read_text()))
    except (OSError, ValueError) as why:
        raise HandoutUnreadable(f"{file} is no hand-out's record: {why}") from None


def read_handouts(paths: list[Path]) -> dict[str, dict]:
    """The records of the hand-outs at ``paths``, by the notebook each is of (its file name): at
    most one per notebook."""
    records: dict[str, dict] = {}
    for path in paths:
        record = read_handout(path)
        if record["notebook"] in records:
            raise HandoutUnreadable(f"two hand-outs of {record['notebook']}: give one of each")
        records[record["notebook"]] = record
    return records


@dataclass(frozen=True)
class Assigned:
    """The variant a submission is graded against (None: the lecture's) and what its rows say."""

    variant: Variant | None
    seed: int | None
    note: str = ""
    learner: str | None = None  # the learner of the hand-out whose variant it is


@dataclass(frozen=True)
class Named:
    """What a notebook says of its variant: in its metadata (with its seed and the learner it was
    handed to), else in its imports cell's ``variant(...)`` call; why it cannot be read."""

    variant: Variant | None = None
    seed: int | None = None
    learner: str | None = None
    why: str = ""

    @property
    def said(self) -> str:
        """The variant, as its rows name it."""
        return f"seed {self.seed}" if self.seed is not None else "its imports cell's variant(...)"


def assigned(
    record: dict | None, submission: str, path: Path, notebook: str = NOTEBOOK
) -> Assigned:
    """The variant ``submission``'s copy ``path`` of ``notebook`` (a file name) is graded
    against: by the hand-out's ``record`` where it lists the submission (or the learner the
    notebook was handed to), else by what the notebook names."""
    named = _named(path, notebook)
    listed = record is not None and submission in record["learners"]
    if record is not None and not listed and named.learner in record["learners"]:
        seed, theirs = variant_of(record, named.learner)
        note = (
            f"{submission} is not in the hand-out of {notebook[:2]}; graded against "
            f"{named.learner}'s variant, the learner its notebook was handed to"
        )
        return Assigned(theirs, seed, note, named.learner)
    if not listed:
        if named.variant is None:
            why = named.why or ("" if record is None else "it names none")
            note = f"graded as the lecture's notebook {notebook[:2]}: {why}" if why else ""
            return Assigned(None, None, _not_listed(record, submission, note))
        note = f"graded as the variant the notebook names ({named.said})"
        return Assigned(named.variant, named.seed, _not_listed(record, submission, note, False))
    return _against_own(record, submission, named)


def _against_own(record: dict, submission: str, named: Named) -> Assigned:
    """A listed submission, graded against its own variant, and what its notebook says if that
    is not its own."""
    seed, own = variant_of(record, submission)
    if named.variant is None:
        why = named.why or "the notebook names no variant"
        return Assigned(
            own, seed, f"{why}: graded against {submission}'s, from the hand-out", submission
        )
    mine, other_seed = named.variant, named.seed
    if named.seed is None:  # an imports cell's call, which names no seed and no order
        mine, other_seed = dataclasses.replace(mine, order=own.order), seed
    if (mine, other_seed) != (own, seed) or named.learner not in (None, submission):
        other = (
            named.learner
            if named.learner not in (None, submission)
            else _holder(record, named.seed)
        )
        whose = f"{other}'s" if other else f"the variant of {named.said}"
        note = (
            f"the notebook is {whose}, not {submission}'s (seed {seed}): graded against "
            f"{submission}'s own variant"
        )
        return Assigned(own, seed, note, submission)
    return Assigned(own, seed, learner=submission)


def _named(path: Path, notebook: str) -> Named:
    """What the copy of ``notebook`` at ``path`` says of its variant (nothing when it cannot be
    read: its rows say so already)."""
    try:
        nb = nbformat.read(path, as_version=4)
        meta = nb.metadata.get(METADATA, {})
        data, learner = meta.get("variant"), meta.get("learner")
    except Exception:
        return Named()
    learner = learner if isinstance(learner, str) else None
    calls = (named_in(c.source, notebook) for c in nb.cells if c.cell_type == "code")
    called = next((v for v in calls if v is not None), None)  # the imports cell's variant(...)
    if not data:  # no metadata (cells pasted into a new notebook): the imports cell's call
        return Named(called, None, learner)
    try:
        seed = data.get("seed")
        variant = kind_choices(kind_of(notebook), data)
        return Named(variant, seed if type(seed) is int else None, learner)
    except (ValueError, TypeError, AttributeError) as why:
        if called is not None:  # metadata of another notebook's, say: the imports cell's call
            return Named(called, None, learner)
        return Named(None, None, learner, _unreadable(data, notebook, why))


def _unreadable(data, notebook: str, why: Exception) -> str:
    """Why a notebook's variant metadata names no variant of ``notebook``."""
    for stem in KINDS:
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            if stem[:2] != notebook[:2] and kind_choices(kind_of(stem), data) is not None:
                return f"its metadata names a variant of notebook {stem[:2]}, not {notebook[:2]}"
    return f"its variant cannot be read ({why})"


def _not_listed(record: dict | None, submission: str, note: str, checked: bool = True) -> str:
    """``note``, with why it was not checked when a hand-out is given and lacks ``submission``."""
    if record is None:
        return note
    said = f"{submission} is not in the hand-out of {record['notebook'][:2]}"
    return f"{said}; {note}" + ("" if checked else ", unchecked") if note else said


def _holder(record: dict, seed: int | None) -> str | None:
    """The first learner handed the variant of ``seed``, if any."""
    for who in record["learners"]:
        if variant_of(record, who)[0] == seed:
            return who
    return None


def has_variants(notebook: str) -> bool:
    """Whether ``notebook`` (a file name) has variants."""
    return notebook.removesuffix(".ipynb") in KINDS


def no_handout(notebook: str) -> str:
    """What the rows of ``notebook`` say when hand-outs are given but none of it."""
    return f"no hand-out of {notebook[:2]} was given, so unchecked"


def variant_exercise(variant: Variant, solutions: Path, folder: Path) -> Exercise:
    """``variant``'s solution, written into ``folder`` (named by its text) and loaded."""
    from checks.authoring.variants import build  # the variants' answers: not in a class wheel

    text = build.written(variant, solutions)
    name = f"{variant.STEM}.ipynb"
    path = folder / build.digest(text) / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{name}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return load_exercise(path)
