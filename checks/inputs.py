"""A notebook's input numbers: its own by default, others under the grader's ``WORKBOOK_SEED``.

>>> a, b = drawn(3.0, -2.0)   # (3.0, -2.0) unless WORKBOOK_SEED is set
>>> x = drawn(0.5)            # one number in, one number out
"""

from __future__ import annotations

import os
import random
from typing import overload

__all__ = ["drawn"]

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
