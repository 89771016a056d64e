"""A notebook's inputs: its own by default, others where the grader (or you) set them.

>>> a, b = drawn(3.0, -2.0)   # (3.0, -2.0) unless WORKBOOK_SEED is set
>>> x = drawn(0.5)            # one number in, one number out
>>> seed = setting("seed", 2147483647)   # WORKBOOK_SEED where set, else the notebook's own
"""

from __future__ import annotations

import os
import random
from typing import overload

__all__ = ["drawn", "setting"]

# a notebook's settings: the environment variable that overrides each (the grader sets the first
# three in every kernel it starts; WORKBOOK_TEXT is notebook 04's own text file)
SETTINGS = {
    "seed": "WORKBOOK_SEED",
    "batch": "WORKBOOK_BATCH",
    "steps": "WORKBOOK_STEPS",
    "text": "WORKBOOK_TEXT",
}

LOW, HIGH = 0.6, 1.4  # the factor's range: a number keeps its sign and stays within 40% of itself


@overload
def drawn(default: float, /) -> float: ...


@overload
def drawn(first: float, second: float, /, *more: float) -> tuple[float, ...]: ...


def drawn(*defaults: float) -> float | tuple[float, ...]:
    """``defaults`` unchanged while ``WORKBOOK_SEED`` is unset (or empty). With it set, each one
    times a factor uniform in [0.6, 1.4], rounded to 3 decimals, from a generator seeded with the
    seed and the defaults: signs are kept, and a seed gives the same numbers in every run. One
    number in gives a float, several give a tuple."""
    if not defaults:
        raise TypeError("drawn() needs at least one number")
    seed = os.environ.get("WORKBOOK_SEED", "").strip()
    values = tuple(float(x) for x in defaults)
    if seed:
        rng = random.Random(f"{int(seed)}/{values}")
        # .12g drops the float noise of the product (2.0 * 1.137 is 2.274, not 2.2739999999999996)
        values = tuple(float(f"{x * round(rng.uniform(LOW, HIGH), 3):.12g}") for x in values)
    return values[0] if len(values) == 1 else values


def setting(name: str, default: int | str | None) -> int | str | None:
    """The notebook's ``name`` setting (``seed``, ``batch``, ``steps``, ``text``): ``default``
    unless its environment variable (``SETTINGS``) is set and not empty, then that value, as an
    int where ``default`` is one. The grader sets seed, batch and steps this way, so the
    notebook's own cells need read no environment."""
    if name not in SETTINGS:
        raise ValueError(f"no setting {name!r}: the settings are {', '.join(SETTINGS)}")
    variable = SETTINGS[name]
    value = os.environ.get(variable, "").strip()
    if not value:
        return default
    if not isinstance(default, int):
        return value
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{variable}={value!r} is not a whole number") from None
