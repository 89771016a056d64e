"""A learner's own variant of notebook 05: a :class:`Transformer` (the MLP's activation, the
normalisation, the width and the number of heads, the order of independent answers), drawn from
a seed, and what follows from it in the kernel: its checks' names and its hint ladders.

A variant's ladders are the lecture's (``checks/hints/05-transformer-backprop.json``) with, for
each choice that is not the lecture's, the ladders it changes (``checks/hints/variants/``, both
written by ``backprop-workbook student`` from the edits that make the variant's notebook). The
notebook writes its shapes with letters (``(B, T, C)``), so the sizes change no ladder. Plain data
and string work: this module imports nothing heavy.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from checks.variants.common import Choices, in_order, rename, with_changes

STEM = "05-transformer-backprop"
NOTEBOOK = f"{STEM}.ipynb"
# the MLP's non-linearity: GELU in its tanh form (GPT-2's, the lecture's), the exact GELU (erf),
# ReLU, or SiLU (x sigmoid(x), LLaMA's)
ACTIVATIONS = ("gelu-tanh", "gelu", "relu", "silu")
# layer norm (the lecture's), or RMS norm: the same without the mean taken away
NORMS = ("layernorm", "rmsnorm")
# the cross-entropy (the lecture's), or with label smoothing of one of SMOOTHINGS
LOSSES = ("cross-entropy", "label-smoothing")
SMOOTHINGS = (0.05, 0.1, 0.2)
# (n_embd, n_head): no two of the axes T = 16, C, head_size, n_head, 3C, 4C and the vocabulary's
# 27 alike, so that a gradient with its axes mixed up has the wrong shape
WIDTHS = ((36, 4), (30, 3), (30, 5), (36, 3), (42, 3), (42, 6), (48, 4), (48, 6))
# the answer cells of exercise 1 whose answers are independent of each other, the lecture's order
GROUPS = (
    ("dlnf", "dW_head"),
    ("dlnf_w", "dlnf_b", "dlnf_hat"),
    ("dln2", "dW_fc", "db_fc"),
    ("datt_probs", "dv"),
    ("dq", "dk"),
)
AXES = {"activation": ACTIVATIONS, "norm": NORMS, "loss": LOSSES}
# the function of exercise 2 each activation's backward pass is, and the word its checks use
FUNCTIONS = {"gelu-tanh": "gelu", "gelu": "gelu", "relu": "relu", "silu": "silu"}
# the names of the final layer norm's steps that RMS norm renames (None: a step it has not)
RMS_NAMES = {
    "lnf_mean": None,
    "lnf_diff2": "lnf_sq",
    "lnf_diff": None,
    "lnf_var": "lnf_ms",
    "layernorm_backward": "rmsnorm_backward",
    "layernorm": "rmsnorm",
}


@dataclass(frozen=True)
class Transformer(Choices):
    """One variant of notebook 05; the defaults are the lecture's network, the notebook as it is."""

    STEM, AXES, GROUPS = STEM, AXES, GROUPS  # the notebook, and its axes and groups (Choices)

    activation: str = "gelu-tanh"
    norm: str = "layernorm"
    loss: str = "cross-entropy"
    smoothing: float = 0.0  # label smoothing's epsilon, 0 with the plain cross-entropy
    n_embd: int = 36
    n_head: int = 4
    order: tuple[tuple[str, ...], ...] = GROUPS

    def __post_init__(self) -> None:
        for name, allowed in AXES.items():
            value = getattr(self, name)
            if not isinstance(value, str) or value not in allowed:
                raise ValueError(f"{name} {value!r} is none of {', '.join(allowed)}")
        smoothings = SMOOTHINGS if self.loss == "label-smoothing" else (0.0,)
        if type(self.smoothing) is not float or self.smoothing not in smoothings:
            shown = ", ".join(map(str, smoothings))
            raise ValueError(
                f"smoothing {self.smoothing!r} is none of {shown} (with the loss {self.loss})"
            )
        width = (self.n_embd, self.n_head)
        if any(type(x) is not int for x in width) or width not in WIDTHS:
            shown = ", ".join(f"{c}/{h}" for c, h in WIDTHS)
            raise ValueError(f"n_embd/n_head {self.n_embd}/{self.n_head} is none of {shown}")
        self._check_order()

    @property
    def head_size(self) -> int:
        return self.n_embd // self.n_head

    @property
    def function(self) -> str:
        """The name of exercise 2's activation function (``gelu`` in ``gelu_backward``)."""
        return FUNCTIONS[self.activation]

    def words(self) -> str:
        """The variant in a few words."""
        activation = {
            "gelu-tanh": "GELU in its tanh form",
            "gelu": "the exact GELU",
            "relu": "ReLU",
            "silu": "SiLU",
        }[self.activation]
        norm = {"layernorm": "layer norm", "rmsnorm": "RMS norm"}[self.norm]
        loss = f"label smoothing {self.smoothing}" if self.smoothing else "the plain cross-entropy"
        return (
            f"{activation} in the MLP, {norm}, {loss}; {self.n_embd} numbers per position, "
            f"{self.n_head} heads of {self.head_size}"
        )


KIND = Transformer  # the class of this notebook's variants


def draw(seed: int) -> Transformer:
    """The variant of ``seed``: every choice drawn from one generator, and never one whose answers
    are all the lecture's (those are in the workbook's wheel)."""
    rng = random.Random(seed)
    while True:
        n_embd, n_head = rng.choice(WIDTHS)
        loss = rng.choice(LOSSES)
        variant = Transformer(
            activation=rng.choice(ACTIVATIONS),
            norm=rng.choice(NORMS),
            loss=loss,
            smoothing=rng.choice(SMOOTHINGS) if loss == "label-smoothing" else 0.0,
            n_embd=n_embd,
            n_head=n_head,
            order=tuple(tuple(rng.sample(group, len(group))) for group in GROUPS),
        )
        if variant.answers_differ:
            return variant


# --- the names a variant gives ----------------------------------------------------------------
def renamed(text: str, v: Transformer) -> str:
    """``text`` with the lecture's names made ``v``'s: RMS norm's steps and functions
    (``lnf_var`` is ``lnf_ms``), the activation's function (``gelu_backward`` is
    ``relu_backward``)."""
    names = dict(RMS_NAMES) if v.norm == "rmsnorm" else {}
    if v.function != "gelu":
        names.update(gelu_backward=f"{v.function}_backward", dx_gelu=f"dx_{v.function}")
    return rename(text, names)


def _check_renamed(name: str, v: Transformer) -> str | None:
    """A lecture's check name as ``v``'s notebook has it (None: ``v`` has no such check)."""
    first, _, rest = name.partition(" ")
    if v.norm == "rmsnorm" and first in RMS_NAMES:
        new = RMS_NAMES[first]
        return None if new is None else " ".join(filter(None, (new, rest)))
    if first == "gelu" and v.function != "gelu":
        return " ".join((v.function, rest))
    return name


def variant_checks(v: Transformer, lecture: list[str]) -> list[str]:
    """The names of ``v``'s checks in the order its notebook runs them, from the lecture's
    (``lecture``): each group's answers in ``v``'s order, the names its choices give."""
    names = in_order(lecture, GROUPS, v.order)
    kept = (_check_renamed(n, v) for n in names)
    return list(dict.fromkeys(n for n in kept if n is not None))


def ladders(v: Transformer, lecture: dict, changed: dict) -> dict:
    """``v``'s hint ladders, by answer name: the lecture's (``lecture``), those that ``v``'s
    choices change (``changed``, by axis and choice) in their place."""
    return with_changes(lecture, changed, v.chosen())
