"""A learner's own variant of a notebook, graded against its own solution: notebook 03's
(:mod:`.makemore`) and notebook 05's (:mod:`.transformer`), each drawn from a seed for a class
(``backprop-workbook variants``), and what a hand-out's record says of who got which.

In the kernel, :func:`variant` is the call in a variant's imports cell: it says which network this
notebook is, so that ``hint()`` gives its ladders and ``summary()`` lists its checks. Plain data and
string work: nothing here imports anything heavy.
"""

from __future__ import annotations

import ast
import json
from functools import cache
from pathlib import PurePath
from types import ModuleType

from checks.parsing import parse
from checks.paths import HINTS
from checks.variants import makemore, transformer
from checks.variants.makemore import (  # notebook 03's, by the names they have always had
    ACTIVATIONS,
    AXES,
    BN_NAMES,
    GONE_CHECKS,
    GROUPS,
    LOSSES,
    NAMES,
    NORMS,
    NOTEBOOK,
    SIZES,
    SMOOTHINGS,
    STEM,
    Makemore,
    checks_renamed,
    draw,
    renamed,
    resized,
    same_sizes,
    variant_checks,
)
from checks.variants.transformer import Transformer

__all__ = [
    "ACTIVATIONS",
    "AXES",
    "BN_NAMES",
    "GONE_CHECKS",
    "GROUPS",
    "LOSSES",
    "NAMES",
    "NORMS",
    "NOTEBOOK",
    "RECORD",
    "SIZES",
    "SMOOTHINGS",
    "STEM",
    "KINDS",
    "Makemore",
    "Transformer",
    "Variant",
    "check_record",
    "checks_renamed",
    "draw",
    "kind_of",
    "ladders",
    "made_of",
    "named_in",
    "renamed",
    "resized",
    "same_sizes",
    "variant",
    "variant_checks",
    "variant_of",
]

RECORD = "handout.json"  # a hand-out's record (checks.authoring.handout)
Variant = Makemore | Transformer
# the notebooks that have variants, by stem, and the module that knows each one's
KINDS: dict[str, ModuleType] = {makemore.STEM: makemore, transformer.STEM: transformer}


def kind_of(notebook: str) -> ModuleType:
    """The module of ``notebook``'s variants: its number (``05``), its stem, or its file name
    (a path to it too)."""
    name = PurePath(notebook).name.removesuffix(".ipynb")
    for stem, kind in KINDS.items():
        if name in (stem, stem[:2]):
            return kind
    raise ValueError(
        f"{notebook} has no variants: only notebooks {' and '.join(s[:2] for s in KINDS)} have"
    )


# --- a hand-out's record ----------------------------------------------------------------------
def check_record(record) -> dict:
    """A hand-out's record (``handout.json``, read), checked whole: ``ValueError`` says what is
    wrong with it."""
    try:
        notebook = record.get("notebook")
        try:
            kind = kind_of(notebook if isinstance(notebook, str) else "")
        except ValueError:
            raise ValueError(f"it is no hand-out of {' or '.join(KINDS)}") from None
        record["notebook"] = kind.NOTEBOOK  # one spelling: the file name
        variants, learners = record["variants"], record["learners"]
        if type(record["class_seed"]) is not int or not isinstance(variants, list) or not variants:
            raise ValueError("its class seed or its variants are missing")
        for i, data in enumerate(variants):
            if type(data.get("seed")) is not int:
                raise ValueError(f"its variant {i} has no seed")
            try:
                kind_choices(kind, data)
            except ValueError as why:
                raise ValueError(
                    f"its variant {i} is no variant of {kind.NOTEBOOK} ({why})"
                ) from None
        for who, entry in learners.items():
            at = entry.get("variant")
            if type(at) is not int or not 0 <= at < len(variants) or not entry.get("name"):
                raise ValueError(f"its learner {who!r} has no name or no variant of the record")
    except (AttributeError, KeyError, TypeError) as why:
        raise ValueError(f"it lacks what a record holds ({type(why).__name__}: {why})") from None
    return record


def kind_choices(kind: ModuleType, data: dict) -> Variant:
    """The variant of a record's entry or a notebook's metadata (its seed and its solution's
    digest aside) of ``kind``'s notebook."""
    choices = {k: x for k, x in data.items() if k not in ("seed", "made")}
    return kind.KIND.from_metadata(choices)


def variant_of(record: dict, learner: str) -> tuple[int, Variant]:
    """A learner's variant in a hand-out's record: the seed it was drawn from, and the variant."""
    data = record["variants"][record["learners"][learner]["variant"]]
    return data["seed"], kind_choices(kind_of(record["notebook"]), data)


def made_of(record: dict, learner: str) -> str | None:
    """The digest of the solution a learner's variant had when it was handed out."""
    return record["variants"][record["learners"][learner]["variant"]].get("made")


def named_in(source: str, notebook: str = makemore.STEM) -> Variant | None:
    """The variant of ``notebook`` that a ``variant(...)`` call in ``source`` (a notebook's
    imports cell) names, if there is one and it can be read."""
    try:
        tree = parse(source)
    except (SyntaxError, ValueError):
        return None
    try:
        wanted = kind_of(notebook)
    except ValueError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "variant":
            try:  # a call of another notebook, or one that cannot be read: the next call
                kind = kind_of(ast.literal_eval(node.args[0]) if node.args else makemore.STEM)
                if kind is wanted:
                    return kind_choices(
                        kind, {k.arg: ast.literal_eval(k.value) for k in node.keywords}
                    )
            except (ValueError, TypeError, SyntaxError):
                continue
    return None


# --- in the kernel ----------------------------------------------------------------------------
@cache
def _files(stem: str) -> tuple[dict, dict]:
    """The lecture's ladders of ``stem`` and, by choice, the ladders each choice changes."""
    return (
        json.loads((HINTS / f"{stem}.json").read_text()),
        json.loads((HINTS / "variants" / f"{stem}.json").read_text()),
    )


def ladders(v: Variant) -> dict:
    """``v``'s hint ladders, by answer name, from the ladders the workbook ships."""
    kind = kind_of(v.STEM)
    return kind.ladders(v, *_files(kind.STEM))


def variant(notebook: str = makemore.STEM, /, **choices) -> Variant:
    """Say that this kernel works on a variant of ``notebook`` (notebook 03 unless named; a
    variant's notebook calls it in its imports cell): ``hint()`` gives that variant's ladders from
    now on, ``summary()`` lists its checks, and ``race()`` compares no step with the lecture
    solution's where the variant's maths are not the lecture's."""
    from checks import hints, session

    kind = kind_of(notebook)
    v = kind_choices(kind, choices)
    session.own_checks(kind.STEM, None)
    session.own_checks(kind.STEM, kind.variant_checks(v, session.expected_checks(kind.STEM)))
    session.other_maths(kind.STEM, v.answers_differ)
    try:
        hints.offer_own(kind.STEM, ladders(v))
    except OSError:  # no ladders here (a grading run's sandbox hides them): no hints to give
        pass
    print(f"your variant of notebook {kind.STEM[:2]}: {v.words()}")
    return v
