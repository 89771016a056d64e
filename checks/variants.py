"""A learner's own variant of notebook 03: a :class:`Makemore` (the activation, batch norm's
variance, the loss, the sizes, the order of independent answers), drawn from a seed for a class
(``backprop-workbook variants``), and, in the kernel, :func:`variant`: the call in a variant's
notebook that makes ``hint()`` give that variant's ladders.

A variant's ladders are the lecture's (``checks/hints/03-makemore-backprop.json``) with, for each
choice that is not the lecture's, the ladders it changes (``checks/hints/variants/``, both written
by ``backprop-workbook student`` from the same edits that make the variant's notebook), and the
variant's sizes in their shapes. Plain data and string work: this module imports nothing heavy.
"""

from __future__ import annotations

import ast
import json
import random
import re
from dataclasses import asdict, dataclass, fields
from functools import cache

from checks.parsing import parse
from checks.paths import HINTS

STEM = "03-makemore-backprop"
NOTEBOOK = f"{STEM}.ipynb"
RECORD = "handout.json"  # a hand-out's record (checks.authoring.handout)
VARIANT_LADDERS = HINTS / "variants" / f"{STEM}.json"
ACTIVATIONS = ("tanh", "relu", "sigmoid", "gelu")
# batch norm with Bessel's correction 1/(n-1) in its variance (the lecture's), batch norm with the
# plain 1/n, layer norm (each example over its features; its names "ln" for the lecture's "bn"), or
# RMS norm (the same without the mean taken away: "rms", two cells fewer), or none at all
NORMS = ("batchnorm", "batchnorm-biased", "layernorm", "rmsnorm", "none")
LOSSES = ("cross-entropy", "label-smoothing")
SMOOTHINGS = (0.05, 0.1, 0.2)
EMBEDDINGS = (8, 10, 12, 16)
HIDDEN = (48, 64, 80, 96)
CONTEXTS = (3, 4)
# the answer cells of notebook 03 that hold three independent answers, in the lecture's order:
# any order of each is as right as any other
GROUPS = (("dh", "dW2", "db2"), ("dbngain", "dbnraw", "dbnbias"), ("dembcat", "dW1", "db1"))
AXES = {"activation": ACTIVATIONS, "norm": NORMS, "loss": LOSSES}
SIZES = {"n_embd": EMBEDDINGS, "n_hidden": HIDDEN, "block_size": CONTEXTS}


@dataclass(frozen=True)
class Makemore:
    """One variant of notebook 03; the defaults are the lecture's network, the notebook as it is."""

    activation: str = "tanh"
    norm: str = "batchnorm"
    loss: str = "cross-entropy"
    smoothing: float = 0.0  # label smoothing's epsilon, 0 with the plain cross-entropy
    n_embd: int = 10
    n_hidden: int = 64
    block_size: int = 3
    order: tuple[tuple[str, ...], ...] = GROUPS

    def __post_init__(self) -> None:
        smoothings = SMOOTHINGS if self.loss == "label-smoothing" else (0.0,)
        for name, allowed in {**AXES, **SIZES, "smoothing": smoothings}.items():
            value = getattr(self, name)
            if (
                not isinstance(value, type(allowed[0]))
                or isinstance(value, bool)
                or (value not in allowed)
            ):
                shown = ", ".join(map(str, allowed))
                raise ValueError(f"{name} {value!r} is none of {shown} (with the loss {self.loss})")
        try:
            ordered = sorted(map(sorted, self.order)) == sorted(map(sorted, GROUPS))
        except TypeError:
            ordered = False
        if not ordered:
            raise ValueError(f"order {self.order!r} is not an order of {GROUPS}")

    @property
    def answers_differ(self) -> bool:
        """Whether some answer differs from the lecture's (sizes and order change none)."""
        return any(getattr(self, axis) != values[0] for axis, values in AXES.items())

    def to_metadata(self) -> dict:
        """The variant as JSON data (a notebook's metadata)."""
        data = asdict(self)
        data["order"] = [list(group) for group in self.order]
        return data

    @classmethod
    def from_metadata(cls, data: dict) -> Makemore:
        """The variant written by :meth:`to_metadata`; unknown keys are an error."""
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"a variant has no {', '.join(unknown)}")
        values = dict(data)
        try:
            if "order" in values:
                values["order"] = tuple(tuple(group) for group in values["order"])
        except TypeError:
            raise ValueError(f"order {values['order']!r} is not an order of {GROUPS}") from None
        return cls(**values)

    def words(self) -> str:
        """The variant in a few words."""
        norm = {
            "batchnorm": "batch norm with Bessel's correction",
            "batchnorm-biased": "batch norm without Bessel's correction",
            "layernorm": "layer norm",
            "rmsnorm": "RMS norm",
            "none": "no normalisation",
        }[self.norm]
        loss = f"label smoothing {self.smoothing}" if self.smoothing else "the plain cross-entropy"
        return (
            f"{self.activation}, {norm}, {loss}; embeddings of "
            f"{self.n_embd}, {self.n_hidden} hidden neurons, a context of {self.block_size}"
        )


