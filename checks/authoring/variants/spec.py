"""What tells one learner's notebook 03 from another's: a :class:`Makemore` variant, drawn from a
seed. Plain data: a variant is written into a notebook's metadata and read back from it."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, fields

ACTIVATIONS = ("tanh", "relu", "sigmoid", "gelu")
# batch norm's variance: with Bessel's correction 1/(n-1) (the lecture's), or the plain 1/n
NORMS = ("batchnorm", "batchnorm-biased")
LOSSES = ("cross-entropy", "label-smoothing")
SMOOTHINGS = (0.05, 0.1, 0.2)
EMBEDDINGS = (8, 10, 12, 16)
HIDDEN = (48, 64, 80, 96)
CONTEXTS = (3, 4)
# the answer cells of notebook 03 that hold three independent answers, in the lecture's order:
# any order of each is as right as any other
GROUPS = (("dh", "dW2", "db2"), ("dbngain", "dbnraw", "dbnbias"), ("dembcat", "dW1", "db1"))


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
        for name, value, allowed in (
            ("activation", self.activation, ACTIVATIONS),
            ("norm", self.norm, NORMS),
            ("loss", self.loss, LOSSES),
        ):
            if value not in allowed:
                raise ValueError(f"{name} {value!r} is none of {', '.join(allowed)}")
        if (self.loss == "label-smoothing") != (0 < self.smoothing < 1):
            raise ValueError(f"smoothing {self.smoothing} does not go with the loss {self.loss}")
        if sorted(map(sorted, self.order)) != sorted(map(sorted, GROUPS)):
            raise ValueError(f"order {self.order} is not an order of {GROUPS}")

    @property
    def answers_differ(self) -> bool:
        """Whether some answer differs from the lecture's (sizes and order change none)."""
        return (self.activation, self.norm, self.loss) != (
            ACTIVATIONS[0],
            NORMS[0],
            LOSSES[0],
        )

    def to_metadata(self) -> dict:
        """The variant as JSON data (a notebook's metadata)."""
        data = asdict(self)
        data["order"] = [list(group) for group in self.order]
        return data

    @classmethod
    def from_metadata(cls, data: dict) -> Makemore:
        """The variant written by :meth:`to_metadata`; unknown keys are an error."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"a variant has no {', '.join(unknown)}")
        values = dict(data)
        if "order" in values:
            values["order"] = tuple(tuple(group) for group in values["order"])
        return cls(**values)


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
