"""Stage 1 for a class of variants: which variant of notebook 03 a submission is graded against,
and that variant's solution as an exercise of its own (its reference run cached by its text).

The hand-out's record (``backprop-workbook variants``, ``grade --handout DIR``) says which
variant each learner was given; the submission's folder name is the learner's id. The seed a
notebook carries in its metadata is only checked against the record, never trusted over it: a
notebook swapped for another learner's is graded against its submitter's own variant, and said so
in its rows. Without a record a notebook is graded as the variant it names (the self-check), and
one that names none as the lecture's notebook.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import nbformat

from checks.grading.exercise import Exercise, load_exercise
from checks.paths import METADATA
from checks.variants import NOTEBOOK, RECORD, Makemore, variant_of


class HandoutUnreadable(ValueError):
    """``--handout`` names no hand-out's record."""


def read_handout(path: Path) -> dict:
    """The record of the hand-out at ``path`` (its folder, or its ``handout.json``)."""
    file = path / RECORD if path.is_dir() else path
    try:
        record = json.loads(file.read_text())
        learners, variants = record["learners"], record["variants"]
        bad = [w for w, e in learners.items() if not 0 <= e["variant"] < len(variants)]
    except (OSError, ValueError, KeyError, TypeError) as why:
        raise HandoutUnreadable(f"{file} is no hand-out's record ({why})") from None
    if record.get("notebook") != NOTEBOOK or bad:
        raise HandoutUnreadable(f"{file} is no hand-out of {NOTEBOOK}")
    return record


@dataclass(frozen=True)
class Assigned:
    """The variant a submission is graded against (None: the lecture's) and what its rows say."""

    variant: Makemore | None
    seed: int | None
    note: str = ""


def assigned(record: dict | None, submission: str, path: Path) -> Assigned:
    """The variant ``submission``'s notebook ``path`` is graded against, by the hand-out's
    ``record`` where it lists the submission, else by what the notebook names."""
    named, seed, learner, unreadable = _named(path)
    if record is None or submission not in record["learners"]:
        if named is None:
            why = unreadable or ("" if record is None else "it names none")
            note = f"graded as the lecture's notebook 03: {why}" if why else ""
            return Assigned(None, None, _not_listed(record, submission, note))
        note = f"graded as the variant the notebook names (seed {seed})"
        return Assigned(named, seed, _not_listed(record, submission, note, checked=False))
    own_seed, own = variant_of(record, submission)
    if named is None:
        why = unreadable or "the notebook names no variant"
        return Assigned(own, own_seed, f"{why}: graded against {submission}'s, from the hand-out")
    if (named, seed) != (own, own_seed) or learner not in (None, submission):
        other = learner if learner not in (None, submission) else _holder(record, seed)
        whose = f"{other}'s" if other else f"the variant of seed {seed}"
        return Assigned(
            own,
            own_seed,
            f"the notebook is {whose}, not {submission}'s (seed {own_seed}): graded against "
            f"{submission}'s own variant",
        )
    return Assigned(own, own_seed)


def _named(path: Path) -> tuple[Makemore | None, int | None, str | None, str]:
    """The variant the notebook's metadata names, its seed, the learner it was handed out to,
    and why it cannot be read (empty when it can, or when there is none)."""
    try:
        meta = nbformat.read(path, as_version=4).metadata.get(METADATA, {})
        data = dict(meta.get("variant") or {})
        learner = meta.get("learner")
    except Exception:  # an unreadable notebook: its rows say so already
        return None, None, None, ""
    if not data:
        return None, None, learner, ""
    seed = data.pop("seed", None)
    try:
        return Makemore.from_metadata(data), seed, learner, ""
    except (ValueError, TypeError) as why:
        return None, None, learner, f"its variant cannot be read ({why})"


def _not_listed(record: dict | None, submission: str, note: str, checked: bool = True) -> str:
    """``note``, with why it was not checked when a hand-out is given and lacks ``submission``."""
    if record is None:
        return note
    said = f"{submission} is not in the hand-out"
    return f"{said}; {note}" + ("" if checked else ", unchecked") if note else said


def _holder(record: dict, seed: int | None) -> str | None:
    """The first learner handed the variant of ``seed``, if any."""
    for who in record["learners"]:
        if variant_of(record, who)[0] == seed:
            return who
    return None


def variant_exercise(variant: Makemore, solutions: Path, folder: Path) -> Exercise:
    """``variant``'s solution, written into ``folder`` (named by its text) and loaded."""
    from checks.authoring.variants import build  # the variants' answers: not in a class wheel

    text = nbformat.writes(build.solution(variant, solutions=solutions))
    path = folder / hashlib.sha256(text.encode()).hexdigest()[:16] / NOTEBOOK
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{NOTEBOOK}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return load_exercise(path)