def draw(seed: int) -> Makemore:
    """The variant of ``seed``: every choice drawn from one generator, and never one whose answers
    are all the lecture's (those are on the internet)."""
    rng = random.Random(seed)
    while True:
        loss = rng.choice(LOSSES)
        variant = Makemore(
            activation=rng.choice(ACTIVATIONS),
            norm=rng.choice(NORMS),
            loss=loss,
            smoothing=rng.choice(SMOOTHINGS) if loss == "label-smoothing" else 0.0,
            n_embd=rng.choice(EMBEDDINGS),
            n_hidden=rng.choice(HIDDEN),
            block_size=rng.choice(CONTEXTS),
            order=tuple(tuple(rng.sample(group, len(group))) for group in GROUPS),
        )
        if variant.answers_differ:
            return variant


def check_record(record) -> dict:
    """A hand-out's record (``handout.json``, read), checked whole: ``ValueError`` says what is
    wrong with it."""
    try:
        if record.get("notebook") != NOTEBOOK:
            raise ValueError(f"it is no hand-out of {NOTEBOOK}")
        variants, learners = record["variants"], record["learners"]
        if type(record["class_seed"]) is not int or not isinstance(variants, list) or not variants:
            raise ValueError("its class seed or its variants are missing")
        for i, data in enumerate(variants):
            if type(data.get("seed")) is not int:
                raise ValueError(f"its variant {i} has no seed")
            Makemore.from_metadata(_choices(data))
        for who, entry in learners.items():
            at = entry.get("variant")
            if type(at) is not int or not 0 <= at < len(variants) or not entry.get("name"):
                raise ValueError(f"its learner {who!r} has no name or no variant of the record")
    except (AttributeError, KeyError, TypeError) as why:
        raise ValueError(f"it lacks what a record holds ({type(why).__name__}: {why})") from None
    return record


def named_in(source: str) -> Makemore | None:
    """The variant that a ``variant(...)`` call in ``source`` (a notebook's imports cell) names,
    if there is one and it can be read."""
    try:
        tree = parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "variant":
            try:
                return Makemore.from_metadata(
                    {k.arg: ast.literal_eval(k.value) for k in node.keywords}
                )
            except (ValueError, TypeError, SyntaxError):
                return None
    return None


def _choices(data: dict) -> dict:
    """A record's variant entry without what is not a choice: its seed, its solution's digest."""
    return {k: x for k, x in data.items() if k not in ("seed", "made")}


def variant_of(record: dict, learner: str) -> tuple[int, Makemore]:
    """A learner's variant in a hand-out's record: the seed it was drawn from, and the variant."""
    data = record["variants"][record["learners"][learner]["variant"]]
    return data["seed"], Makemore.from_metadata(_choices(data))


def made_of(record: dict, learner: str) -> str | None:
    """The digest of the solution a learner's variant had when it was handed out."""
    return record["variants"][record["learners"][learner]["variant"]].get("made")


# --- the sizes in a text ----------------------------------------------------------------------
_SHAPE = re.compile(r"\((\d+(?:, \d+)*)(,?)\)")
_WORDS = {3: "three", 4: "four"}


def resized(text: str, v: Makemore) -> str:
    """``text`` with the lecture's sizes in its shapes (n_embd 10, n_hidden 64, block_size 3, so
    30 for the concatenated embeddings) and sentences made ``v``'s."""

    def shape(m: re.Match) -> str:
        dims = [int(d) for d in m.group(1).split(", ")]
        sizes = {64: v.n_hidden, 30: v.n_embd * v.block_size, 10: v.n_embd}
        if len(dims) == 3:
            sizes[3] = v.block_size
        return "(" + ", ".join(str(sizes.get(d, d)) for d in dims) + m.group(2) + ")"

    text = _SHAPE.sub(shape, text)
    three = _WORDS[v.block_size]
    for old, new in (
        ("n_embd = 10 ", f"n_embd = {v.n_embd:<2} "),
        ("n_hidden = 64 ", f"n_hidden = {v.n_hidden:<2} "),
        ("block_size=3)", f"block_size={v.block_size})"),
        ("block_size = 3\n", f"block_size = {v.block_size}\n"),
        ("the three previous characters", f"the {three} previous characters"),
        ("the three context characters'", f"the {three} context characters'"),
        ("all 64 pre-activations", f"all {v.n_hidden} pre-activations"),
        ("the shapes that had 64 in", f"the shapes that had {v.n_hidden} in"),
    ):
        text = text.replace(old, new)
    return text


def same_sizes(v: Makemore) -> bool:
    """Whether ``v`` has the lecture's sizes."""
    d = Makemore()
    return (v.n_embd, v.n_hidden, v.block_size) == (d.n_embd, d.n_hidden, d.block_size)


