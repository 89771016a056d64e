"""A learner's own variant of notebook 03: a :class:`Makemore` (the activation, batch norm's
variance, the loss, the sizes, the order of independent answers), drawn from a seed for a class
(``backprop-workbook variants``), and what follows from it in the kernel: its checks' names and
its hint ladders (:func:`checks.variants.variant`).

A variant's ladders are the lecture's (``checks/hints/03-makemore-backprop.json``) with, for each
choice that is not the lecture's, the ladders it changes (``checks/hints/variants/``, both written
by ``backprop-workbook student`` from the same edits that make the variant's notebook), and the
variant's sizes in their shapes. Plain data and string work: this module imports nothing heavy.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from checks.variants.common import Choices, in_order, rename, with_changes

STEM = "03-makemore-backprop"
NOTEBOOK = f"{STEM}.ipynb"
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
class Makemore(Choices):
    """One variant of notebook 03; the defaults are the lecture's network, the notebook as it is."""

    STEM, AXES, GROUPS = STEM, AXES, GROUPS  # the notebook, and its axes and groups (Choices)

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
        self._check_order()

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


KIND = Makemore  # the class of this notebook's variants


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


def renamed(text: str | None, norm: str) -> str | None:
    """``text`` with batch norm's names (``bnraw``, ``dhprebn``) made those of ``norm``'s
    (``lnraw``, ``dhpreln``); unchanged for batch norm."""
    names = NAMES.get(norm)
    if text is None or names is None:
        return text
    return rename(text, names)


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
    names = in_order(lecture, GROUPS, v.order)
    return checks_renamed(names, v.norm)


# --- the ladders ------------------------------------------------------------------------------
def ladders(v: Makemore, lecture: dict, changed: dict) -> dict:
    """``v``'s hint ladders, by answer name: the lecture's (``lecture``), those that ``v``'s
    choices change (``changed``, by axis and choice) in their place, in ``v``'s sizes."""
    out = with_changes(lecture, changed, v.chosen())
    return out if same_sizes(v) else _resized_all(out, v)


def _resized_all(data, v: Makemore):
    """Every text in ``data`` (ladders: dicts, lists and strings) in ``v``'s sizes."""
    if isinstance(data, str):
        return resized(data, v)
    if isinstance(data, list):
        return [_resized_all(x, v) for x in data]
    return {k: _resized_all(x, v) for k, x in data.items()}