# --- the names of a normalisation that is not batch norm ----------------------------------
# the lecture's batch-norm names, and what a normalisation that is not batch norm calls them
BN_NAMES = (
    "bnmeani",
    "bndiff2",
    "bndiff",
    "bnvar_inv",
    "bnvar",
    "bnraw",
    "bngain",
    "bnbias",
    "hprebn",
)
NAMES = {
    "layernorm": {n: n.replace("bn", "ln") for n in BN_NAMES},
    # no mean taken away: hprerms itself stands where bndiff did, and bnmeani is gone
    "rmsnorm": {
        **{n: n.replace("bn", "rms") for n in BN_NAMES},
        "bndiff2": "rmsq",
        "bndiff": "hprerms",
        "hprebn": "hprerms",
        "bnmeani": None,
    },
}
NAMES["none"] = {**dict.fromkeys(BN_NAMES), "hprebn": "hpreact"}  # hpreact: the first layer's
# checks a normalisation takes away although their names live on (exercise 3's, without a norm)
GONE_CHECKS = {"none": {"hprebn (fused)"}}
_BN_NAME = re.compile(rf"\b(d?)({'|'.join(BN_NAMES)})\b")


def renamed(text: str | None, norm: str) -> str | None:
    """``text`` with batch norm's names (``bnraw``, ``dhprebn``) made those of ``norm``'s
    (``lnraw``, ``dhpreln``); unchanged for batch norm."""
    names = NAMES.get(norm)
    if text is None or names is None:
        return text
    return _BN_NAME.sub(lambda m: m[1] + (names[m[2]] or m[2]), text)


def checks_renamed(checks: list[str], norm: str) -> list[str]:
    """The lecture's check names (in order) as ``norm``'s notebook has them: renamed, those it
    takes away left out, each once."""
    names = NAMES.get(norm, {})
    gone = {n for n, new in names.items() if new is None}
    kept = [c for c in checks if c.split(" ")[0] not in gone and c not in GONE_CHECKS.get(norm, ())]
    return list(dict.fromkeys(renamed(c, norm) for c in kept))


def variant_checks(v: Makemore, lecture: list[str]) -> list[str]:
    """The names of ``v``'s checks in the order its notebook runs them, from the lecture's
    (``lecture``): each group's answers in ``v``'s order, the names its normalisation gives."""
    names = list(lecture)
    for lecture_order, wanted in zip(GROUPS, v.order, strict=True):
        if tuple(wanted) == lecture_order or not all(n[1:] in names for n in lecture_order):
            continue  # the lecture's order (its cell unchanged), or no lecture's list at hand
        spots = sorted(names.index(n[1:]) for n in lecture_order)
        for spot, name in zip(spots, wanted, strict=True):
            names[spot] = name[1:]
    return checks_renamed(names, v.norm)


# --- the ladders, in the kernel ---------------------------------------------------------------
@cache
def _files() -> tuple[dict, dict]:
    """The lecture's ladders of notebook 03 and, by choice, the ladders each choice changes."""
    return (
        json.loads((HINTS / f"{STEM}.json").read_text()),
        json.loads(VARIANT_LADDERS.read_text()),
    )


def ladders(v: Makemore, lecture: dict | None = None, changed: dict | None = None) -> dict:
    """``v``'s hint ladders, by answer name: the lecture's (``lecture``), those that ``v``'s
    choices change (``changed``, by axis and choice) in their place, in ``v``'s sizes."""
    if lecture is None or changed is None:
        lecture, changed = _files()
    out = dict(lecture)
    for axis, values in AXES.items():
        choice = getattr(v, axis)
        if choice != values[0]:  # a name its choice takes away (layer norm's renames) is null
            for name, options in changed[axis][choice].items():
                out[name] = options
                if options is None:
                    del out[name]
    return out if same_sizes(v) else _resized_all(out, v)


def _resized_all(data, v: Makemore):
    """Every text in ``data`` (ladders: dicts, lists and strings) in ``v``'s sizes."""
    if isinstance(data, str):
        return resized(data, v)
    if isinstance(data, list):
        return [_resized_all(x, v) for x in data]
    return {k: _resized_all(x, v) for k, x in data.items()}


def variant(**choices) -> Makemore:
    """Say that this kernel works on a variant of notebook 03 (a variant's notebook calls it in
    its imports cell): ``hint()`` gives that variant's ladders from now on, and ``summary()``
    lists its checks."""
    from checks import hints, session

    v = Makemore.from_metadata(choices)
    session.own_checks(STEM, None)
    session.own_checks(STEM, variant_checks(v, session.expected_checks(STEM)))
    try:
        hints.offer_own(STEM, ladders(v))
    except OSError:  # no ladders here (a grading run's sandbox hides them): no hints to give
        pass
    print(f"your variant of notebook 03: {v.words()}")
    return v
